"""Writers under faults, on servers these tests start themselves (DESIGN.md section 7).

Each test runs concurrent writers while a server's connections are killed or the server itself
restarts, then checks what the issue asks of every backend: no acknowledged write lost, every
failure a typed error (the retryable ones ``BackendUnavailableError``), idempotent calls
retried transparently, and no partial batch (a failed ``save_messages`` batch is all or
nothing). Sizes fit CI; raise ``WRITERS``/``BATCHES`` for a longer soak.
docs/reliability.md has the figures and what each backend promises.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from composite_store import BackendUnavailableError, CompositeStoreError, Store, open_store
from tests.support.servers import ThrowawayDir, free_port
from tests.support.servers.mongodb import SecantusNode
from tests.support.servers.postgres import ThrowawayPostgres
from tests.support.servers.redis import RedisNode, _free_port_pair

pytestmark = pytest.mark.reliability

WRITERS = 4
BATCHES = 40
BATCH = 5
#: Seconds between a writer's batches: the writers run for about two seconds, so a fault
#: started after a fraction of a second lands in the middle of them.
PACE = 0.04
WORKFLOW = "reliability"


@dataclass
class Ledger:
    """What the writers were told: acknowledged batches and workflow snapshots, failed ones
    with their errors, and failed reads.

    A fault that brings its server back sets ``recovered`` once the server answers again;
    calls started after that must not fail (a stale pooled connection is retried, not
    reported), and those that did are kept in ``after_recovery``.
    """

    acked: list[list[str]] = field(default_factory=list)
    failed: list[tuple[list[str], BaseException]] = field(default_factory=list)
    read_failures: list[BaseException] = field(default_factory=list)
    acked_runs: list[str] = field(default_factory=list)
    failed_runs: list[tuple[str, BaseException]] = field(default_factory=list)
    recovered: bool = False
    after_recovery: list[BaseException] = field(default_factory=list)

    def record_failure(self, exc: BaseException, *, started_recovered: bool) -> None:
        if started_recovered:
            self.after_recovery.append(exc)


def _batch(writer: int, n: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"w{writer}-b{n}-m{k}",
            "thread_id": f"thread-{writer}",
            "resource_id": "u1",
            "role": "user",
            "content": {"format": 2, "parts": [{"type": "text", "text": f"{writer}/{n}/{k}"}]},
        }
        for k in range(BATCH)
    ]


def _snapshot(writer: int, n: int) -> dict[str, object]:
    return {"runId": f"w{writer}-b{n}", "status": "running", "context": {"step": n}}


async def _writer(store: Store, writer: int, ledger: Ledger) -> None:
    for n in range(BATCHES):
        batch = _batch(writer, n)
        ids = [str(m["id"]) for m in batch]
        recovered = ledger.recovered
        try:
            await store.memory.save_messages(messages=batch)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded and judged below
            ledger.failed.append((ids, exc))
            ledger.record_failure(exc, started_recovered=recovered)
            await asyncio.sleep(0.05)
        else:
            ledger.acked.append(ids)
        run_id, recovered = f"w{writer}-b{n}", ledger.recovered
        try:
            await store.workflows.persist_workflow_snapshot(
                workflow_name=WORKFLOW, run_id=run_id, snapshot=_snapshot(writer, n)
            )
        except Exception as exc:  # noqa: BLE001
            ledger.failed_runs.append((run_id, exc))
            ledger.record_failure(exc, started_recovered=recovered)
        else:
            ledger.acked_runs.append(run_id)
        await asyncio.sleep(PACE)
        recovered = ledger.recovered
        try:
            await store.memory.get_thread_by_id(thread_id=f"thread-{writer}")
        except Exception as exc:  # noqa: BLE001
            ledger.read_failures.append(exc)
            ledger.record_failure(exc, started_recovered=recovered)


async def _run_writers(store: Store, fault: Callable[[Ledger], Awaitable[None]]) -> Ledger:
    ledger = Ledger()
    for writer in range(WRITERS):
        await store.memory.save_thread(
            thread={"id": f"thread-{writer}", "resource_id": "u1", "title": "t"}
        )
    writers = [asyncio.create_task(_writer(store, w, ledger)) for w in range(WRITERS)]
    faults = asyncio.create_task(fault(ledger))
    await asyncio.gather(*writers)
    faults.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await faults
    return ledger


async def _judge(url: str, ledger: Ledger, *, reads_may_fail: bool) -> None:
    failures = [e for _, e in ledger.failed] + [e for _, e in ledger.failed_runs]
    untyped = [e for e in failures if not isinstance(e, BackendUnavailableError)]
    assert not untyped, f"failures that are not BackendUnavailableError: {untyped[:3]!r}"
    if not reads_may_fail:
        assert not ledger.read_failures, f"idempotent reads failed: {ledger.read_failures[:3]!r}"
    else:
        assert all(isinstance(e, BackendUnavailableError) for e in ledger.read_failures)
    assert not ledger.after_recovery, (
        f"calls failed after the server was back: {ledger.after_recovery[:3]!r}"
    )
    async with open_store(url) as store:
        ids = [i for batch in ledger.acked for i in batch] + [
            i for batch, _ in ledger.failed for i in batch
        ]
        found = {m.id for m in await store.memory.list_messages_by_id(message_ids=ids)}
        runs = await store.workflows.list_workflow_runs(workflow_name=WORKFLOW)
        stored_runs = {r.run_id: r.snapshot for r in runs.items}
    lost = [i for batch in ledger.acked for i in batch if i not in found]
    assert not lost, f"{len(lost)} acknowledged messages lost, e.g. {lost[:3]}"
    partial = [b for b, _ in ledger.failed if 0 < sum(i in found for i in b) < len(b)]
    assert not partial, f"partial batches: {partial[:3]}"
    lost_runs = [r for r in ledger.acked_runs if r not in stored_runs]
    assert not lost_runs, f"{len(lost_runs)} acknowledged snapshots lost, e.g. {lost_runs[:3]}"
    for run_id in ledger.acked_runs:
        writer, n = (int(part[1:]) for part in run_id.split("-"))
        assert stored_runs[run_id] == _snapshot(writer, n), f"snapshot {run_id} changed"
    assert ledger.acked, "no batch was acknowledged: the fault left nothing to check"


# -- PostgreSQL ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres_server() -> ThrowawayPostgres:
    server = ThrowawayPostgres.create(fsync=True)
    if isinstance(server, str):
        pytest.skip(f"no throwaway PostgreSQL here: {server}")
    return server


def _pg_url(server: ThrowawayPostgres, app: str) -> str:
    return server.url + f"?application_name={app}"


def test_postgres_writers_under_pg_terminate_backend(postgres_server: ThrowawayPostgres) -> None:
    import psycopg

    url = _pg_url(postgres_server, "cs-terminated")

    async def kill_connections(ledger: Ledger) -> None:
        async with await psycopg.AsyncConnection.connect(
            postgres_server.url, autocommit=True
        ) as admin:
            while True:
                await asyncio.sleep(0.15)
                await admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = 'cs-terminated' AND pid <> pg_backend_pid()"
                )

    async def main() -> Ledger:
        async with open_store(url) as store:
            await store.memory.dangerously_clear_all()
            return await _run_writers(store, kill_connections)

    ledger = asyncio.run(main())
    asyncio.run(_judge(url, ledger, reads_may_fail=False))


def test_postgres_writers_across_a_restart(postgres_server: ThrowawayPostgres) -> None:
    url = _pg_url(postgres_server, "cs-restart")

    async def restart(ledger: Ledger) -> None:
        await asyncio.sleep(0.3)
        assert await asyncio.to_thread(postgres_server.stop, mode="fast") is None
        await asyncio.sleep(0.5)
        assert await asyncio.to_thread(postgres_server.start) is None
        ledger.recovered = True

    async def main() -> Ledger:
        async with open_store(url) as store:
            await store.memory.dangerously_clear_all()
            return await _run_writers(store, restart)

    ledger = asyncio.run(main())
    assert ledger.failed, "the restart failed no call: it happened after the writers finished"
    asyncio.run(_judge(url, ledger, reads_may_fail=True))


# -- Redis ----------------------------------------------------------------------------------------


@pytest.fixture
def redis_node() -> RedisNode:
    tmp = ThrowawayDir("composite-store-redis-rel-")
    node = RedisNode(tmp, _free_port_pair(), "--appendonly", "yes", "--appendfsync", "always")
    failure = node.start_and_wait()
    if failure:
        pytest.skip(failure)
    yield node
    tmp.cleanup()


def test_redis_writes_after_a_restart_do_not_meet_a_closed_connection(
    redis_node: RedisNode,
) -> None:
    """A pooled connection whose server restarted (or closed it) is reconnected before a
    call uses it: the first write after the restart succeeds rather than failing with
    "Connection closed by server." (redis-py 8 skipped that check under its default
    maintenance-notification setting)."""

    async def main() -> None:
        async with open_store(redis_node.url) as store:
            await store.memory.save_thread(thread={"id": "t1", "resource_id": "u", "title": "x"})
            redis_node.kill()
            assert await asyncio.to_thread(redis_node.start_and_wait) is None
            await store.workflows.persist_workflow_snapshot(
                workflow_name=WORKFLOW, run_id="after-restart", snapshot={"step": 1}
            )
            run = await store.workflows.load_workflow_snapshot(
                workflow_name=WORKFLOW, run_id="after-restart"
            )
            assert run == {"step": 1}

    asyncio.run(main())


def test_redis_reads_survive_killed_connections(redis_node: RedisNode) -> None:
    import redis

    async def main() -> None:
        async with open_store(redis_node.url) as store:
            await store.memory.save_thread(thread={"id": "t1", "resource_id": "u", "title": "x"})
            redis.Redis.from_url(redis_node.url).client_kill_filter(_type="normal")
            found = await store.memory.get_thread_by_id(thread_id="t1")
            assert found is not None and found.title == "x"

    asyncio.run(main())


def test_redis_kill_9_and_restart_keeps_acknowledged_writes(redis_node: RedisNode) -> None:
    async def crash(ledger: Ledger) -> None:
        await asyncio.sleep(0.3)
        redis_node.kill()
        await asyncio.sleep(0.3)
        assert await asyncio.to_thread(redis_node.start_and_wait) is None
        ledger.recovered = True

    async def main() -> Ledger:
        async with open_store(redis_node.url) as store:
            return await _run_writers(store, crash)

    ledger = asyncio.run(main())
    asyncio.run(_judge(redis_node.url, ledger, reads_may_fail=True))


# -- MongoDB (the SecantusDB test server) ---------------------------------------------------------


@pytest.fixture(scope="module")
def secantus_node() -> Iterator[SecantusNode]:
    """A SecantusDB one-node replica set (so ``save_messages`` runs in a transaction) that
    fsyncs its journal at every commit, as PostgreSQL's fsync and Redis's ``appendfsync
    always`` above: without ``--sync-on-commit`` a ``kill -9`` loses the last acknowledged
    writes, and SecantusDB ignores ``j: true`` on ``commitTransaction`` (docs/reliability.md).
    Test commands are on for ``configureFailPoint``."""
    tmp = ThrowawayDir("composite-store-mongodb-rel-")
    node = SecantusNode(tmp, free_port(), "--sync-on-commit", "--enable-test-commands")
    failure = node.start_and_wait()
    if failure:
        tmp.cleanup()
        pytest.skip(failure)
    yield node
    node.kill()  # its data is thrown away: no final checkpoint to wait for
    tmp.cleanup()


def _mongo_url(node: SecantusNode, database: str) -> str:
    # A call the server cannot answer fails after half a second instead of the support
    # module's two, so the outage below fails many calls in little time.
    return f"mongodb://127.0.0.1:{node.port}/{database}?serverSelectionTimeoutMS=500"


def test_mongodb_kill_9_and_restart_keeps_acknowledged_writes(secantus_node: SecantusNode) -> None:
    url = _mongo_url(secantus_node, "reliability")

    async def main() -> Ledger:
        async with open_store(url) as store:

            async def crash(ledger: Ledger) -> None:
                await asyncio.sleep(0.3)
                secantus_node.kill()
                # Calls while the server is down: each fails, typed and retryable (before the
                # fix, a save_messages retried its transaction for 120 s instead).
                with pytest.raises(BackendUnavailableError) as read:
                    await store.memory.get_thread_by_id(thread_id="thread-0")
                ledger.read_failures.append(read.value)
                down = _batch(0, BATCHES + 1)
                with pytest.raises(BackendUnavailableError) as save:
                    await store.memory.save_messages(messages=down)
                ledger.failed.append(([str(m["id"]) for m in down], save.value))
                assert await asyncio.to_thread(secantus_node.start_and_wait) is None
                ledger.recovered = True

            ledger = await _run_writers(store, crash)
            # The same store object serves again: the client reconnected by itself.
            assert ledger.recovered, "the server was not back before the writers finished"
            after = _batch(0, BATCHES)
            await store.memory.save_messages(messages=after)
            ledger.acked.append([str(m["id"]) for m in after])
            page = await store.memory.list_messages(thread_id="thread-0", per_page=False)
            assert {str(m["id"]) for m in after} <= {m.id for m in page.items}
            return ledger

    ledger = asyncio.run(main())
    asyncio.run(_judge(url, ledger, reads_may_fail=True))


def test_mongodb_transaction_retries_a_dropped_connection_once(
    secantus_node: SecantusNode,
) -> None:
    """A connection dropped inside ``save_messages``' transaction (a restarted server's stale
    pool) starts the transaction again once; dropped again, it is reported, not retried for
    pymongo's two minutes. The failpoint closes the store's connections (application name
    ``composite-store``) at their next ``find``, the transaction's first read."""
    from pymongo import AsyncMongoClient

    url = _mongo_url(secantus_node, "failpoint")

    async def main() -> None:
        admin: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
            secantus_node.url, appname="reliability-admin"
        )

        async def drop_finds(times: int) -> None:
            data = {"failCommands": ["find"], "closeConnection": True, "appName": "composite-store"}
            await admin.admin.command(
                "configureFailPoint", "failCommand", mode={"times": times}, data=data
            )

        try:
            async with open_store(url) as store:
                await store.memory.save_thread(
                    thread={"id": "thread-0", "resource_id": "u1", "title": "t"}
                )
                retried, reported = _batch(0, 0), _batch(0, 1)
                await drop_finds(1)
                await store.memory.save_messages(messages=retried)
                await drop_finds(2)
                with pytest.raises(BackendUnavailableError):
                    await store.memory.save_messages(messages=reported)
                found = await store.memory.list_messages_by_id(
                    message_ids=[str(m["id"]) for m in retried + reported]
                )
                assert sorted(m.id for m in found) == sorted(str(m["id"]) for m in retried)
        finally:
            await admin.admin.command("configureFailPoint", "failCommand", mode="off")
            await admin.close()

    asyncio.run(main())


