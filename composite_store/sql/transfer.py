"""Export and import of whole tables in SQL (``Transferable.export_records`` and friends),
written once for every relational backend.

Export pages by key (keyset: ``WHERE key > :last ORDER BY key``), so a page costs the same at the
start and at the end of a large table; Mastra's ``evals`` table has no key and pages by offset
in a fixed order instead. Import is the tables' multi-row upsert by key, with the shadow
timestamps written alongside (``SqlDatabase.values``): rows arrive exactly as exported.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.expression import Executable

from composite_store.errors import ValidationError
from composite_store.records.base import Record
from composite_store.records.memory import Message, MessageContent, stored_content_text
from composite_store.records.tables import key_of, record_type, row_of
from composite_store.records.trusted import TupleReader
from composite_store.schema import table
from composite_store.sql.database import SqlDatabase
from composite_store.sql.dialect import SqlDialect
from composite_store.sql.engine.prepared import (
    IN_LIST_LIMIT,
    Prepared,
    in_list,
    numbered,
    params,
)
from composite_store.sql.types import stored_row_column

__all__ = [
    "ROW_TABLES",
    "Tables",
    "count_rows",
    "export_rows",
    "export_stored",
    "fetch_rows",
    "import_rows",
    "import_stored",
]

#: The tables exported and imported as stored rows too (``StoredRows``): those whose rows
#: copies move by the hundred thousand. A message's stored row is what ``Message.stored_row``
#: gives of the record its exported row reads as (``records.memory.stored_content_text``).
ROW_TABLES = frozenset({"messages"})

#: What an export builds of each row: a record, or a stored row.
T = TypeVar("T")

#: Keys per lookup statement: one statement shape per table, as long an IN list as every
#: backend takes (``IN_LIST_LIMIT``), or an OR of fewer key equalities (planned per clause).
_FETCH_CHUNK = IN_LIST_LIMIT
_FETCH_CHUNK_COMPOSITE = 100
#: The order of a keyless table's export (Mastra's evals: several metrics share a run id).
_KEYLESS_ORDER = ("created_at", "run_id", "metric_name", "agent_name", "global_run_id")


class Tables(Protocol):
    """What export and import need of a relational domain (``SqlDomain`` has it): its
    database, the rendered tables, the multi-row upsert and its compiled statements."""

    @property
    def db(self) -> SqlDatabase: ...

    @property
    def tables(self) -> Mapping[str, sa.Table]: ...

    def upsert(
        self, base: str, rows: Sequence[Mapping[str, Any]], key: Sequence[str]
    ) -> Sequence[tuple[Any, Mapping[str, Any]]]: ...

    def prepared(self, build: Callable[..., Executable], *variant: Any) -> Prepared: ...


def _decode_cursor(cursor: str, what: str) -> Any:
    try:
        return json.loads(cursor)
    except ValueError:
        raise ValidationError(f"invalid export cursor {cursor!r} for {what}") from None


def _reader(stmt: Prepared, base: str) -> TupleReader[Record]:
    """Records of ``base`` from ``stmt``'s driver rows (message content parsed), as
    ``record_from_row`` builds them from a row mapping, without the mapping."""
    model = record_type(base)
    if model is Message:
        return stmt.reader(model, content=MessageContent.from_stored)
    return stmt.reader(model)


def _export_statement(self: Tables, base: str, after: bool, timestamp_text: bool) -> Prepared:
    """A page of ``base`` in export order: after the key ``:last0, :last1, ...`` (``after``),
    or from ``:offset`` for a keyless table; at most ``:limit`` rows. ``timestamp_text``:
    text timestamps read as they are stored (``stored_row_column``).

    The domain is named ``self``, as in a method: the only name a cached statement's builder
    may close over (``StatementCache``)."""

    def build(base: str, after: bool, timestamp_text: bool) -> Executable:
        tbl = self.tables[base]
        key = table(base).key_columns
        columns = self.db.readable(tbl, table(base))
        if timestamp_text:
            columns = [stored_row_column(c) for c in columns]
        stmt = sa.select(*columns)
        if key:
            stmt = stmt.order_by(*(tbl.c[c] for c in key))
            if after:
                stmt = stmt.where(_after(tbl, key, params("last", len(key))))
        else:
            stmt = stmt.order_by(*(tbl.c[c] for c in _KEYLESS_ORDER))
            stmt = stmt.offset(sa.bindparam("offset"))
        return stmt.limit(sa.bindparam("limit"))

    return self.prepared(build, base, after, timestamp_text)


def _page_values(base: str, cursor: str | None, limit: int) -> tuple[dict[str, Any], int]:
    """The values of ``_export_statement`` for the page after ``cursor``, and its offset (a
    keyless table's)."""
    key = table(base).key_columns
    offset = 0
    # One row past the page says whether another page follows.
    values: dict[str, Any] = {"limit": limit + 1}
    if key:
        if cursor is not None:
            last = _decode_cursor(cursor, base)
            if not isinstance(last, list) or len(last) != len(key):
                raise ValidationError(f"invalid export cursor {cursor!r} for {base}")
            values.update(numbered("last", last))
    elif cursor is not None:
        offset = _decode_cursor(cursor, base)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValidationError(f"invalid export cursor {cursor!r} for {base}")
    if not key:
        values["offset"] = offset
    return values, offset


async def export_rows(
    dom: Tables, base: str, cursor: str | None, limit: int
) -> tuple[list[Record], str | None]:
    """One page of table ``base`` after ``cursor``, and the next cursor."""
    return await _export_page(
        dom,
        base,
        cursor,
        limit,
        lambda stmt: _reader(stmt, base),
        lambda last: key_of(base, last),
        timestamp_text=False,
    )


async def export_stored(
    dom: Tables, base: str, cursor: str | None, limit: int, timestamp_text: bool
) -> tuple[list[tuple[Any, ...]], str | None]:
    """One page of table ``base`` (one of ``ROW_TABLES``) after ``cursor`` as stored rows
    (``StoredRows``), and the next cursor: ``export_rows`` without the records;
    ``timestamp_text``: text timestamps as they are stored (``stored_row_column``)."""
    spec = table(base)
    position = [spec.column_names.index(c) for c in spec.key_columns]

    def reader(stmt: Prepared) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
        if tuple(stmt.selected_keys) != spec.column_names:  # pragma: no cover - a schema edit
            raise AssertionError(f"the export of {base} does not select its documented columns")
        # Content read as the record reads it (a legacy plain string becomes format 2) and
        # dumped again: the destination stores, and refuses, exactly what the record's
        # import would.
        convert = {"content": stored_content_text} if record_type(base) is Message else {}
        return stmt.values_reader(**convert)

    return await _export_page(
        dom,
        base,
        cursor,
        limit,
        reader,
        lambda last: [last[i] for i in position],
        timestamp_text=timestamp_text,
    )


async def _export_page(
    dom: Tables,
    base: str,
    cursor: str | None,
    limit: int,
    reader: Callable[[Prepared], Callable[[Sequence[Any]], T]],
    key_of_last: Callable[[T], Sequence[Any]],
    *,
    timestamp_text: bool,
) -> tuple[list[T], str | None]:
    """The page after ``cursor`` as ``reader(statement)`` builds each row, and the next
    cursor: the key of the page's last row (``key_of_last``), or a keyless table's offset.
    ``timestamp_text``: as ``_export_statement`` takes it."""
    key = table(base).key_columns
    values, offset = _page_values(base, cursor, limit)
    stmt = _export_statement(dom, base, key != () and cursor is not None, timestamp_text)
    read = reader(stmt)
    # Streamed into what is built of each row: a page of many thousand rows never exists twice.
    rows = await dom.db.run(lambda conn: stmt.each(conn, read, values), single=True)
    page, more = rows[:limit], len(rows) > limit
    if not more:
        return page, None
    if key:
        return page, json.dumps(list(key_of_last(page[-1])))
    return page, json.dumps(offset + limit)


def _after(
    tbl: sa.Table, key: Sequence[str], last: Sequence[Any]
) -> sa.ColumnElement[bool]:
    """``(k1, k2, ...) > (v1, v2, ...)`` spelled with AND/OR: row-value comparison is not
    available everywhere (Oracle)."""
    clauses = []
    for i, name in enumerate(key):
        equal = [tbl.c[key[j]] == last[j] for j in range(i)]
        clauses.append(sa.and_(*equal, tbl.c[name] > last[i]))
    return sa.or_(*clauses)


def _fetch_statement(self: Tables, base: str) -> Prepared:
    """The rows of ``base`` whose key is one of ``_FETCH_CHUNK`` keys (an IN list of
    ``:k<i>``), or of ``_FETCH_CHUNK_COMPOSITE`` keys of several columns (``:k<i>_<j>`` is
    column j of key i)."""

    def build(base: str) -> Executable:
        tbl = self.tables[base]
        key = table(base).key_columns
        where: sa.ColumnElement[bool]
        if len(key) == 1:
            where = in_list(tbl.c[key[0]], "k", _FETCH_CHUNK)
        else:
            where = sa.or_(
                *(
                    sa.and_(*(tbl.c[c] == sa.bindparam(f"k{i}_{j}") for j, c in enumerate(key)))
                    for i in range(_FETCH_CHUNK_COMPOSITE)
                )
            )
        return sa.select(*self.db.readable(tbl, table(base))).where(where)

    return self.prepared(build, base)


async def fetch_rows(dom: Tables, base: str, keys: Sequence[tuple[Any, ...]]) -> list[Record]:
    """The rows of ``base`` whose key is in ``keys``."""
    width = len(table(base).key_columns)
    size = _FETCH_CHUNK if width == 1 else _FETCH_CHUNK_COMPOSITE
    stmt = _fetch_statement(dom, base)
    read = _reader(stmt, base)
    chunks = []
    for start in range(0, len(keys), size):
        chunk = list(keys[start : start + size])
        # One statement shape for every chunk: the last one repeats its last key (a key
        # listed twice still matches its row once).
        chunk += [chunk[-1]] * (size - len(chunk))
        if width == 1:
            chunks.append(numbered("k", [k[0] for k in chunk]))
        else:
            chunks.append(
                {f"k{i}_{j}": v for i, k in enumerate(chunk) for j, v in enumerate(k)}
            )

    def read_all(conn: Connection) -> list[Record]:
        return [record for values in chunks for record in stmt.each(conn, read, values)]

    return await dom.db.run(read_all)


async def import_rows(dom: Tables, base: str, records: Sequence[Record]) -> None:
    """Upsert ``records`` into ``base`` by key (append to a keyless table), in one
    transaction: through the backend's bulk path where it has one (``SqlDialect.bulk_upsert``:
    PostgreSQL's COPY), else as multi-row upserts."""
    stored = [row_of(base, r) for r in records]
    await _write(dom, base, stored, None)


async def import_stored(dom: Tables, base: str, rows: Sequence[Sequence[Any]]) -> None:
    """``import_rows`` of the records whose stored rows (``StoredRows``) are ``rows``: the
    same statements, the same values through the same bind conversions."""
    await _write(dom, base, rows, table(base).column_names)


async def _write(
    dom: Tables,
    base: str,
    stored: Sequence[Any],
    names: tuple[str, ...] | None,
) -> None:
    """Write stored rows: mappings by column name (``names`` None), or sequences of the values
    of ``names`` by position."""
    spec = table(base)
    key = spec.key_columns
    tbl = dom.tables[base]
    dialect = dom.db.dialect
    if dialect.bulk_load and stored:

        def load(conn: Connection) -> None:
            columns, rows = _bulk_values(
                dom.db.value_sources(spec), tbl, conn, dialect, stored, names
            )
            dialect.bulk_upsert(conn, tbl, columns, rows, key)

        await dom.db.run(load, write=True)
        return
    if names is not None:
        stored = [dict(zip(names, row, strict=True)) for row in stored]
    rows = [dom.db.values(spec, row) for row in stored]

    def write(conn: Connection) -> None:
        if not key:
            conn.execute(tbl.insert(), rows)
            return
        for stmt, values in dom.upsert(base, rows, key):
            stmt.execute(conn, values)

    await dom.db.run(write, write=True)


def _bulk_values(
    sources: list[tuple[str, str]],
    tbl: sa.Table,
    conn: Connection,
    dialect: SqlDialect,
    stored: Sequence[Any],
    names: tuple[str, ...] | None = None,
) -> tuple[list[str], list[list[Any]]]:
    """The columns of ``SqlDatabase.values`` and each stored row's values for them by
    position, through the dialect's bulk conversions (``SqlDialect.bulk_processor``: the
    columns' bind processors, as a statement would send them, or what the bulk path sends
    instead; PostgreSQL's checks of NUL and lone surrogates, JSON text, UTC wall clocks): one
    pass, no dict of bind values per row. Rows are mappings by column name, or with ``names``
    sequences of those columns' values."""
    columns = [column for column, _ in sources]
    processors = [dialect.bulk_processor(tbl.c[column], conn.dialect) for column, _ in sources]
    if names is not None:
        position = {name: i for i, name in enumerate(names)}
        convert = _positional(
            tuple((position[src], process) for (_, src), process in zip(sources, processors,
                                                                         strict=True))
        )
        return columns, list(map(convert, stored))
    steps = [(src, process) for (_, src), process in zip(sources, processors, strict=True)]
    rows = [
        [
            value if (value := row.get(src)) is None or process is None else process(value)
            for src, process in steps
        ]
        for row in stored
    ]
    return columns, rows


def _positional(
    at: tuple[tuple[int, Callable[[Any], Any] | None], ...],
) -> Callable[[Sequence[Any]], list[Any]]:
    """A function giving the bind values of one stored row: value ``i`` of each ``(i,
    process)`` pair, through ``process`` unless it is None (or the value is). Generated, as
    ``records.trusted`` generates its readers: one list display per row instead of a loop
    over the columns (on SQLite only the timestamps have a conversion)."""
    env: dict[str, Any] = {}
    items = []
    for n, (i, process) in enumerate(at):
        if process is None:
            items.append(f"row[{i}]")
        else:
            env[f"process_{n}"] = process
            items.append(f"(None if (v{n} := row[{i}]) is None else process_{n}(v{n}))")
    source = "def convert(row):\n    return [" + ", ".join(items) + "]"
    exec(compile(source, "<bulk values>", "exec"), env)
    convert: Callable[[Sequence[Any]], list[Any]] = env["convert"]
    return convert


async def count_rows(dom: Tables, base: str) -> int:
    """How many rows ``base`` holds."""
    stmt = sa.select(sa.func.count()).select_from(dom.tables[base])
    count: int = await dom.db.run(lambda conn: conn.execute(stmt).scalar_one())
    return count
