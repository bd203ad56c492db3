"""Statements compiled once per database and executed on the driver's cursor directly.

SQLAlchemy builds and compiles each statement the first time it is needed; after that an
operation costs one driver call plus the column types' own conversions (JSON, timestamps),
not a new statement, cache key and execution context per call (DESIGN.md section 8). Bind
parameters are always named ``sa.bindparam`` objects, so every value still travels bound.

Which statements go through it: every statement a domain obtains from the database's
``StatementCache`` (``SqlDomain.prepared``, ``select_by``, ``upsert``), which is every
statement of the memory operations, workflow snapshots and trace reads whose SQL is fixed by
a few shape arguments. There is one way to run them, :meth:`Prepared._execute`: the compiled
SQL on the dialect's executor (``SqlDialect.execute_prepared``); a read of every row streams
its rows through the one other, :meth:`Prepared._stream` (``SqlDialect.stream_prepared``,
for :meth:`Prepared.each`). A statement whose SQL would
depend on its values (an expanding ``IN``, a ``LIMIT`` the dialect renders as a literal) is
refused when it is built: give every value a named bind (:func:`params`, :func:`in_list`,
``.limit(sa.bindparam("limit"))``). Statements built per call from the request's values (list
filters of the other domains, copy and migration reads, DDL, catalog queries) are not
prepared: they go through SQLAlchemy's ``Connection.execute`` and its own compiled cache.

What a statement is compiled into is read from ``SQLCompiler``'s documented attributes
(``string``, ``binds``, ``positiontup``, ``escaped_bind_names``, ``literal_execute_params``,
``post_compile_params``) and the column types' public ``bind_processor``/``result_processor``.
"""

from __future__ import annotations

import gc
import operator
import re
from collections.abc import (
    Awaitable,
    Callable,
    Generator,
    Hashable,
    Iterator,
    Mapping,
    Sequence,
)
from itertools import chain
from typing import Any, NamedTuple, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.expression import Executable

from composite_store.records.trusted import TupleReader, field_sources, tuple_reader

__all__ = [
    "IN_LIST_LIMIT",
    "PLAN_EACH_CALL",
    "STREAM_CHUNK",
    "DriverExecutor",
    "Executor",
    "Prepared",
    "RowValues",
    "Streamer",
    "driver_chunks",
    "driver_cursor",
    "driver_error",
    "in_list",
    "numbered",
    "params",
]

Processor = Callable[[Any], Any] | None
R = TypeVar("R", bound=BaseModel)
#: What a row reader builds of a row: a record, or a stored row (``values_reader``).
T = TypeVar("T")


#: Runs one statement on an operation's connection: ``(conn, sql, params, fetch)`` -> (the rows
#: when ``fetch``, else None; the driver's row count). See ``SqlDialect.execute_prepared``.
Executor = Callable[[Connection, str, Any, bool], tuple[list[Any] | None, int]]


#: Runs one SELECT on an operation's connection and yields its rows in lists of at most
#: ``size``: ``(conn, sql, params, size)``. See ``SqlDialect.stream_prepared``.
Streamer = Callable[[Connection, str, Any, int], Iterator[list[Any]]]

#: Awaits one statement on an async driver's own connection, from the event loop, with no
#: greenlet: ``(driver connection, sql, params, fetch)`` -> (the rows when ``fetch``, else
#: None; the driver's row count). See ``SqlDialect.driver_executor``.
DriverExecutor = Callable[[Any, str, Any, bool], Awaitable[tuple[list[Any] | None, int]]]

#: The comment that opens the SQL of a statement built with the execution option
#: ``plan_each_call=True``: a driver that keeps statements prepared on the server (psycopg,
#: from a statement's fifth run) leaves this one unprepared, so the server plans it for every
#: call with the tables as they are then. A prepared statement's plan is made once, from the
#: tables' sizes at that moment: a message batch prepared while its tables were nearly empty
#: kept scanning every message to find the batch's previous threads, ever slower as the
#: table grew (W1 on a fresh database: 1 -> 6.6 ms a batch over its first 10,000 messages).
#: The PostgreSQL adapter's own connections plan without sequential scans wherever an index
#: applies (``composite_store_postgres.cursor.INDEX_PLANS``): a plan made while the tables were
#: small is then as good once they are large, and there the statement stays prepared.
PLAN_EACH_CALL = "/* plan each call */ "

