"""Which adapter serves which URL scheme: built-ins, known packages and entry points.

Third parties register schemes with ``register_adapter`` or the entry-point group
``composite_store.adapters`` (``scheme = "package.module:StoreClass"``).
"""

from __future__ import annotations

import difflib
import importlib
import types
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, TypedDict

from composite_store.errors import AdapterNotInstalledError, ValidationError
from composite_store.store import Store
from composite_store.urls import scheme_of

__all__ = [
    "ENTRY_POINT_GROUP",
    "get_adapter",
    "known_adapters",
    "open_store",
    "register_adapter",
    "registry",
]

ENTRY_POINT_GROUP = "composite_store.adapters"


class _Known(TypedDict):
    target: str
    extra: str | None


def _k(target: str, extra: str | None = None) -> _Known:
    return {"target": target, "extra": extra}


#: scheme -> store class path and the extra that installs it (alphabetical; asserted below).
known_adapters: dict[str, _Known] = {
    "libsql": _k("composite_store_libsql:LibsqlStore", "libsql"),
    "mariadb": _k("composite_store_mysql:MysqlStore", "mysql"),
    "mariadb+asyncmy": _k("composite_store_mysql:MysqlStore", "mysql"),
    "memory": _k("composite_store.inmemory:InMemoryStore"),
    "mongodb": _k("composite_store_mongodb:MongoStore", "mongodb"),
    "mongodb+srv": _k("composite_store_mongodb:MongoStore", "mongodb"),
    "mysql": _k("composite_store_mysql:MysqlStore", "mysql"),
    "mysql+asyncmy": _k("composite_store_mysql:MysqlStore", "mysql"),
    # DESIGN.md section 1 names this spelling; the same server protocol, served by asyncmy.
    "mysql+pymysql": _k("composite_store_mysql:MysqlStore", "mysql"),
    "oracle": _k("composite_store_oracle:OracleStore", "oracle"),
    "oracle+oracledb": _k("composite_store_oracle:OracleStore", "oracle"),
    # libpq's and psycopg's own spelling, as users copy it from their docs.
    "postgres": _k("composite_store_postgres:PostgresStore", "postgres"),
    "postgresql": _k("composite_store_postgres:PostgresStore", "postgres"),
    "postgresql+psycopg": _k("composite_store_postgres:PostgresStore", "postgres"),
    "postgresql+psycopg_async": _k("composite_store_postgres:PostgresStore", "postgres"),
    "redis": _k("composite_store_redis:RedisStore", "redis"),
    "redis+cluster": _k("composite_store_redis:RedisStore", "redis"),
    "rediss": _k("composite_store_redis:RedisStore", "redis"),
    "sqlite": _k("composite_store.sql.sqlite:SqliteStore"),
}
assert list(known_adapters) == sorted(known_adapters), "keep known_adapters alphabetical"

_registry: dict[str, type[Store]] = {}
#: Schemes resolved so far (read-only view).
registry = types.MappingProxyType(_registry)
_entry_points_loaded = False


def register_adapter(scheme: str, target: str | type[Store], *, clobber: bool = False) -> None:
    """Serve URLs of ``scheme`` with ``target`` (a ``Store`` subclass or ``"module:Class"``).

    Refuses to replace an existing registration unless ``clobber``.
    """
    scheme = scheme.lower()
    existing = _registry.get(scheme) or known_adapters.get(scheme)
    if existing is not None and not clobber:
        current = existing if isinstance(existing, type) else existing["target"]
        if current != target:
            raise ValidationError(
                f"scheme {scheme!r} is already served by {current}; pass clobber=True to replace it"
            )
    if isinstance(target, str):
        known_adapters[scheme] = _k(target)
        _registry.pop(scheme, None)
    else:
        _registry[scheme] = target


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name.lower() not in known_adapters:
            known_adapters[ep.name.lower()] = _k(ep.value)


def _import(target: str) -> type[Store]:
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    cls = getattr(module, attr)
    if not (isinstance(cls, type) and issubclass(cls, Store)):
        raise TypeError(f"{target} is not a composite_store.Store subclass")
    return cls


def get_adapter(scheme: str) -> type[Store]:
    """Return the store class serving ``scheme``, importing it on first use."""
    scheme = scheme.lower()
    if scheme in _registry:
        return _registry[scheme]
    if scheme not in known_adapters:
        _load_entry_points()
    known = known_adapters.get(scheme)
    base, plus, driver = scheme.partition("+")
    if known is None and plus and base in known_adapters:
        # postgresql+asyncpg://, mysql+aiomysql://: the URL names a driver this adapter does
        # not use; serving it with another one would silently change its behaviour.
        served = sorted(s for s in known_adapters if s.partition("+")[0] == base)
        raise ValidationError(
            f"URL scheme {scheme!r} names the {driver!r} driver, which composite-store does not "
            f"use for {base}; write one of: {', '.join(s + '://' for s in served)}"
        )
    if known is None:
        schemes = sorted(set(known_adapters))
        close = difflib.get_close_matches(scheme, schemes, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValidationError(
            f"no adapter for URL scheme {scheme!r}; known: {', '.join(schemes)}{hint}"
        )
    try:
        cls = _import(known["target"])
    except ImportError as exc:
        extra = known["extra"]
        if extra is None:
            raise
        package = "composite-store-" + extra
        raise AdapterNotInstalledError(
            f"'{scheme}://' needs {package}: pip install \"composite-store[{extra}]\""
        ) from exc
    _registry[scheme] = cls
    return cls


def open_store(url: str, **options: Any) -> Store:
    """Open the store a URL names; synchronous, no I/O (connections open at ``init()``).

    Options (pool size, timeouts, ``schema``, ``prefix``, ...) are keywords or URL query
    parameters.
    """
    # Adapter stores take the URL first; the ``Store`` base itself takes domains.
    factory: Callable[..., Store] = get_adapter(scheme_of(url))
    return factory(url, **options)
