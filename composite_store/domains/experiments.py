"""The experiments domain contract: experiment runs, their per-item results, review counts."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Literal, get_args

from composite_store.domains.args import (
    UNSET,
    given,
    optional_id,
    optional_int,
    page_window,
    require_id,
)
from composite_store.domains.base import Domain
from composite_store.errors import ConflictError, NotFoundError, ValidationError
from composite_store.records.base import coerce, now_utc
from composite_store.records.experiments import (
    Experiment,
    ExperimentResult,
    ExperimentStatus,
    ResultStatus,
    ReviewSummary,
)
from composite_store.rules.paging import Window, build_page
from composite_store.rules.review import summarize_reviews
from composite_store.types import Page, Pagination

__all__ = [
    "ExperimentQuery",
    "ExperimentUpdate",
    "ExperimentsDomain",
    "ResultConflict",
    "ResultQuery",
    "ResultUpdate",
]

#: Default page size of every experiments listing.
DEFAULT_PER_PAGE = 100

#: Pure functions from the stored record to the updated one; raising aborts the update.
ExperimentUpdate = Callable[[Experiment], Experiment]
ResultUpdate = Callable[[ExperimentResult], ExperimentResult]
#: Why ``_insert_result`` wrote nothing.
ResultConflict = Literal["missing_experiment", "id_taken", "item_taken"]


@dataclass(frozen=True, slots=True)
class ExperimentQuery:
    """A normalised ``list_experiments`` request, handed to the backend hook."""

    dataset_id: str | None
    target_type: str | None
    target_id: str | None
    status: str | None
    window: Window


@dataclass(frozen=True, slots=True)
class ResultQuery:
    """A normalised ``list_experiment_results`` request, handed to the backend hook."""

    experiment_id: str | None
    status: str | None
    window: Window


def _choice(value: Any, what: str, allowed: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if value not in allowed:
        raise ValidationError(f"{what} must be one of {', '.join(allowed)}; got {value!r}")
    return str(value)


class ExperimentsDomain(Domain):
    """Experiment runs over datasets and their per-item results (Mastra's experiments storage).

    Public methods validate their arguments and call the abstract hooks with normalised values;
    read-modify-writes (``update_*``) run atomically in the backend.
    """

    domain: ClassVar[str] = "experiments"

    # -- experiments -------------------------------------------------------------------------------

    async def create_experiment(
        self,
        *,
        target_type: str,
        target_id: str,
        name: str | None = None,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        dataset_id: str | None = None,
        dataset_version: int | None = None,
        total_items: int = 0,
        id: str | None = None,
    ) -> Experiment:
        """Create an experiment in status ``pending`` with zero counts and return it.

        ``id`` defaults to a new UUID; ``dataset_id`` is not checked (datasets may live in
        another backend). Raises ``ConflictError`` when ``id`` is taken.
        """
        self._check()
        now = now_utc()
        fields: dict[str, Any] = {
            "name": name,
            "description": description,
            "metadata": metadata,
            "dataset_id": optional_id(dataset_id, "dataset_id"),
            "dataset_version": optional_int(dataset_version, "dataset_version"),
            "target_type": require_id(target_type, "target_type"),
            "target_id": require_id(target_id, "target_id"),
            "total_items": optional_int(total_items, "total_items"),
            "status": "pending",
            "created_at": now,
            "updated_at": now,
        }
        if id is not None:
            fields["id"] = require_id(id, "id")
        experiment = coerce(Experiment, fields, what="experiment")
        if not await self._insert_experiment(experiment):
            raise ConflictError(f"experiment {experiment.id!r} already exists")
        return experiment

    async def update_experiment(
        self,
        *,
        id: str,
        name: str | None = UNSET,
        description: str | None = UNSET,
        metadata: Mapping[str, Any] | None = UNSET,
        status: ExperimentStatus = UNSET,
        total_items: int = UNSET,
        succeeded_count: int = UNSET,
        failed_count: int = UNSET,
        skipped_count: int = UNSET,
        started_at: datetime | str | None = UNSET,
        completed_at: datetime | str | None = UNSET,
    ) -> Experiment:
        """Replace the given fields (``None`` clears an optional one), bump ``updated_at`` and
        return the experiment. Raises ``NotFoundError`` when it does not exist and
        ``ValidationError`` for an invalid value (nothing written)."""
        self._check()
        experiment_id = require_id(id, "id")
        changes = given(
            name=name,
            description=description,
            metadata=metadata,
            status=status,
            total_items=total_items,
            succeeded_count=succeeded_count,
            failed_count=failed_count,
            skipped_count=skipped_count,
            started_at=started_at,
            completed_at=completed_at,
        )
        now = now_utc()

        def update(current: Experiment) -> Experiment:
            return coerce(
                Experiment,
                {**current.model_dump(), **changes, "updated_at": now},
                what=f"experiment {experiment_id!r}",
            )

        updated = await self._update_experiment(experiment_id, update)
        if updated is None:
            raise NotFoundError(f"experiment {experiment_id!r} not found")
        return updated

    async def get_experiment_by_id(self, *, id: str) -> Experiment | None:
        """Return the experiment, or None."""
        self._check()
        return await self._get_experiment(require_id(id, "id"))

    async def list_experiments(
        self,
        *,
        dataset_id: str | None = None,
        target_type: str | None = None,
        target_id: str | None = None,
        status: ExperimentStatus | None = None,
        pagination: Pagination | Mapping[str, Any] | None = None,
    ) -> Page[Experiment]:
        """List experiments matching every given filter, newest first (ties by id)."""
        self._check()
        query = ExperimentQuery(
            optional_id(dataset_id, "dataset_id"),
            optional_id(target_type, "target_type"),
            optional_id(target_id, "target_id"),
            _choice(status, "status", get_args(ExperimentStatus)),
            page_window(pagination, default=DEFAULT_PER_PAGE),
        )
        if query.window.empty:
            return build_page([], query.window, 0)
        rows, total = await self._list_experiments(query)
        return build_page(rows, query.window, total)

    async def delete_experiment(self, *, id: str) -> None:
        """Delete the experiment and all its results; a missing one is not an error."""
        self._check()
        await self._delete_experiment(require_id(id, "id"))

    # -- results -----------------------------------------------------------------------------------

    async def add_experiment_result(
        self,
        *,
        experiment_id: str,
        item_id: str,
        input: Any,
        output: Any = None,
        ground_truth: Any = None,
        error: Any = None,
        started_at: datetime | str | None = None,
        completed_at: datetime | str | None = None,
        retry_count: int = 0,
        trace_id: str | None = None,
        status: ResultStatus | None = None,
        tags: Sequence[str] | None = None,
        item_dataset_version: int | None = None,
        id: str | None = None,
    ) -> ExperimentResult:
        """Record the result of one dataset item and return it.

        ``started_at``/``completed_at`` default to now, ``id`` to a new UUID. Raises
        ``NotFoundError`` when the experiment does not exist and ``ConflictError`` when ``id``
        is taken or the experiment already has a result for ``item_id``.
        """
        self._check()
        now = now_utc()
        fields: dict[str, Any] = {
            "experiment_id": require_id(experiment_id, "experiment_id"),
            "item_id": require_id(item_id, "item_id"),
            "item_dataset_version": optional_int(item_dataset_version, "item_dataset_version"),
            "input": input,
            "output": output,
            "ground_truth": ground_truth,
            "error": error,
            "started_at": started_at or now,
            "completed_at": completed_at or now,
            "retry_count": optional_int(retry_count, "retry_count"),
            "trace_id": trace_id,
            "status": status,
            "tags": tags,
            "created_at": now,
        }
        if id is not None:
            fields["id"] = require_id(id, "id")
        result = coerce(ExperimentResult, fields, what="experiment result")
        conflict = await self._insert_result(result)
        if conflict == "missing_experiment":
            raise NotFoundError(f"experiment {result.experiment_id!r} not found")
        if conflict == "id_taken":
            raise ConflictError(f"experiment result {result.id!r} already exists")
        if conflict == "item_taken":
            raise ConflictError(
                f"experiment {result.experiment_id!r} already has a result for item "
                f"{result.item_id!r}; update it with update_experiment_result"
            )
        return result

    async def update_experiment_result(
        self,
        *,
        id: str,
        experiment_id: str | None = None,
        status: ResultStatus | None = UNSET,
        tags: Sequence[str] | None = UNSET,
    ) -> ExperimentResult:
        """Set the review ``status`` and/or ``tags`` of a result (``None`` clears) and return it.

        With ``experiment_id`` the result must belong to that experiment. Raises
        ``NotFoundError`` when the result does not exist (there).
        """
        self._check()
        result_id = require_id(id, "id")
        owner = optional_id(experiment_id, "experiment_id")
        changes = given(status=status, tags=tags)

        def update(current: ExperimentResult) -> ExperimentResult:
            if owner is not None and current.experiment_id != owner:
                raise NotFoundError(
                    f"experiment result {result_id!r} not found in experiment {owner!r}"
                )
            return coerce(
                ExperimentResult,
                {**current.model_dump(), **changes},
                what=f"experiment result {result_id!r}",
            )

        updated = await self._update_result(result_id, update)
        if updated is None:
            raise NotFoundError(f"experiment result {result_id!r} not found")
        return updated

    async def get_experiment_result_by_id(self, *, id: str) -> ExperimentResult | None:
        """Return the result, or None."""
        self._check()
        return await self._get_result(require_id(id, "id"))

    async def list_experiment_results(
        self,
        *,
        experiment_id: str | None = None,
        status: ResultStatus | None = None,
        pagination: Pagination | Mapping[str, Any] | None = None,
    ) -> Page[ExperimentResult]:
        """List results (of one experiment, with one review status, when given) in execution
        order: ``started_at`` ascending, ties by id."""
        self._check()
        query = ResultQuery(
            optional_id(experiment_id, "experiment_id"),
            _choice(status, "status", get_args(ResultStatus)),
            page_window(pagination, default=DEFAULT_PER_PAGE),
        )
        if query.window.empty:
            return build_page([], query.window, 0)
        rows, total = await self._list_results(query)
        return build_page(rows, query.window, total)

    async def delete_experiment_results(self, *, experiment_id: str) -> None:
        """Delete every result of the experiment (the experiment stays)."""
        self._check()
        await self._delete_results(require_id(experiment_id, "experiment_id"))

    async def get_review_summary(self) -> list[ReviewSummary]:
        """Per experiment with results: how many are ``needs-review``, ``reviewed`` and
        ``complete``, and the total; ordered by experiment id."""
        self._check()
        return summarize_reviews(await self._review_groups())

    # -- hooks -------------------------------------------------------------------------------------

    @abstractmethod
    async def _insert_experiment(self, experiment: Experiment) -> bool:
        """Insert the experiment; return False (writing nothing) when its id is taken."""

    @abstractmethod
    async def _get_experiment(self, experiment_id: str) -> Experiment | None:
        """Return the experiment or None."""

    @abstractmethod
    async def _update_experiment(
        self, experiment_id: str, update: ExperimentUpdate
    ) -> Experiment | None:
        """Atomically apply ``update`` to the stored experiment and store every field of the
        result; return it, or None when the experiment does not exist."""

    @abstractmethod
    async def _list_experiments(self, query: ExperimentQuery) -> tuple[list[Experiment], int]:
        """Return up to ``limit + 1`` matching experiments from ``offset`` by (createdAt, id)
        descending, and the total."""

    @abstractmethod
    async def _delete_experiment(self, experiment_id: str) -> None:
        """Delete the experiment and its results atomically."""

    @abstractmethod
    async def _insert_result(self, result: ExperimentResult) -> ResultConflict | None:
        """Atomically check and insert; return why nothing was written (missing experiment,
        taken id, or a result for the same (experimentId, itemId)), or None."""

    @abstractmethod
    async def _get_result(self, result_id: str) -> ExperimentResult | None:
        """Return the result or None."""

    @abstractmethod
    async def _update_result(
        self, result_id: str, update: ResultUpdate
    ) -> ExperimentResult | None:
        """Atomically apply ``update`` to the stored result and store every field of the
        result; return it, or None when the result does not exist."""

    @abstractmethod
    async def _list_results(self, query: ResultQuery) -> tuple[list[ExperimentResult], int]:
        """Return up to ``limit + 1`` matching results from ``offset`` by (startedAt, id)
        ascending, and the total."""

    @abstractmethod
    async def _delete_results(self, experiment_id: str) -> None:
        """Delete every result of the experiment."""

    @abstractmethod
    async def _review_groups(self) -> list[tuple[str, str | None, int]]:
        """Count results per (experimentId, status), in any order."""
