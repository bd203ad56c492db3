"""``composite_store.schema.drift`` on hand-made physical tables: each kind of difference, and
what is not one (declared variants, indexes matched by columns rather than names)."""

from __future__ import annotations

from composite_store.schema import SHADOW_TIMESTAMPS, ColumnType, TableSpec, table
from composite_store.schema.drift import Kind, compare, compare_table
from composite_store.schema.physical import PhysicalColumn, PhysicalIndex, PhysicalTable

THREADS = table("threads")


def _exact(spec: TableSpec, **changes: object) -> PhysicalTable:
    """``spec`` as a backend that created exactly the documented table would describe it."""
    columns = tuple(
        PhysicalColumn(c.name, c.type.value, c.nullable, frozenset({c.type}))
        for c in spec.columns
    )
    indexes = tuple(
        PhysicalIndex(f"other_name_{i.suffix}", i.column_names, i.unique,
                      tuple(d for _, d in i.columns))
        for i in spec.indexes
    ) + tuple(PhysicalIndex(f"u{n}", u, True) for n, u in enumerate(spec.unique))
    values: dict[str, object] = {
        "table": spec.base_name, "name": spec.name(), "columns": columns,
        "primary_key": spec.primary_key, "indexes": indexes,
    }
    values.update(changes)
    return PhysicalTable(**values)  # type: ignore[arg-type]


def test_the_documented_table_has_no_difference() -> None:
    from composite_store.schema import TABLES

    assert compare(TABLES, [_exact(spec) for spec in TABLES]) == []


def test_each_kind_of_difference_is_named() -> None:
    exact = _exact(THREADS)
    columns = [c for c in exact.columns if c.name != "title"]
    columns = [
        PhysicalColumn(c.name, "INTEGER", c.nullable, frozenset({ColumnType.INTEGER}))
        if c.name == "metadata" else c
        for c in columns
    ]
    columns.append(PhysicalColumn("colour", "TEXT", True, frozenset({ColumnType.TEXT})))
    columns = [
        PhysicalColumn(c.name, c.type, False, c.holds) if c.name == "metadata" else c
        for c in columns
    ]
    physical = _exact(THREADS, columns=tuple(columns), primary_key=(), indexes=())
    kinds = [d.kind for d in compare_table(THREADS, physical)]
    assert kinds == [
        Kind.MISSING_COLUMN, Kind.COLUMN_TYPE, Kind.NULLABILITY, Kind.EXTRA_COLUMN,
        Kind.PRIMARY_KEY, Kind.MISSING_INDEX,
    ]
    assert compare_table(THREADS, None)[0].kind is Kind.MISSING_TABLE


def test_an_index_in_the_wrong_direction_is_a_shape_difference() -> None:
    [index] = THREADS.indexes
    wrong = PhysicalIndex("x", index.column_names, False, (False, False))
    [difference] = compare_table(THREADS, _exact(THREADS, indexes=(wrong,)))
    assert difference.kind is Kind.INDEX_SHAPE and difference.index == index


def test_declared_shadow_columns_are_not_drift_but_undeclared_ones_are() -> None:
    shadows = tuple(
        PhysicalColumn(f"{c}Z", "TIMESTAMPTZ", True, frozenset({ColumnType.TIMESTAMP}))
        for c in ("createdAt", "updatedAt")
    )
    exact = _exact(THREADS)
    with_shadows = _exact(THREADS, columns=exact.columns + shadows)
    declared = _exact(
        THREADS, columns=exact.columns + shadows, variants=frozenset({SHADOW_TIMESTAMPS})
    )
    assert [d.kind for d in compare_table(THREADS, with_shadows)] == [Kind.EXTRA_COLUMN] * 2
    assert compare_table(THREADS, declared) == []


def test_a_scanning_store_has_no_index_to_miss() -> None:
    assert compare_table(THREADS, _exact(THREADS, indexes=(), has_indexes=False)) == []


def test_an_index_that_serves_its_reads_either_way_has_no_direction_to_miss() -> None:
    # The messages index's reads take one thread (equality) ordered by createdAt, which a
    # B-tree serves read forward or backward: Mastra's SQLite index (thread_id, createdAt)
    # is it. The threads index keeps its direction (its reads are not declared so).
    messages = table("messages")
    [index] = messages.indexes
    assert index.any_direction and not THREADS.indexes[0].any_direction
    ascending = PhysicalIndex("idx_messages_thread_created_at", ("thread_id", "createdAt"),
                              False, (False, False))
    assert compare_table(messages, _exact(messages, indexes=(ascending,))) == []
    other_columns = PhysicalIndex("x", ("createdAt", "thread_id"), False, (True, False))
    [missing] = compare_table(messages, _exact(messages, indexes=(other_columns,)))
    assert missing.kind is Kind.MISSING_INDEX and missing.index == index


def test_mastras_sqlite_message_index_stands_for_the_documented_one() -> None:
    messages = table("messages")
    [index] = messages.indexes
    standing = messages.standing_for(index, "sqlite")
    assert standing.mastra_name == "idx_messages_thread_created_at"
    sqlite_indexes = messages.indexes_for("sqlite")
    assert index not in sqlite_indexes and standing in sqlite_indexes
    # PostgreSQL has no Mastra index of its own on these columns: the documented one is made.
    assert messages.standing_for(index, "postgresql") is index
    assert index in messages.indexes_for("postgresql")
