"""Throwaway namespaces on PostgreSQL: create and drop a schema.

The test matrix provisions one schema per session with these, and ``composite-store check``
runs its checks in one; nothing else creates namespaces::

    name = await create_namespace("postgresql://postgres@localhost/postgres")
    store = PostgresStore(store_url(url, name))
    ...
    await drop_namespace(url, name)
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa

from composite_store.schema import validate_identifier
from composite_store.sql.database import SqlDatabase
from composite_store.urls import split_options
from composite_store_postgres.dialect import PostgresDialect

__all__ = ["create_namespace", "drop_namespace", "store_url"]


def _name(name: str | None) -> str:
    return validate_identifier(name or f"cs_{secrets.token_hex(6)}", what="schema name")


async def _run_ddl(url: str, statement: str) -> None:
    # A one-off database without a pool: errors map exactly as a store's do.
    db = SqlDatabase(PostgresDialect(), url, engine_options={"poolclass": sa.NullPool})
    try:
        await db.run(lambda conn: conn.exec_driver_sql(statement), write=True)
    finally:
        await db.dispose()


async def create_namespace(url: str, name: str | None = None) -> str:
    """Create schema ``name`` (default: a fresh ``cs_<random>``) in the database ``url``
    names; return its name."""
    schema = _name(name)
    await _run_ddl(url, f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    return schema


async def drop_namespace(url: str, name: str) -> None:
    """Drop schema ``name`` and everything in it; a missing schema is not an error."""
    schema = validate_identifier(name, what="schema name")
    await _run_ddl(url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def store_url(url: str, name: str) -> str:
    """``url`` pointing a store at namespace ``name`` (its ``schema`` query parameter)."""
    url, _ = split_options(url, ("schema",))
    schema = validate_identifier(name, what="schema name")
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"
