"""Synchronous operation code on an async driver, in greenlets that are kept and reused.

Every SQL operation is written once, synchronously (``fn(conn)``), and on an async driver runs
in a greenlet whose driver calls hand their awaitables to the event loop (SQLAlchemy's
``await_only``). SQLAlchemy's ``greenlet_spawn`` creates a greenlet per call, and on
CPython 3.11+ each new greenlet maps and unmaps a fresh 16 KiB frame stack: about 8 us of
a point read's CPU. Here a finished greenlet waits for the next operation of its thread
instead (about 1.5 us a run), with the same protocol, so ``await_only`` works unchanged.

Why not the public ``greenlet_spawn``: measured again when the fast path moved here (2000
``get_thread_by_id`` on the local PostgreSQL, 8 interleaved rounds in one process, best
round), an operation took 180 us with kept greenlets and 212 us with ``greenlet_spawn`` (CPU
time: 176 against 202 us), 15-18% more; the bar for keeping our own was 10%. The one thing
borrowed from SQLAlchemy that it does not document is the marker ``await_only`` looks for on
the current greenlet, ``__sqlalchemy_greenlet_provider__`` (:class:`_Runner`);
tests/unit/test_greenlets.py fails if an upgrade changes it. On SQLite (synchronous driver)
no greenlet is involved.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from greenlet import GreenletExit, getcurrent, greenlet  # type: ignore[import-untyped]

__all__ = ["run_in_greenlet"]

T = TypeVar("T")

#: Idle greenlets kept per thread (as many as operations ran at once, up to this).
IDLE_LIMIT = 64

#: What a runner switches to its parent when its operation has finished (an awaitable
#: otherwise: ``await_only`` hands those over).
_FINISHED = object()


class _Runner(greenlet):  # type: ignore[misc]  # greenlet ships no type for subclassing
    """A greenlet that runs one operation after another, parked in between.

    ``await_only`` recognises it by ``__sqlalchemy_greenlet_provider__``, the marker SQLAlchemy
    sets on its own ``greenlet_spawn`` greenlets (the only private protocol used). The outcome
    is left on the runner, not passed through ``switch``: a parked runner then holds nothing of
    the operation it ran (its last argument would stay on the frame's stack until the next).
    """

    __sqlalchemy_greenlet_provider__ = True

    def __init__(self) -> None:
        super().__init__(self._serve)
        self.outcome: Any = None
        self.failure: BaseException | None = None

    def _serve(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        while True:
            try:
                self.outcome = fn(*args)
            except GreenletExit:
                raise  # the runner itself is being discarded
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task as is
                self.failure = exc
            fn = args = None  # type: ignore[assignment]  # drop the operation before parking
            fn, args = self.parent.switch(_FINISHED)


class _Idle(threading.local):
    def __init__(self) -> None:
        self.runners: list[_Runner] = []


_idle = _Idle()


async def run_in_greenlet(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a greenlet where ``await_only`` may await on this task's loop.

    Equivalent to SQLAlchemy's ``greenlet_spawn(fn, *args)``; the greenlet is taken from, and
    returned to, this thread's idle runners. ``fn`` sees the awaiting task's context
    variables, and an exception (a cancellation thrown in while it awaits) propagates.
    """
    idle = _idle.runners
    runner = idle.pop() if idle else _Runner()
    current = getcurrent()
    if runner.parent is not current:  # made under another greenlet of this thread
        runner.parent = current
    runner.gr_context = current.gr_context
    step = runner.switch(fn, args)
    while step is not _FINISHED:
        try:
            value = await step
        except BaseException:  # noqa: BLE001 - thrown into the operation, which decides
            step = runner.throw(*sys.exc_info())
        else:
            step = runner.switch(value)
    outcome, failure = runner.outcome, runner.failure
    runner.outcome = runner.failure = None
    if len(idle) < IDLE_LIMIT:
        idle.append(runner)
    if failure is not None:
        try:
            raise failure
        finally:
            del failure
    result: T = outcome
    return result
