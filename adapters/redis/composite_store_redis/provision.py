"""Throwaway namespaces on Redis: a fresh key prefix, and deleting every key under it.

The test matrix provisions one prefix per session with these, and ``composite-store check``
runs its checks under one; nothing else creates namespaces::

    name = await create_namespace("redis://127.0.0.1:6379/0")
    store = RedisStore(store_url(url, name))
    ...
    await drop_namespace(url, name)

Dropping SCANs for the prefix's keys: provisioning is the one place the adapter scans.
"""

from __future__ import annotations

import secrets

from composite_store.errors import ConflictError, ValidationError
from composite_store.schema import validate_prefix
from composite_store.urls import split_options
from composite_store_redis.connection import RedisConnection

__all__ = ["create_namespace", "drop_namespace", "store_url"]


def _name(name: str | None) -> str:
    prefix = validate_prefix(f"cs_{secrets.token_hex(6)}_" if name is None else name)
    if not prefix:
        # An empty prefix is the whole database: never a throwaway namespace.
        raise ValidationError("a throwaway namespace needs a non-empty key prefix")
    return prefix


async def create_namespace(url: str, name: str | None = None) -> str:
    """Reserve key prefix ``name`` (default: a fresh ``cs_<random>_``) on the server ``url``
    names and return it; refuses a prefix that already has keys."""
    prefix = _name(name)
    conn = RedisConnection(split_options(url, ("prefix",))[0], prefix=prefix)
    await conn.open()
    try:
        if await conn.any_matching(f"{prefix}*"):
            raise ConflictError(f"key prefix {prefix!r} is in use on this server; pick another")
    finally:
        await conn.close()
    return prefix


async def drop_namespace(url: str, name: str) -> int:
    """Delete every key of prefix ``name``; returns how many there were."""
    prefix = _name(name)
    conn = RedisConnection(split_options(url, ("prefix",))[0], prefix=prefix)
    await conn.open()
    try:
        return await conn.delete_matching(f"{prefix}*")
    finally:
        await conn.close()


def store_url(url: str, name: str) -> str:
    """``url`` pointing a store at prefix ``name`` (its ``prefix`` query parameter)."""
    url, _ = split_options(url, ("prefix",))
    return f"{url}{'&' if '?' in url else '?'}prefix={_name(name)}"
