"""Throwaway namespaces on Oracle: a fresh table prefix inside the configured schema.

Elsewhere a namespace is a schema or a database, but an Oracle schema is a user, and creating
users takes DBA rights an application account should not have. So the test matrix and
``composite-store check`` provision a *table prefix* (``cs_<random>_``) in the schema the URL
names (its ``schema`` parameter, else the connecting user's own), and dropping the namespace
drops every table carrying that prefix there::

    prefix = await create_namespace("oracle://app:pw@db/?service_name=FREEPDB1")
    store = OracleStore(store_url(url, prefix))
    ...
    await drop_namespace(url, prefix)
"""

from __future__ import annotations

import secrets
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from composite_store.errors import ValidationError
from composite_store.schema import validate_prefix
from composite_store.sql.database import SqlDatabase
from composite_store.urls import split_options
from composite_store_oracle.dialect import OracleDialect

__all__ = ["create_namespace", "drop_namespace", "store_url"]


def _database(url: str) -> SqlDatabase:
    # A one-off database without a pool: errors map exactly as a store's do.
    return SqlDatabase(OracleDialect(), url, engine_options={"poolclass": sa.NullPool})


async def create_namespace(url: str, name: str | None = None) -> str:
    """Return table prefix ``name`` (default: a fresh ``cs_<random>_``) for the schema ``url``
    names, after checking that the server answers and the schema exists."""
    chosen = validate_prefix(name or f"cs_{secrets.token_hex(6)}_")
    db = _database(url)
    try:
        await db.run(lambda conn: db.dialect.create_namespace(conn, db.schema), write=True)
    finally:
        await db.dispose()
    return chosen


async def drop_namespace(url: str, name: str) -> None:
    """Drop every table whose name starts with prefix ``name`` in the schema ``url`` names
    (constraints and indexes with them); tables that do not exist are not an error."""
    prefix = validate_prefix(name)
    if not prefix:
        raise ValidationError(
            "refusing to drop every table of the schema: give the non-empty table prefix "
            "create_namespace() returned"
        )
    db = _database(url)

    def drop(conn: Connection) -> None:
        preparer = conn.dialect.identifier_preparer
        names = [
            name
            for name in sa.inspect(conn).get_table_names(schema=db.schema)
            if name.startswith(prefix)
        ]
        for name in names:
            table: Any = sa.table(name, schema=db.schema)
            conn.exec_driver_sql(
                f"DROP TABLE {preparer.format_table(table)} CASCADE CONSTRAINTS PURGE"
            )

    try:
        await db.run(drop, write=True)
    finally:
        await db.dispose()


def store_url(url: str, name: str) -> str:
    """``url`` pointing a store at namespace ``name`` (its ``prefix`` query parameter)."""
    url, _ = split_options(url, ("prefix",))
    return f"{url}{'&' if '?' in url else '?'}prefix={validate_prefix(name)}"
