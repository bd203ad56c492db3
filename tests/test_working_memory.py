"""Working memory (``composite_store.memory``) on every store the fixture reaches.

The core rules (scopes, template replace and the empty-template guard, schema merges, seeds,
read-only, concurrent updates) are the conformance suite's ``WorkingMemorySuite`` and run on
every backend; this module keeps what needs more than one store, a process or a fake domain.

Each test runs once per entry of ``BACKENDS``; add a backend with one line there. Tests open
their own store inside ``asyncio.run`` (the store binds to that loop) and clear the memory
domain first, so one URL serves the whole session.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ParamSpec

import pytest
from composite_store_conformance.suite.test_working_memory import (
    FILLED,
    PROFILE_SCHEMA,
    SCHEMAS,
    SCOPES,
    Profile,
    stored_raw,
    wm,
)

from composite_store import (
    ConflictError,
    Message,
    NotFoundError,
    Store,
    UnsupportedOperationError,
    ValidationError,
    open_store,
)
from composite_store.domains.memory import MemoryDomain
from composite_store.memory import (
    DEFAULT_TEMPLATE,
    STATE_SIGNAL_TOOL_NAME,
    TOOL_NAME,
    Memory,
    WorkingMemoryConfig,
)
from tests.support.backends import RAN, ran

ROOT = Path(__file__).resolve().parents[1]

#: backend -> a store URL for the test session, given the session's fixture request and a
#: temporary directory. A server backend is one more line using its provisioner, e.g.
#: ``"postgres": lambda request, tmp: servers.postgres.session_url(request)``.
BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], str]] = {
    "memory": lambda request, tmp: "memory://",
    "sqlite": lambda request, tmp: f"sqlite:///{tmp / 'working-memory.db'}",
}

P = ParamSpec("P")


def async_test(fn: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
    """Run an ``async def`` test on a fresh event loop (pytest-asyncio is not used here)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        asyncio.run(fn(*args, **kwargs))

    return run


@pytest.fixture(scope="session", params=sorted(BACKENDS))
def url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    found = BACKENDS[request.param](request, tmp_path_factory.mktemp(request.param))
    if request.param not in RAN:  # server provisioners report how they reached the server
        ran(request.param, "working memory tests")
    return found


@asynccontextmanager
async def opened(url: str) -> AsyncIterator[Store]:
    store = open_store(url)
    await store.memory.init()
    await store.memory.dangerously_clear_all()
    try:
        yield store
    finally:
        await store.close()


# -- scopes -------------------------------------------------------------------------------------


@async_test
async def test_resource_scope_without_resource_id_says_how_to_fix_it(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store, working_memory=wm("resource"))
        await memory.create_thread(thread_id="t1", resource_id="u1")
        fix = r"no resource_id was given: pass resource_id=.*scope='thread'"
        with pytest.raises(ValidationError, match=fix):
            await memory.get_working_memory(thread_id="t1")
        with pytest.raises(ValidationError, match=fix):
            await memory.update_working_memory(thread_id="t1", working_memory=FILLED)
        with pytest.raises(ValidationError, match=fix):
            await memory.apply_tool_call(TOOL_NAME, {"memory": FILLED}, thread_id="t1")
        with pytest.raises(ValidationError, match=fix):
            await memory.system_message(thread_id="t1")
        # It never falls back to the thread's owner.
        assert await stored_raw(store) == (None, None)


@async_test
async def test_a_thread_of_another_resource_is_refused(url: str) -> None:
    async with opened(url) as store:
        for scope in ("resource", "thread"):
            memory = Memory(store, working_memory=wm(scope))
            if scope == "resource":
                await memory.create_thread(thread_id="t1", resource_id="u1")
            with pytest.raises(ValidationError, match="belongs to another resource than 'u2'"):
                await memory.update_working_memory(
                    thread_id="t1", resource_id="u2", working_memory=FILLED
                )
        assert await stored_raw(store, resource="u2") == (None, None)
        with pytest.raises(ConflictError, match="belongs to another resource"):
            await memory.create_thread(thread_id="t1", resource_id="u2")


