"""``sql.engine.greenlets.run_in_greenlet``: the ``greenlet_spawn`` protocol on reused greenlets."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref

import pytest

pytest.importorskip("greenlet")

from greenlet import getcurrent  # type: ignore[import-untyped]
from sqlalchemy.util import await_only

from composite_store.sql.engine import greenlets
from composite_store.sql.engine.greenlets import run_in_greenlet

REQUEST = contextvars.ContextVar[str]("REQUEST")


class Payload:
    """A result that can be weakly referenced."""


def _twice(value: int) -> int:
    # Two real suspensions on the loop, as a statement and a COMMIT would be.
    await_only(asyncio.sleep(0))
    await_only(asyncio.sleep(0))
    return value * 2


def test_operations_await_on_the_loop_and_return_their_result() -> None:
    async def go() -> None:
        results = await asyncio.gather(*(run_in_greenlet(_twice, i) for i in range(16)))
        assert results == [i * 2 for i in range(16)]

    asyncio.run(go())


def test_a_finished_greenlet_runs_the_next_operation() -> None:
    async def go() -> None:
        await run_in_greenlet(_twice, 1)
        parked = list(greenlets._idle.runners)
        assert parked
        for i in range(5):
            assert await run_in_greenlet(_twice, i) == i * 2
        assert greenlets._idle.runners[-1] is parked[-1]

    asyncio.run(go())


def test_an_exception_reaches_the_caller_and_the_greenlet_stays_usable() -> None:
    async def go() -> None:
        def fail() -> None:
            await_only(asyncio.sleep(0))
            raise KeyError("missing")

        with pytest.raises(KeyError, match="missing"):
            await run_in_greenlet(fail)
        assert await run_in_greenlet(_twice, 4) == 8

    asyncio.run(go())


def test_a_cancelled_task_cancels_the_operation_where_it_awaits() -> None:
    async def go() -> None:
        cleaned_up = asyncio.Event()

        def wait_forever() -> None:
            try:
                await_only(asyncio.sleep(3600))
            finally:
                cleaned_up.set()

        task = asyncio.ensure_future(run_in_greenlet(wait_forever))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert cleaned_up.is_set()
        assert await run_in_greenlet(_twice, 3) == 6

    asyncio.run(go())


def test_the_operation_sees_the_awaiting_tasks_context() -> None:
    async def go() -> None:
        async def request(name: str) -> str:
            REQUEST.set(name)
            return await run_in_greenlet(lambda: (await_only(asyncio.sleep(0)), REQUEST.get())[1])

        assert await asyncio.gather(request("a"), request("b")) == ["a", "b"]

    asyncio.run(go())


def test_a_parked_greenlet_holds_nothing_of_its_last_operation() -> None:
    async def go() -> None:
        def make() -> Payload:
            await_only(asyncio.sleep(0))
            return Payload()

        result = await run_in_greenlet(make)
        alive = weakref.ref(result)
        del result
        gc.collect()
        assert alive() is None

    asyncio.run(go())


def test_sqlalchemy_still_recognises_a_kept_greenlet() -> None:
    # The marker await_only looks for is SQLAlchemy's, undocumented (sql.engine.greenlets):
    # an upgrade that renames it would make every async operation raise MissingGreenlet.
    from sqlalchemy.util import greenlet_spawn

    def marked() -> bool:
        return bool(getattr(getcurrent(), "__sqlalchemy_greenlet_provider__", False))

    async def go() -> None:
        assert await greenlet_spawn(marked), "SQLAlchemy's greenlets no longer carry the marker"
        assert await run_in_greenlet(marked)
        assert await run_in_greenlet(_twice, 5) == 10  # await_only accepts the kept greenlet

    asyncio.run(go())
