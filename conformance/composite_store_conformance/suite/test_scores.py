"""Scores domain behaviour: scorer results (listings by scorer, run, entity and span) and evals."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, ClassVar

import pytest

from composite_store import (
    EvalRecord,
    Pagination,
    Score,
    Store,
    UnsupportedOperationError,
    ValidationError,
)
from composite_store_conformance.base import Suite, capability_skip_reason
from composite_store_conformance.cases import PAGINATION_EDGES, at

__all__ = ["ScoresSuite"]

EDGE_NAMES = ("total", "page", "per_page", "expected", "has_more")

UNICODE = "Grüße \u2013 你好 🚀"


def score(sid: str, seconds: float = 0, **kw: Any) -> Score:
    """A score created at ``at(seconds)``; keyword arguments override any field."""
    kw.setdefault("scorer_id", "sc1")
    kw.setdefault("run_id", "run1")
    kw.setdefault("scorer", {"name": "relevance", "description": "is it relevant"})
    kw.setdefault("score", 0.5)
    kw.setdefault("input", [{"role": "user", "content": "hi"}])
    kw.setdefault("output", {"text": "hello"})
    kw.setdefault("source", "LIVE")
    kw.setdefault("created_at", at(seconds))
    kw.setdefault("updated_at", kw["created_at"])
    return Score(id=sid, **kw)


def evaluation(metric: str, seconds: float = 0, **kw: Any) -> EvalRecord:
    kw.setdefault("input", "question")
    kw.setdefault("output", "answer")
    kw.setdefault("result", {"score": 0.9, "details": {"reason": "ok"}})
    kw.setdefault("agent_name", "agent-a")
    kw.setdefault("instructions", "be helpful")
    kw.setdefault("run_id", f"run-{metric}")
    kw.setdefault("global_run_id", "global-1")
    kw.setdefault("created_at", at(seconds))
    return EvalRecord(metric_name=metric, **kw)


def ids(items: list[Any]) -> list[str]:
    return [item.id for item in items]


class ScoresSuite(Suite):
    """Every rule of the scores domain (DESIGN.md sections 3 and 10)."""

    domains: ClassVar[tuple[str, ...]] = ("scores",)

    # -- saving and reading scores ---------------------------------------------------------------

    async def test_save_and_get_score_round_trips_every_field(self, cs_store: Store) -> None:
        full = score(
            "s1",
            trace_id="tr1",
            span_id="sp1",
            preprocess_step_result={"steps": [1, 2]},
            extract_step_result={"claims": ["a", "b"]},
            analyze_step_result={"verdicts": [{"ok": True}]},
            score=0.875,
            reason=f"because {UNICODE}",
            metadata={"k": "v", "nested": {"n": [1, 2.5, None]}},
            preprocess_prompt="pre",
            extract_prompt="extract",
            generate_score_prompt="score it",
            generate_reason_prompt="why",
            analyze_prompt="analyze",
            reason_prompt="reason",
            additional_context={"docs": ["d1"]},
            request_context={"user": "u1"},
            entity_type="AGENT",
            entity={"id": "agent-1", "name": "Agent"},
            entity_id="agent-1",
            source="TEST",
            resource_id="res-1",
            thread_id="thr-1",
        )
        saved = await cs_store.scores.save_score(score=full)
        assert isinstance(saved, Score)
        assert saved == full
        got = await cs_store.scores.get_score_by_id(id="s1")
        assert got == full
        assert got is not None and got.created_at.tzinfo is not None

    async def test_optional_fields_round_trip_as_none(self, cs_store: Store) -> None:
        await cs_store.scores.save_score(score=score("s1"))
        got = await cs_store.scores.get_score_by_id(id="s1")
        assert got is not None
        assert got.trace_id is None and got.reason is None and got.metadata is None
        assert got.entity is None and got.extract_step_result is None

    async def test_save_score_generates_a_uuid4_and_timestamps(self, cs_store: Store) -> None:
        saved = await cs_store.scores.save_score(
            score={"scorerId": "sc1", "runId": "r", "scorer": {}, "score": 1, "input": "in",
                   "output": "out", "source": "LIVE"}
        )
        assert uuid.UUID(saved.id).version == 4
        assert saved.created_at.tzinfo is not None
        assert saved.updated_at >= saved.created_at
        got = await cs_store.scores.get_score_by_id(id=saved.id)
        assert got == saved
        other = await cs_store.scores.save_score(score=saved.model_dump(exclude={"id"}))
        assert other.id != saved.id

    async def test_save_score_accepts_every_spelling(self, cs_store: Store) -> None:
        snake = await cs_store.scores.save_score(
            score={"id": "a", "scorer_id": "sc", "run_id": "r", "scorer": {}, "score": 0,
                   "input": 1, "output": 2, "source": "TEST", "entity_id": "e"}
        )
        camel = await cs_store.scores.save_score(
            score={"id": "b", "scorerId": "sc", "runId": "r", "scorer": {}, "score": 0,
                   "input": 1, "output": 2, "source": "TEST", "entityId": "e"}
        )
        assert snake.entity_id == camel.entity_id == "e"
        stored = camel.model_dump(by_alias=True)
        assert stored["scorerId"] == "sc" and stored["entityId"] == "e"

    async def test_save_score_upserts_by_id(self, cs_store: Store) -> None:
        await cs_store.scores.save_score(score=score("s1", score=0.1))
        await cs_store.scores.save_score(score=score("s1", score=0.9, reason="changed"))
        got = await cs_store.scores.get_score_by_id(id="s1")
        assert got is not None and got.score == 0.9 and got.reason == "changed"
        assert (await cs_store.scores.list_scores_by_scorer_id(scorer_id="sc1")).total == 1

    async def test_get_missing_score_returns_none(self, cs_store: Store) -> None:
        assert await cs_store.scores.get_score_by_id(id="missing") is None

    @pytest.mark.parametrize(
        ("change", "match"),
        [
            ({"scorer_id": ""}, "scorer_id|scorerId"),
            ({"run_id": "  "}, "blank"),
            ({"source": "PROD"}, "source"),
            ({"score": float("nan")}, "finite"),
            ({"score": float("inf")}, "finite"),
            ({"score": True}, "boolean"),
            ({"score": "high"}, "score"),
            ({"input": None}, "input"),
            ({"output": None}, "output"),
            ({"scorer": "name"}, "scorer"),
            ({"created_at": datetime(2024, 1, 1)}, "naive"),
        ],
    )
    async def test_invalid_score_is_rejected_and_not_written(
        self, cs_store: Store, change: dict[str, Any], match: str
    ) -> None:
        data = score("bad").model_dump()
        data.update(change)
        with pytest.raises(ValidationError, match=match):
            await cs_store.scores.save_score(score=data)
        assert await cs_store.scores.get_score_by_id(id="bad") is None

    async def test_missing_required_fields_are_rejected(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="scorer"):
            await cs_store.scores.save_score(score={"runId": "r", "score": 1, "input": 1,
                                                 "output": 1, "source": "LIVE"})
        with pytest.raises(ValidationError, match="expected a Score or a dict"):
            await cs_store.scores.save_score(score="not a score")  # type: ignore[arg-type]

    async def test_blank_lookup_keys_are_rejected(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="id must be a non-empty string"):
            await cs_store.scores.get_score_by_id(id="")
        with pytest.raises(ValidationError, match="scorer_id must be a non-empty string"):
            await cs_store.scores.list_scores_by_scorer_id(scorer_id=" ")
        with pytest.raises(ValidationError, match="run_id must be a non-empty string"):
            await cs_store.scores.list_scores_by_run_id(run_id="")
        with pytest.raises(ValidationError, match="entity_id must be a non-empty string"):
            await cs_store.scores.list_scores_by_entity_id(entity_id="")

    async def test_timestamps_round_trip_in_utc_with_milliseconds(self, cs_store: Store) -> None:
        plus_two = datetime(2024, 5, 17, 11, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
        saved = await cs_store.scores.save_score(
            score=score("s1", created_at=plus_two, updated_at="2024-05-17T09:30:01.5Z")
        )
        got = await cs_store.scores.get_score_by_id(id="s1")
        assert got is not None
        assert got.created_at == datetime(2024, 5, 17, 9, 30, 0, 123000, tzinfo=UTC)
        assert got.created_at.utcoffset() == timedelta(0)
        assert got.updated_at == datetime(2024, 5, 17, 9, 30, 1, 500000, tzinfo=UTC)
        assert got == saved

    async def test_large_and_unicode_payloads(self, cs_store: Store) -> None:
        big = {"text": UNICODE * 5000, "items": [{"i": i, "s": UNICODE} for i in range(500)]}
        await cs_store.scores.save_score(
            score=score("s1", input=big, output=[UNICODE, big], reason=UNICODE * 100)
        )
        got = await cs_store.scores.get_score_by_id(id="s1")
        assert got is not None and got.input == big and got.output == [UNICODE, big]
        assert got.reason == UNICODE * 100

    # -- listings ------------------------------------------------------------------------------

    async def test_list_by_scorer_id_newest_first_with_filters(self, cs_store: Store) -> None:
        await cs_store.scores.save_score(score=score("a", 0, entity_id="e1", entity_type="AGENT"))
        await cs_store.scores.save_score(
            score=score("b", 1, entity_id="e1", entity_type="WORKFLOW", source="TEST")
        )
        await cs_store.scores.save_score(score=score("c", 2, entity_id="e2", entity_type="AGENT"))
        await cs_store.scores.save_score(score=score("other", 3, scorer_id="sc2"))
        page = await cs_store.scores.list_scores_by_scorer_id(scorer_id="sc1")
        assert ids(page.items) == ["c", "b", "a"]
        assert page.total == 3 and page.page == 0 and page.per_page == 100
        assert page.has_more is False
        by_entity = await cs_store.scores.list_scores_by_scorer_id(scorer_id="sc1", entity_id="e1")
        assert ids(by_entity.items) == ["b", "a"]
        by_type = await cs_store.scores.list_scores_by_scorer_id(
            scorer_id="sc1", entity_id="e1", entity_type="AGENT"
        )
        assert ids(by_type.items) == ["a"] and by_type.total == 1
        by_source = await cs_store.scores.list_scores_by_scorer_id(scorer_id="sc1", source="TEST")
        assert ids(by_source.items) == ["b"]
        missing = await cs_store.scores.list_scores_by_scorer_id(scorer_id="nobody")
        assert missing.items == [] and missing.total == 0

    async def test_list_by_scorer_id_rejects_bad_source(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="source must be 'LIVE' or 'TEST'"):
            await cs_store.scores.list_scores_by_scorer_id(scorer_id="sc1", source="live")  # type: ignore[arg-type]

    async def test_list_by_run_id(self, cs_store: Store) -> None:
        await cs_store.scores.save_score(score=score("a", 0, run_id="r1"))
        await cs_store.scores.save_score(score=score("b", 1, run_id="r1", scorer_id="sc2"))
        await cs_store.scores.save_score(score=score("c", 2, run_id="r2"))
        page = await cs_store.scores.list_scores_by_run_id(run_id="r1")
        assert ids(page.items) == ["b", "a"] and page.total == 2

    async def test_list_by_entity_id(self, cs_store: Store) -> None:
        await cs_store.scores.save_score(score=score("a", 0, entity_id="e1", entity_type="AGENT"))
        workflow_score = score("b", 1, entity_id="e1", entity_type="WORKFLOW")
        await cs_store.scores.save_score(score=workflow_score)
        await cs_store.scores.save_score(score=score("c", 2, entity_id="e2", entity_type="AGENT"))
        page = await cs_store.scores.list_scores_by_entity_id(entity_id="e1", entity_type="AGENT")
        assert ids(page.items) == ["a"] and page.total == 1
        page = await cs_store.scores.list_scores_by_entity_id(entity_id="e1")
        assert ids(page.items) == ["b", "a"] and page.total == 2

    @pytest.mark.cs_requires("list_scores_by_span")
    async def test_list_by_span(self, cs_store: Store) -> None:
        await cs_store.scores.save_score(score=score("a", 0, trace_id="t1", span_id="s1"))
        await cs_store.scores.save_score(score=score("b", 1, trace_id="t1", span_id="s1",
                                                  scorer_id="sc2"))
        await cs_store.scores.save_score(score=score("c", 2, trace_id="t1", span_id="s2"))
        await cs_store.scores.save_score(score=score("d", 3, trace_id="t2", span_id="s1"))
        page = await cs_store.scores.list_scores_by_span(trace_id="t1", span_id="s1")
        assert ids(page.items) == ["b", "a"] and page.total == 2
        page = await cs_store.scores.list_scores_by_span(
            trace_id="t1", span_id="s1", pagination=Pagination(page=1, per_page=1)
        )
        assert ids(page.items) == ["a"] and page.has_more is False and page.total == 2
        with pytest.raises(ValidationError, match="span_id must be a non-empty string"):
            await cs_store.scores.list_scores_by_span(trace_id="t1", span_id="")

    async def test_list_by_span_is_refused_where_the_capability_is_off(
        self, cs_store: Store
    ) -> None:
        if cs_store.scores.capabilities.list_scores_by_span:
            pytest.skip(
                capability_skip_reason(cs_store.scores, "list_scores_by_span", needed_on=False)
            )
        with pytest.raises(UnsupportedOperationError, match="list_scores_by_span"):
            await cs_store.scores.list_scores_by_span(trace_id="t1", span_id="s1")

    @pytest.mark.parametrize(EDGE_NAMES, PAGINATION_EDGES)
    async def test_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        # Listings are newest first: row i (in listing order) is created at at(total - i).
        for i in range(total):
            await cs_store.scores.save_score(score=score(f"s{i}", total - i))
        result = await cs_store.scores.list_scores_by_run_id(
            run_id="run1", pagination={"page": page, "perPage": per_page}
        )
        assert ids(result.items) == [f"s{i}" for i in expected]
        assert result.total == total
        assert result.has_more is has_more
        assert result.page == page and result.per_page == per_page

    async def test_ties_break_by_id_and_pages_never_overlap(self, cs_store: Store) -> None:
        for i in range(7):
            await cs_store.scores.save_score(score=score(f"s{i}", 0))
        first = await cs_store.scores.list_scores_by_scorer_id(scorer_id="sc1")
        assert ids(first.items) == [f"s{i}" for i in reversed(range(7))]
        seen: list[str] = []
        for p in range(4):
            page = await cs_store.scores.list_scores_by_scorer_id(
                scorer_id="sc1", pagination=Pagination(page=p, per_page=2)
            )
            seen += ids(page.items)
        assert seen == ids(first.items)

    async def test_per_page_zero_and_include_total(self, cs_store: Store) -> None:
        for i in range(3):
            await cs_store.scores.save_score(score=score(f"s{i}", i))
        empty = await cs_store.scores.list_scores_by_run_id(
            run_id="run1", pagination=Pagination(per_page=0)
        )
        assert empty.items == [] and empty.total == 0 and empty.has_more is False
        page = await cs_store.scores.list_scores_by_run_id(
            run_id="run1", pagination=Pagination(per_page=2), include_total=False
        )
        assert page.total is None and page.has_more is True and ids(page.items) == ["s2", "s1"]

    async def test_pagination_rejects_bad_values(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="per_page must be >= 0"):
            await cs_store.scores.list_scores_by_run_id(run_id="r", pagination={"per_page": -1})
        with pytest.raises(ValidationError, match="page must be >= 0"):
            await cs_store.scores.list_scores_by_run_id(run_id="r", pagination=Pagination(page=-1))
        with pytest.raises(ValidationError, match="page must be 0 when per_page is False"):
            await cs_store.scores.list_scores_by_run_id(
                run_id="r", pagination={"page": 1, "per_page": False}
            )
        with pytest.raises(ValidationError, match="pagination must be a Pagination or a dict"):
            await cs_store.scores.list_scores_by_run_id(run_id="r", pagination=5)  # type: ignore[arg-type]

    # -- evals -----------------------------------------------------------------------------------

    async def test_save_eval_round_trips_and_generates_run_ids(self, cs_store: Store) -> None:
        saved = await cs_store.scores.save_eval(
            eval={"input": UNICODE, "output": "out", "result": {"score": 1, "details": None},
                  "agentName": "agent-a", "metricName": "m", "instructions": "do it",
                  "testInfo": {"testName": "t", "testPath": "tests/a.test.ts"}}
        )
        assert isinstance(saved, EvalRecord)
        assert uuid.UUID(saved.run_id).version == 4
        assert uuid.UUID(saved.global_run_id).version == 4
        page = await cs_store.scores.list_evals(agent_name="agent-a")
        assert page.items == [saved] and page.total == 1

    async def test_save_eval_appends_rows(self, cs_store: Store) -> None:
        record = evaluation("m", 0)
        await cs_store.scores.save_eval(eval=record)
        await cs_store.scores.save_eval(eval=record)
        assert (await cs_store.scores.list_evals()).total == 2

    async def test_list_evals_by_agent_newest_first(self, cs_store: Store) -> None:
        await cs_store.scores.save_eval(eval=evaluation("m1", 0))
        await cs_store.scores.save_eval(eval=evaluation("m2", 2))
        await cs_store.scores.save_eval(eval=evaluation("m3", 1, agent_name="agent-b"))
        page = await cs_store.scores.list_evals(agent_name="agent-a")
        assert [e.metric_name for e in page.items] == ["m2", "m1"]
        assert page.total == 2 and page.per_page == 100
        everything = await cs_store.scores.list_evals()
        assert [e.metric_name for e in everything.items] == ["m2", "m3", "m1"]

    async def test_list_evals_by_type_test_or_live(self, cs_store: Store) -> None:
        await cs_store.scores.save_eval(eval=evaluation("test", 0, test_info={"testPath": "a.ts"}))
        await cs_store.scores.save_eval(eval=evaluation("live", 1))
        # Mastra's rule: without a testPath an eval counts as live.
        await cs_store.scores.save_eval(eval=evaluation("named", 2, test_info={"testName": "n"}))
        tests = await cs_store.scores.list_evals(agent_name="agent-a", type="test")
        assert [e.metric_name for e in tests.items] == ["test"] and tests.total == 1
        assert tests.items[0].test_info == {"testPath": "a.ts"}
        live = await cs_store.scores.list_evals(type="live")
        assert [e.metric_name for e in live.items] == ["named", "live"] and live.total == 2
        assert live.items[1].test_info is None
        with pytest.raises(ValidationError, match="type must be 'test' or 'live'"):
            await cs_store.scores.list_evals(type="all")  # type: ignore[arg-type]

    @pytest.mark.parametrize(EDGE_NAMES, PAGINATION_EDGES)
    async def test_list_evals_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        for i in range(total):
            await cs_store.scores.save_eval(eval=evaluation(f"m{i}", total - i))
        result = await cs_store.scores.list_evals(page=page, per_page=per_page)
        assert [e.metric_name for e in result.items] == [f"m{i}" for i in expected]
        assert result.total == total and result.has_more is has_more
        assert result.per_page == per_page

    async def test_list_evals_ties_break_by_run_id(self, cs_store: Store) -> None:
        for i in range(5):
            await cs_store.scores.save_eval(eval=evaluation("m", 0, run_id=f"r{i}"))
        seen: list[str] = []
        for p in range(3):
            seen += [e.run_id for e in (await cs_store.scores.list_evals(page=p, per_page=2)).items]
        assert seen == [f"r{i}" for i in reversed(range(5))]

    @pytest.mark.parametrize(
        ("change", "match"),
        [
            ({"result": {"details": "no score"}}, "numeric 'score'"),
            ({"result": {"score": "high"}}, "numeric 'score'"),
            ({"agent_name": ""}, "agent_name"),
            ({"metric_name": " "}, "blank"),
            ({"input": None}, "input"),
            ({"created_at": datetime(2024, 1, 1)}, "naive"),
        ],
    )
    async def test_invalid_eval_is_rejected_and_not_written(
        self, cs_store: Store, change: dict[str, Any], match: str
    ) -> None:
        data = evaluation("m").model_dump()
        data.update(change)
        with pytest.raises(ValidationError, match=match):
            await cs_store.scores.save_eval(eval=data)
        assert (await cs_store.scores.list_evals()).total == 0
