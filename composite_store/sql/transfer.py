"""Export and import of whole tables in SQL (``Transferable.export_records`` and friends),
written once for every relational backend.

Export pages by key (keyset: ``WHERE key > :last ORDER BY key``), so a page costs the same at the
start and at the end of a large table; Mastra's ``evals`` table has no key and pages by offset
in a fixed order instead. Import is the tables' multi-row upsert by key, with the shadow
timestamps written alongside (``SqlDatabase.values``): rows arrive exactly as exported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from composite_store.errors import ValidationError
from composite_store.records.base import Record
from composite_store.records.tables import record_from_row, row_of
from composite_store.schema import table
from composite_store.sql.database import SqlDatabase

__all__ = ["Tables", "count_rows", "export_rows", "fetch_rows", "import_rows"]

#: Keys per lookup statement (an OR of key equalities, or an IN list).
_FETCH_CHUNK = 100
#: The order of a keyless table's export (Mastra's evals: several metrics share a run id).
_KEYLESS_ORDER = ("created_at", "run_id", "metric_name", "agent_name", "global_run_id")


class Tables(Protocol):
    """What export and import need of a relational domain (``SqlDomain`` has it): its
    database, the rendered tables and the multi-row upsert."""

    @property
    def db(self) -> SqlDatabase: ...

    @property
    def tables(self) -> Mapping[str, sa.Table]: ...

    def upsert(
        self, base: str, rows: Sequence[Mapping[str, Any]], key: Sequence[str]
    ) -> Sequence[tuple[Any, dict[str, Any]]]: ...


def _decode_cursor(cursor: str, what: str) -> Any:
    try:
        return json.loads(cursor)
    except ValueError:
        raise ValidationError(f"invalid export cursor {cursor!r} for {what}") from None


async def export_rows(
    dom: Tables, base: str, cursor: str | None, limit: int
) -> tuple[list[Record], str | None]:
    """One page of table ``base`` after ``cursor``, and the next cursor."""
    spec = table(base)
    tbl = dom.tables[base]
    stmt = sa.select(*dom.db.readable(tbl, spec))
    key = spec.key_columns
    offset = 0
    if key:
        stmt = stmt.order_by(*(tbl.c[c] for c in key))
        if cursor is not None:
            last = _decode_cursor(cursor, base)
            if not isinstance(last, list) or len(last) != len(key):
                raise ValidationError(f"invalid export cursor {cursor!r} for {base}")
            stmt = stmt.where(_after(tbl, key, last))
    else:
        stmt = stmt.order_by(*(tbl.c[c] for c in _KEYLESS_ORDER))
        if cursor is not None:
            offset = _decode_cursor(cursor, base)
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise ValidationError(f"invalid export cursor {cursor!r} for {base}")
            stmt = stmt.offset(offset)
    # One row past the page says whether another page follows.
    stmt = stmt.limit(limit + 1)

    def read(conn: Connection) -> list[Record]:
        return [record_from_row(base, r) for r in conn.execute(stmt).mappings()]

    rows = await dom.db.run(read)
    page, more = rows[:limit], len(rows) > limit
    if not more:
        return page, None
    if key:
        last_row = page[-1].stored()
        return page, json.dumps([last_row[c] for c in key])
    return page, json.dumps(offset + limit)


def _after(tbl: sa.Table, key: Sequence[str], last: Sequence[Any]) -> sa.ColumnElement[bool]:
    """``(k1, k2, ...) > (v1, v2, ...)`` spelled with AND/OR: row-value comparison is not
    available everywhere (Oracle)."""
    clauses = []
    for i, name in enumerate(key):
        equal = [tbl.c[key[j]] == last[j] for j in range(i)]
        clauses.append(sa.and_(*equal, tbl.c[name] > last[i]))
    return sa.or_(*clauses)


async def fetch_rows(dom: Tables, base: str, keys: Sequence[tuple[Any, ...]]) -> list[Record]:
    """The rows of ``base`` whose key is in ``keys``."""
    spec = table(base)
    tbl = dom.tables[base]
    key = spec.key_columns
    columns = dom.db.readable(tbl, spec)
    statements = []
    for start in range(0, len(keys), _FETCH_CHUNK):
        chunk = keys[start : start + _FETCH_CHUNK]
        where: sa.ColumnElement[bool]
        if len(key) == 1:
            where = tbl.c[key[0]].in_([k[0] for k in chunk])
        else:
            where = sa.or_(
                *(sa.and_(*(tbl.c[c] == v for c, v in zip(key, k, strict=True))) for k in chunk)
            )
        statements.append(sa.select(*columns).where(where))

    def read(conn: Connection) -> list[Record]:
        return [
            record_from_row(base, r)
            for stmt in statements
            for r in conn.execute(stmt).mappings()
        ]

    return await dom.db.run(read)


async def import_rows(dom: Tables, base: str, records: Sequence[Record]) -> None:
    """Upsert ``records`` into ``base`` by key (append to a keyless table), in one
    transaction."""
    spec = table(base)
    rows = [dom.db.values(spec, row_of(base, r)) for r in records]
    key = spec.key_columns
    tbl = dom.tables[base]

    def write(conn: Connection) -> None:
        if not key:
            conn.execute(tbl.insert(), rows)
            return
        for stmt, values in dom.upsert(base, rows, key):
            stmt.execute(conn, values)

    await dom.db.run(write, write=True)


async def count_rows(dom: Tables, base: str) -> int:
    """How many rows ``base`` holds."""
    stmt = sa.select(sa.func.count()).select_from(dom.tables[base])
    count: int = await dom.db.run(lambda conn: conn.execute(stmt).scalar_one())
    return count
