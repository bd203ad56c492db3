"""The Oracle adapter without an Oracle server: every statement it would send, held to Oracle.

DDL for every documented table and every statement the shared domain code executes (recorded by
``oracle_recording``) are compiled with SQLAlchemy's Oracle dialect configured as 19c and as
23ai, and checked for properties rather than golden strings: identifiers within 128 bytes and
quoted where reserved, no user value in any SQL text, no LOB in a key, index, comparison or
sort, ``TIMESTAMP(3)`` timestamps bound as ``TIMESTAMP``, no ``BOOLEAN`` before 23ai,
well-formed ``MERGE`` upserts on the documented keys. The live suite is
``tests/conformance/test_oracle.py``.
"""

from __future__ import annotations

import asyncio
import functools
import re
import socket
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import oracledb
import pytest
import sqlalchemy as sa
from composite_store_oracle import OracleDialect, OracleMemory, OracleStore
from composite_store_oracle import errors as oracle_errors
from composite_store_oracle.dialect import async_url, use_input_types
from composite_store_oracle.dml import key_path
from composite_store_oracle.provision import store_url
from composite_store_oracle.types import (
    KEY_LENGTH,
    LOOKUP_LENGTH,
    OracleVarchar,
    input_type_handler,
)
from sqlalchemy.dialects import oracle
from sqlalchemy.dialects.oracle import oracledb as sa_oracledb
from sqlalchemy.engine import Dialect
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlalchemy.sql import operators, visitors
from sqlalchemy.sql.elements import BinaryExpression, Grouping, Label, UnaryExpression

from composite_store import open_store
from composite_store.errors import BackendUnavailableError, ValidationError
from composite_store.schema import (
    EMPTY_STRING_IS_NULL,
    TABLES,
    ColumnType,
    table,
    validate_prefix,
    variant_nullable,
)
from composite_store.sql.memory import SqlMemory
from composite_store.sql.tables import render_tables
from tests.support.oracle_recording import (
    MARKERS,
    Recorded,
    Recording,
    RecordingConnection,
    configure,
    covered_calls,
    public_operations,
    record_domains,
)

VERSIONS = {"19c": (19, 0, 0), "23ai": (23, 4, 0)}
VERSION_PARAMS = [pytest.param(v, id=k) for k, v in VERSIONS.items()]
#: The longest prefix ``validate_prefix`` accepts, and the longest schema name.
LONGEST_PREFIX = "p" * 59 + "_"
LONGEST_SCHEMA = "s" * 63
#: Oracle's reserved words (V$RESERVED_WORDS, RESERVED = 'Y'): unusable as unquoted names.
ORACLE_RESERVED = frozenset(
    {
        "ACCESS", "ADD", "ALL", "ALTER", "AND", "ANY", "AS", "ASC", "AUDIT", "BETWEEN", "BY",
        "CHAR", "CHECK", "CLUSTER", "COLUMN", "COMMENT", "COMPRESS", "CONNECT", "CREATE",
        "CURRENT", "DATE", "DECIMAL", "DEFAULT", "DELETE", "DESC", "DISTINCT", "DROP", "ELSE",
        "EXCLUSIVE", "EXISTS", "FILE", "FLOAT", "FOR", "FROM", "GRANT", "GROUP", "HAVING",
        "IDENTIFIED", "IMMEDIATE", "IN", "INCREMENT", "INDEX", "INITIAL", "INSERT", "INTEGER",
        "INTERSECT", "INTO", "IS", "LEVEL", "LIKE", "LOCK", "LONG", "MAXEXTENTS", "MINUS",
        "MLSLABEL", "MODE", "MODIFY", "NOAUDIT", "NOCOMPRESS", "NOT", "NOWAIT", "NULL", "NUMBER",
        "OF", "OFFLINE", "ON", "ONLINE", "OPTION", "OR", "ORDER", "PCTFREE", "PRIOR", "PUBLIC",
        "RAW", "RENAME", "RESOURCE", "REVOKE", "ROW", "ROWID", "ROWNUM", "ROWS", "SELECT",
        "SESSION", "SET", "SHARE", "SIZE", "SMALLINT", "START", "SUCCESSFUL", "SYNONYM",
        "SYSDATE", "TABLE", "THEN", "TO", "TRIGGER", "UID", "UNION", "UNIQUE", "UPDATE", "USER",
        "VALIDATE", "VALUES", "VARCHAR", "VARCHAR2", "VIEW", "WHENEVER", "WHERE", "WITH",
    }
)
_LOBS = ("CLOB", "NCLOB", "BLOB", "JSON")
_COMPARISONS = frozenset(
    {operators.eq, operators.ne, operators.lt, operators.le, operators.gt, operators.ge,
     operators.in_op, operators.not_in_op, operators.between_op}
)
# -- helpers -----------------------------------------------------------------------------------


