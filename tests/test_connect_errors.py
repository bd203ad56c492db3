"""Errors a user causes at connect time: typed, in our words, fast, and without secrets.

The servers come from COMPOSITE_STORE_TEST_<BACKEND>_URL (CI sets them); the unreachable cases
need no server at all.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time

import pytest
from sqlalchemy.engine import make_url

from composite_store import BackendUnavailableError, ConfigurationError, open_store


def _server(variable: str) -> str:
    url = os.environ.get(variable)
    if not url:
        pytest.skip(f"{variable} is not set")
    return url.split("?", 1)[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _init_error(url: str) -> BaseException:
    store = open_store(url)
    try:
        await store.memory.init()
    except Exception as exc:  # noqa: BLE001 - the test inspects whatever comes out
        return exc
    finally:
        await store.close()
    raise AssertionError(f"init() of {url} succeeded")


def _with(url: str, **parts: str) -> str:
    return make_url(url).set(**parts).render_as_string(hide_password=False)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("variable", "parts", "says"),
    [
        ("COMPOSITE_STORE_TEST_POSTGRES_URL", {"database": "cs_no_such_db"}, "does not exist"),
        ("COMPOSITE_STORE_TEST_POSTGRES_URL", {"username": "cs_no_such_user"}, "does not exist"),
        ("COMPOSITE_STORE_TEST_MARIADB_URL", {"database": "cs_no_such_db"}, "Unknown database"),
        ("COMPOSITE_STORE_TEST_MARIADB_URL", {"username": "cs_no_such_user"}, "denied"),
    ],
)
def test_a_refused_login_is_a_configuration_error_in_our_words(
    variable: str, parts: dict[str, str], says: str
) -> None:
    url = _with(_server(variable), **parts)
    exc = asyncio.run(_init_error(url))
    assert isinstance(exc, ConfigurationError), repr(exc)
    text = str(exc)
    assert says in text and "refused the connection" in text
    assert "Background on this error" not in text and "sqlalche.me" not in text
    assert "OperationalError" not in text


def test_sqlalchemy_boilerplate_never_reaches_a_message() -> None:
    from composite_store.errors import driver_message

    class Wrapped(Exception):
        orig = ValueError("the server said no")

    text = "(x.Error) boom\n(Background on this error at: https://sqlalche.me/e/21/e3q8)"
    assert driver_message(Exception(text)) == "(x.Error) boom"
    assert driver_message(Wrapped("ignored")) == "the server said no"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:secret@127.0.0.1:{port}/db",
        "mariadb://u:secret@127.0.0.1:{port}/db",
        "redis://:secret@127.0.0.1:{port}/0",
        "mongodb://u:secret@127.0.0.1:{port}/db",
    ],
)
def test_an_unreachable_server_fails_fast_as_backend_unavailable(url: str) -> None:
    started = time.monotonic()
    exc = asyncio.run(_init_error(url.format(port=_free_port())))
    elapsed = time.monotonic() - started
    assert isinstance(exc, BackendUnavailableError), repr(exc)
    assert "secret" not in str(exc)
    assert elapsed < 15, f"took {elapsed:.1f} s to report an unreachable server"