@async_test
async def test_thread_scope_needs_the_thread(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store, working_memory=wm("thread"))
        assert await memory.get_working_memory(thread_id="nope") is None
        with pytest.raises(NotFoundError, match=r"create it first with memory\.create_thread"):
            await memory.update_working_memory(thread_id="nope", working_memory=FILLED)


# -- templates ----------------------------------------------------------------------------------


@async_test
async def test_default_and_custom_templates_reach_the_model(url: str) -> None:
    async with opened(url) as store:
        default = Memory(store, working_memory=wm())
        assert default.config.effective_template == DEFAULT_TEMPLATE
        text = await default.system_message(thread_id="t1", resource_id="u1")
        assert DEFAULT_TEMPLATE.strip() in text
        assert "nothing has been saved yet" in text
        custom = Memory(store, working_memory=wm(template="# Trip\n- **Destination**:\n"))
        await custom.update_working_memory(
            thread_id="t1", resource_id="u1", working_memory="# Trip\n- **Destination**: Oslo\n"
        )
        text = await custom.system_message(thread_id="t1", resource_id="u1")
        shown = "<working_memory_template>\n# Trip\n- **Destination**:\n</working_memory_template>"
        assert shown in text
        assert "- **Destination**: Oslo" in text
        assert TOOL_NAME in text and "complete Markdown document" in text


@async_test
async def test_template_mode_wants_text(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store, working_memory=wm())
        result = await memory.apply_tool_call(
            TOOL_NAME, {"memory": {"name": "Ana"}}, thread_id="t1", resource_id="u1"
        )
        assert result["success"] is False
        assert "must be the Markdown text as a string, got an object" in result["message"]
        with pytest.raises(ValidationError, match="working_memory must be Markdown text"):
            await memory.update_working_memory(
                thread_id="t1", resource_id="u1", working_memory={"name": "Ana"}
            )
        assert await memory.get_working_memory(thread_id="t1", resource_id="u1") is None


# -- schemas ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
@async_test
async def test_invalid_schema_updates_are_rejected_and_change_nothing(url: str, kind: str) -> None:
    async with opened(url) as store:
        memory = Memory(store, working_memory=wm(schema=SCHEMAS[kind]))
        await memory.update_working_memory(
            thread_id="t1", resource_id="u1", working_memory={"name": "Ana", "tags": ["x"]}
        )
        before = await stored_raw(store)
        bad = {"name": 5, "address": {"city": ["not", "text"]}}
        result = await memory.apply_tool_call(
            TOOL_NAME, {"memory": bad}, thread_id="t1", resource_id="u1"
        )
        assert result["success"] is False
        message = result["message"]
        assert "invalid working memory" in message and "the stored memory was kept" in message
        assert "name" in message and "address.city" in message
        with pytest.raises(ValidationError, match=r"invalid working memory: .*name"):
            await memory.update_working_memory(
                thread_id="t1", resource_id="u1", working_memory={"name": 5}
            )
        unusable: list[Any] = ['{"name": ', "[1, 2]", ["a"], 7]
        for patch in unusable:
            result = await memory.apply_tool_call(
                TOOL_NAME, {"memory": patch}, thread_id="t1", resource_id="u1"
            )
            assert result["success"] is False, patch
        assert await stored_raw(store) == before


@async_test
async def test_schema_update_with_nothing_in_it_writes_nothing(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store, working_memory=wm(schema=PROFILE_SCHEMA))
        nothing: list[Any] = [None, {}, "{}"]
        for patch in nothing:
            result = await memory.apply_tool_call(
                TOOL_NAME, {"memory": patch}, thread_id="t1", resource_id="u1"
            )
            assert result == {
                "success": True,
                "message": "Nothing to change: the working memory was left as it is.",
            }
        assert await store.memory.get_resource_by_id(resource_id="u1") is None


