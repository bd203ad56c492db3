"""Export and import (``Transferable.export_records`` and friends) and schema versions: what
``composite_store.admin.copy`` relies on, held on every backend."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from composite_store import Message, Store, Thread, ValidationError
from composite_store.domains.hooks import Migratable, Transferable
from composite_store.records.tables import key_of
from composite_store.schema.migrations import current_version
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import at

__all__ = ["TransferSuite"]


def _transferable(store: Store, name: str) -> Transferable:
    """Domain ``name`` of ``store``; skips when its backend cannot export and import."""
    dom = store.get(name)
    assert dom is not None
    if not isinstance(dom, Transferable):
        pytest.skip(f"{store.backend}: the {name} domain is not Transferable (no export/import)")
    return dom


async def _everything(store: Store, domain: str, table: str, limit: int) -> list[Any]:
    dom = _transferable(store, domain)
    found: list[Any] = []
    cursor = None
    while True:
        page = await dom.export_records(table=table, cursor=cursor, limit=limit)
        assert len(page.records) <= limit
        found += page.records
        cursor = page.cursor
        if cursor is None:
            return found


class TransferSuite(Suite):
    """Every record exported once, imported exactly, fetched by key, counted; the schema
    version recorded by ``init()``."""

    domains: ClassVar[tuple[str, ...]] = ("memory", "scores")

    async def _threads(self, store: Store) -> None:
        for t in range(3):
            await store.memory.save_thread(
                thread=Thread(id=f"t{t}", resource_id=f"u{t % 2}", title=f"thread {t}",
                              metadata={"n": t}, created_at=at(t), updated_at=at(t))
            )
            await store.memory.save_messages(
                messages=[
                    Message(id=f"t{t}-m{i}", thread_id=f"t{t}", role="user",
                            content={"format": 2, "parts": [{"type": "text", "text": f"{i}"}]},
                            created_at=at(10 + i))
                    for i in range(4)
                ]
            )
        for r in ("u0", "u1", "lonely"):
            await store.memory.update_resource(resource_id=r, working_memory=f"wm of {r}")

    async def test_export_pages_return_every_record_once(self, cs_store: Store) -> None:
        await self._threads(cs_store)
        for table, count in (("threads", 3), ("messages", 12), ("resources", 3)):
            found = await _everything(cs_store, "memory", table, limit=5)
            keys = [key_of(table, r) for r in found]
            assert len(keys) == len(set(keys)) == count, table
            assert await _transferable(cs_store, "memory").count_records(table=table) == count

    async def test_import_writes_exactly_what_was_exported(self, cs_store: Store) -> None:
        await self._threads(cs_store)
        exported = {t: await _everything(cs_store, "memory", t, limit=100)
                    for t in ("threads", "messages", "resources")}
        await cs_store.memory.dangerously_clear_all()
        memory = _transferable(cs_store, "memory")
        for table in ("threads", "messages", "resources"):
            await memory.import_records(table=table, records=exported[table])
        # Importing messages bumped no thread's updatedAt: everything reads back as exported.
        for table, records in exported.items():
            again = await _everything(cs_store, "memory", table, limit=100)
            by_key = {key_of(table, r): r.stored() for r in again}
            assert by_key == {key_of(table, r): r.stored() for r in records}, table
        [before] = [t for t in exported["threads"] if t.stored()["id"] == "t1"]
        thread = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert thread is not None and thread.stored() == before.stored()

    async def test_import_upserts_by_key(self, cs_store: Store) -> None:
        await self._threads(cs_store)
        memory = _transferable(cs_store, "memory")
        [thread] = await memory.fetch_records(table="threads", keys=[("t0",)])
        changed = thread.model_copy(update={"title": "renamed"})
        await memory.import_records(table="threads", records=[changed])
        assert await memory.count_records(table="threads") == 3
        found = await cs_store.memory.get_thread_by_id(thread_id="t0")
        assert found is not None and found.title == "renamed"

    async def test_fetch_records_skips_unknown_keys(self, cs_store: Store) -> None:
        await self._threads(cs_store)
        found = await _transferable(cs_store, "memory").fetch_records(
            table="messages", keys=[("t1-m2",), ("nope",), ("t2-m0",)]
        )
        messages = [m for m in found if isinstance(m, Message)]
        assert len(messages) == len(found)
        assert sorted(m.id for m in messages) == ["t1-m2", "t2-m0"]

    async def test_keyless_evals_are_appended(self, cs_store: Store) -> None:
        row = {"input": "q", "output": "a", "result": {"score": 1}, "agent_name": "a",
               "metric_name": "m", "run_id": "r", "global_run_id": "g", "created_at": at(5)}
        await cs_store.scores.save_eval(eval=row)
        [record] = await _everything(cs_store, "scores", "evals", limit=10)
        scores = _transferable(cs_store, "scores")
        await scores.import_records(table="evals", records=[record, record])
        assert await _transferable(cs_store, "scores").count_records(table="evals") == 3
        with pytest.raises(ValidationError, match="has no key"):
            await _transferable(cs_store, "scores").fetch_records(table="evals", keys=[("r",)])

    async def test_bad_arguments_are_refused(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="is not a table of the memory domain"):
            await _transferable(cs_store, "memory").export_records(table="scorers")
        with pytest.raises(ValidationError, match="limit must be an integer >= 1"):
            await _transferable(cs_store, "memory").export_records(table="threads", limit=0)
        with pytest.raises(ValidationError, match="must be Thread records"):
            await _transferable(cs_store, "memory").import_records(
                table="threads",
                records=[Message(id="m", thread_id="t", role="user", content="x")],
            )
        with pytest.raises(ValidationError, match=r"tuple of 1 value\(s\) \(id\)"):
            await _transferable(cs_store, "memory").fetch_records(
                table="threads", keys=[("a", "b")]
            )

    async def test_init_records_the_current_schema_version(self, cs_store: Store) -> None:
        for name in self.domains:
            dom = cs_store.get(name)
            assert dom is not None
            if not isinstance(dom, Migratable):
                pytest.skip(f"{cs_store.backend}: the {name} domain keeps no schema version")
            assert await dom.schema_version() == current_version(name), name
