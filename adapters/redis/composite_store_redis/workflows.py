"""The workflows domain on Redis: one hash per run, listed from sorted sets by createdAt.

A run is ``mastra_workflow_snapshot:{<workflow name>}:<run id>``. Its workflow's indexes (all
runs; by resourceId; by ``snapshot.status``; by both) share the workflow's slot; the indexes
across workflows (the same four without the name) and ``run_id_createdat_idx`` (run id ->
workflow names) live in their own slots. Every filter combination of ``list_workflow_runs``
has its own set, so a page is one ranged read. Step results and state updates are optimistic
read-modify-writes guarded by the SHA-1 of the stored snapshot.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, ClassVar

from composite_store.domains.base import Capabilities
from composite_store.domains.workflows import RunQuery, SnapshotUpdate, WorkflowsDomain
from composite_store.records.base import Record
from composite_store.records.trusted import stored_view
from composite_store.records.workflows import WorkflowRun
from composite_store.schema import table
from composite_store_redis import transfer
from composite_store_redis.batch import Batch
from composite_store_redis.codec import (
    decode_record,
    dump_json,
    encode_record,
    from_stored,
    iso,
    score_range,
)
from composite_store_redis.domain import RedisDomain
from composite_store_redis.keys import SortedIndex, pack, sorted_index, unpack

__all__ = ["RedisWorkflows"]

_RUNS = table("workflow_snapshot")
_STATUS = "snapshot.status"


def _runs_index(*partition: str) -> SortedIndex:
    # Within a workflow the run id tells runs apart; across workflows the name joins it.
    local = bool(partition) and partition[0] == "workflow_name"
    member = ["run_id"] if local else ["run_id", "workflow_name"]
    return sorted_index("workflow_snapshot", partition, "createdAt", member)


#: (workflow_name?, resourceId?, status?) -> the index serving exactly that filter.
LISTINGS: dict[tuple[bool, bool, bool], SortedIndex] = {
    (by_name, by_resource, by_status): _runs_index(
        *(["workflow_name"] if by_name else []),
        *(["resourceId"] if by_resource else []),
        *([_STATUS] if by_status else []),
    )
    for by_name in (True, False)
    for by_resource in (True, False)
    for by_status in (True, False)
}
BY_RUN_ID = sorted_index("workflow_snapshot", ["run_id"], "createdAt", ["workflow_name"])
RUN_INDEXES = (*LISTINGS.values(), BY_RUN_ID)


def _sha1(text: str | None) -> str:
    return "" if text is None else hashlib.sha1(text.encode("utf-8")).hexdigest()


def _status(snapshot: Any) -> str | None:
    status = snapshot.get("status") if isinstance(snapshot, dict) else None
    return status if isinstance(status, str) else None


def _indexed(stored: dict[str, Any]) -> dict[str, Any]:
    """A run's stored values plus the derived ones its indexes partition by."""
    return {**stored, _STATUS: _status(stored.get("snapshot"))}


def _run(fields: dict[str, str]) -> WorkflowRun:
    return from_stored(WorkflowRun, decode_record(_RUNS, fields))