@async_test
async def test_stored_text_that_is_not_json_is_reported_with_the_fix(url: str) -> None:
    async with opened(url) as store:
        await store.memory.update_resource(resource_id="u1", working_memory="# Notes in Markdown")
        memory = Memory(store, working_memory=wm(schema=PROFILE_SCHEMA))
        with pytest.raises(ValidationError, match=r"written in template mode.*update_resource"):
            await memory.get_working_memory(thread_id="t1", resource_id="u1")


# -- initial memory from thread metadata ---------------------------------------------------------


@async_test
async def test_an_invalid_seed_writes_nothing(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store, working_memory=wm("resource", schema=Profile))
        with pytest.raises(ValidationError, match="name"):
            await memory.create_thread(
                thread_id="t1", resource_id="u1", metadata={"workingMemory": {"name": 5}}
            )
        assert await stored_raw(store) == (None, None)
        assert await store.memory.get_thread_by_id(thread_id="t1") is None


@async_test
async def test_update_thread_merges_thread_scoped_schema_memory(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store, working_memory=wm("thread", schema=Profile))
        await memory.create_thread(
            thread_id="t1", resource_id="u1", metadata={"workingMemory": {"name": "Ana"}}
        )
        await memory.update_thread(thread_id="t1", metadata={"workingMemory": {"tags": ["x"]}})
        assert await memory.get_working_memory(thread_id="t1") == {"name": "Ana", "tags": ["x"]}
        with pytest.raises(ValidationError, match="name"):
            await memory.update_thread(thread_id="t1", metadata={"workingMemory": {"name": 5}})
        assert await memory.get_working_memory(thread_id="t1") == {"name": "Ana", "tags": ["x"]}
        assert (await stored_raw(store))[0] is None


# -- state signals (use_state_signals) ---------------------------------------------------------


@async_test
async def test_state_signals_replace_the_system_message_and_rename_the_tool(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store, working_memory=wm(use_state_signals=True))
        await memory.create_thread(thread_id="t1", resource_id="u1")
        assert await memory.system_message(thread_id="t1", resource_id="u1") == ""
        [tool] = memory.list_tools()
        assert tool["name"] == STATE_SIGNAL_TOOL_NAME
        default_tool = Memory(store, working_memory=wm()).list_tools()[0]
        assert tool["parameters"] == default_tool["parameters"]
        with pytest.raises(ValidationError, match="setWorkingMemory"):
            await memory.apply_tool_call(
                TOOL_NAME, {"memory": FILLED}, thread_id="t1", resource_id="u1"
            )
        done = await memory.apply_tool_call(
            STATE_SIGNAL_TOOL_NAME, {"memory": FILLED}, thread_id="t1", resource_id="u1"
        )
        assert done["success"] is True
        # The same stored data as the default path.
        assert (await stored_raw(store))[0] == FILLED
        # The default stays the system message.
        default = Memory(store, working_memory=wm())
        assert "Ana" in await default.system_message(thread_id="t1", resource_id="u1")
        with pytest.raises(UnsupportedOperationError, match="use_state_signals"):
            await default.state_signal(thread_id="t1", resource_id="u1")


@async_test
async def test_schema_snapshots_ignore_key_order(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store, working_memory=wm("thread", schema=Profile, use_state_signals=True))
        await memory.create_thread(thread_id="t1", resource_id="u1")
        await memory.update_working_memory(
            thread_id="t1", working_memory={"name": "Ana", "tags": ["x"]}
        )
        first = await memory.state_signal(thread_id="t1")
        assert first is not None and first.format == "json" and first.scope == "thread"
        assert first.working_memory == {"name": "Ana", "tags": ["x"]}
        from composite_store.memory.signals import cache_key

        assert cache_key("json", {"tags": ["x"], "name": "Ana"}) == first.cache_key
        window = [first.to_message(thread_id="t1")]
        assert await memory.state_signal(thread_id="t1", context_window=window) is None
        # The thread-scoped memory and the tracking share the thread's metadata untouched.
        assert await memory.get_working_memory(thread_id="t1") == {"name": "Ana", "tags": ["x"]}


