"""The experiments domain on Redis: an experiment and its results on one slot.

An experiment is ``mastra_experiments:{<experiment id>}``; its results are
``mastra_experiment_results:{<experiment id>}:<result id>``, with the experiment's result sets
(by startedAt; by status and startedAt) and the unique key
``experimentid_itemid_key:{<experiment id>}:<item id>`` (item id -> result id) in the same
slot, so adding a result is one guarded script on a cluster too. ``id_experimentid_idx:{<result
id>}`` points from a result id to its experiment. Experiments are listed from whole-table sets
by createdAt, one per combination of the filters (datasetId, targetType, targetId, status);
results across experiments from sets by startedAt (all; by status). The review summary counts
each experiment's status sets (``ZCARD``, one per experiment and status).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, ClassVar, get_args

from composite_store.domains.base import Capabilities
from composite_store.domains.experiments import (
    ExperimentQuery,
    ExperimentsDomain,
    ExperimentUpdate,
    ResultConflict,
    ResultQuery,
    ResultUpdate,
)
from composite_store.records.base import Record
from composite_store.records.experiments import Experiment, ExperimentResult, ResultStatus
from composite_store.schema import table
from composite_store_redis import records, transfer
from composite_store_redis.codec import decode_record, from_stored
from composite_store_redis.domain import RedisDomain
from composite_store_redis.keys import SortedIndex, escape, pack, sorted_index, unpack

__all__ = ["RedisExperiments"]

_EXPERIMENTS, _RESULTS = table("experiments"), table("experiment_results")
_R = "experiment_results"
_FILTERS = ("datasetId", "targetType", "targetId", "status")
#: The filter columns a listing gives -> the set of experiments serving exactly them.
EXPERIMENT_LISTINGS: dict[frozenset[str], SortedIndex] = {
    frozenset(combo): sorted_index("experiments", combo, "createdAt", ["id"])
    for n in range(len(_FILTERS) + 1)
    for combo in itertools.combinations(_FILTERS, n)
}
EXPERIMENT_INDEXES = tuple(EXPERIMENT_LISTINGS.values())
ALL_EXPERIMENTS = EXPERIMENT_LISTINGS[frozenset()]
#: (experiment given, status given) -> the set of results serving that listing.
RESULT_LISTINGS: dict[tuple[bool, bool], SortedIndex] = {
    (True, False): sorted_index(_R, ["experimentId"], "startedAt", ["id"]),
    (True, True): sorted_index(_R, ["experimentId", "status"], "startedAt", ["id"]),
    (False, False): sorted_index(_R, [], "startedAt", ["id", "experimentId"]),
    (False, True): sorted_index(_R, ["status"], "startedAt", ["id", "experimentId"]),
}
RESULT_INDEXES = tuple(RESULT_LISTINGS.values())
RESULT_EXPERIMENT = "id_experimentid_idx"
RESULT_ITEM = "experimentid_itemid_key"
_STATUSES: tuple[str, ...] = get_args(ResultStatus)


def _experiment(fields: Mapping[str, str]) -> Experiment:
    return from_stored(Experiment, decode_record(_EXPERIMENTS, fields))


def _result(fields: Mapping[str, str]) -> ExperimentResult:
    return from_stored(ExperimentResult, decode_record(_RESULTS, fields))


class RedisExperiments(RedisDomain, ExperimentsDomain):
    """Experiments and their results on Redis (standalone or cluster)."""

    tables = ("experiments", "experiment_results")
    indexes = (*EXPERIMENT_INDEXES, *RESULT_INDEXES)
    pointers = ((_R, RESULT_EXPERIMENT, "id", "experimentId"),)
    uniques = ((_R, RESULT_ITEM, ("experimentId", "itemId")),)
    standalone_capabilities: ClassVar[Capabilities] = Capabilities(
        atomic_batches=True, concurrent_updates=True, transactions=True
    )
    # An experiment's records share a slot; its entries in the whole-table sets follow.
    cluster_capabilities: ClassVar[Capabilities] = Capabilities(concurrent_updates=True)

    # -- keys --------------------------------------------------------------------------------------

    def _experiment_key(self, experiment_id: str) -> str:
        return self.keys.record("experiments", experiment_id)

    def _result_key(self, experiment_id: str, result_id: str) -> str:
        return self.keys.record(_R, experiment_id, pack(result_id))

    def _pointer(self, result_id: str) -> str:
        return self.keys.pointer(_R, RESULT_EXPERIMENT, result_id)

    def _item_key(self, experiment_id: str, item_id: str) -> str:
        return f"{self.keys.pointer(_R, RESULT_ITEM, experiment_id)}:{escape(item_id)}"

    async def _locate(self, result_id: str) -> tuple[str, dict[str, str]] | None:
        """(result key, its hash) of a result id, or None."""
        return await records.locate(
            self, self._pointer(result_id), lambda e: self._result_key(e, result_id)
        )

    async def read_raw(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        # docstring inherited
        self._check()
        self._known_table(table)
        if table == "experiments":
            return await self._raw(table, self._experiment_key(key["id"]))
        found = await self._locate(key["id"])
        return None if found is None else await self._raw(table, found[0])

    # -- experiments -------------------------------------------------------------------------------

    async def _insert_experiment(self, experiment: Experiment) -> bool:
        # docstring inherited
        return await records.insert(
            self,
            self._experiment_key(experiment.id),
            _EXPERIMENTS,
            EXPERIMENT_INDEXES,
            experiment.stored(),
        )

    async def _get_experiment(self, experiment_id: str) -> Experiment | None:
        # docstring inherited
        [raw] = await self.conn.read([["HGETALL", self._experiment_key(experiment_id)]])
        return _experiment(raw) if raw else None

    async def _update_experiment(
        self, experiment_id: str, update: ExperimentUpdate
    ) -> Experiment | None:
        # docstring inherited
        key = self._experiment_key(experiment_id)

        async def attempt() -> tuple[Experiment | None] | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            if not raw:
                return (None,)
            updated = update(_experiment(raw))
            batch = self.batch()
            records.guard(batch, key, _EXPERIMENTS, raw)
            records.put(
                self, batch, key, _EXPERIMENTS, EXPERIMENT_INDEXES, raw, updated.stored()
            )
            return (updated,) if await self.conn.apply(batch) else None

        (result,) = await self.optimistic(attempt, f"update_experiment({experiment_id!r})")
        return result

    async def _list_experiments(self, query: ExperimentQuery) -> tuple[list[Experiment], int]:
        # docstring inherited
        wanted = {
            column: value
            for column, value in zip(
                _FILTERS,
                (query.dataset_id, query.target_type, query.target_id, query.status),
                strict=True,
            )
            if value is not None
        }
        index = EXPERIMENT_LISTINGS[frozenset(wanted)]
        w = query.window
        page = await self.conn.page(
            *self.index_set(index, [wanted[c] for c in index.partition]),
            reverse=True,
            offset=w.offset,
            count=w.fetch,
            total=True,
        )
        found = await transfer.read_hashes(
            self, [self._experiment_key(unpack(m)[0]) for m in page.members]
        )
        rows = [_experiment(raw) for raw in found if raw]
        # An entry a partly applied cluster write left behind no longer matches its set.
        rows = [e for e in rows if all(e.stored().get(k) == v for k, v in wanted.items())]
        return rows, page.total or 0

    async def _delete_experiment(self, experiment_id: str) -> None:
        # docstring inherited
        await self._delete(experiment_id, with_experiment=True)

    async def _delete(self, experiment_id: str, *, with_experiment: bool) -> None:
        key = self._experiment_key(experiment_id)
        by_experiment = RESULT_LISTINGS[(True, False)]

        async def attempt() -> bool | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            page = await self.conn.page(
                *self.index_set(by_experiment, [experiment_id]),
                records=self.keys.record_prefix(_R, experiment_id),
            )
            assert page.records is not None
            batch = self.batch()
            if with_experiment:
                records.guard(batch, key, _EXPERIMENTS, raw)
                records.drop(self, batch, key, _EXPERIMENTS, EXPERIMENT_INDEXES, raw)
            for member, result in zip(page.members, page.records, strict=True):
                if not result:
                    continue
                result_id = unpack(member)[0]
                rkey = self._result_key(experiment_id, result_id)
                records.guard(batch, rkey, _RESULTS, result)
                records.drop(self, batch, rkey, _RESULTS, RESULT_INDEXES, result)
                batch.delete(self._item_key(experiment_id, result["itemId"]))
                batch.delete(self._pointer(result_id))
            if not batch:
                return True
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"delete experiment {experiment_id!r}")

    # -- results -----------------------------------------------------------------------------------

    async def _insert_result(self, result: ExperimentResult) -> ResultConflict | None:
        # docstring inherited
        experiment_id = result.experiment_id
        key = self._experiment_key(experiment_id)
        rkey = self._result_key(experiment_id, result.id)
        item_key = self._item_key(experiment_id, result.item_id)
        pointer = self._pointer(result.id)

        async def attempt() -> tuple[ResultConflict | None] | None:
            exists, taken, owner = await self.conn.read(
                [["EXISTS", key], ["EXISTS", item_key], ["GET", pointer]]
            )
            if not exists:
                return ("missing_experiment",)
            if owner is not None and await self._locate(result.id) is not None:
                return ("id_taken",)
            if taken:
                return ("item_taken",)
            batch = self.batch()
            # The experiment's slot first: on a cluster its guarded step runs before the
            # pointer's, so a lost race on the item leaves no pointer behind.
            batch.expect_exists(key)
            batch.expect_value(item_key, None)
            records.guard(batch, rkey, _RESULTS, None)
            records.put(self, batch, rkey, _RESULTS, RESULT_INDEXES, None, result.stored())
            batch.set_string(item_key, result.id)
            batch.expect_value(pointer, owner)
            batch.set_string(pointer, experiment_id)
            return (None,) if await self.conn.apply(batch) else None

        (outcome,) = await self.optimistic(attempt, f"add_experiment_result({result.id!r})")
        return outcome

    async def _get_result(self, result_id: str) -> ExperimentResult | None:
        # docstring inherited
        found = await self._locate(result_id)
        return None if found is None else _result(found[1])

    async def _update_result(
        self, result_id: str, update: ResultUpdate
    ) -> ExperimentResult | None:
        # docstring inherited
        async def attempt() -> tuple[ExperimentResult | None] | None:
            found = await self._locate(result_id)
            if found is None:
                return (None,)
            key, raw = found
            updated = update(_result(raw))
            batch = self.batch()
            records.guard(batch, key, _RESULTS, raw)
            records.put(self, batch, key, _RESULTS, RESULT_INDEXES, raw, updated.stored())
            return (updated,) if await self.conn.apply(batch) else None

        (outcome,) = await self.optimistic(attempt, f"update_experiment_result({result_id!r})")
        return outcome

    async def _list_results(self, query: ResultQuery) -> tuple[list[ExperimentResult], int]:
        # docstring inherited
        index = RESULT_LISTINGS[(query.experiment_id is not None, query.status is not None)]
        values = [v for v in (query.experiment_id, query.status) if v is not None]
        w = query.window
        local = query.experiment_id is not None
        page = await self.conn.page(
            *self.index_set(index, values),
            offset=w.offset,
            count=w.fetch,
            total=True,
            records=(
                self.keys.record_prefix(_R, query.experiment_id)
                if query.experiment_id is not None
                else None
            ),
        )
        if local:
            assert page.records is not None
            found = page.records
        else:
            pairs = [unpack(m) for m in page.members]
            found = await transfer.read_hashes(self, [self._result_key(e, r) for r, e in pairs])
        rows = [_result(raw) for raw in found if raw]
        rows = [r for r in rows if query.status is None or r.status == query.status]
        return rows, page.total or 0

    async def _delete_results(self, experiment_id: str) -> None:
        # docstring inherited
        await self._delete(experiment_id, with_experiment=False)

    async def _review_groups(self) -> list[tuple[str, str | None, int]]:
        # docstring inherited
        experiments = await self.conn.page(*self.index_set(ALL_EXPERIMENTS, []))
        ids = [unpack(m)[0] for m in experiments.members]
        by_experiment = RESULT_LISTINGS[(True, False)]
        by_status = RESULT_LISTINGS[(True, True)]
        counts = await self.conn.read(
            [
                ["ZCARD", self.keys.index(index, values)]
                for experiment_id in ids
                for index, values in (
                    (by_experiment, [experiment_id]),
                    *((by_status, [experiment_id, s]) for s in _STATUSES),
                )
            ]
        )
        width = 1 + len(_STATUSES)
        out: list[tuple[str, str | None, int]] = []
        for n, experiment_id in enumerate(ids):
            total, *per_status = (int(c) for c in counts[n * width : (n + 1) * width])
            out += [(experiment_id, s, c) for s, c in zip(_STATUSES, per_status, strict=True) if c]
            if total - sum(per_status) > 0:
                out.append((experiment_id, None, total - sum(per_status)))
        return out

    # -- export and import -------------------------------------------------------------------------

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        # docstring inherited
        if table == "experiments":
            return await self._export_from(
                ALL_EXPERIMENTS, cursor, limit, lambda m: self._experiment_key(unpack(m)[0]),
                _experiment,
            )

        def key_of(member: str) -> str:
            result_id, experiment_id = unpack(member)
            return self._result_key(experiment_id, result_id)

        return await self._export_from(
            RESULT_LISTINGS[(False, False)], cursor, limit, key_of, _result
        )

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        # docstring inherited
        if table == "experiments":
            return await self._fetch_keys(
                [self._experiment_key(k[0]) for k in keys], _experiment
            )
        found = [await self._locate(k[0]) for k in keys]
        return [_result(f[1]) for f in found if f is not None]

    async def _import(self, table: str, records_: list[Record]) -> None:
        # docstring inherited
        for record in records_:
            if isinstance(record, Experiment):
                await records.upsert(
                    self,
                    self._experiment_key(record.id),
                    _EXPERIMENTS,
                    EXPERIMENT_INDEXES,
                    record.stored(),
                )
            elif isinstance(record, ExperimentResult):
                await self._import_result(record)

    async def _import_result(self, result: ExperimentResult) -> None:
        experiment_id = result.experiment_id
        key = self._result_key(experiment_id, result.id)

        async def attempt() -> bool | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            batch = self.batch()
            records.guard(batch, key, _RESULTS, raw)
            if raw:
                batch.delete(self._item_key(experiment_id, raw["itemId"]))
            records.put(self, batch, key, _RESULTS, RESULT_INDEXES, raw, result.stored())
            batch.set_string(self._item_key(experiment_id, result.item_id), result.id)
            batch.set_string(self._pointer(result.id), experiment_id)
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"import experiment result {result.id!r}")

    async def _count(self, table: str) -> int:
        # docstring inherited
        index = ALL_EXPERIMENTS if table == "experiments" else RESULT_LISTINGS[(False, False)]
        return await transfer.count_index(self, index)
