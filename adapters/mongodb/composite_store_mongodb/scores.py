"""The scores domain on MongoDB: scorer results and (legacy) eval results."""

from __future__ import annotations

from typing import Any

from pymongo import DESCENDING

from composite_store.domains.scores import EvalQuery, ScoreQuery, ScoresDomain
from composite_store.records.scores import EvalRecord, Score
from composite_store.schema import table
from composite_store_mongodb.documents import NO_ID, document, from_document
from composite_store_mongodb.domain import MongoDomain
from composite_store_mongodb.paging import page_of

__all__ = ["MongoScores"]

SCORERS, EVALS = table("scorers"), table("evals")


class MongoScores(MongoDomain, ScoresDomain):
    """Scores keyed by the unique ``id``; evals appended (their table has no key)."""

    async def _save_score(self, score: Score) -> None:
        scores = self.c("scorers")
        doc = document(SCORERS, score)
        await self.conn.run(lambda _: scores.replace_one({"id": score.id}, doc, upsert=True))

    async def _get_score(self, score_id: str) -> Score | None:
        scores = self.c("scorers")
        doc = await self.conn.run(lambda _: scores.find_one({"id": score_id}, NO_ID))
        return from_document(Score, doc) if doc is not None else None

    async def _list_scores(self, query: ScoreQuery) -> tuple[list[Score], int | None]:
        docs, total = await page_of(
            self.conn,
            self.c("scorers"),
            query.columns(),
            [("createdAt", DESCENDING), ("id", DESCENDING)],
            query.window,
            query.count,
        )
        return [from_document(Score, d) for d in docs], total

    async def _save_eval(self, record: EvalRecord) -> None:
        evals = self.c("evals")
        doc = document(EVALS, record)
        await self.conn.run(lambda _: evals.insert_one(doc))

    async def _list_evals(self, query: EvalQuery) -> tuple[list[EvalRecord], int | None]:
        conditions: dict[str, Any] = {}
        if query.agent_name is not None:
            conditions["agent_name"] = query.agent_name
        if query.type == "test":
            conditions["test_info.testPath"] = {"$ne": None}
        elif query.type == "live":
            # Null or absent testPath, or no test_info at all (Mastra's live evals).
            conditions["test_info.testPath"] = None
        docs, total = await page_of(
            self.conn,
            self.c("evals"),
            conditions,
            [("created_at", DESCENDING), ("run_id", DESCENDING), ("metric_name", DESCENDING)],
            query.window,
            query.count,
        )
        return [from_document(EvalRecord, d) for d in docs], total