def test_state_signals_are_refused_with_the_vnext_tool() -> None:
    with pytest.raises(ValidationError, match="vnext"):
        WorkingMemoryConfig(use_state_signals=True, version="vnext")
    with pytest.raises(UnsupportedOperationError, match="vnext"):
        WorkingMemoryConfig(version="vnext")
    with pytest.raises(ValidationError, match="use_state_signals"):
        WorkingMemoryConfig(use_state_signals="yes")  # type: ignore[arg-type]


# -- read-only and disabled --------------------------------------------------------------------


@async_test
async def test_read_only_per_call(url: str) -> None:
    async with opened(url) as store:
        writable = Memory(store, working_memory=wm())
        await writable.update_working_memory(
            thread_id="t1", resource_id="u1", working_memory=FILLED
        )
        assert writable.list_tools(read_only=True) == []
        text = await writable.system_message(thread_id="t1", resource_id="u1", read_only=True)
        assert "READ-ONLY" in text and TOOL_NAME not in text and "Ana" in text
        assert TOOL_NAME in await writable.system_message(thread_id="t1", resource_id="u1")
        assert await writable.get_working_memory(
            thread_id="t1", resource_id="u1", read_only=True
        ) == FILLED
        refused = await writable.apply_tool_call(
            TOOL_NAME, {"memory": "# replaced"}, thread_id="t1", resource_id="u1", read_only=True
        )
        assert refused["success"] is False and "read-only" in refused["message"]
        assert (await stored_raw(store))[0] == FILLED
        locked = Memory(store, working_memory=wm(), read_only=True)
        assert [t["name"] for t in locked.list_tools(read_only=False)] == [TOOL_NAME]
        allowed = await locked.apply_tool_call(
            TOOL_NAME, {"memory": "# allowed"}, thread_id="t1", resource_id="u1", read_only=False
        )
        assert allowed["success"] is True and (await stored_raw(store))[0] == "# allowed"
        assert TOOL_NAME in await locked.system_message(
            thread_id="t1", resource_id="u1", read_only=False
        )


@async_test
async def test_memory_without_working_memory_offers_nothing(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store)
        assert memory.enabled is False and memory.list_tools() == []
        assert await memory.system_message(thread_id="t1") == ""
        assert await memory.get_working_memory(thread_id="t1") is None
        with pytest.raises(UnsupportedOperationError, match="working memory is off"):
            await memory.update_working_memory(thread_id="t1", working_memory="x")
        with pytest.raises(UnsupportedOperationError, match="working memory is off"):
            await memory.apply_tool_call(TOOL_NAME, {"memory": "x"}, thread_id="t1")
        thread = await memory.create_thread(
            thread_id="t1", resource_id="u1", metadata={"workingMemory": "x"}
        )
        assert thread.metadata == {"workingMemory": "x"}
        assert await stored_raw(store) == (None, "x")


@async_test
async def test_apply_tool_call_refuses_what_is_not_its_tool(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store, working_memory=wm())
        with pytest.raises(ValidationError, match="'search' is not a working memory tool"):
            await memory.apply_tool_call("search", {}, thread_id="t1", resource_id="u1")
        for arguments, expected in (
            ("{not json", "not valid JSON"),
            ({}, "missing the `memory` argument"),
            ({"memory": "x", "why": "y"}, r"unexpected arguments \['why'\]"),
            ('["memory"]', "must be a JSON object"),
        ):
            result = await memory.apply_tool_call(
                TOOL_NAME, arguments, thread_id="t1", resource_id="u1"
            )
            assert result["success"] is False
            assert re.search(expected, result["message"]), result
        assert await stored_raw(store) == (None, None)


