"""A DB-API 2.0 face for the ``libsql`` driver, as SQLAlchemy's SQLite dialect expects one.

``libsql`` raises plain ``ValueError`` for every SQL failure and has no DB-API exception
classes; this module adds them and translates each failure by its message, so SQLAlchemy (and
then ``composite_store.errors.map_errors``) sees a ``IntegrityError`` for a constraint
violation, never a bare ``ValueError`` that looks like bad input.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import libsql  # type: ignore[import-untyped]  # the driver ships no type information

__all__ = [
    "DataError",
    "DatabaseError",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "Warning",
    "connect",
    "paramstyle",
    "sqlite_version_info",
]

paramstyle = "qmark"
apilevel = "2.0"
threadsafety = 1
sqlite_version_info: tuple[int, ...] = tuple(libsql.sqlite_version_info)
sqlite_version = ".".join(str(p) for p in sqlite_version_info)
version_info = sqlite_version_info


class Warning(Exception):
    pass


class Error(Exception):
    pass


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class DataError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class InternalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


_BY_MESSAGE: tuple[tuple[str, type[DatabaseError]], ...] = (
    ("constraint failed", IntegrityError),
    ("database is locked", OperationalError),
    ("no such table", OperationalError),
    ("no such column", OperationalError),
    ("unable to open", OperationalError),
    ("syntax error", ProgrammingError),
)


#: The driver binds Python ints as 64-bit floats beyond this magnitude (losing digits of
#: nanosecond timestamps); such ints travel as decimal text instead, which SQLite's INTEGER
#: affinity stores, and compares against INTEGER columns, as the exact integer.
_EXACT_FLOAT_INT = 2**53


def _bindable(parameters: Sequence[Any]) -> tuple[Any, ...]:
    # int subclasses too (bson's Int64 from a MongoDB read), but not bool.
    return tuple(
        str(int(p))
        if isinstance(p, int)
        and not isinstance(p, bool)
        and not -_EXACT_FLOAT_INT <= p <= _EXACT_FLOAT_INT
        else p
        for p in parameters
    )


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except (ValueError, libsql.Error) as exc:
        text = str(exc)
        lowered = text.lower()
        for needle, cls in _BY_MESSAGE:
            if needle in lowered:
                raise cls(text) from exc
        raise DatabaseError(text) from exc


class Cursor:
    """A ``libsql`` cursor whose failures are DB-API exceptions."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def description(self) -> Any:
        return self._inner.description

    @property
    def rowcount(self) -> int:
        return int(self._inner.rowcount)

    @property
    def lastrowid(self) -> Any:
        return self._inner.lastrowid

    @property
    def arraysize(self) -> int:
        return int(self._inner.arraysize)

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._inner.arraysize = value

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Cursor:
        with _translated():
            self._inner.execute(sql, _bindable(parameters))
        return self

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> Cursor:
        with _translated():
            self._inner.executemany(sql, [_bindable(p) for p in seq])
        return self

    def fetchone(self) -> Any:
        with _translated():
            return self._inner.fetchone()

    def fetchmany(self, size: int | None = None) -> list[Any]:
        with _translated():
            return list(self._inner.fetchmany(size or self.arraysize))

    def fetchall(self) -> list[Any]:
        with _translated():
            return list(self._inner.fetchall())

    def close(self) -> None:
        self._inner.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class Connection:
    """A ``libsql`` connection in autocommit mode: transactions are explicit ``BEGIN``s."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    # SQLAlchemy's pysqlite dialect sets this on connect; libsql's is fixed at connect time
    # (we always connect with isolation_level=None), so accept only that value.
    @property
    def isolation_level(self) -> str | None:
        value: str | None = self._inner.isolation_level
        return value

    @isolation_level.setter
    def isolation_level(self, value: str | None) -> None:
        if value is not None:
            raise NotSupportedError("composite-store runs libsql in autocommit mode only")

    @property
    def in_transaction(self) -> bool:
        return bool(self._inner.in_transaction)

    def cursor(self) -> Cursor:
        return Cursor(self._inner.cursor())

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Cursor:
        return self.cursor().execute(sql, parameters)

    def commit(self) -> None:
        with _translated():
            self._inner.commit()

    def rollback(self) -> None:
        with _translated():
            self._inner.rollback()

    def close(self) -> None:
        self._inner.close()

    def sync(self) -> None:
        """Pull from the remote primary (embedded replicas only)."""
        with _translated():
            self._inner.sync()


def connect(
    database: str,
    *,
    timeout: float = 5.0,
    check_same_thread: bool = True,
    isolation_level: str | None = None,
    auth_token: str = "",
    sync_url: str | None = None,
    uri: bool = False,
    **_ignored: Any,
) -> Connection:
    """Open a libSQL database: a file path, ``:memory:``, or a ``libsql://`` URL."""
    if isolation_level is not None:
        raise NotSupportedError("composite-store runs libsql in autocommit mode only")
    with _translated():
        inner = libsql.connect(
            database,
            timeout=timeout,
            isolation_level=None,
            _check_same_thread=check_same_thread,
            auth_token=auth_token,
            sync_url=sync_url,
        )
    return Connection(inner)
