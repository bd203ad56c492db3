"""The scores domain contract: scorer results and (legacy) eval results."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, get_args

from composite_store.domains.args import optional_id, page_window, require_id
from composite_store.domains.base import Domain
from composite_store.errors import UnsupportedOperationError, ValidationError
from composite_store.records.base import coerce
from composite_store.records.scores import EvalRecord, EvalType, Score, ScoreSource
from composite_store.rules.paging import Window, build_page, window
from composite_store.types import Page, Pagination, PerPage

__all__ = ["EvalQuery", "ScoreQuery", "ScoresDomain"]

#: Default page size of every scores listing (Mastra's).
DEFAULT_PER_PAGE = 100


@dataclass(frozen=True, slots=True)
class ScoreQuery:
    """A normalised ``list_scores_*`` request: equality filters (None: any), handed to the hook.

    Every listing orders by ``createdAt`` DESC, ties by ``id`` DESC.
    """

    window: Window
    count: bool
    scorer_id: str | None = None
    run_id: str | None = None
    entity_id: str | None = None
    entity_type: str | None = None
    source: str | None = None
    trace_id: str | None = None
    span_id: str | None = None

    def columns(self) -> dict[str, str]:
        """The given filters as stored column name -> value."""
        given = {
            "scorerId": self.scorer_id,
            "runId": self.run_id,
            "entityId": self.entity_id,
            "entityType": self.entity_type,
            "source": self.source,
            "traceId": self.trace_id,
            "spanId": self.span_id,
        }
        return {k: v for k, v in given.items() if v is not None}


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """A normalised ``list_evals`` request, handed to the backend hook."""

    agent_name: str | None
    type: EvalType | None
    window: Window
    count: bool


class ScoresDomain(Domain):
    """Scorer results (``mastra_scorers``) and eval results (``mastra_evals``).

    Public methods validate their arguments and then call the abstract hooks below with
    normalised values; a backend implements the hooks only.
    """

    domain: ClassVar[str] = "scores"

    # -- scores ------------------------------------------------------------------------------------

    async def save_score(self, *, score: Score | Mapping[str, Any]) -> Score:
        """Insert or replace a score (upsert by ``id``; a new UUID4 when none is given) and
        return it. ``createdAt``/``updatedAt`` default to now."""
        self._check()
        record = coerce(Score, score, what="score")
        await self._save_score(record)
        return record

    async def get_score_by_id(self, *, id: str) -> Score | None:
        """Return the score with this id, or None."""
        self._check()
        return await self._get_score(require_id(id, "id"))

    async def list_scores_by_scorer_id(
        self,
        *,
        scorer_id: str,
        pagination: Pagination | Mapping[str, Any] | None = None,
        entity_id: str | None = None,
        entity_type: str | None = None,
        source: ScoreSource | None = None,
        include_total: bool = True,
    ) -> Page[Score]:
        """List the scores of one scorer, newest first (ties by id), optionally only those of
        one entity (``entity_id``, ``entity_type``) or one ``source`` (``LIVE`` | ``TEST``)."""
        self._check()
        if source is not None and source not in get_args(ScoreSource):
            raise ValidationError(f"source must be 'LIVE' or 'TEST', got {source!r}")
        query = ScoreQuery(
            scorer_id=require_id(scorer_id, "scorer_id"),
            entity_id=optional_id(entity_id, "entity_id"),
            entity_type=optional_id(entity_type, "entity_type"),
            source=source,
            window=page_window(pagination, default=DEFAULT_PER_PAGE),
            count=include_total,
        )
        return await self._page(query)

    async def list_scores_by_run_id(
        self,
        *,
        run_id: str,
        pagination: Pagination | Mapping[str, Any] | None = None,
        include_total: bool = True,
    ) -> Page[Score]:
        """List the scores given to one run, newest first (ties by id)."""
        self._check()
        query = ScoreQuery(
            run_id=require_id(run_id, "run_id"),
            window=page_window(pagination, default=DEFAULT_PER_PAGE),
            count=include_total,
        )
        return await self._page(query)

    async def list_scores_by_entity_id(
        self,
        *,
        entity_id: str,
        entity_type: str | None = None,
        pagination: Pagination | Mapping[str, Any] | None = None,
        include_total: bool = True,
    ) -> Page[Score]:
        """List the scores of one entity (an agent, a workflow), newest first (ties by id).

        ``entity_type`` narrows to one kind of entity; Mastra always passes it.
        """
        self._check()
        query = ScoreQuery(
            entity_id=require_id(entity_id, "entity_id"),
            entity_type=optional_id(entity_type, "entity_type"),
            window=page_window(pagination, default=DEFAULT_PER_PAGE),
            count=include_total,
        )
        return await self._page(query)

    async def list_scores_by_span(
        self,
        *,
        trace_id: str,
        span_id: str,
        pagination: Pagination | Mapping[str, Any] | None = None,
        include_total: bool = True,
    ) -> Page[Score]:
        """List the scores of one span of a trace, newest first (ties by id).

        Raises ``UnsupportedOperationError`` where ``capabilities.list_scores_by_span`` is off
        (the backend cannot serve it from an index).
        """
        self._check()
        if not self.capabilities.list_scores_by_span:
            raise UnsupportedOperationError(
                f"{self.backend} cannot list scores by span (capability list_scores_by_span "
                "is off); route the scores domain to a backend that has it"
            )
        query = ScoreQuery(
            trace_id=require_id(trace_id, "trace_id"),
            span_id=require_id(span_id, "span_id"),
            window=page_window(pagination, default=DEFAULT_PER_PAGE),
            count=include_total,
        )
        return await self._page(query)

    async def _page(self, query: ScoreQuery) -> Page[Score]:
        if query.window.empty:
            return build_page([], query.window, 0)
        rows, total = await self._list_scores(query)
        return build_page(rows, query.window, total)

    # -- evals -------------------------------------------------------------------------------------

    async def save_eval(self, *, eval: EvalRecord | Mapping[str, Any]) -> EvalRecord:
        """Append one eval result and return it (the table has no key: every call adds a row).
        ``run_id``/``global_run_id`` default to new UUID4s, ``created_at`` to now."""
        self._check()
        record = coerce(EvalRecord, eval, what="eval")
        await self._save_eval(record)
        return record

    async def list_evals(
        self,
        *,
        agent_name: str | None = None,
        type: EvalType | None = None,
        page: int = 0,
        per_page: PerPage = DEFAULT_PER_PAGE,
        include_total: bool = True,
    ) -> Page[EvalRecord]:
        """List eval results, newest first (ties by run_id, then metric_name).

        ``agent_name`` narrows to one agent. ``type="test"`` keeps evals of test runs (their
        ``test_info`` has a ``testPath``), ``type="live"`` the others, as Mastra classifies them.
        """
        self._check()
        if type is not None and type not in get_args(EvalType):
            raise ValidationError(f"type must be 'test' or 'live', got {type!r}")
        w = window(page, per_page, default=DEFAULT_PER_PAGE)
        if w.empty:
            return build_page([], w, 0)
        rows, total = await self._list_evals(
            EvalQuery(optional_id(agent_name, "agent_name"), type, w, include_total)
        )
        return build_page(rows, w, total)

    # -- hooks -------------------------------------------------------------------------------------

    @abstractmethod
    async def _save_score(self, score: Score) -> None:
        """Upsert a score by id."""

    @abstractmethod
    async def _get_score(self, score_id: str) -> Score | None:
        """Return the score or None."""

    @abstractmethod
    async def _list_scores(self, query: ScoreQuery) -> tuple[list[Score], int | None]:
        """Return up to ``limit + 1`` scores matching every filter of ``query.columns()`` from
        ``offset``, ordered by (createdAt, id) DESC, and the total when ``query.count``."""

    @abstractmethod
    async def _save_eval(self, record: EvalRecord) -> None:
        """Insert one eval row."""

    @abstractmethod
    async def _list_evals(self, query: EvalQuery) -> tuple[list[EvalRecord], int | None]:
        """Return up to ``limit + 1`` evals from ``offset`` ordered by (created_at, run_id,
        metric_name) DESC, and the total when ``query.count``. ``type="test"``: rows whose
        ``test_info.testPath`` is set; ``"live"``: the others (``test_info`` NULL included)."""