#: Rows per chunk of a streamed read: large enough that the per-chunk driver call is noise,
#: small enough that one chunk of driver rows is a few MiB at most.
STREAM_CHUNK = 2000


def driver_chunks(conn: Connection, sql: str, params: Any, size: int) -> Iterator[list[Any]]:
    """The default :data:`Streamer`: ``fetchmany`` on a cursor of the DB-API connection (on
    SQLite the rows are stepped out of the engine chunk by chunk, never all at once)."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(size):
            yield list(rows)
    finally:
        cursor.close()


def driver_cursor(
    conn: Connection, sql: str, params: Any, fetch: bool
) -> tuple[list[Any] | None, int]:
    """The default :data:`Executor`: a cursor of the connection's DB-API connection."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql, params)
        return (list(cursor.fetchall()) if fetch else None), int(cursor.rowcount)
    finally:
        cursor.close()


class RowValues(Mapping[str, Any]):
    """The bind values ``<column>__<i>`` of a statement of several rows (the upserts of
    ``SqlDomain.upsert``, the message batch) kept as the rows themselves, with the values of
    the statement's other binds (``others``: a batch's thread ids, its timestamp):
    :meth:`Prepared.bind` takes each row's values in one call rather than looking up every
    name (10 spans bind 420 of them; 10 messages 80, the names of which cost 15 us to build),
    and anything else reads it as the mapping of all those names."""

    __slots__ = ("others", "rows")

    def __init__(
        self, rows: Sequence[Mapping[str, Any]], others: Mapping[str, Any] | None = None
    ) -> None:
        self.rows = rows
        self.others: Mapping[str, Any] = {} if others is None else others

    def __getitem__(self, key: str) -> Any:
        column, sep, index = key.rpartition("__")
        if not sep or not index.isdigit() or int(index) >= len(self.rows):
            return self.others[key]
        return self.rows[int(index)][column]

    def __iter__(self) -> Iterator[str]:
        yield from (f"{column}__{i}" for i, row in enumerate(self.rows) for column in row)
        yield from self.others

    def __len__(self) -> int:
        return sum(map(len, self.rows)) + len(self.others)


class _RowLayout(NamedTuple):
    """Where a statement's binds are rows (:class:`RowValues`): the names bound before the
    rows, how to take a row's values in the order they are sent, how many rows, the names
    bound after them."""

    before: tuple[str, ...]
    row: Callable[[Any], Any]
    rows: int
    after: tuple[str, ...]


def _row_layout(names: Sequence[str]) -> _RowLayout | None:
    """For bind names that hold rows (``<column>__<i>``: row 0's columns, then row 1's in the
    same order, and so on, one block of them), the statement's :class:`_RowLayout`; None for
    any other statement."""
    in_rows = [i for i, name in enumerate(names) if _ROW_BIND.search(name)]
    if not in_rows:
        return None
    first, count = in_rows[0], len(in_rows)
    block = list(names[first : first + count])
    columns: list[str] = []
    for name in block:
        column, _, index = name.rpartition("__")
        if index != "0":
            break
        columns.append(column)
    if len(columns) < 2 or count % len(columns):
        return None
    rows = count // len(columns)
    if block != [f"{c}__{i}" for i in range(rows) for c in columns]:
        return None  # not one block, or not row by row
    return _RowLayout(
        tuple(names[:first]), operator.itemgetter(*columns), rows, tuple(names[first + count :])
    )


