"""Throwaway namespaces on MariaDB/MySQL: create and drop a database.

The test matrix provisions one database per session with these, and ``composite-store check``
runs its checks in one; nothing else creates namespaces::

    name = await create_namespace("mysql://root@localhost/")
    store = MysqlStore(store_url(url, name))
    ...
    await drop_namespace(url, name)
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from composite_store.schema import validate_identifier
from composite_store.sql.database import SqlDatabase
from composite_store_mysql.dialect import MysqlDialect

__all__ = ["create_namespace", "drop_namespace", "store_url"]


def _name(name: str | None) -> str:
    return validate_identifier(name or f"cs_{secrets.token_hex(6)}", what="database name")


async def _run_ddl(url: str, statement: str) -> None:
    # A one-off database without a pool: errors map exactly as a store's do.
    db = SqlDatabase(MysqlDialect(), url, engine_options={"poolclass": sa.NullPool})
    try:
        await db.run(lambda conn: conn.exec_driver_sql(statement), write=True)
    finally:
        await db.dispose()


async def create_namespace(url: str, name: str | None = None) -> str:
    """Create database ``name`` (default: a fresh ``cs_<random>``) on the server ``url`` names;
    return its name."""
    database = _name(name)
    await _run_ddl(
        url,
        f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
    )
    return database


async def drop_namespace(url: str, name: str) -> None:
    """Drop database ``name`` and everything in it; a missing database is not an error."""
    database = validate_identifier(name, what="database name")
    await _run_ddl(url, f"DROP DATABASE IF EXISTS `{database}`")


def store_url(url: str, name: str) -> str:
    """``url`` pointing a store at namespace ``name`` (the URL's database)."""
    parsed = make_url(url).set(database=validate_identifier(name, what="database name"))
    return parsed.render_as_string(hide_password=False)