# -- SQLite ---------------------------------------------------------------------------------------

WRITER_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from composite_store import open_store

    async def main(url):
        async with open_store(url) as store:
            await store.memory.save_thread(
                    thread={"id": "thread-0", "resource_id": "u1", "title": "t"}
                )
            n = 0
            while True:
                ids = [f"b{n}-m{k}" for k in range(5)]
                await store.memory.save_messages(messages=[
                    {"id": i, "thread_id": "t", "role": "user", "content": i} for i in ids
                ])
                print(" ".join(ids), flush=True)  # acknowledged
                n += 1

    asyncio.run(main(sys.argv[1]))
    """
)


def test_sqlite_writer_killed_with_sigkill(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, url],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert process.stdout is not None
    acked: list[list[str]] = []
    for line in process.stdout:
        acked.append(line.split())
        if len(acked) >= 40:
            break
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    acked += [line.split() for line in process.stdout.read().splitlines() if line.strip()]

    async def read() -> set[str]:
        async with open_store(url) as store:
            page = await store.memory.list_messages(thread_id="t", per_page=False)
            return {m.id for m in page.items}

    found = asyncio.run(read())
    lost = [i for batch in acked for i in batch if i not in found]
    assert not lost, f"acknowledged messages lost after kill -9: {lost[:3]}"
    batches: dict[str, int] = {}
    for message_id in found:
        batches[message_id.split("-")[0]] = batches.get(message_id.split("-")[0], 0) + 1
    assert all(count == 5 for count in batches.values()), "a batch was stored in part"


def test_errors_are_typed_when_no_server_answers() -> None:
    async def main() -> BaseException:
        store = open_store("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2")
        try:
            await store.memory.init()
        except CompositeStoreError as exc:
            return exc
        finally:
            await store.close()
        raise AssertionError("init() succeeded without a server")

    assert isinstance(asyncio.run(main()), BackendUnavailableError)


def test_inspect_warns_when_redis_cannot_keep_acknowledged_writes(
    redis_node: RedisNode, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from composite_store import cli

    async def init(url: str) -> None:
        async with open_store(url) as store:
            await store.memory.save_thread(thread={"id": "t", "resource_id": "u", "title": "x"})

    tmp = ThrowawayDir("composite-store-redis-volatile-")
    volatile = RedisNode(tmp, _free_port_pair())  # appendonly no, no snapshots
    assert volatile.start_and_wait() is None
    try:
        for url in (redis_node.url, volatile.url):
            asyncio.run(init(url))
        cli.main(["inspect", redis_node.url, "--json"])
        kept = json.loads(capsys.readouterr().out)["domains"]["memory"]
        assert kept["durability"] is None
        cli.main(["inspect", volatile.url])
        text = capsys.readouterr().out
        assert "WARNING         appendonly no and no RDB snapshots" in text
    finally:
        tmp.cleanup()