#: The positional placeholders a row of values can be repeated with (``Prepared.with_rows``).
_ROW_PLACEHOLDERS = {
    "qmark": re.compile(r"\?"),
    "format": re.compile(r"%s"),
    "numeric_dollar": re.compile(r"\$(\d+)"),
}
_NUMBERED = _ROW_PLACEHOLDERS["numeric_dollar"]
#: The keyword opening a row of values, ``VALUES (`` (after a space: ``INSERT .. VALUES``;
#: after a parenthesis: ``WITH v AS (VALUES ..``).
_VALUES = re.compile(r"(?<=[\s(])VALUES \(")
#: The name of a bind of a row of values: ``<column>__<i>``.
_ROW_BIND = re.compile(r"__\d+$")


def _closing(text: str) -> int | None:
    """The index of the ``)`` closing the parenthesis just before ``text``, or None."""
    depth = 1
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


def _renumbered(text: str, offset: int, above: int = 0) -> str:
    """``text`` with every ``$n`` placeholder numbered past ``above`` moved up by ``offset``."""

    def moved(found: re.Match[str]) -> str:
        number = int(found[1])
        return f"${number + offset}" if number > above else found[0]

    return _NUMBERED.sub(moved, text)


def _row_name(name: str, row: int) -> str:
    """Row 0's bind name ``<column>__0`` as row ``row``'s."""
    return f"{name[:-3]}__{row}"


