"""The scores domain in SQL, written once for every relational backend."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from composite_store.domains.scores import EvalQuery, ScoreQuery, ScoresDomain
from composite_store.records.scores import EvalRecord, Score
from composite_store.records.trusted import from_row
from composite_store.schema import table
from composite_store.sql.domain import SqlDomain

__all__ = ["SqlScores"]

SCORERS, EVALS = table("scorers"), table("evals")


class SqlScores(SqlDomain, ScoresDomain):
    """Scorer results and eval results on a relational backend."""

    async def _save_score(self, score: Score) -> None:
        row = self.db.values(SCORERS, score.stored())
        stmt = self.db.dialect.upsert(
            self.tables["scorers"], [row], ["id"], [c for c in row if c != "id"]
        )
        await self.db.run(lambda conn: conn.execute(stmt), write=True)

    async def _get_score(self, score_id: str) -> Score | None:
        stmt = self.select_all("scorers").where(self.tables["scorers"].c.id == score_id)

        def read(conn: Connection) -> Score | None:
            row = conn.execute(stmt).mappings().first()
            return from_row(Score, row) if row is not None else None

        return await self.db.run(read)

    async def _list_scores(self, query: ScoreQuery) -> tuple[list[Score], int | None]:
        tbl = self.tables["scorers"]
        where = [tbl.c[name] == value for name, value in query.columns().items()]
        stmt = (
            self.select_all("scorers")
            .where(*where)
            .order_by(tbl.c.createdAt.desc(), tbl.c.id.desc())
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.fetch)
        count = sa.select(sa.func.count()).select_from(tbl).where(*where)

        return await self.read_page(Score, stmt, count if query.count else None)

    async def _save_eval(self, record: EvalRecord) -> None:
        stmt = self.tables["evals"].insert().values(self.db.values(EVALS, record.stored()))
        await self.db.run(lambda conn: conn.execute(stmt), write=True)

    async def _list_evals(self, query: EvalQuery) -> tuple[list[EvalRecord], int | None]:
        tbl = self.tables["evals"]
        where = []
        if query.agent_name is not None:
            where.append(tbl.c.agent_name == query.agent_name)
        if query.type is not None:
            # Mastra's rule: a test eval has test_info with a testPath; anything else is live.
            test_path = self.db.dialect.json_field(tbl.c.test_info, "testPath")
            if query.type == "test":
                where.append(sa.and_(tbl.c.test_info.is_not(None), test_path.is_not(None)))
            else:
                where.append(sa.or_(tbl.c.test_info.is_(None), test_path.is_(None)))
        stmt = (
            self.select_all("evals")
            .where(*where)
            .order_by(tbl.c.created_at.desc(), tbl.c.run_id.desc(), tbl.c.metric_name.desc())
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.fetch)
        count = sa.select(sa.func.count()).select_from(tbl).where(*where)

        return await self.read_page(EvalRecord, stmt, count if query.count else None)