def oracle_dialect(version: tuple[int, ...]) -> Dialect:
    """SQLAlchemy's python-oracledb dialect as if connected to a server of ``version``."""
    dialect = sa_oracledb.dialect(dbapi=oracledb)
    configure(dialect, version)
    return dialect


@functools.cache
def recording(version: tuple[int, ...], native_json: bool = False) -> Recording:
    return record_domains(version, native_json=native_json)


def rendered(
    version: tuple[int, ...], *, prefix: str = "mastra_", schema: str | None = "agents",
    native_json: bool = False,
) -> tuple[Dialect, OracleDialect, dict[str, sa.Table]]:
    ours = OracleDialect()
    ours.native_json = native_json
    _, tables = render_tables(ours, prefix, schema)
    return oracle_dialect(version), ours, tables


def ddl(version: tuple[int, ...], **kw: Any) -> dict[str, list[str]]:
    """base name -> [CREATE TABLE, CREATE INDEX ...] as compiled for ``version``."""
    dialect, _, tables = rendered(version, **kw)
    return {
        name: [str(CreateTable(t).compile(dialect=dialect))]
        + [str(CreateIndex(ix).compile(dialect=dialect)) for ix in sorted(t.indexes, key=str)]
        for name, t in tables.items()
    }


def physical_type(dialect: Dialect, column: sa.Column[Any]) -> str:
    return str(dialect.type_compiler_instance.process(column.type))


def _unwrap(element: Any) -> Any:
    while isinstance(element, (UnaryExpression, Label, Grouping)):
        element = element.element
    return element


def _is_lob_column(dialect: Dialect, element: Any) -> bool:
    element = _unwrap(element)
    return isinstance(element, sa.Column) and physical_type(dialect, element).startswith(_LOBS)


def _where(rec: Recorded) -> str:
    return f"{rec.domain}.{rec.call}: {rec.sql[:160]}"


# -- the recorded domain code ------------------------------------------------------------------


def test_the_script_calls_every_public_operation() -> None:
    assert covered_calls() == public_operations()


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_domain_code_runs_against_oracle_statements(version: tuple[int, ...]) -> None:
    found = recording(version)
    assert not found.failures, "\n".join(found.failures)
    per_domain = {rec.domain for rec in found.statements}
    assert per_domain == {
        "memory", "workflows", "scores", "observability", "datasets", "experiments",
        "workflow_definitions",
    }
    verbs = {rec.sql.split(None, 1)[0] for rec in found.statements}
    assert verbs == {"SELECT", "INSERT", "UPDATE", "DELETE", "MERGE"}


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_no_user_value_reaches_sql_text(version: tuple[int, ...]) -> None:
    statements = recording(version).statements
    leaked = [
        f"{name} in {_where(rec)}"
        for rec in statements
        for name, marker in MARKERS.items()
        if marker in rec.sql
    ]
    assert not leaked, "\n".join(leaked)
    bound = " ".join(repr(v) for rec in statements for v in rec.params.values())
    unbound = sorted(name for name, marker in MARKERS.items() if marker not in bound)
    assert not unbound, f"markers never bound (the script must use them): {unbound}"


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_bind_names_are_valid_oracle_binds(version: tuple[int, ...]) -> None:
    # Oracle folds bind names to upper case and limits them to 30 bytes.
    wrong, seen = set(), 0
    for rec in recording(version).statements:
        names = re.findall(r"(?<![:\w]):(\w+)", rec.sql)
        seen += len(names)
        folded = {n.upper() for n in names}
        if len(folded) != len(set(names)):
            wrong.add(f"binds differing only in case in {_where(rec)}")
        wrong.update(f"{n} in {rec.call}" for n in names if len(n.encode()) > 30)
    assert seen > 1000
    assert not wrong, sorted(wrong)


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_sql_literals_are_only_fixed_json_paths(version: tuple[int, ...]) -> None:
    # A JSON path is the one thing Oracle takes only as a literal; keys are validated first.
    allowed = re.compile(r"""^'(\$\."[A-Za-z0-9_-]+"|\$\[\*\]\?\(@ == \$v\)|\[|\]|!)'$""")
    bad = {
        (literal, rec.call)
        for rec in recording(version).statements
        for literal in re.findall(r"'[^']*'", rec.sql)
        if not allowed.match(literal)
    }
    assert not bad, sorted(bad)


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_no_lob_is_compared_sorted_grouped_or_distinct(version: tuple[int, ...]) -> None:
    # Oracle refuses =, <, IN, ORDER BY, GROUP BY and DISTINCT on a CLOB (ORA-00932): every
    # such column must be a key or marked lookup=True in composite_store.schema.
    wrong = set()
    for rec in recording(version).statements:
        dialect = rec.compiled.dialect
        for element in visitors.iterate(rec.statement):
            if isinstance(element, BinaryExpression) and element.operator in _COMPARISONS:
                for side in (element.left, element.right):
                    if _is_lob_column(dialect, side):
                        wrong.add(f"{_unwrap(side)} compared in {rec.domain}.{rec.call}")
            if isinstance(element, sa.Select):
                ordered = [*element._order_by_clauses, *element._group_by_clauses]
                wrong.update(
                    f"{_unwrap(c)} sorted or grouped in {rec.domain}.{rec.call}"
                    for c in ordered
                    if _is_lob_column(dialect, c)
                )
                if element._distinct:
                    wrong.update(
                        f"{c} DISTINCT in {rec.domain}.{rec.call}"
                        for c in element.selected_columns
                        if _is_lob_column(dialect, c)
                    )
    assert not wrong, "\n".join(sorted(wrong))


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_timestamps_are_bound_as_timestamp(version: tuple[int, ...]) -> None:
    # DATE (python-oracledb's default for a datetime) would drop the milliseconds.
    checked, wrong = 0, []
    for rec in recording(version).statements:
        for bind, dbtype in rec.compiled._get_set_input_sizes_lookup().items():
            value = rec.params.get(rec.compiled.bind_names[bind])
            if isinstance(value, datetime):
                checked += 1
                if dbtype is not oracledb.DB_TYPE_TIMESTAMP:
                    wrong.append(f"{bind.key} bound as {dbtype} in {_where(rec)}")
    assert checked > 50
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_locking_reads_have_no_row_limit(version: tuple[int, ...]) -> None:
    # ORA-02014: FOR UPDATE cannot be combined with FETCH FIRST / OFFSET.
    locking = [rec for rec in recording(version).statements if "FOR UPDATE" in rec.sql]
    assert {r.domain for r in locking} >= {"memory", "workflows", "datasets", "experiments"}
    limited = [_where(r) for r in locking if re.search(r"FETCH|OFFSET|ROWNUM", r.sql)]
    assert not limited, limited


