"""URL spellings users copy from other tools: accepted where they mean our driver, refused
where they name another, malformed ones refused in our words, and describe() round-trips."""

from __future__ import annotations

import pytest

from composite_store import ValidationError, open_store
from composite_store.errors import redact


@pytest.mark.parametrize(
    "url",
    [
        "postgres://u@127.0.0.1/db",
        "postgresql://u@127.0.0.1/db",
        "postgresql+psycopg://u@127.0.0.1/db",
        "mysql://root@127.0.0.1/db",
        "mysql+asyncmy://root@127.0.0.1/db",
        "mariadb://root@127.0.0.1/db",
        "sqlite:///x.db",
        "libsql:///x.db",
        "redis://127.0.0.1:6379/0",
        "redis+cluster://127.0.0.1:7000",
        "mongodb://127.0.0.1/db",
    ],
)
def test_accepted_spellings_and_describe_round_trips(url: str) -> None:
    store = open_store(url)
    line = next(iter(store.describe().values()))
    printed = next(word for word in line.split() if "://" in word)
    again = open_store(printed)
    assert type(again) is type(store)
    assert again.describe() == store.describe()


@pytest.mark.parametrize(
    ("url", "hint"),
    [
        ("postgresql+asyncpg://u@h/db", "postgresql://"),
        ("postgresql+psycopg2://u@h/db", "postgresql+psycopg://"),
        ("mysql+aiomysql://u@h/db", "mysql://"),
        ("mysql+mysqldb://u@h/db", "mysql://"),
    ],
)
def test_spellings_naming_another_driver_are_refused(url: str, hint: str) -> None:
    with pytest.raises(ValidationError, match="driver") as caught:
        open_store(url)
    assert hint in str(caught.value)


def test_sqlite_with_two_slashes_says_what_to_write() -> None:
    with pytest.raises(ValidationError, match=r"did you mean 'sqlite:///x\.db'"):
        open_store("sqlite://x.db")


def test_a_port_that_is_no_number_is_a_validation_error_without_the_password() -> None:
    with pytest.raises(ValidationError) as caught:
        open_store("postgresql://u:secret@h:notaport/db")
    assert "secret" not in str(caught.value)
    assert caught.value.__cause__ is None or "secret" not in str(caught.value.__cause__)


@pytest.mark.parametrize(
    "url",
    [
        "redis://:pa/ss@127.0.0.1:6379/0",
        "redis://user:pa%2Fss@127.0.0.1:6379/0",
        "mongodb://u:p:w/x@127.0.0.1/db",
        "postgresql://u:s3cr%40t@h/db",
    ],
)
def test_passwords_are_redacted_in_every_spelling(url: str) -> None:
    text = redact(f"could not connect to {url} now")
    for secret in ("pa/ss", "pa%2Fss", "p:w/x", "s3cr%40t"):
        assert secret not in text
    assert text.endswith(" now")


def test_describe_redacts_a_raw_slash_in_a_redis_password() -> None:
    store = open_store("redis://:pa/ss@127.0.0.1:6379/0")
    assert all("pa/ss" not in line and "/ss" not in line for line in store.describe().values())