# -- concurrency -------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["resource", "thread"])
@async_test
async def test_concurrent_tool_calls_in_one_process_lose_nothing(
    url: str, scope: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="composite_store.memory")
    async with opened(url) as store:
        config = wm(scope, schema={"type": "object"})
        # Two Memory objects on one store share the per-key lock; both must be safe.
        first, second = Memory(store, working_memory=config), Memory(store, working_memory=config)
        await first.create_thread(thread_id="t1", resource_id="u1")
        calls = [
            (first if i % 2 else second).apply_tool_call(
                TOOL_NAME, {"memory": {"seen": {f"k{i}": i}}}, thread_id="t1", resource_id="u1"
            )
            for i in range(40)
        ]
        results = await asyncio.gather(*calls)
        assert all(r["success"] for r in results)
        got = await first.get_working_memory(thread_id="t1", resource_id="u1")
        assert got == {"seen": {f"k{i}": i for i in range(40)}}
        # The per-key lock queued the writers: none had to retry a compare-and-set.
        assert [r.message for r in caplog.records if "changed during" in r.message] == []


class Interfering:
    """A memory domain where another writer changes the memory right before each write."""

    def __init__(self, real: MemoryDomain, times: int) -> None:
        self.real, self.left, self.writes = real, times, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    async def update_resource(self, **kw: Any) -> Any:
        if self.left > 0:
            self.left -= 1
            self.writes += 1
            current = await self.real.get_resource_by_id(resource_id=kw["resource_id"])
            data = json.loads(current.working_memory) if current and current.working_memory else {}
            data[f"other{self.writes}"] = True
            await self.real.update_resource(
                resource_id=kw["resource_id"], working_memory=json.dumps(data)
            )
        return await self.real.update_resource(**kw)


@async_test
async def test_a_write_from_elsewhere_is_merged_not_lost(url: str) -> None:
    async with opened(url) as store:
        if not store.memory.capabilities.compare_and_set:
            pytest.skip(f"{store.backend} does not claim compare_and_set")
        domain = Interfering(store.memory, times=3)
        memory = Memory(
            SimpleNamespace(memory=domain), working_memory=wm(schema={"type": "object"})
        )
        result = await memory.apply_tool_call(
            TOOL_NAME, {"memory": {"mine": 1}}, thread_id="t1", resource_id="u1"
        )
        assert result["success"] is True
        got = await memory.get_working_memory(thread_id="t1", resource_id="u1")
        assert got == {"other1": True, "other2": True, "other3": True, "mine": 1}


@async_test
async def test_endless_conflicts_end_in_a_clear_error(url: str) -> None:
    async with opened(url) as store:
        if not store.memory.capabilities.compare_and_set:
            pytest.skip(f"{store.backend} does not claim compare_and_set")
        domain = Interfering(store.memory, times=10**6)
        memory = Memory(
            SimpleNamespace(memory=domain),
            working_memory=wm(schema={"type": "object"}),
            max_attempts=3,
        )
        with pytest.raises(ConflictError, match="changed under 3 attempts in a row; nothing was"):
            await memory.update_working_memory(
                thread_id="t1", resource_id="u1", working_memory={"mine": 1}
            )
        got = await memory.get_working_memory(thread_id="t1", resource_id="u1")
        assert got == {"other1": True, "other2": True, "other3": True}