def _merge_parts(sql: str) -> dict[str, str]:
    pattern = re.compile(
        r"^MERGE INTO (?P<target>\S+) tgt USING \((?P<source>.+)\) src "
        r"ON \((?P<on>[^)]*)\)"
        r"(?: WHEN MATCHED THEN UPDATE SET (?P<set>.+?))?"
        r" WHEN NOT MATCHED THEN INSERT \((?P<insert>[^)]*)\) VALUES \((?P<values>[^)]*)\)$",
        re.DOTALL,
    )
    found = pattern.match(sql)
    assert found is not None, f"not a well-formed MERGE: {sql[:300]}"
    return {k: v or "" for k, v in found.groupdict().items()}


def _names(text: str, alias: str) -> list[str]:
    return [n.strip('"') for n in re.findall(rf'{alias}\.("[^"]+"|\w+)', text)]


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_merges_upsert_on_the_documented_keys(version: tuple[int, ...]) -> None:
    dialect, _, tables = rendered(version)
    by_name = {t.fullname.split(".")[-1]: base for base, t in tables.items()}
    merges = [rec for rec in recording(version).statements if rec.sql.startswith("MERGE")]
    seen = set()
    for rec in merges:
        parts = _merge_parts(rec.sql)
        base = by_name[parts["target"].split(".")[-1]]
        spec = table(base)
        seen.add(base)
        on_pairs = re.findall(r'tgt\.("[^"]+"|\w+) = src\.("[^"]+"|\w+)', parts["on"])
        assert all(a == b for a, b in on_pairs), parts["on"]
        assert tuple(a.strip('"') for a, _ in on_pairs) == spec.key_columns, _where(rec)
        inserted = [n.strip('"') for n in re.findall(r'("[^"]+"|\w+)', parts["insert"])]
        assert sorted(inserted) == sorted(spec.column_names), _where(rec)
        assert _names(parts["values"], "src") == inserted, _where(rec)
        updated = _names(parts["set"], "tgt")
        assert updated == _names(parts["set"], "src"), _where(rec)
        assert not set(updated) & set(spec.key_columns), "ORA-38104: a key is updated"
        branches = parts["source"].split(" UNION ALL ")
        for branch in branches:
            items = re.match(r"^SELECT (.*) FROM DUAL$", branch.strip(), re.DOTALL)
            assert items is not None, branch
            # Each value is a bind: as is (a boolean), through TO_CLOB (a LOB) or cast to the
            # column's type, so every branch agrees on each column's type, NULLs and long
            # strings included.
            labels, wrapped = [], {}
            for item in re.split(r", (?![^(]*\))", items.group(1)):
                value = re.match(
                    r'^(?:(to_clob)\(:\w+\)|CAST\(:\w+ AS ([^)]+\)?)\)|:\w+) AS ("[^"]+"|\w+)$',
                    item,
                )
                assert value is not None, f"not a bound value: {item!r} in {_where(rec)}"
                name = value.group(3).strip('"')
                labels.append(name)
                wrapped[name] = value.group(1) or value.group(2)
            assert labels == inserted
            tbl = tables[base]
            for name, how in wrapped.items():
                found = physical_type(dialect, tbl.c[name])
                expected = {"CLOB": "to_clob", "BOOLEAN": None, "SMALLINT": None}.get(found, found)
                assert how == expected, f"{base}.{name} ({found}) bound as {how}"
    # The domains' own upserts and the record import: every table with a key.
    assert seen == {spec.base_name for spec in TABLES if spec.key_columns}


