"""The experiments domain in process memory (the reference implementation)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from composite_store.domains.experiments import (
    ExperimentQuery,
    ExperimentsDomain,
    ExperimentUpdate,
    ResultConflict,
    ResultQuery,
    ResultUpdate,
)
from composite_store.inmemory.base import InMemoryDomain, paginate
from composite_store.inmemory.physical import Layout
from composite_store.records.experiments import Experiment, ExperimentResult

__all__ = ["InMemoryExperiments"]

_NEVER = datetime.min.replace(tzinfo=UTC)


class InMemoryExperiments(InMemoryDomain, ExperimentsDomain):
    """Experiments and their results in dictionaries keyed by id."""

    tables = ("experiments", "experiment_results")
    layouts = {
        "experiments": Layout(Experiment, ("id",)),
        "experiment_results": Layout(
            ExperimentResult, ("id",), unique=(("experimentId", "itemId"),)
        ),
    }

    @property
    def _experiments(self) -> dict[str, Experiment]:
        return self.data.table("experiments")

    @property
    def _results(self) -> dict[str, ExperimentResult]:
        return self.data.table("experiment_results")

    # -- experiments -------------------------------------------------------------------------------

    async def _insert_experiment(self, experiment: Experiment) -> bool:
        if experiment.id in self._experiments:
            return False
        self._experiments[experiment.id] = experiment.model_copy(deep=True)
        return True

    async def _get_experiment(self, experiment_id: str) -> Experiment | None:
        found = self._experiments.get(experiment_id)
        return found.model_copy(deep=True) if found is not None else None

    async def _update_experiment(
        self, experiment_id: str, update: ExperimentUpdate
    ) -> Experiment | None:
        current = self._experiments.get(experiment_id)
        if current is None:
            return None
        updated = update(current.model_copy(deep=True))
        self._experiments[experiment_id] = updated.model_copy(deep=True)
        return updated

    async def _list_experiments(self, query: ExperimentQuery) -> tuple[list[Experiment], int]:
        def matches(e: Experiment) -> bool:
            return (
                (query.dataset_id is None or e.dataset_id == query.dataset_id)
                and (query.target_type is None or e.target_type == query.target_type)
                and (query.target_id is None or e.target_id == query.target_id)
                and (query.status is None or e.status == query.status)
            )

        found = [e for e in self._experiments.values() if matches(e)]
        rows = paginate(
            found, lambda e: (e.created_at or _NEVER, e.id), descending=True, window=query.window
        )
        return [e.model_copy(deep=True) for e in rows], len(found)

    async def _delete_experiment(self, experiment_id: str) -> None:
        self._experiments.pop(experiment_id, None)
        await self._delete_results(experiment_id)

    # -- results -----------------------------------------------------------------------------------

    async def _insert_result(self, result: ExperimentResult) -> ResultConflict | None:
        if result.experiment_id not in self._experiments:
            return "missing_experiment"
        if result.id in self._results:
            return "id_taken"
        if any(
            r.experiment_id == result.experiment_id and r.item_id == result.item_id
            for r in self._results.values()
        ):
            return "item_taken"
        self._results[result.id] = result.model_copy(deep=True)
        return None

    async def _get_result(self, result_id: str) -> ExperimentResult | None:
        found = self._results.get(result_id)
        return found.model_copy(deep=True) if found is not None else None

    async def _update_result(
        self, result_id: str, update: ResultUpdate
    ) -> ExperimentResult | None:
        current = self._results.get(result_id)
        if current is None:
            return None
        updated = update(current.model_copy(deep=True))
        self._results[result_id] = updated.model_copy(deep=True)
        return updated

    async def _list_results(self, query: ResultQuery) -> tuple[list[ExperimentResult], int]:
        found = [
            r
            for r in self._results.values()
            if (query.experiment_id is None or r.experiment_id == query.experiment_id)
            and (query.status is None or r.status == query.status)
        ]
        rows = paginate(
            found, lambda r: (r.started_at, r.id), descending=False, window=query.window
        )
        return [r.model_copy(deep=True) for r in rows], len(found)

    async def _delete_results(self, experiment_id: str) -> None:
        for rid in [k for k, r in self._results.items() if r.experiment_id == experiment_id]:
            del self._results[rid]

    async def _review_groups(self) -> list[tuple[str, str | None, int]]:
        counts = Counter((r.experiment_id, r.status) for r in self._results.values())
        return [(experiment_id, status, n) for (experiment_id, status), n in counts.items()]
