"""Keyword options are checked against what each adapter declares, a composite's options
reach only the stores that take them, and a URL query parameter that neither the store nor its
driver takes is refused as such."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from composite_store import (
    BackendUnavailableError,
    CompositeStore,
    ConfigurationError,
    ValidationError,
    open_store,
)


@pytest.mark.parametrize(
    ("url", "typo", "closest"),
    [
        ("sqlite:///x.db", "prefx", "prefix"),
        ("postgresql://u@127.0.0.1/db", "pool_sise", "pool_size"),
        ("mariadb://u@127.0.0.1/db", "shema", "schema"),
        ("redis://127.0.0.1:6379/0", "socket_timout", "socket_timeout"),
        ("mongodb://127.0.0.1/db", "serverSelectionTimeoutMs_", "serverselectiontimeoutms"),
        ("libsql:///x.db", "pool_recyle", "pool_recycle"),
        ("oracle://u:p@h/svc", "native_jsn", "native_json"),
    ],
)
def test_a_typo_names_the_closest_option(url: str, typo: str, closest: str) -> None:
    with pytest.raises(ConfigurationError, match=f"did you mean {closest!r}"):
        open_store(url, **{typo: 1})


def test_configuration_errors_are_validation_errors() -> None:
    with pytest.raises(ValidationError):
        open_store("memory://", prefix="x")


@pytest.mark.parametrize(
    ("url", "option", "value"),
    [
        ("sqlite:///x.db", "prefix", "app_"),
        ("postgresql://u@127.0.0.1/db", "pool_size", 3),
        ("redis://127.0.0.1:6379/0", "socket_timeout", 2.0),
        ("mongodb://127.0.0.1/db", "serverSelectionTimeoutMS", 1000),
        ("mongodb://127.0.0.1/db", "maxPoolSize", 5),
    ],
)
def test_declared_options_are_taken(url: str, option: str, value: object) -> None:
    open_store(url, **{option: value})


def test_a_composite_gives_each_store_only_its_own_options(tmp_path: object) -> None:
    store = CompositeStore(
        default="sqlite:///x.db",
        domains={"observability": "mongodb://127.0.0.1/db"},
        use_environment=False,
        use_config_file=False,
        echo=True,
    )
    assert store.describe()["observability"].startswith("mongodb")


def test_a_composite_option_no_store_takes_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="'ech' applies to none"):
        CompositeStore(
            default="sqlite:///x.db", use_environment=False, use_config_file=False, ech=True
        )


#: Each backend's URL with a query parameter its driver takes, on a port where nothing listens
#: (a parameter the driver refuses is refused before any connection is tried), and the error
#: the URL as it is ends in (None: it opens, an embedded file).
_UNREACHABLE = {
    "sqlite": ("sqlite:///{tmp}/x.db?timeout=5", None),
    "libsql": ("libsql:///{tmp}/x.db?prefix=app_", None),
    "postgres": ("postgresql://u@127.0.0.1:1/db?connect_timeout=3", BackendUnavailableError),
    "mariadb": ("mariadb://u@127.0.0.1:1/db?charset=utf8mb4", BackendUnavailableError),
    "redis": ("redis://127.0.0.1:1/0?socket_timeout=2", BackendUnavailableError),
    "mongodb": (
        "mongodb://127.0.0.1:1/db?serverSelectionTimeoutMS=300&prefix=app_",
        BackendUnavailableError,
    ),
    # python-oracledb's thin mode refuses a keyword before it connects: no server needed.
    "oracle": ("oracle://u:p@127.0.0.1:1/svc?tcp_connect_timeout=1", BackendUnavailableError),
}


async def _init(url: str) -> None:
    store = open_store(url)
    try:
        await store.init()
    finally:
        await store.close()


@pytest.mark.parametrize("backend", sorted(_UNREACHABLE))
def test_a_url_parameter_nobody_takes_is_refused(backend: str, tmp_path: Path) -> None:
    """A query parameter that is neither the store's nor its driver's is a
    ``ConfigurationError`` naming it and the closest option of the store: not the driver's
    ``TypeError`` (asyncmy, redis-py), a generic error (libpq), or a warning and the
    parameter ignored (pysqlite, pymongo, libSQL). One the driver takes still reaches it."""
    url, unreachable = _UNREACHABLE[backend]
    url = url.format(tmp=tmp_path)
    if unreachable is None:
        asyncio.run(_init(url))
    else:
        with pytest.raises(unreachable):
            asyncio.run(_init(url))
    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(_init(url + "&table_prefix=app_"))
    assert "query parameter 'table_prefix'" in str(refused.value)
    assert "did you mean 'prefix'?" in str(refused.value)
