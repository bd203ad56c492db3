"""Keyword options are checked against what each adapter declares, and a composite's options
reach only the stores that take them."""

from __future__ import annotations

import pytest

from composite_store import CompositeStore, ConfigurationError, ValidationError, open_store


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