class Prepared:
    """One statement compiled for one dialect, with its bind and result conversions."""

    __slots__ = (
        "_bind_names",
        "_bind_processors",
        "_binds",
        "_executor",
        "_fixed",
        "_keys",
        "_positional",
        "_processed",
        "_readers",
        "_row_layout",
        "_sql_names",
        "_streamer",
        "dialect",
        "sql",
        "statement",
    )

    def __init__(
        self,
        stmt: Executable,
        dialect: Dialect,
        executor: Executor = driver_cursor,
        streamer: Streamer = driver_chunks,
    ) -> None:
        self.statement = stmt
        self.dialect = dialect
        self._executor = executor
        self._streamer = streamer
        compiled = stmt.compile(dialect=dialect)  # type: ignore[attr-defined]
        self.sql: str = compiled.string
        if stmt.get_execution_options().get("plan_each_call"):
            self.sql = PLAN_EACH_CALL + self.sql
        escaped = getattr(compiled, "escaped_bind_names", None) or {}
        binds: Mapping[str, sa.BindParameter[Any]] = getattr(compiled, "binds", {})
        #: (name in the SQL, caller's name, bind processor) for every placeholder, in the order
        #: values are sent: by position on positional dialects (where a name may repeat).
        self._binds: list[tuple[str, str, Processor]] = []
        #: Values SQLAlchemy embedded as binds (LIMIT numbers, constants): name -> value.
        self._fixed: dict[str, Any] = {}
        for name, bind in binds.items():
            self._binds.append((escaped.get(name, name), name, bind.type.bind_processor(dialect)))
            if not bind.required and bind.callable is None:
                self._fixed[name] = bind.value
        positional = compiled.positional
        order = getattr(compiled, "positiontup", None) if positional else None
        if order is not None:
            by_sql_name = {b[0]: b for b in self._binds}
            self._binds = [by_sql_name[escaped.get(n, n)] for n in order]
        self._positional = order is not None
        self._derive_from_binds()
        if (
            getattr(compiled, "literal_execute_params", None)
            or getattr(compiled, "post_compile_params", None)
            or (positional and order is None and binds)
        ):
            raise ValueError(
                f"a prepared statement's SQL must not depend on its values: {self.sql!r} "
                f"renders some on the {dialect.name} dialect at execution (an expanding IN or "
                "a literal LIMIT); bind each value by name (params(), in_list(), "
                'sa.bindparam("limit"))'
            )
        #: The label of each selected column, and (label, result processor) of those whose
        #: values the driver's do not already match, for statements returning rows.
        self._keys: list[str] = []
        self._processed: list[tuple[str, Callable[[Any], Any]]] = []
        self._readers: dict[Hashable, Callable[[Sequence[Any]], Any]] = {}
        selected = getattr(stmt, "selected_columns", None)
        if selected is not None:
            for col in selected:
                key = col.key if col.key is not None else str(col)
                self._keys.append(key)
                process = col.type.result_processor(dialect, None)
                if process is not None:
                    self._processed.append((key, process))
        elif getattr(stmt, "_returning", ()):
            # INSERT/UPDATE .. RETURNING: its columns are described, not selected.
            for described in stmt.returning_column_descriptions:  # type: ignore[attr-defined]
                key = described["name"]
                self._keys.append(key)
                process = described["type"].result_processor(dialect, None)
                if process is not None:
                    self._processed.append((key, process))

    def _derive_from_binds(self) -> None:
        """What :meth:`bind` reads, from :attr:`_binds` and :attr:`_fixed`."""
        #: The caller's name of every placeholder in order, and (position, processor) of the
        #: placeholders whose type converts the value (a batch of 10 spans binds 420 values,
        #: of which 140 convert).
        self._bind_names: tuple[str, ...] = tuple(name for _, name, _ in self._binds)
        self._sql_names: tuple[str, ...] = tuple(sql_name for sql_name, _, _ in self._binds)
        self._bind_processors: tuple[tuple[int, Callable[[Any], Any]], ...] = tuple(
            (i, process) for i, (_, _, process) in enumerate(self._binds) if process is not None
        )
        #: For a statement whose binds are rows (:class:`RowValues`): how to take a row's
        #: values in the order they are sent, and how many rows it binds.
        self._row_layout = None if self._fixed else _row_layout(self._bind_names)

    def with_rows(self, n: int) -> Prepared | None:
        """This statement of one ``VALUES (..)`` row (binds ``<column>__0``) for ``n`` rows:
        what SQLAlchemy compiles from the ``n``-row statement, derived from the text instead,
        its row of placeholders repeated (renumbered where they are numbered: ``$1``) and its
        binds repeated as ``<column>__<i>``. Placeholders outside the row (a ``WHERE`` of the
        statement the row is in, a value set on update) stay, numbered after the rows where
        they were numbered after the row. None where the text does not allow it (named
        placeholders, no single ``VALUES`` row, binds of the row not consecutive): the caller
        then compiles the ``n``-row statement.

        Compiling a multi-row upsert costs SQLAlchemy about 0.6 ms a row (10 spans: 6.5 ms),
        once per batch size and store; deriving it, about 1 us a bound value (10 spans of 46
        columns: 0.55 ms; a message batch of 10: 0.12 ms). tests/unit/test_prepared_rows.py
        holds the two equal for every table's upsert and for PostgreSQL's message batch."""
        style = self.dialect.paramstyle
        if style not in _ROW_PLACEHOLDERS or not self._positional or self._fixed:
            return None
        in_row = [i for i, name in enumerate(self._sql_names) if _ROW_BIND.search(name)]
        if not in_row:
            return None
        first, width = in_row[0], len(in_row)
        if in_row != list(range(first, first + width)) or not all(
            self._sql_names[i].endswith("__0") for i in in_row
        ):
            return None
        parts = _VALUES.split(self.sql)
        if len(parts) != 2:  # no VALUES row, or several
            return None
        head, rest = parts
        end = _closing(rest)
        if end is None:
            return None
        row, tail = "(" + rest[:end + 1], rest[end + 1:]
        placeholder = _ROW_PLACEHOLDERS[style]
        if len(placeholder.findall(row)) != width:
            return None
        if style == "numeric_dollar":
            # Numbered in the order of the binds, not of the text: the row's are first + 1 ..
            # first + width, those after the row's move up by the rows added.
            last = first + width
            if [int(m) for m in _NUMBERED.findall(row)] != list(range(first + 1, last + 1)):
                return None
            outside = [int(m) for m in _NUMBERED.findall(head + tail)]
            if any(first < number <= last for number in outside):
                return None
            shift = (n - 1) * width
            head, tail = _renumbered(head, shift, last), _renumbered(tail, shift, last)
            rows = [_renumbered(row, i * width) for i in range(n)]
        else:
            # In the order of the text: the row's are the first + 1st .. of the statement's.
            after = len(self._binds) - first - width
            if len(placeholder.findall(head)) != first or len(placeholder.findall(tail)) != after:
                return None
            rows = [row] * n
        derived: Prepared = object.__new__(Prepared)
        derived.statement = self.statement  # the one-row statement it was derived from
        derived.dialect = self.dialect
        derived._executor = self._executor
        derived._streamer = self._streamer
        derived.sql = f"{head}VALUES {', '.join(rows)}{tail}"
        binds = self._binds
        derived._binds = [
            *binds[:first],
            *(
                (_row_name(sql_name, i), _row_name(name, i), process)
                for i in range(n)
                for sql_name, name, process in binds[first : first + width]
            ),
            *binds[first + width :],
        ]
        derived._fixed = {}
        derived._positional = True
        derived._derive_from_binds()
        derived._keys, derived._processed, derived._readers = self._keys, self._processed, {}
        return derived

    @property
    def selected_keys(self) -> tuple[str, ...]:
        """The label of each column the statement selects (or returns), in order."""
        return tuple(self._keys)

    # -- binding -------------------------------------------------------------------------------

    def bind(self, values: Mapping[str, Any]) -> Any:
        """The driver's parameters for ``values``, what :attr:`sql` is sent with (the caller's
        names; a value the statement embeds is taken from it unless given): a list on
        positional dialects, else a dict by the names in the SQL; each value converted by its
        type (None stays None)."""
        layout = self._row_layout
        if layout is not None and type(values) is RowValues and len(values.rows) == layout.rows:
            others = values.others
            converted = [others[name] for name in layout.before]
            converted.extend(chain.from_iterable(map(layout.row, values.rows)))
            converted.extend([others[name] for name in layout.after])
        else:
            if self._fixed:
                values = {**self._fixed, **values}
            converted = list(map(values.__getitem__, self._bind_names))
        for i, process in self._bind_processors:
            value = converted[i]
            if value is not None:
                converted[i] = process(value)
        if self._positional:
            return converted
        return dict(zip(self._sql_names, converted, strict=True))

    # -- execution -----------------------------------------------------------------------------

    def _execute(
        self,
        conn: Connection,
        values: Mapping[str, Any] | None,
        fetch: bool,
        sql: str | None = None,
    ) -> tuple[list[Any] | None, int]:
        """The one way a prepared statement runs: :attr:`sql` (or ``sql``, a variant of it)
        with this statement's binds of ``values`` on the executor; the driver's rows when
        ``fetch`` and its row count. A driver error is raised as SQLAlchemy raises it
        (:func:`driver_error`)."""
        text = self.sql if sql is None else sql
        bound = self.bind(values or {})
        try:
            return self._executor(conn, text, bound, fetch)
        except Exception as exc:
            raise driver_error(conn, exc, text, bound) from exc

    def execute(self, conn: Connection, values: Mapping[str, Any] | None = None) -> int:
        """Run a statement that returns no rows; return the driver's row count."""
        return self._execute(conn, values, False)[1]

    def all(
        self, conn: Connection, values: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Run a SELECT and return every row as a dict of converted values by column key."""
        return self.mappings(self._execute(conn, values, True)[0] or ())

    def mappings(self, raw: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        """Rows as the driver gave them (:meth:`rows`, ``SqlDatabase.fetch``) as dicts of
        converted values by column key, as :meth:`all` returns them."""
        keys, processed = self._keys, self._processed
        rows = []
        for values_row in raw:
            row = dict(zip(keys, values_row, strict=True))
            for key, process in processed:
                row[key] = process(row[key])
            rows.append(row)
        return rows

    def rows(self, conn: Connection, values: Mapping[str, Any] | None = None) -> list[Any]:
        """Run a SELECT and return its rows as the driver gives them; :meth:`reader` builds
        records from them (after the transaction: ``SqlDatabase.run``)."""
        return self._execute(conn, values, True)[0] or []

    def each(
        self,
        conn: Connection,
        read: Callable[[Sequence[Any]], T],
        values: Mapping[str, Any] | None = None,
        size: int = STREAM_CHUNK,
    ) -> list[T]:
        """Run a SELECT and return ``read`` (a :meth:`reader`) of each row, the rows streamed
        from the driver ``size`` at a time: a read of every row of a large table holds the
        records and one chunk of driver rows, never every driver row besides the records."""
        built: list[T] = []
        # No cyclic collection while the records are built: each record is a handful of new
        # containers, so a large read triggers collections by the dozen, and the full ones
        # traverse the whole heap (every loaded module's objects) to free nothing, since
        # records hold no reference cycles. They run again once the read is done.
        paused = gc.isenabled()
        if paused:
            gc.disable()
        chunks = self._stream(conn, values, size)
        try:
            for chunk in chunks:
                built.extend(map(read, chunk))
        finally:
            # Close the driver's cursor now, on this connection's thread or greenlet, also when
            # building a record failed midway (a generator left to the collector would close
            # it later, elsewhere).
            chunks.close()
            if paused:
                gc.enable()
        return built

    def _stream(
        self, conn: Connection, values: Mapping[str, Any] | None, size: int
    ) -> Generator[list[Any], None, None]:
        """The streamed form of :meth:`_execute`: this statement's SELECT with its binds of
        ``values`` on the streamer, its driver rows in lists of at most ``size``; a driver
        error raised as :meth:`_execute` raises it."""
        bound = self.bind(values or {})
        chunks = self._streamer(conn, self.sql, bound, size)
        try:
            yield from chunks
        except Exception as exc:
            raise driver_error(conn, exc, self.sql, bound) from exc
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    def reader(self, model: type[R], **convert: Callable[[Any], Any]) -> TupleReader[R]:
        """A function building ``model`` from one of :meth:`rows`, ``convert`` (attribute ->
        function) applied after the column type's own conversion."""
        # A reader without conversions is keyed by its model alone: the key of every point
        # read, built without sorting an empty mapping.
        key = (model, *sorted(convert.items())) if convert else model
        found = self._readers.get(key)
        if found is None:
            processed = dict(self._processed)
            steps: list[tuple[str, Callable[[Any], Any]]] = []
            for attr, src in field_sources(model):
                fns = [f for f in (processed.get(src), convert.get(attr)) if f is not None]
                if fns:
                    steps.append((src, fns[0] if len(fns) == 1 else _then(*fns)))
            found = self._readers[key] = tuple_reader(model, tuple(self._keys), tuple(steps))
        read: TupleReader[R] = found
        return read

    def values_reader(
        self, **convert: Callable[[Any], Any]
    ) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
        """A function giving one of :meth:`rows` as the tuple of its values in column order,
        each column's result processor applied, then ``convert`` (column key -> function) as
        :meth:`reader` applies it: what a record of the row holds, without the record."""
        key = ("values", *sorted(convert.items()))
        found = self._readers.get(key)
        if found is None:
            unknown = set(convert) - set(self._keys)
            if unknown:
                raise TypeError(f"the statement selects no column(s) {sorted(unknown)}")
            processed = dict(self._processed)
            env: dict[str, Any] = {}
            items = []
            for i, name in enumerate(self._keys):
                fns = [f for f in (processed.get(name), convert.get(name)) if f is not None]
                if fns:
                    env[f"convert_{i}"] = fns[0] if len(fns) == 1 else _then(*fns)
                    items.append(f"convert_{i}(row[{i}])")
                else:
                    items.append(f"row[{i}]")
            source = "def read(row):\n    return (" + ", ".join(items) + ",)"
            exec(compile(source, "<values_reader>", "exec"), env)
            found = self._readers[key] = env["read"]
        read: Callable[[Sequence[Any]], tuple[Any, ...]] = found
        return read

    def value_reader(self, key: str) -> Callable[[Sequence[Any]], Any]:
        """A function giving column ``key``'s value of one of :meth:`rows`, its result
        processor applied: one column of a row whose others a record reads
        (:meth:`values_reader` would convert them all)."""
        found = self._readers.get(("value", key))
        if found is None:
            if key not in self._keys:
                raise TypeError(f"the statement selects no column {key!r}")
            index, process = self._keys.index(key), dict(self._processed).get(key)
            if process is None:
                found = operator.itemgetter(index)
            else:
                convert = process

                def found(row: Sequence[Any]) -> Any:
                    return convert(row[index])

            self._readers[("value", key)] = found
        read: Callable[[Sequence[Any]], Any] = found
        return read

    def record(
        self, conn: Connection, model: type[R], values: Mapping[str, Any] | None = None
    ) -> R | None:
        """The first row as a ``model`` record (:meth:`reader`), or None: a point read without
        the row dict :meth:`first` builds."""
        return self.record_of(model, self.rows(conn, values))

    def record_of(self, model: type[R], rows: Sequence[Sequence[Any]]) -> R | None:
        """The first of ``rows`` (as :meth:`rows` or ``SqlDatabase.fetch`` gave them) as a
        ``model`` record, or None when there is none."""
        return self.reader(model)(rows[0]) if rows else None

    def run_variant(
        self, conn: Connection, sql: str, values: Mapping[str, Any] | None = None
    ) -> list[Any]:
        """Run ``sql``, this statement's SQL in another form (``EXPLAIN`` + :attr:`sql`), with
        the values this statement would bind, the way it runs; the driver's rows as they
        come (``python -m bench.explain`` explains the exact statements this way)."""
        return self._execute(conn, values, True, sql)[0] or []

    def first(
        self, conn: Connection, values: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """The first row of :meth:`all`, or None."""
        rows = self.all(conn, values)
        return rows[0] if rows else None

    def scalars(self, conn: Connection, values: Mapping[str, Any] | None = None) -> list[Any]:
        """The first column of every row."""
        if not self._keys:
            raise TypeError("scalars() needs a SELECT")
        key = self._keys[0]
        return [row[key] for row in self.all(conn, values)]

    def scalar(self, conn: Connection, values: Mapping[str, Any] | None = None) -> Any:
        """The first column of the first row (None when there is no row)."""
        found = self.scalars(conn, values)
        return found[0] if found else None


def _then(first: Callable[[Any], Any], second: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``second(first(value))``; None stays None."""
    return lambda value: None if (value := first(value)) is None else second(value)


def driver_error(conn: Connection, exc: Exception, sql: str, bound: Any) -> Exception:
    """A driver error as SQLAlchemy raises it on ordinary execution (a ``DBAPIError``, the
    connection invalidated on a disconnect), so that error maps, deadlock retries and
    disconnect handling treat the fast path alike. Other exceptions come back unchanged."""
    dialect = conn.dialect
    base = dialect.loaded_dbapi.Error
    if not isinstance(exc, base):
        return exc
    disconnect = dialect.is_disconnect(exc, conn.connection.dbapi_connection, None)
    if disconnect:
        conn.invalidate(exc)
    return sa.exc.DBAPIError.instance(
        sql,
        bound,
        exc,
        base,
        hide_parameters=getattr(conn.engine, "hide_parameters", True),
        connection_invalidated=disconnect,
        dialect=dialect,
    )


def params(prefix: str, count: int) -> list[sa.BindParameter[Any]]:
    """``count`` named bind parameters ``prefix0, prefix1, ...`` (for IN lists and batches)."""
    return [sa.bindparam(f"{prefix}{i}") for i in range(count)]


#: Values per ``IN (...)`` list: Oracle refuses more than 1000 (ORA-01795).
IN_LIST_LIMIT = 500


def in_list(column: sa.ColumnElement[Any], prefix: str, count: int) -> sa.ColumnElement[bool]:
    """``column IN (:prefix0, ...)`` over ``count`` binds, as OR-ed lists of at most
    ``IN_LIST_LIMIT`` values so that every backend accepts it."""
    binds = params(prefix, count)
    lists = [column.in_(binds[i : i + IN_LIST_LIMIT]) for i in range(0, count, IN_LIST_LIMIT)]
    return lists[0] if len(lists) == 1 else sa.or_(*lists)


def numbered(prefix: str, values: Sequence[Any]) -> dict[str, Any]:
    """The values of :func:`params` by name."""
    return {f"{prefix}{i}": v for i, v in enumerate(values)}
