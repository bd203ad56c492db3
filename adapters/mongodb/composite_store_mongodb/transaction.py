"""``in_transaction``: run one atomic operation in a MongoDB transaction, retried as it is safe.

pymongo's ``ClientSession.with_transaction`` retries a transaction whose error carries the
``TransientTransactionError`` label, and an unknown commit result, for up to 120 seconds. A
dropped connection carries that label too, so against a server that is down (restarting,
killed) a ``save_messages`` kept retrying for two minutes instead of failing as the retryable
``BackendUnavailableError`` within the client's server selection timeout, as every other call
does (tests/reliability). Here a write conflict is still retried for as long as pymongo
would, but a dropped connection only ``NETWORK_RETRIES`` times: once is enough for a pool of
connections a restarted server closed, and an outage is reported, not waited out.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pymongo import AsyncMongoClient
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.errors import ConnectionFailure, PyMongoError

__all__ = ["CONFLICT_RETRY_SECONDS", "NETWORK_RETRIES", "in_transaction"]

T = TypeVar("T")

#: How many times a transaction whose connection failed starts again.
NETWORK_RETRIES = 1
#: For how long a transaction that lost a write conflict starts again (pymongo's limit).
CONFLICT_RETRY_SECONDS = 120.0
#: Backoff between conflict retries, in seconds: jitter times min(initial * 1.5**n, max).
_BACKOFF_INITIAL, _BACKOFF_MAX = 0.005, 0.5


async def in_transaction(
    client: AsyncMongoClient[Any], fn: Callable[[AsyncClientSession], Awaitable[T]]
) -> T:
    """Run ``fn`` and commit, in one transaction of a fresh session.

    A transient error (the server's ``TransientTransactionError`` label: nothing was
    committed) starts the transaction again from ``fn``: a write conflict until
    ``CONFLICT_RETRY_SECONDS`` have passed, a failed connection ``NETWORK_RETRIES`` times. A
    commit whose outcome is unknown is not guessed at: its error is raised (pymongo has
    already retried the commit itself once).
    """
    async with client.start_session() as session:
        deadline = time.monotonic() + CONFLICT_RETRY_SECONDS
        dropped = conflicts = 0
        while True:
            await session.start_transaction()
            try:
                result = await fn(session)
                await session.commit_transaction()
            except BaseException as exc:
                if session.in_transaction:
                    await session.abort_transaction()
                if not (
                    isinstance(exc, PyMongoError)
                    and exc.has_error_label("TransientTransactionError")
                ):
                    raise
                if isinstance(exc, ConnectionFailure):
                    dropped += 1
                    if dropped > NETWORK_RETRIES:
                        raise
                    continue
                conflicts += 1
                backoff = random.random() * min(_BACKOFF_INITIAL * 1.5**conflicts, _BACKOFF_MAX)
                if time.monotonic() + backoff > deadline:
                    raise
                await asyncio.sleep(backoff)
                continue
            return result
