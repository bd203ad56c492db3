"""Oracle errors by code: which mean "server unreachable", "try again", "conflict" or "bad value".

python-oracledb raises one exception class for many conditions (``IntegrityError`` covers both a
duplicate key and a NULL in a NOT NULL column), so composite-store reads the error code
(``ORA-00001``, ``DPY-6005``) through SQLAlchemy's ``handle_error`` event instead of mapping
exception classes alone.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import ExceptionContext

from composite_store.errors import (
    BackendUnavailableError,
    CompositeStoreError,
    ValidationError,
    redact,
)

__all__ = ["TRANSIENT", "UNAVAILABLE", "error_code", "handle_error", "install"]

#: The server cannot be reached or dropped the session: retryable, BackendUnavailableError.
UNAVAILABLE = frozenset(
    {
        "DPY-1001",  # not connected
        "DPY-4011",  # the database or network closed the connection (ORA-03113, ORA-00028, ...)
        "DPY-4024",  # call timeout exceeded
        "DPY-6000",  # the listener refused the connection
        "DPY-6001",  # service name not registered with the listener
        "DPY-6003",  # SID not registered with the listener
        "DPY-6004",  # proxy failure
        "DPY-6005",  # cannot connect to the database
        "ORA-01033",  # initialization or shutdown in progress
        "ORA-01034",  # Oracle not available
        "ORA-01089",  # immediate shutdown in progress
        "ORA-01090",  # shutdown in progress
        "ORA-12514",  # service not registered with the listener
        "ORA-12516",  # listener could not find an available handler
        "ORA-12520",  # listener could not find an available handler
        "ORA-12528",  # the instance blocks new connections
        "ORA-12541",  # no listener
        "ORA-12757",  # instance does not know the requested service
    }
)
#: The server rolled the transaction back and running it again may succeed.
TRANSIENT = frozenset(
    {
        "ORA-00060",  # deadlock detected (this session was the victim)
        "ORA-08177",  # cannot serialize access for this transaction
    }
)
#: Codes that mean the statement's data was refused, with what the caller should do.
#: ORA-00001 (unique constraint violated) is not among them: it stays SQLAlchemy's
#: ``IntegrityError``, which the shared code catches to settle insert races, and the
#: dialect's ``error_map`` turns it into ``ConflictError`` at the API.
_REFUSED: dict[str, tuple[type[CompositeStoreError], str]] = {
    "ORA-12899": (
        ValidationError,
        "a value is too long for its column (on Oracle ids and other key text hold at most "
        "255 characters, names, types and statuses that queries filter on 1000)",
    ),
    "ORA-01461": (
        ValidationError,
        "a value is too long for a key or lookup column (on Oracle at most 255 characters for "
        "ids, 1000 for names, types and statuses)",
    ),
    "ORA-01438": (ValidationError, "a number is too large for its column"),
    "ORA-01400": (ValidationError, "a required value is missing"),
    "ORA-02290": (ValidationError, "a value was refused by a check constraint (booleans: 0/1)"),
    "ORA-40441": (ValidationError, "a value is not valid JSON for a JSON column"),
}


def error_code(exc: BaseException | None) -> str | None:
    """The ``ORA-nnnnn`` / ``DPY-nnnn`` code of a python-oracledb exception, else None."""
    if exc is None or not exc.args:
        return None
    error: Any = exc.args[0]
    code = getattr(error, "full_code", None)
    if isinstance(code, str) and code:
        return code
    number = getattr(error, "code", 0)
    return f"ORA-{number:05d}" if isinstance(number, int) and number else None


def handle_error(context: ExceptionContext) -> None:
    """``handle_error`` listener: an unreachable server becomes ``BackendUnavailableError``
    (its connection marked as a disconnect, so SQLAlchemy drops it from the pool), refused
    data ``ValidationError`` with the server's words. Other errors (a duplicate key among
    them) go on to the dialect's ``error_map``."""
    code = error_code(context.original_exception)
    if code is None:
        return
    detail = redact(str(context.original_exception).split("\n", 1)[0])
    if code in UNAVAILABLE:
        # SQLAlchemy invalidates the connection (and the pool, for a failed connect) first.
        context.is_disconnect = True
        raise BackendUnavailableError(
            f"Oracle is unreachable: {detail}"
        ) from context.original_exception
    refused = _REFUSED.get(code)
    if refused is not None:
        error_type, meaning = refused
        raise error_type(f"{meaning}: {detail}") from context.original_exception


def install(engine: sa.engine.Engine) -> None:
    """Attach :func:`handle_error` to ``engine`` (the sync engine behind an async one)."""
    sa.event.listen(engine, "handle_error", handle_error)