def test_native_json_is_read_as_text() -> None:
    # The driver would decode native JSON itself (numbers its own way); read it as text.
    found = recording(VERSIONS["23ai"], native_json=True)
    assert not found.failures, "\n".join(found.failures)
    selected = [
        r.sql.split("\nFROM", 1)[0] for r in found.statements
        if r.sql.startswith("SELECT") and "mastra_threads.metadata" in r.sql.split("\nFROM")[0]
    ]
    assert selected
    wrapped = "JSON_SERIALIZE(agents.mastra_threads.metadata RETURNING CLOB) AS metadata"
    assert all(wrapped in columns for columns in selected), selected


def test_dataset_search_does_not_cast_to_a_lob() -> None:
    searches = [r for r in recording(VERSIONS["19c"]).statements if MARKERS["search"] in
                repr(r.params)]
    assert searches
    for rec in searches:
        assert "CAST(" not in rec.sql and "lower(agents.mastra_dataset_items.input)" in rec.sql


def _run_recorded(coro_factory: Any, *, rows: bool) -> list[Recorded]:
    async def go() -> list[Recorded]:
        store = OracleStore("oracle://u@127.0.0.1:1/?schema=agents")
        db = store.database
        configure(db.engine.dialect, VERSIONS["19c"])
        conn = RecordingConnection(db.engine.dialect, "mastra_", rows=rows)

        async def run(fn: Any, *, write: bool = False) -> Any:
            return fn(conn)

        db.run = run  # type: ignore[method-assign]
        try:
            await coro_factory(db)
        finally:
            await db.dispose()
        return conn.recorded

    return asyncio.run(go())


def test_ping_selects_from_dual() -> None:
    # Oracle before 23ai has no SELECT without FROM.
    [ping] = _run_recorded(lambda db: db.ping(), rows=True)
    assert ping.sql.strip() == "SELECT 1 FROM DUAL"


def test_a_missing_schema_is_explained_not_created() -> None:
    def check(db: Any) -> Any:
        return db.run(lambda conn: db.dialect.create_namespace(conn, db.schema))

    with pytest.raises(ValidationError, match=r"schema 'agents' \(user AGENTS\) does not exist"):
        _run_recorded(check, rows=False)
    [lookup] = _run_recorded(check, rows=True)
    assert lookup.sql.startswith("SELECT 1 FROM all_users") and lookup.params == {
        "owner": "AGENTS"
    }
    assert "CREATE" not in lookup.sql


