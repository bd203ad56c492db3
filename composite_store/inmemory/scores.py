"""The scores domain in process memory (the reference implementation)."""

from __future__ import annotations

import itertools
from typing import Any

from composite_store.domains.scores import EvalQuery, ScoreQuery, ScoresDomain
from composite_store.inmemory.base import InMemoryData, InMemoryDomain, paginate
from composite_store.inmemory.physical import Layout
from composite_store.records.scores import EvalRecord, Score

__all__ = ["InMemoryScores"]

#: Stored column name -> record attribute.
_ATTRIBUTE = {info.serialization_alias or name: name for name, info in Score.model_fields.items()}


class InMemoryScores(InMemoryDomain, ScoresDomain):
    """Scores keyed by id; evals in insertion order (their table has no key)."""

    tables = ("scorers", "evals")
    layouts = {"scorers": Layout(Score, ("id",)), "evals": Layout(EvalRecord, ())}

    def __init__(self, *, data: InMemoryData | None = None) -> None:
        super().__init__(data=data)
        # Evals have no key of their own: a row number keeps them apart.
        self._row_numbers = itertools.count()

    @property
    def _scores(self) -> dict[str, Score]:
        return self.data.table("scorers")

    @property
    def _evals(self) -> dict[int, EvalRecord]:
        return self.data.table("evals")

    async def _save_score(self, score: Score) -> None:
        self._scores[score.id] = score.model_copy(deep=True)

    async def _get_score(self, score_id: str) -> Score | None:
        found = self._scores.get(score_id)
        return found.model_copy(deep=True) if found is not None else None

    async def _list_scores(self, query: ScoreQuery) -> tuple[list[Score], int | None]:
        wanted = query.columns()
        found = [
            s for s in self._scores.values()
            if all(getattr(s, _ATTRIBUTE[name]) == value for name, value in wanted.items())
        ]
        rows = paginate(
            found, lambda s: (s.created_at, s.id), descending=True, window=query.window
        )
        return [s.model_copy(deep=True) for s in rows], len(found) if query.count else None

    async def _save_eval(self, record: EvalRecord) -> None:
        self._evals[next(self._row_numbers)] = record.model_copy(deep=True)

    def _append_key(self, table: str) -> Any:
        # docstring inherited
        return next(self._row_numbers)

    async def _list_evals(self, query: EvalQuery) -> tuple[list[EvalRecord], int | None]:
        found = [
            e for e in self._evals.values()
            if (query.agent_name is None or e.agent_name == query.agent_name)
            and (query.type is None or e.is_test == (query.type == "test"))
        ]
        rows = paginate(
            found,
            lambda e: (e.created_at, e.run_id, e.metric_name),
            descending=True,
            window=query.window,
        )
        return [e.model_copy(deep=True) for e in rows], len(found) if query.count else None