WORKER = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from composite_store import open_store
    from composite_store.memory import Memory, WorkingMemoryConfig

    url, name, count, gate = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])

    async def main():
        store = open_store(url)
        memories = [
            Memory(store, working_memory=WorkingMemoryConfig(scope=scope, schema={}))
            for scope in ("resource", "thread")
        ]
        # The parent created the tables: a worker must not race the others through DDL.
        await store.memory.init()
        try:
            (gate.parent / f"ready-{name}").touch()
            while not gate.exists():
                time.sleep(0.01)
            for i in range(count):
                for memory in memories:
                    result = await memory.apply_tool_call(
                        "updateWorkingMemory", {"memory": {"seen": {f"{name}-{i}": i}}},
                        thread_id="t1", resource_id="u1")
                    assert result["success"], result
        finally:
            await store.close()

    asyncio.run(main())
    """
)


@async_test
async def test_processes_sharing_a_database_lose_nothing(url: str, tmp_path: Path) -> None:
    if url.startswith("memory://"):
        pytest.skip("memory:// lives in one process")
    workers, count = 4, 25
    async with opened(url) as store:
        memories = [Memory(store, working_memory=wm(scope, schema={})) for scope in SCOPES]
        await memories[0].create_thread(thread_id="t1", resource_id="u1")
        gate = tmp_path / "go"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WORKER, url, f"w{n}", str(count), str(gate)],
                env=env,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(workers)
        ]
        try:
            deadline = time.monotonic() + 120
            while len(list(tmp_path.glob("ready-*"))) < workers:
                assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
                assert time.monotonic() < deadline, "workers did not start"
                await asyncio.sleep(0.05)
            gate.touch()  # every worker starts writing at once
            for proc in procs:
                _, err = await asyncio.to_thread(proc.communicate, timeout=240)
                assert proc.returncode == 0, err
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
        expected = {f"w{n}-{i}": i for n in range(workers) for i in range(count)}
        for memory in memories:
            got = await memory.get_working_memory(thread_id="t1", resource_id="u1")
            assert isinstance(got, dict)
            assert set(expected) - set(got["seen"]) == set(), memory.config.scope
            assert got == {"seen": expected}


# -- recall --------------------------------------------------------------------------------------


def _message(mid: str, role: str, content: Any, seconds: int, thread: str = "t1") -> Message:
    at = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    return Message(
        id=mid, thread_id=thread, role=role, content=content, created_at=at, resource_id="u1"
    )


@async_test
async def test_recall_returns_the_last_messages_oldest_first(url: str) -> None:
    async with opened(url) as store:
        memory = Memory(store)
        await memory.create_thread(thread_id="t1", resource_id="u1")
        await store.memory.save_messages(
            messages=[
                _message(f"m{i:02d}", "user" if i % 2 == 0 else "assistant", f"text {i}", i)
                for i in range(30)
            ]
        )
        recalled = await memory.recall(thread_id="t1", last=3)
        assert recalled == [
            {"role": "assistant", "content": "text 27"},
            {"role": "user", "content": "text 28"},
            {"role": "assistant", "content": "text 29"},
        ]
        assert len(await memory.recall(thread_id="t1", resource_id="u1")) == 20
        assert await memory.recall(thread_id="t1", last=0) == []
        anthropic = await memory.recall(thread_id="t1", last=2, format="anthropic")
        assert anthropic == {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "text 28"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "text 29"}]},
            ]
        }
        with pytest.raises(NotFoundError, match="not found for resource 'u2'"):
            await memory.recall(thread_id="t1", resource_id="u2")
        with pytest.raises(ValidationError, match="last must be an int >= 0"):
            await memory.recall(thread_id="t1", last=-1)
        with pytest.raises(ValidationError, match="format must be 'openai' or 'anthropic'"):
            await memory.recall(thread_id="t1", format="gemini")  # type: ignore[call-overload]


# -- the example ---------------------------------------------------------------------------------


def test_the_profile_example_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "working_memory_profile.py"),
         "--db", str(tmp_path / "example.db")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "working memory:" in line]
    assert [json.loads(line.split("working memory:", 1)[1]) for line in lines] == [
        {"name": "Ana"},
        {"name": "Ana", "location": "Lisbon"},
        {"name": "Ana", "location": "Lisbon", "time_zone": "Europe/Lisbon"},
        {"name": "Ana", "location": "Lisbon", "time_zone": "Europe/Lisbon"},
    ]