# -- DDL ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_every_documented_table_compiles(version: tuple[int, ...]) -> None:
    statements = ddl(version)
    assert set(statements) == {spec.base_name for spec in TABLES}
    for spec in TABLES:
        create, *indexes = statements[spec.base_name]
        assert create.strip().startswith(f"CREATE TABLE agents.mastra_{spec.base_name} (")
        assert len(indexes) == len(spec.indexes_for("sql"))  # Oracle is of family "sql"


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_the_schema_version_table_compiles(version: tuple[int, ...]) -> None:
    from composite_store.sql.schema_versions import versions_table

    store = OracleStore(f"oracle://u@127.0.0.1:1/?schema=agents&prefix={LONGEST_PREFIX}")
    tbl = versions_table(store.database)
    sql = str(CreateTable(tbl).compile(dialect=oracle_dialect(version)))
    assert len(tbl.name.encode()) <= 128
    assert '"updatedAt" TIMESTAMP(3) NOT NULL' in sql
    assert not re.search(r"\b(DATE|CLOB)\b", sql), sql


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_identifiers_fit_128_bytes_with_the_longest_prefix(version: tuple[int, ...]) -> None:
    assert validate_prefix(LONGEST_PREFIX) == LONGEST_PREFIX
    dialect, _, tables = rendered(version, prefix=LONGEST_PREFIX, schema=LONGEST_SCHEMA)
    names: list[str] = [LONGEST_SCHEMA]
    for tbl in tables.values():
        names.append(tbl.name)
        names.extend(c.name for c in tbl.columns)
        names.extend(ix.name for ix in tbl.indexes if ix.name)
        names.extend(str(c.name) for c in tbl.constraints if c.name)
        str(CreateTable(tbl).compile(dialect=dialect))  # compiles at that length
    long = [n for n in names if len(n.encode("utf-8")) > 128]
    assert not long, long
    assert max(len(n) for n in names) > 100, "the longest names were not exercised"


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_unquoted_identifiers_are_not_reserved_words(version: tuple[int, ...]) -> None:
    dialect, _, tables = rendered(version)
    preparer = dialect.identifier_preparer
    names = {"agents"}
    for tbl in tables.values():
        names.update([tbl.name, *(c.name for c in tbl.columns)])
        names.update(ix.name for ix in tbl.indexes if ix.name)
        names.update(str(c.name) for c in tbl.constraints if c.name)
    reserved = sorted(n for n in names if preparer.quote(n) == n and n.upper() in ORACLE_RESERVED)
    assert not reserved, reserved


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_keys_and_indexes_are_never_lobs(version: tuple[int, ...]) -> None:
    dialect, _, tables = rendered(version)
    wrong = []
    for base, tbl in tables.items():
        keyed = [*tbl.primary_key.columns]
        keyed += [c for u in tbl.constraints if isinstance(u, sa.UniqueConstraint)
                  for c in u.columns]
        keyed += [c for ix in tbl.indexes for c in ix.columns]
        keyed += [tbl.c[name] for name in table(base).key_columns]
        wrong += [f"{tbl.name}.{c.name}: {physical_type(dialect, c)}" for c in keyed
                  if physical_type(dialect, c).startswith(_LOBS)]
    assert not wrong, wrong


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_text_types_follow_the_schema(version: tuple[int, ...]) -> None:
    dialect, _, tables = rendered(version)
    for spec in TABLES:
        for col in spec.columns:
            if col.type is not ColumnType.TEXT:
                continue
            found = physical_type(dialect, tables[spec.base_name].c[col.name])
            if col.key:
                assert found == f"VARCHAR2({KEY_LENGTH} CHAR)", (spec.base_name, col.name)
            elif col.lookup:
                assert found == f"VARCHAR2({LOOKUP_LENGTH} CHAR)", (spec.base_name, col.name)
            else:
                assert found == "CLOB", (spec.base_name, col.name)


@pytest.mark.parametrize(
    ("version", "native_json"),
    [
        pytest.param(VERSIONS["19c"], False, id="19c"),
        pytest.param(VERSIONS["23ai"], False, id="23ai"),
        pytest.param(VERSIONS["23ai"], True, id="23ai-native-json"),
    ],
)
def test_column_types(version: tuple[int, ...], native_json: bool) -> None:
    statements = ddl(version, native_json=native_json)
    dialect, _, tables = rendered(version, native_json=native_json)
    everything = "\n".join(s for group in statements.values() for s in group)
    assert not re.search(r"\bDATE\b", everything), "DATE has no fraction of a second"
    for spec in TABLES:
        tbl = tables[spec.base_name]
        for col in spec.columns:
            found = physical_type(dialect, tbl.c[col.name])
            if col.type is ColumnType.TIMESTAMP:
                assert found == "TIMESTAMP(3)"
            elif col.type is ColumnType.JSON:
                assert found == ("JSON" if native_json else "CLOB")
            elif col.type is ColumnType.BOOLEAN:
                assert found == ("BOOLEAN" if version >= (23,) else "SMALLINT")
            elif col.type is ColumnType.BIGINT:
                assert found == "NUMBER(19)"
    if version < (23,):
        assert "BOOLEAN" not in everything
        checks = re.findall(r'CONSTRAINT (\w+) CHECK \(("\w+") IN \(0, 1\)\)', everything)
        booleans = sorted(
            (f"mastra_{s.base_name}_{c.name.lower()}_bool", f'"{c.name}"')
            for s in TABLES for c in s.columns if c.type is ColumnType.BOOLEAN
        )
        assert sorted(checks) == booleans
    else:
        assert "CHECK" not in everything


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_empty_string_variant_relaxes_exactly_the_declared_columns(
    version: tuple[int, ...],
) -> None:
    _, ours, tables = rendered(version)
    assert EMPTY_STRING_IS_NULL in ours.variants()
    for spec in TABLES:
        relaxed = variant_nullable(spec, ours.variants())
        tbl = tables[spec.base_name]
        for col in spec.columns:
            physical = tbl.c[col.name]
            assert physical.nullable == (col.nullable or col.name in relaxed), col.name
            if col.name in relaxed:
                # '' was stored as NULL: it reads back as ''.
                processor = physical.type.result_processor(oracle_dialect(version), None)
                assert processor is not None and processor(None) == ""
    assert "title" in variant_nullable(table("threads"), ours.variants())


