"""The MongoDB adapter's pure parts, without a server: URLs, indexes, validators, ranges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from composite_store_mongodb import MongoStore
from composite_store_mongodb.connection import parse_url
from composite_store_mongodb.indexes import index_defs
from composite_store_mongodb.provision import store_url
from composite_store_mongodb.queries import range_condition
from composite_store_mongodb.validator import documented_types, json_schema, read_properties

from composite_store import ValidationError, open_store
from composite_store.registry import get_adapter
from composite_store.schema import TABLES, TableSpec, table


def test_scheme_is_registered() -> None:
    assert get_adapter("mongodb") is MongoStore
    assert get_adapter("mongodb+srv") is MongoStore


@pytest.mark.parametrize(
    ("url", "driver", "database", "options"),
    [
        ("mongodb://h:27017/agent", "mongodb://h:27017/agent", "agent", {}),
        (
            "mongodb://u:p%2Fw@a:1,b:2/agent?replicaSet=rs&prefix=bot_&validator=true",
            "mongodb://u:p%2Fw@a:1,b:2/agent?replicaSet=rs",
            "agent",
            {"prefix": "bot_", "validator": "true"},
        ),
        ("mongodb+srv://c.example.net/x?tls=1", "mongodb+srv://c.example.net/x?tls=1", "x", {}),
        ("mongodb://h:27017", "mongodb://h:27017", None, {}),
        ("mongodb://h:27017/?authSource=admin", "mongodb://h:27017/?authSource=admin", None, {}),
    ],
)
def test_parse_url(url: str, driver: str, database: str | None, options: dict[str, str]) -> None:
    assert parse_url(url) == (driver, database, options)


def test_open_store_does_no_io_and_redacts() -> None:
    store = open_store("mongodb://agent:s3cret@db.invalid:1/agent?prefix=bot_&validator=on")
    assert isinstance(store, MongoStore)
    assert store.connection.prefix == "bot_" and store.connection.validator is True
    assert "s3cret" not in repr(store) and "agent:***@" in store.describe()["memory"]
    assert set(store.domains) == {
        "memory", "workflows", "workflow_definitions", "scores", "observability", "datasets",
        "experiments",
    }


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mongodb://h:27017", "no MongoDB database given"),
        ("mongodb://h:27017/a.b", "invalid MongoDB database name 'a.b'"),
        ("mongodb://h:27017/agent?prefix=1x", "invalid table prefix '1x'"),
        ("mongodb://h:27017/agent?validator=maybe", "invalid validator option 'maybe'"),
    ],
)
def test_bad_urls_are_refused(url: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        open_store(url)


def test_store_url_replaces_the_database_and_turns_validators_on() -> None:
    assert (
        store_url("mongodb://u:p@h:1/admin?replicaSet=rs", "cs_1")
        == "mongodb://u:p@h:1/cs_1?replicaSet=rs&validator=true"
    )
    assert store_url("mongodb://h:1?w=1", "cs_1") == "mongodb://h:1/cs_1?w=1&validator=true"
    assert store_url("mongodb://h:1/a?validator=false", "b") == "mongodb://h:1/b?validator=false"


@pytest.mark.parametrize("spec", TABLES, ids=lambda s: s.base_name)
def test_indexes_carry_documented_keys_and_indexes(spec: TableSpec) -> None:
    defs = {d.name: d for d in index_defs(spec, "mastra_")}
    name = spec.name()
    if spec.primary_key:
        pkey = defs[f"{name}_pkey"]
        assert pkey.unique
        assert tuple(c for c, _ in pkey.keys) == spec.primary_key
    for index in spec.indexes:
        found = defs[index.name(name)]
        assert found.keys == tuple((c, -1 if desc else 1) for c, desc in index.columns)
    for unique in spec.unique:
        assert any(d.unique and tuple(c for c, _ in d.keys) == unique for d in defs.values())


def test_unique_indexes_start_with_the_shard_key() -> None:
    defs = {d.name: d for d in index_defs(table("messages"), "mastra_", ("thread_id",))}
    assert defs["mastra_messages_pkey"].keys == (("thread_id", 1), ("id", 1))
    # Non-unique indexes are left as they are.
    assert defs["mastra_messages_thread_id_createdat_idx"].keys == (
        ("thread_id", 1), ("createdAt", -1),
    )


@pytest.mark.parametrize("spec", TABLES, ids=lambda s: s.base_name)
def test_validator_reads_back_as_the_documented_types(spec: TableSpec) -> None:
    props = read_properties(json_schema(spec, "mastra_"))
    assert list(props) == list(spec.column_names)
    for col in spec.columns:
        types, nullable = props[col.name]
        assert col.type in documented_types(types)
        assert nullable is col.nullable


def test_inclusive_bounds_become_exclusive_one_step_out() -> None:
    t = datetime(2024, 5, 17, 9, 30, 0, 123000, tzinfo=UTC)
    ms = timedelta(milliseconds=1)
    assert range_condition(t, t) == {"$gt": t - ms, "$lt": t + ms}
    assert range_condition(t, None, start_exclusive=True) == {"$gt": t}
    assert range_condition(None, 10) == {"$lt": 11}
    assert range_condition(None, None) == {}
