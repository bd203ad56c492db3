"""The typed errors of composite-store and the context that maps driver errors onto them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import TracebackType

__all__ = [
    "AdapterNotInstalledError",
    "BackendUnavailableError",
    "CompositeStoreError",
    "ConfigurationError",
    "ConflictError",
    "DomainNotConfiguredError",
    "NotFoundError",
    "SchemaMismatchError",
    "UnsupportedOperationError",
    "ValidationError",
    "map_errors",
    "redact",
]


class CompositeStoreError(Exception):
    """Base class of every error raised by composite-store."""


class ValidationError(CompositeStoreError, ValueError):
    """The input is invalid; nothing was written."""


class ConfigurationError(ValidationError):
    """The store's configuration is wrong: an unknown option, or a URL the server refuses (no
    such database, user or password). Fix the configuration; retrying will not help."""


class NotFoundError(CompositeStoreError, LookupError):
    """The record an update or delete targets does not exist."""


class ConflictError(CompositeStoreError):
    """A write conflicts with stored data (a unique key, or a failed compare-and-set)."""


class DomainNotConfiguredError(CompositeStoreError, LookupError):
    """No backend provides the requested domain."""


class UnsupportedOperationError(CompositeStoreError, NotImplementedError):
    """The backend does not offer this operation or filter (its capability is off)."""


class BackendUnavailableError(CompositeStoreError, ConnectionError):
    """The backend could not be reached; the operation may be retried."""


class SchemaMismatchError(CompositeStoreError):
    """The physical schema differs from the documented one."""


class AdapterNotInstalledError(CompositeStoreError, ImportError):
    """The adapter package for a URL scheme is not installed; the message names the extra."""


# The password runs to the last "@" before any whitespace: a raw "/" or ":" in it (allowed by
# redis-py and pymongo, which split on the last "@") must not end the match early and leak it.
_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][\w+.-]*://)(?P<user>[^:/@\s]*)(:[^\s]*)?@")
_SECRET_PARAMS = re.compile(r"(?i)((?:authToken|password|token|secret|api_key)=)[^&\s]+")


def redact(text: str) -> str:
    """Return ``text`` with URL passwords and secret query parameters replaced by ``***``."""
    text = _CREDENTIALS.sub(
        lambda m: f"{m['scheme']}{m['user']}{':***' if m.group(3) else ''}@", text
    )
    return _SECRET_PARAMS.sub(r"\1***", text)


def map_errors(mapping: Mapping[type[BaseException], type[CompositeStoreError]]) -> _ErrorMap:
    """Re-raise driver exceptions as composite-store errors, keeping the cause.

    The first matching entry of ``mapping`` (in order) wins; our own errors pass through.
    Messages are redacted so that credentials never leave through an error.
    """
    return _ErrorMap(mapping)


class _ErrorMap:
    """The context manager of :func:`map_errors`: a plain class, since every operation (and
    every Redis round trip) enters one and ``contextlib.contextmanager`` costs a generator."""

    __slots__ = ("mapping",)

    def __init__(self, mapping: Mapping[type[BaseException], type[CompositeStoreError]]) -> None:
        self.mapping = mapping

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None or isinstance(exc, CompositeStoreError):
            return
        for source, target in self.mapping.items():
            if isinstance(exc, source):
                raise target(redact(driver_message(exc))) from exc


def driver_message(exc: BaseException) -> str:
    """What the driver said, without SQLAlchemy's wrapping: its ``(package.Class)`` prefix, the
    failed statement and its "Background on this error" link."""
    orig = getattr(exc, "orig", None)
    text = str(orig) if isinstance(orig, BaseException) and str(orig) else str(exc)
    text = _BACKGROUND.sub("", text)
    return text.strip()


_BACKGROUND = re.compile(r"\s*\(Background on this error at: [^)]*\)")