# -- statements in isolation -------------------------------------------------------------------


def test_json_paths_refuse_unsafe_keys() -> None:
    assert key_path("tier-1_x") == "'$.\"tier-1_x\"'"
    for key in ("a'b", 'a"b', "a b", "", "a.b", "é", "a\n"):
        with pytest.raises(ValidationError, match="invalid JSON key"):
            key_path(key)


def test_json_conditions_compile_as_conditions() -> None:
    dialect = oracle_dialect(VERSIONS["19c"])
    _, ours, tables = rendered(VERSIONS["19c"])
    spans = tables["ai_spans"]
    stmt = sa.select(spans.c.traceId).where(
        ours.json_equals(spans.c.metadata, "k", sa.bindparam("v", type_=sa.Text)),
        ~ours.json_array_contains(spans.c.tags, "t"),
    )
    sql = str(stmt.compile(dialect=dialect))
    assert "WITH WRAPPER), '[' || :v || ']')" in sql
    assert "NOT JSON_EXISTS(agents.mastra_ai_spans.tags, '$[*]?(@ == $v)' PASSING" in sql
    assert "= 1" not in sql and "= 0" not in sql  # conditions, not values, before 23ai


def test_varchar_refuses_too_long_values_before_sending() -> None:
    process = OracleVarchar(KEY_LENGTH).bind_processor(oracle_dialect(VERSIONS["19c"]))
    assert process is not None
    assert process("x" * KEY_LENGTH) == "x" * KEY_LENGTH
    with pytest.raises(ValidationError, match=r"256 characters is too long .*VARCHAR2\(255 CHAR\)"):
        process("x" * (KEY_LENGTH + 1))


class _Cursor:
    def var(self, dbtype: Any, arraysize: int) -> tuple[Any, int]:
        return dbtype, arraysize


def test_every_connection_gets_the_input_type_handler_and_error_codes() -> None:
    engine = OracleStore("oracle://u@127.0.0.1:1/").database.engine.sync_engine
    assert sa.event.contains(engine, "connect", use_input_types)
    assert sa.event.contains(engine, "handle_error", oracle_errors.handle_error)
    driver = SimpleNamespace(inputtypehandler=None)
    use_input_types(object(), SimpleNamespace(driver_connection=driver))
    assert driver.inputtypehandler is input_type_handler


def test_input_type_handler_binds_timestamps_and_long_text() -> None:
    cursor = _Cursor()
    assert input_type_handler(cursor, datetime(2024, 1, 1, tzinfo=UTC), 3) == (
        oracledb.DB_TYPE_TIMESTAMP, 3
    )
    assert input_type_handler(cursor, "a" * 4000, 1) is None  # 4000 bytes: still a VARCHAR2
    assert input_type_handler(cursor, "a" * 4001, 1) == (oracledb.DB_TYPE_CLOB, 1)
    # 1001 characters of 4 bytes each: over 4000 bytes though few characters.
    assert input_type_handler(cursor, "🚀" * 1001, 1) == (oracledb.DB_TYPE_CLOB, 1)
    assert input_type_handler(cursor, 42, 1) is None


def test_expecting_empty_working_memory_matches_the_null_oracle_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # update_resource(working_memory="") stores NULL: a later compare-and-set that expects
    # the "" it wrote must not conflict forever.
    seen: dict[str, Any] = {}

    async def update(self: Any, resource_id: str, **kw: Any) -> str:
        seen.update(kw)
        return "updated"

    monkeypatch.setattr(SqlMemory, "_update_resource", update)
    memory = OracleMemory(url="oracle://u@127.0.0.1:1/")
    now = datetime(2024, 1, 1, tzinfo=UTC)
    for expected, passed in (("", None), ("v1", "v1"), (None, None)):
        result = asyncio.run(
            memory._update_resource(
                "u1", working_memory="x", metadata=None, now=now, expected_working_memory=expected
            )
        )
        assert result == "updated" and seen["expected_working_memory"] == passed


# -- errors ------------------------------------------------------------------------------------


def _driver_error(code: str) -> Exception:
    number = int(code.split("-")[1]) if code.startswith("ORA-") else 0
    detail = SimpleNamespace(full_code=code, code=number)
    exc = oracledb.DatabaseError(detail)
    return exc


def _context(code: str) -> Any:
    return SimpleNamespace(original_exception=_driver_error(code), is_disconnect=False)


