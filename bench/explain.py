"""``python -m bench.explain``: the query plans of the library's newest-N read, include window
and a workflow's newest runs.

    uv run python -m bench.explain                      # sqlite, postgres, mariadb
    uv run python -m bench.explain --backend postgres

For each relational backend it fills a throwaway store (a 10,000-message thread and 200
threads of 50 messages), refreshes the planner's statistics, runs the library's
``list_messages`` (newest 20, alone and with a 2-before/2-after include window) once, then takes the
exact statements the library compiled for it from the store's statement cache and has the
engine explain them with the same bound values: ``EXPLAIN QUERY PLAN`` on SQLite,
``EXPLAIN (ANALYZE, BUFFERS)`` on PostgreSQL, ``ANALYZE`` on MariaDB (both run the statement
and report the rows actually read). Last, ``list_workflow_runs(workflow_name=...)`` (newest
20 runs of one of 5 workflows with 2,000 runs each, 10,000 in all) with the values the
library binds, explained the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from bench import workloads as w
from bench.backends import BACKENDS, scratch_dir
from bench.targets.library import LibraryTarget
from composite_store import OrderBy
from composite_store.domains.workflows import RunQuery
from composite_store.rules.paging import window
from composite_store.sql.database import SqlDatabase
from composite_store.sql.engine import Prepared
from composite_store.sql.memory import SqlMemory
from composite_store.sql.workflows import SqlWorkflows

Statement = Callable[[SqlMemory], Prepared]
Values = Callable[[str, Any], dict[str, Any]]


def _window_values(tid: str, at: Any) -> dict[str, Any]:
    return {"mid0": f"{tid}-m05000", "before0": 2, "after0": 2}


def _page_values(tid: str, at: Any) -> dict[str, Any]:
    return {"v0": tid, "offset": 0, "limit": 21}


def statements(memory: SqlMemory) -> dict[str, tuple[Statement, Values]]:
    """The statements ``list_messages`` issues for the newest 20 (from the statement cache),
    alone and with an include window, and the values it binds to them: the page alone, then
    the page with the window in one statement where the dialect reads them together
    (``one_statement_listing``), else the window alone."""
    found: dict[str, tuple[Statement, Values]] = {
        "newest 20 (page)": (
            lambda memory: memory._messages_page(1, False, (), True, True), _page_values
        ),
    }
    if memory.db.dialect.one_statement_listing:
        found["newest 20 with an include: the page, the target, its thread's owner, 2 before "
              "and 2 after"] = (
            lambda memory: memory._listing((1, False, (), True, False), 1),
            lambda tid, at: {**_page_values(tid, at), **_window_values(tid, at)},
        )
    else:
        found["the include: the target, its thread's owner, 2 before and 2 after"] = (
            lambda memory: memory._listing(None, 1), _window_values
        )
    return found


ANALYZE = {
    "sqlite": ["ANALYZE"],
    "postgresql": ["ANALYZE {messages}", "ANALYZE {threads}"],
    "mysql": ["ANALYZE TABLE {messages}", "ANALYZE TABLE {threads}", "ANALYZE TABLE {runs}"],
}
ANALYZE["postgresql"].append("ANALYZE {runs}")
#: Workflows and runs of each that the runs plan is taken over.
WORKFLOWS, RUNS_EACH = 5, 2000


def explain_sql(dialect: str, sql: str) -> str:
    if dialect == "sqlite":
        return "EXPLAIN QUERY PLAN " + sql
    if dialect == "postgresql":
        return "EXPLAIN (ANALYZE, BUFFERS) " + sql
    return "ANALYZE " + sql  # MariaDB: runs it and reports rows read (r_rows)


async def fill(t: LibraryTarget) -> None:
    await t.reset()
    await t.save_thread("long", "bench-user", w.EPOCH)
    for start in range(0, 10_000, 100):
        await t.save_messages(w.thread_messages("long", 100, start=start))
    for n in range(200):
        tid = f"t{n:04d}"
        await t.save_thread(tid, "bench-user", w.EPOCH)
        for start in range(0, 50, 10):
            await t.save_messages(w.thread_messages(tid, 10, start=start))


async def plans(name: str) -> str:
    backend = BACKENDS[name]
    scratch = scratch_dir()
    out: list[str] = []
    try:
        contenders = await backend.make(scratch)
        library = contenders.library
        assert isinstance(library, LibraryTarget)
        try:
            await library.open()
            await fill(library)
            memory = library.store.memory
            assert isinstance(memory, SqlMemory)
            db: SqlDatabase = memory.db
            dialect = db.dialect.name
            quote = db.engine.dialect.identifier_preparer
            tables = {name: quote.format_table(db.tables[name]) for name in ("messages", "threads")}
            tables["runs"] = quote.format_table(db.tables["workflow_snapshot"])
            workflows = library.store.workflows
            assert isinstance(workflows, SqlWorkflows)
            for i in range(WORKFLOWS * RUNS_EACH):
                await workflows.persist_workflow_snapshot(
                    workflow_name=f"wf{i % WORKFLOWS}", run_id=f"run{i:05d}",
                    snapshot={"status": "success"},
                )

            def analyze(conn: Connection) -> None:
                for stmt in ANALYZE.get(dialect, []):
                    result = conn.exec_driver_sql(stmt.format(**tables))
                    if result.returns_rows:  # MariaDB's ANALYZE TABLE reports a status row
                        result.fetchall()

            await db.run(analyze, write=True)
            newest = OrderBy(field="createdAt", direction="DESC")
            await memory.list_messages(
                thread_id="long", per_page=20, include_total=False, order_by=newest
            )
            page = await memory.list_messages(
                thread_id="long", per_page=20, include_total=False, order_by=newest,
                include=[{"id": "long-m05000", "with_previous_messages": 2,
                          "with_next_messages": 2}],
            )
            target = next(m for m in page.items if m.id == "long-m05000")
            out.append(f"## {name} ({db.engine.dialect.server_version_info or ''})")
            for title, (statement, values_of) in statements(memory).items():
                # The statement exactly as the library compiled and ran it, explained with the
                # values the library binds, through the library's own executor.
                compiled = len(db.statements)
                prepared = statement(memory)
                if len(db.statements) != compiled:
                    raise LookupError(f"the library did not run the statement {title!r}")
                bound = values_of("long", target.created_at)

                def explain(
                    conn: Connection, prepared: Prepared = prepared, args: Any = bound
                ) -> Any:
                    return prepared.run_variant(conn, explain_sql(dialect, prepared.sql), args)

                rows = await db.run(explain)
                out.append(f"\n### {title}\n\n```sql\n{prepared.sql.strip()}\n```\n\n```")
                out.extend(_format(dialect, rows))
                out.append("```")
            runs = await workflows.list_workflow_runs(workflow_name="wf3", page=0, per_page=20)
            assert len(runs.items) == 20
            query = RunQuery("wf3", None, None, None, window(0, 20, default=20), False)
            stmt, values = workflows.runs_page(query)
            sql = stmt.sql

            def explain_runs(conn: Connection) -> Any:
                return stmt.run_variant(conn, explain_sql(dialect, sql), values)

            rows = await db.run(explain_runs)
            out.append(f"\n### list_workflow_runs(workflow_name=...), newest 20\n\n```sql\n"
                       f"{sql.strip()}\n```\n\n```")
            out.extend(_format(dialect, list(rows)))
            out.append("```")
        finally:
            await library.close()
            if contenders.cleanup is not None:
                await contenders.cleanup()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return "\n".join(out)


def _format(dialect: str, rows: list[Any]) -> list[str]:
    if dialect == "sqlite":
        return [str(row[3]) for row in rows]
    if dialect == "postgresql":
        return [str(row[0]) for row in rows]
    header = "id select_type table type possible_keys key key_len ref rows r_rows filtered " \
             "r_filtered Extra"
    return [header, *(" | ".join("" if v is None else str(v) for v in row) for row in rows)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.explain", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", action="append", choices=["sqlite", "postgres", "mariadb"])
    args = parser.parse_args(argv)
    for name in args.backend or ["sqlite", "postgres", "mariadb"]:
        try:
            print(asyncio.run(plans(name)))
        except (ConnectionError, OSError, ImportError) as exc:
            print(f"## {name}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