class RedisWorkflows(RedisDomain, WorkflowsDomain):
    """Workflow run snapshots on Redis (standalone or cluster)."""

    tables = ("workflow_snapshot",)
    indexes = RUN_INDEXES
    standalone_capabilities: ClassVar[Capabilities] = Capabilities(
        atomic_batches=True, concurrent_updates=True, transactions=True
    )
    # The snapshot and its workflow's indexes change in one guarded script; the indexes across
    # workflows follow in their own slots.
    cluster_capabilities: ClassVar[Capabilities] = Capabilities(concurrent_updates=True)

    def _key(self, workflow_name: str, run_id: str) -> str:
        return self.keys.record("workflow_snapshot", workflow_name, pack(run_id))

    async def read_raw(self, table: str, key: Any) -> dict[str, Any] | None:
        # docstring inherited
        self._check()
        self._known_table(table)
        return await self._raw(table, self._key(key["workflow_name"], key["run_id"]))

    async def _meta(self, key: str) -> dict[str, Any] | None:
        """The stored values a run's indexes depend on (without shipping its snapshot)."""
        reply = await self.conn.script("RUN_META", [key], [])
        if not reply:
            return None
        created, has_resource, resource, has_status, status, digest = reply
        return {
            "createdAt": created,
            "resourceId": resource if has_resource == "1" else None,
            _STATUS: status if has_status == "1" else None,
            "sha1": digest,
        }

    def _guard(self, batch: Batch, key: str, meta: dict[str, Any] | None) -> None:
        if meta is None:
            batch.expect_exists(key, False)
            return
        batch.expect_field(key, "createdAt", meta["createdAt"])
        batch.expect_field(key, "resourceId", meta["resourceId"])
        batch.expect_digest(key, "snapshot", meta["sha1"])

    @staticmethod
    def _old(workflow_name: str, run_id: str, meta: dict[str, Any]) -> dict[str, Any]:
        return {
            "workflow_name": workflow_name,
            "run_id": run_id,
            "resourceId": meta["resourceId"],
            _STATUS: meta[_STATUS],
            "createdAt": datetime.fromisoformat(meta["createdAt"]),
        }

    async def _persist(self, run: WorkflowRun, *, keep_created_at: bool) -> None:
        # docstring inherited
        key = self._key(run.workflow_name, run.run_id)
        # The stored names read off the record (stored_view): stored() would copy the whole
        # snapshot, which is only encoded from here.
        view = stored_view(run)

        async def attempt() -> bool | None:
            meta = await self._meta(key)
            stored = dict(view)
            if meta is not None and keep_created_at:
                stored["createdAt"] = datetime.fromisoformat(meta["createdAt"])
            batch = self.batch()
            self._guard(batch, key, meta)
            batch.put_record(key, encode_record(_RUNS, stored))
            old = None if meta is None else self._old(run.workflow_name, run.run_id, meta)
            self.reindex(batch, RUN_INDEXES, old, _indexed(stored))
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"persist_workflow_snapshot({run.run_id!r})")

    async def _get_run(self, run_id: str, workflow_name: str | None) -> WorkflowRun | None:
        # docstring inherited
        if workflow_name is None:
            page = await self.conn.page(*self.index_set(BY_RUN_ID, [run_id]), reverse=True, count=1)
            if not page.members:
                return None
            workflow_name = unpack(page.members[0])[0]
        [found] = await self.conn.read([["HGETALL", self._key(workflow_name, run_id)]])
        return _run(found) if found else None

    async def _list_runs(self, query: RunQuery) -> tuple[list[WorkflowRun], int | None]:
        # docstring inherited
        index = LISTINGS[
            (
                query.workflow_name is not None,
                query.resource_id is not None,
                query.status is not None,
            )
        ]
        values = [
            v for v in (query.workflow_name, query.resource_id, query.status) if v is not None
        ]
        low, high = score_range(query.created)
        w = query.window
        local = query.workflow_name is not None
        page = await self.conn.page(
            *self.index_set(index, values),
            low=low,
            high=high,
            reverse=True,
            offset=w.offset,
            count=w.fetch,
            total=query.count,
            records=(
                self.keys.record_prefix("workflow_snapshot", query.workflow_name)
                if query.workflow_name is not None
                else None
            ),
        )
        if local:
            assert page.records is not None
            found = page.records
        else:
            pairs = [unpack(m) for m in page.members]
            found = await self.conn.read([["HGETALL", self._key(n, r)] for r, n in pairs])
        runs = [_run(raw) for raw in found if raw]
        # Entries a partly applied cluster write left behind no longer match their set.
        runs = [
            r
            for r in runs
            if (query.resource_id is None or r.resource_id == query.resource_id)
            and (query.status is None or _status(r.snapshot) == query.status)
        ]
        return runs, page.total

    async def _delete_run(self, run_id: str, workflow_name: str) -> None:
        # docstring inherited
        key = self._key(workflow_name, run_id)

        async def attempt() -> bool | None:
            meta = await self._meta(key)
            if meta is None:
                return True
            batch = self.batch()
            self._guard(batch, key, meta)
            batch.delete(key)
            self.reindex(batch, RUN_INDEXES, self._old(workflow_name, run_id, meta), None)
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"delete_workflow_run_by_id({run_id!r})")

    async def _update_snapshot(
        self, workflow_name: str, run_id: str, update: SnapshotUpdate, now: datetime
    ) -> dict[str, Any] | None:
        # docstring inherited
        key = self._key(workflow_name, run_id)

        async def attempt() -> tuple[dict[str, Any] | None] | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            current = decode_record(_RUNS, raw) if raw else None
            snapshot = update(current["snapshot"] if current is not None else None)
            if snapshot is None:
                return (None,)
            batch = self.batch()
            if current is None:
                batch.expect_exists(key, False)
                stored = {
                    "workflow_name": workflow_name,
                    "run_id": run_id,
                    "resourceId": None,
                    "snapshot": snapshot,
                    "createdAt": now,
                    "updatedAt": now,
                }
                batch.put_record(key, encode_record(_RUNS, stored))
            else:
                batch.expect_digest(key, "snapshot", _sha1(raw.get("snapshot")))
                batch.expect_field(key, "createdAt", raw.get("createdAt"))
                batch.expect_field(key, "resourceId", raw.get("resourceId"))
                stored = {**current, "snapshot": snapshot, "updatedAt": now}
                batch.set_fields(key, {"snapshot": dump_json(snapshot), "updatedAt": iso(now)})
            self.reindex(
                batch, RUN_INDEXES, None if current is None else _indexed(current), _indexed(stored)
            )
            return (snapshot,) if await self.conn.apply(batch) else None

        (result,) = await self.optimistic(attempt, f"update workflow run {run_id!r}")
        return result

    # -- export and import -------------------------------------------------------------------------

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        # docstring inherited
        every = LISTINGS[(False, False, False)]

        def key_of(member: str) -> str:
            run_id, workflow_name = unpack(member)
            return self._key(workflow_name, run_id)

        return await self._export_from(every, cursor, limit, key_of, _run)

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        # docstring inherited
        return await self._fetch_keys([self._key(name, run) for name, run in keys], _run)

    async def _import(self, table: str, records: list[Record]) -> None:
        # docstring inherited
        for run in records:
            assert isinstance(run, WorkflowRun)
            await self._persist(run, keep_created_at=False)

    async def _count(self, table: str) -> int:
        # docstring inherited
        return await transfer.count_index(self, LISTINGS[(False, False, False)])
