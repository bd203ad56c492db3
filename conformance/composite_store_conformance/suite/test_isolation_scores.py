"""Isolation of the scores domain's scoped reads: a run's, an entity's, a scorer's, a span's and
an agent's scores only, whatever the neighbours' ids look like (see ``test_isolation``)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from composite_store import EvalRecord, Score, Store, ValidationError
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import OWNERS, at

__all__ = ["ScoresIsolationSuite"]


def _score(sid: str, owner: str, entity_type: str) -> Score:
    """A score whose every scope (run, entity, scorer, trace, resource, thread) is ``owner``,
    created at the instant all the others are."""
    return Score(
        id=sid,
        scorer_id=owner,
        run_id=owner,
        entity_id=owner,
        entity_type=entity_type,
        trace_id=owner,
        span_id="span",
        resource_id=owner,
        thread_id=owner,
        scorer={"name": "relevance"},
        score=0.5,
        input={"q": owner},
        output={"a": owner},
        source="LIVE",
        created_at=at(0),
        updated_at=at(0),
    )


def _ids(items: list[Any]) -> list[str]:
    return sorted(item.id for item in items)


class ScoresIsolationSuite(Suite):
    """Scores listed by a scope are that scope's only; ids compare exactly."""

    domains: ClassVar[tuple[str, ...]] = ("scores",)

    async def scores_of_every_owner(self, store: Store) -> None:
        """``a<n>`` (an AGENT entity) and ``w<n>`` (a WORKFLOW one) for owner ``n``."""
        for n, owner in enumerate(OWNERS):
            await store.scores.save_score(score=_score(f"a{n}", owner, "AGENT"))
            await store.scores.save_score(score=_score(f"w{n}", owner, "WORKFLOW"))

    async def test_scores_by_run_entity_and_scorer_stay_in_their_scope(
        self, cs_store: Store
    ) -> None:
        await self.scores_of_every_owner(cs_store)
        scores = cs_store.scores
        for n, owner in enumerate(OWNERS):
            both = [f"a{n}", f"w{n}"]
            by_run = await scores.list_scores_by_run_id(run_id=owner)
            assert (_ids(by_run.items), by_run.total) == (both, 2), owner
            by_entity = await scores.list_scores_by_entity_id(entity_id=owner)
            assert _ids(by_entity.items) == both, owner
            agent = await scores.list_scores_by_entity_id(entity_id=owner, entity_type="AGENT")
            assert _ids(agent.items) == [f"a{n}"], owner
            folded = await scores.list_scores_by_entity_id(entity_id=owner, entity_type="agent")
            assert folded.items == [], owner
            by_scorer = await scores.list_scores_by_scorer_id(scorer_id=owner)
            assert _ids(by_scorer.items) == both, owner
            crossed = await scores.list_scores_by_scorer_id(scorer_id=owner, entity_id="alice")
            assert _ids(crossed.items) == (both if owner == "alice" else []), owner

    async def test_pages_of_a_scoped_listing_never_reach_another_scope(
        self, cs_store: Store
    ) -> None:
        # Every score has the same createdAt: the page boundary is decided by the id tie-break.
        await self.scores_of_every_owner(cs_store)
        for n, owner in enumerate(OWNERS):
            seen: list[Score] = []
            for page_no in (0, 1, 2):
                page = await cs_store.scores.list_scores_by_run_id(
                    run_id=owner, pagination={"page": page_no, "per_page": 1}
                )
                seen.extend(page.items)
            assert _ids(seen) == [f"a{n}", f"w{n}"], owner

    @pytest.mark.cs_requires("list_scores_by_span")
    async def test_scores_by_span_stay_in_their_trace_and_span(self, cs_store: Store) -> None:
        await self.scores_of_every_owner(cs_store)
        for n, owner in enumerate(OWNERS):
            page = await cs_store.scores.list_scores_by_span(trace_id=owner, span_id="span")
            assert _ids(page.items) == [f"a{n}", f"w{n}"], owner
            other = await cs_store.scores.list_scores_by_span(trace_id="span", span_id=owner)
            assert other.items == [], owner

    @pytest.mark.cs_requires("list_scores_by_span")
    async def test_trace_and_span_ids_never_run_together(self, cs_store: Store) -> None:
        # A key or index built by joining the two ids would take one pair for the other.
        first = _score("first", "alice", "AGENT").model_copy(
            update={"trace_id": "t:s", "span_id": "1"}
        )
        second = _score("second", "alice", "AGENT").model_copy(
            update={"trace_id": "t", "span_id": "s:1"}
        )
        for record in (first, second):
            await cs_store.scores.save_score(score=record)
        page = await cs_store.scores.list_scores_by_span(trace_id="t", span_id="s:1")
        assert _ids(page.items) == ["second"]
        page = await cs_store.scores.list_scores_by_span(trace_id="t:s", span_id="1")
        assert _ids(page.items) == ["first"]

    async def test_evals_by_agent_stay_with_their_agent(self, cs_store: Store) -> None:
        for n, owner in enumerate(OWNERS):
            await cs_store.scores.save_eval(
                eval=EvalRecord(
                    input="q",
                    output="a",
                    result={"score": 1.0},
                    agent_name=owner,
                    metric_name=f"metric-{n}",
                    instructions="be exact",
                    test_info={},
                    created_at=at(0),
                )
            )
        for n, owner in enumerate(OWNERS):
            page = await cs_store.scores.list_evals(agent_name=owner)
            assert [e.metric_name for e in page.items] == [f"metric-{n}"], owner
            assert page.total == 1, owner

    @pytest.mark.parametrize(
        "value", [{"$ne": None}, {"$regex": ".*"}, ["alice", "mallory"], 1, ""], ids=repr
    )
    async def test_an_operator_in_place_of_an_id_is_refused(
        self, cs_store: Store, value: Any
    ) -> None:
        scores = cs_store.scores
        with pytest.raises(ValidationError, match="run_id"):
            await scores.list_scores_by_run_id(run_id=value)
        with pytest.raises(ValidationError, match="entity_id"):
            await scores.list_scores_by_entity_id(entity_id=value)
        with pytest.raises(ValidationError, match="entity_type"):
            await scores.list_scores_by_entity_id(entity_id="alice", entity_type=value)
        with pytest.raises(ValidationError, match="scorer_id"):
            await scores.list_scores_by_scorer_id(scorer_id=value)
        with pytest.raises(ValidationError, match="agent_name"):
            await scores.list_evals(agent_name=value)
