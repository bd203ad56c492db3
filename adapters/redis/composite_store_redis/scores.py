"""The scores domain on Redis: scores and evals as hashes, listed from sorted sets by createdAt.

A score is ``mastra_scorers:{<id>}``; each filter combination the contract offers (a scorer,
alone or with any of entityId / entityType / source; a run; an entity, with or without its
type; a span) has its own set ordered by createdAt with the id as tie-break, so a page is one
ranged read; one more set holds every score (for export). Evals have no key of their own:
each row gets an internal row id (``mastra_evals:{<row id>}``), and the sets order them by
(created_at, run_id, metric_name).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

from composite_store.domains.base import Capabilities
from composite_store.domains.scores import EvalQuery, ScoreQuery, ScoresDomain
from composite_store.errors import UnsupportedOperationError
from composite_store.records.base import Record
from composite_store.records.scores import EvalRecord, Score
from composite_store.schema import table
from composite_store_redis import transfer
from composite_store_redis.codec import decode_record, encode_record, from_stored
from composite_store_redis.domain import RedisDomain
from composite_store_redis.keys import SortedIndex, sorted_index, unpack

__all__ = ["RedisScores"]

_SCORES, _EVALS = table("scorers"), table("evals")
_SCORER_FILTERS = ("entityId", "entityType", "source")


def _score_index(*partition: str) -> SortedIndex:
    return sorted_index("scorers", partition, "createdAt", ["id"])


#: The set of filter columns a listing gives -> the index serving exactly them.
SCORE_LISTINGS: dict[frozenset[str], SortedIndex] = {
    frozenset(index.partition): index
    for index in (
        *(
            _score_index("scorerId", *extra)
            for n in range(len(_SCORER_FILTERS) + 1)
            for extra in itertools.combinations(_SCORER_FILTERS, n)
        ),
        # Every score, so that export lists them all (schema version 1).
        _score_index(),
        _score_index("runId"),
        _score_index("entityId"),
        _score_index("entityId", "entityType"),
        _score_index("traceId", "spanId"),
    )
}
SCORE_INDEXES = tuple(SCORE_LISTINGS.values())
#: The stored values the score indexes depend on (guarded by every upsert).
_INDEXED = sorted({c for i in SCORE_INDEXES for c in i.columns})

_ROW, _TYPE = "_row", "_type"


def _eval_index(*partition: str) -> SortedIndex:
    return sorted_index(
        "evals", partition, "created_at", ["run_id", "metric_name", _ROW], derived=(_ROW, _TYPE)
    )


#: (agent_name given, type given) -> index.
EVAL_LISTINGS: dict[tuple[bool, bool], SortedIndex] = {
    (False, False): _eval_index(),
    (True, False): _eval_index("agent_name"),
    (False, True): _eval_index(_TYPE),
    (True, True): _eval_index("agent_name", _TYPE),
}
EVALS_BY_RUN = _eval_index("run_id")
EVAL_INDEXES = (*EVAL_LISTINGS.values(), EVALS_BY_RUN)


def _score(fields: dict[str, str]) -> Score:
    return from_stored(Score, decode_record(_SCORES, fields))


def _eval(fields: dict[str, str]) -> EvalRecord:
    return from_stored(EvalRecord, decode_record(_EVALS, fields))


class RedisScores(RedisDomain, ScoresDomain):
    """Scores and evals on Redis (standalone or cluster)."""

    tables = ("scorers", "evals")
    indexes = (*SCORE_INDEXES, *EVAL_INDEXES)
    standalone_capabilities: ClassVar[Capabilities] = Capabilities(
        atomic_batches=True, transactions=True, list_scores_by_span=True
    )
    # A score and its sets sit in different slots: the record is written first, then its sets.
    cluster_capabilities: ClassVar[Capabilities] = Capabilities(list_scores_by_span=True)

    def _score_key(self, score_id: str) -> str:
        return self.keys.record("scorers", score_id)

    def _eval_key(self, row: str) -> str:
        return self.keys.record("evals", row)

    async def read_raw(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        # docstring inherited
        self._check()
        self._known_table(table)
        if table == "scorers":
            return await self._raw(table, self._score_key(key["id"]))
        # Evals have no key: find the rows of the run, then the one matching the rest.
        page = await self.conn.page(*self.index_set(EVALS_BY_RUN, [key["run_id"]]))
        for member in page.members:
            found = await self._raw(table, self._eval_key(unpack(member)[2]))
            if found and all(found.get(k) == v for k, v in key.items()):
                return found
        return None

    # -- scores ------------------------------------------------------------------------------------

    async def _save_score(self, score: Score) -> None:
        # docstring inherited
        key = self._score_key(score.id)
        stored = score.stored()

        async def attempt() -> bool | None:
            [old] = await self.conn.read([["HMGET", key, *_INDEXED]])
            present = any(v is not None for v in old)
            before = dict(zip(_INDEXED, old, strict=True)) if present else None
            batch = self.batch()
            if before is None:
                batch.expect_exists(key, False)
            else:
                for name, value in before.items():
                    batch.expect_field(key, name, value)
            batch.put_record(key, encode_record(_SCORES, stored))
            old_stored = {**decode_record(_SCORES, before), "id": score.id} if before else None
            self.reindex(batch, SCORE_INDEXES, old_stored, stored)
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"save_score({score.id!r})")

    async def _get_score(self, score_id: str) -> Score | None:
        # docstring inherited
        [found] = await self.conn.read([["HGETALL", self._score_key(score_id)]])
        return _score(found) if found else None

    async def _list_scores(self, query: ScoreQuery) -> tuple[list[Score], int | None]:
        # docstring inherited
        wanted = query.columns()
        index = SCORE_LISTINGS.get(frozenset(wanted))
        if index is None:
            raise UnsupportedOperationError(
                f"redis has no index for scores filtered by {sorted(wanted)}"
            )
        w = query.window
        page = await self.conn.page(
            *self.index_set(index, [wanted[c] for c in index.partition]),
            reverse=True,
            offset=w.offset,
            count=w.fetch,
            total=query.count,
        )
        found = await self.conn.read(
            [["HGETALL", self._score_key(unpack(m)[0])] for m in page.members]
        )
        # An entry a partly applied cluster write left behind no longer matches its set.
        scores = [_score(raw) for raw in found if raw]
        return [s for s in scores if _matches(s.stored(), wanted)], page.total

    # -- evals -------------------------------------------------------------------------------------

    async def _save_eval(self, record: EvalRecord) -> None:
        # docstring inherited
        row = uuid.uuid4().hex
        stored = record.stored()
        batch = self.batch()
        batch.put_record(self._eval_key(row), encode_record(_EVALS, stored))
        self.reindex(
            batch,
            EVAL_INDEXES,
            None,
            {**stored, _ROW: row, _TYPE: "test" if record.is_test else "live"},
        )
        await self.conn.apply(batch)

    async def _list_evals(self, query: EvalQuery) -> tuple[list[EvalRecord], int | None]:
        # docstring inherited
        index = EVAL_LISTINGS[(query.agent_name is not None, query.type is not None)]
        values = [v for v in (query.agent_name, query.type) if v is not None]
        w = query.window
        page = await self.conn.page(
            *self.index_set(index, values),
            reverse=True,
            offset=w.offset,
            count=w.fetch,
            total=query.count,
        )
        found = await self.conn.read(
            [["HGETALL", self._eval_key(unpack(m)[2])] for m in page.members]
        )
        return [_eval(raw) for raw in found if raw], page.total


    # -- export and import -------------------------------------------------------------------------

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        # docstring inherited
        if table == "scorers":
            return await self._export_from(
                SCORE_LISTINGS[frozenset()], cursor, limit,
                lambda m: self._score_key(unpack(m)[0]), _score,
            )
        return await self._export_from(
            EVAL_LISTINGS[(False, False)], cursor, limit,
            lambda m: self._eval_key(unpack(m)[2]), _eval,
        )

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        # docstring inherited
        return await self._fetch_keys([self._score_key(k[0]) for k in keys], _score)

    async def _import(self, table: str, records: list[Record]) -> None:
        # docstring inherited
        for record in records:
            if isinstance(record, Score):
                await self._save_score(record)
            elif isinstance(record, EvalRecord):
                await self._save_eval(record)

    async def _count(self, table: str) -> int:
        # docstring inherited
        if table == "scorers":
            return await transfer.count_index(self, SCORE_LISTINGS[frozenset()])
        return await transfer.count_index(self, EVAL_LISTINGS[(False, False)])


def _matches(stored: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    return all(stored.get(k) == v for k, v in wanted.items())
