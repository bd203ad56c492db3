"""Throwaway namespaces on MongoDB: create and drop a database.

The test matrix provisions one database per session with these, and ``composite-store check``
runs its checks in one; nothing else creates namespaces::

    name = await create_namespace("mongodb://127.0.0.1:27017/admin")
    store = MongoStore(store_url(url, name))
    ...
    await drop_namespace(url, name)
"""

from __future__ import annotations

import secrets
from urllib.parse import quote

from pymongo import AsyncMongoClient

from composite_store_mongodb.connection import Document, parse_url, validate_database
from composite_store_mongodb.errors import mongo_errors

__all__ = ["create_namespace", "drop_namespace", "store_url"]


def _name(name: str | None) -> str:
    return validate_database(name or f"cs_{secrets.token_hex(6)}")


async def _with_client(url: str, name: str, *, drop: bool) -> None:
    driver_url, _, _ = parse_url(url)
    client: AsyncMongoClient[Document] = AsyncMongoClient(driver_url)
    try:
        with mongo_errors():
            if drop:
                await client.drop_database(name)
            else:
                # MongoDB creates a database with its first collection: make one, so the
                # database exists (and the server showed it accepts writes) before the tests.
                await client[name].create_collection("composite_store_provisioned")
    finally:
        await client.close()


async def create_namespace(url: str, name: str | None = None) -> str:
    """Create database ``name`` (default: a fresh ``cs_<random>``) on the server ``url``
    names; return its name."""
    database = _name(name)
    await _with_client(url, database, drop=False)
    return database


async def drop_namespace(url: str, name: str) -> None:
    """Drop database ``name`` and everything in it; a missing database is not an error."""
    await _with_client(url, validate_database(name), drop=True)


def store_url(url: str, name: str) -> str:
    """``url`` pointing a store at database ``name`` (its path), other parameters kept.

    The ``$jsonSchema`` validators are turned on (unless ``url`` sets ``validator``): a
    throwaway database holds only what the checks write, and the schema checks read the
    collections' shape from the validators.
    """
    database = validate_database(name)
    scheme, rest = url.split("://", 1)
    rest, _, query = rest.partition("?")
    hosts = rest.partition("/")[0]
    if "validator" not in parse_url(url)[2]:
        query = "&".join(q for q in (query, "validator=true") if q)
    return f"{scheme}://{hosts}/{quote(database, safe='')}?{query}"