@pytest.mark.parametrize("code", sorted(oracle_errors.UNAVAILABLE))
def test_unreachable_codes_are_disconnects(code: str) -> None:
    context = _context(code)
    with pytest.raises(BackendUnavailableError, match="Oracle is unreachable"):
        oracle_errors.handle_error(context)
    assert context.is_disconnect is True


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("ORA-12899", "too long for its column"),
        ("ORA-01461", "too long for a key or lookup column"),
        ("ORA-01400", "required value is missing"),
        ("ORA-02290", "check constraint"),
    ],
)
def test_refused_values_are_validation_errors(code: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        oracle_errors.handle_error(_context(code))


@pytest.mark.parametrize("code", ["ORA-00001", "ORA-00942", "ORA-00060"])
def test_other_codes_go_to_the_error_map(code: str) -> None:
    # ORA-00001 stays an IntegrityError: shared code catches it to settle insert races.
    context = _context(code)
    oracle_errors.handle_error(context)
    assert context.is_disconnect is False
    assert OracleDialect.error_map[sa.exc.IntegrityError].__name__ == "ConflictError"


def test_deadlocks_are_transient() -> None:
    dialect = OracleDialect()
    deadlock = sa.exc.DBAPIError("stmt", {}, _driver_error("ORA-00060"))
    other = sa.exc.DBAPIError("stmt", {}, _driver_error("ORA-00942"))
    assert dialect.is_transient(deadlock) and not dialect.is_transient(other)


def test_an_unreachable_server_raises_backend_unavailable() -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def attempt() -> dict[str, bool]:
        store = OracleStore(
            f"oracle://app:secret@127.0.0.1:{port}/?service_name=FREEPDB1&tcp_connect_timeout=3"
        )
        try:
            with pytest.raises(BackendUnavailableError, match="DPY-6005") as caught:
                await store.init()
            assert "secret" not in str(caught.value)
            return await store.ping()
        finally:
            await store.close()

    assert not any(asyncio.run(attempt()).values())


# -- URLs, options, registry -------------------------------------------------------------------


def test_urls_normalise_to_the_async_driver() -> None:
    assert async_url("oracle://u:p@h:1521/?service_name=S") == (
        "oracle+oracledb_async://u:p@h:1521/?service_name=S"
    )
    assert async_url("oracle+oracledb://u@h/x").startswith("oracle+oracledb_async://u@h/x")
    with pytest.raises(ValidationError, match="not an Oracle URL"):
        async_url("postgresql://u@h/db")


@pytest.mark.parametrize("url", ["oracle://u:p@h/?service_name=S", "oracle+oracledb://u:p@h/x"])
def test_open_store_finds_the_oracle_adapter(url: str) -> None:
    store = open_store(url + ("&" if "?" in url else "?") + "schema=agents&prefix=app_")
    assert isinstance(store, OracleStore)
    assert store.describe()["memory"].endswith("schema=agents prefix=app_")
    assert "p@" not in str(store.describe())


def test_options_are_validated() -> None:
    assert OracleStore("oracle://u@h/?native_json=true").database.dialect.native_json
    assert OracleStore("oracle://u@h/", native_json=True).database.dialect.native_json
    assert not OracleStore("oracle://u@h/").database.dialect.native_json
    with pytest.raises(ValidationError, match="native_json"):
        OracleStore("oracle://u@h/?native_json=maybe")
    with pytest.raises(ValidationError, match="schema name"):
        OracleStore("oracle://u@h/?schema=a;drop")
    with pytest.raises(ValidationError, match="table prefix"):
        OracleStore("oracle://u@h/?prefix=1x")


def test_the_provisioner_hands_out_table_prefixes() -> None:
    from composite_store_oracle import provision

    from composite_store.admin.provision import get_provisioner

    assert get_provisioner("oracle") is provision
    assert get_provisioner("oracle+oracledb") is provision
    with pytest.raises(ValidationError, match="non-empty table prefix"):
        asyncio.run(provision.drop_namespace("oracle://u@127.0.0.1:1/", ""))


def test_store_url_points_at_a_prefix() -> None:
    assert store_url("oracle://u@h/?service_name=S&prefix=old_", "cs_1_") == (
        "oracle://u@h/?service_name=S&prefix=cs_1_"
    )
    with pytest.raises(ValidationError):
        store_url("oracle://u@h/", "bad prefix")


def test_drift_fixes_use_oracles_modify() -> None:
    dialect = OracleDialect()
    assert dialect.alter_column("agents.t", '"title"', "CLOB", True, retype=False) == (
        'ALTER TABLE agents.t MODIFY ("title" NULL)'
    )
    assert dialect.alter_column(
        "agents.t", '"resourceId"', "VARCHAR2(255 CHAR)", False, retype=True
    ) == 'ALTER TABLE agents.t MODIFY ("resourceId" VARCHAR2(255 CHAR) NOT NULL)'


# -- introspection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reflected", "holds"),
    [
        (sa.VARCHAR(255), {ColumnType.TEXT}),
        (sa.CLOB(), {ColumnType.TEXT, ColumnType.JSON}),
        (oracle.TIMESTAMP(), {ColumnType.TIMESTAMP}),
        (oracle.DATE(), set()),
        (oracle.NUMBER(19, 0), {ColumnType.INTEGER, ColumnType.BIGINT, ColumnType.BOOLEAN}),
        (sa.INTEGER(), {ColumnType.INTEGER, ColumnType.BIGINT, ColumnType.BOOLEAN}),
        (oracle.NUMBER(1, 0), {ColumnType.BOOLEAN}),
        (oracle.FLOAT(126), {ColumnType.FLOAT}),
        (oracle.BINARY_DOUBLE(), {ColumnType.FLOAT}),
        (sa.BOOLEAN(), {ColumnType.BOOLEAN}),
        (oracle.JSON(), {ColumnType.JSON}),
    ],
    ids=lambda value: type(value).__name__ if not isinstance(value, set) else "",
)
def test_reflected_types_hold_documented_types(reflected: Any, holds: set[ColumnType]) -> None:
    assert OracleDialect().documented_types(reflected) == holds


