"""How pymongo's exceptions become composite-store errors (no driver error crosses the API)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from bson.errors import InvalidDocument, InvalidStringData
from pymongo.errors import (
    BulkWriteError,
    ConnectionFailure,
    DocumentTooLarge,
    DuplicateKeyError,
    OperationFailure,
    PyMongoError,
)

from composite_store.errors import (
    BackendUnavailableError,
    CompositeStoreError,
    ConflictError,
    ValidationError,
    map_errors,
    redact,
)

__all__ = ["DUPLICATE_KEY", "ERROR_MAP", "VALIDATION_FAILED", "mongo_errors"]

#: Server error codes read below.
DUPLICATE_KEY = 11000
VALIDATION_FAILED = 121

#: In order: the first matching entry wins (``errors.map_errors``).
ERROR_MAP: Mapping[type[BaseException], type[CompositeStoreError]] = {
    DuplicateKeyError: ConflictError,
    # Network errors, server selection timeouts and elections: the operation may be retried.
    ConnectionFailure: BackendUnavailableError,
    # Values BSON cannot hold: integers beyond 64 bits, unknown Python types, documents over
    # 16 MiB, text that is not UTF-8 (lone surrogates).
    InvalidDocument: ValidationError,
    InvalidStringData: ValidationError,
    DocumentTooLarge: ValidationError,
    OverflowError: ValidationError,
    UnicodeEncodeError: ValidationError,
    PyMongoError: CompositeStoreError,
}


@contextmanager
def mongo_errors() -> Iterator[None]:
    """Re-raise driver errors as ours, keeping the cause; credentials are redacted."""
    with map_errors(ERROR_MAP):
        try:
            yield
        except BulkWriteError as exc:
            raise _bulk_error(exc) from exc
        except OperationFailure as exc:
            if exc.code == VALIDATION_FAILED:
                raise ValidationError(_validation_message(exc.details)) from exc
            raise


def _bulk_error(exc: BulkWriteError) -> CompositeStoreError:
    """The error of the first failed write of a bulk write (ordered bulks stop there)."""
    errors = (exc.details or {}).get("writeErrors") or [{}]
    first = errors[0]
    code = first.get("code")
    if code == DUPLICATE_KEY:
        return ConflictError(redact(f"duplicate key: {first.get('errmsg', exc)}"))
    if code == VALIDATION_FAILED:
        return ValidationError(_validation_message(first))
    return CompositeStoreError(redact(str(first.get("errmsg") or exc)))


def _validation_message(details: Mapping[str, object] | None) -> str:
    info = (details or {}).get("errInfo")
    return redact(
        "the document does not match the collection's $jsonSchema validator "
        f"(the documented schema): {info if info is not None else details}"
    )