def test_descending_index_columns_read_from_oracle_expressions() -> None:
    # What SQLAlchemy reflects for ("resourceId", "createdAt" DESC) and (agent_name, DESC
    # created_at): a descending column is a function-based index expression.
    conn: Any = SimpleNamespace(dialect=oracle_dialect(VERSIONS["19c"]))
    threads: Any = {
        "name": "mastra_threads_resourceid_createdat_idx",
        "column_names": ["resourceId", None],
        "expressions": ["resourceId", '"createdAt"'],
        "column_sorting": {'"createdAt"': ("desc",)},
        "unique": False,
    }
    evals: Any = {
        "name": "mastra_evals_agent_name_created_at_idx",
        "column_names": ["agent_name", None],
        "expressions": ["agent_name", '"CREATED_AT"'],
        "column_sorting": {'"CREATED_AT"': ("desc",)},
        "unique": False,
    }
    dialect = OracleDialect()
    assert dialect.index_columns(conn, threads) == ("resourceId", "createdAt")
    assert dialect.index_columns(conn, evals) == ("agent_name", "created_at")
    assert dialect.index_directions(conn, "t", None, threads) == (False, True)
    plain: Any = {"name": "i", "column_names": ["datasetId", "datasetVersion"], "unique": False}
    assert dialect.index_columns(conn, plain) == ("datasetId", "datasetVersion")
    assert dialect.index_directions(conn, "t", None, plain) == (False, False)


def test_in_lists_stay_within_oracles_limit() -> None:
    found = record_domains(VERSIONS["19c"], big_batches=True)
    assert not found.failures, "\n".join(found.failures)
    assert {r.call for r in found.statements} >= {"list_messages", "batch_delete_traces"}
    too_long = sorted(
        {
            rec.call
            for rec in found.statements
            if any(isinstance(v, (list, tuple)) and len(v) > 1000 for v in rec.params.values())
            or any(g.count(",") >= 1000 for g in re.findall(r" IN \(([^()]*)\)", rec.sql))
        }
    )
    assert not too_long, f"IN lists of more than 1000 values in: {too_long}"


@pytest.mark.parametrize("version", VERSION_PARAMS)
def test_fix_statements_are_oracle_ddl(version: tuple[int, ...]) -> None:
    # What `composite-store inspect` prints next to a drifted Oracle table must run there:
    # ADD (column type), MODIFY (column ...), never ADD COLUMN / ALTER COLUMN.
    from composite_store.schema import table
    from composite_store.schema.drift import Difference, Kind
    from composite_store.sql.fixes import fix_statement

    store = OracleStore("oracle://u@127.0.0.1:1/?schema=agents")
    db = store.database
    configure(db.engine.dialect, version)
    threads = table("threads")
    metadata, title = threads.column("metadata"), threads.column("title")
    added = fix_statement(db, Difference(Kind.MISSING_COLUMN, threads, "missing", column=metadata))
    assert re.fullmatch(r'ALTER TABLE agents\.mastra_threads ADD \(metadata \w+(\(\d+\))?\)', added)
    changed = fix_statement(
        db, Difference(Kind.NULLABILITY, threads, "nullable", column=title, nullable=False)
    )
    assert changed.startswith("ALTER TABLE agents.mastra_threads MODIFY (title ")
    assert "ADD COLUMN" not in added and "ALTER COLUMN" not in changed
