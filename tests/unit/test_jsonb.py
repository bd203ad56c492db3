"""The pure-Python JSONB decoder, on blobs that @mastra/libsql and the libSQL engine wrote."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from composite_store import open_store
from composite_store.sql import jsonb
from composite_store.sql.types import loads_json

GOLDEN = Path(__file__).parents[1] / "data" / "mastra" / "libsql-1.23.1-jsonb.json"
BLOBS = json.loads(GOLDEN.read_text(encoding="utf-8"))["blobs"]


@pytest.mark.parametrize("blob", BLOBS, ids=lambda b: f"{b['table']}.{b['column']}")
def test_decodes_what_mastra_wrote_as_libsql_reads_it(blob: dict[str, Any]) -> None:
    raw = bytes.fromhex(blob["jsonb"])
    assert jsonb.looks_like_jsonb(raw)
    assert jsonb.decode(raw) == json.loads(blob["json"])


#: JSON and JSON5 texts whose JSONB covers every element type and header size.
CASES = [
    "null", "true", "false", "0", "-12", "12345678901234567890", "2.5", "-1e-7", '""',
    '"plain"', '"esc \\" \\\\ \\n \\u00e9 \\ud83d\\ude80"', '"Grüße 你好 🚀"', "[]", "{}",
    '[1,[2,[3,[]]],{"a":{"b":null}}]', '{"k":"' + "x" * 300 + '"}',
    '{"k":"' + "y" * 70000 + '"}', "[" + ",".join(["1"] * 5000) + "]",
    # JSON5, which jsonb() keeps as INT5 / FLOAT5 / TEXT5 / unquoted labels
    "0x1F", "-0xff", ".5", "5.", "+3", "Infinity", "-Infinity", "'single'",
    # (not \\v: SQLite 3.45's json() renders it as a tab, U+0009, where JSON5 means U+000B)
    "'\\x41\\''", "{unquoted:1, 'q':2,}", "[1,2,]",
]


@pytest.mark.parametrize("text", CASES, ids=lambda t: t[:24])
def test_decodes_what_the_libsql_engine_encodes(text: str) -> None:
    libsql = pytest.importorskip("libsql")
    conn = libsql.connect(":memory:")
    blob, canonical = conn.execute("SELECT jsonb(?), json(jsonb(?))", (text, text)).fetchone()
    want = json.loads(canonical)  # json() spells infinity 9e999, which loads as inf
    got = jsonb.decode(bytes(blob))
    assert got == want or (isinstance(got, float) and math.isinf(got) and got == want)


def test_json_text_in_a_blob_is_not_taken_for_jsonb() -> None:
    for text in ('{"a":1}', "[1,2,3]", '"s"', "123", "null"):
        assert loads_json(text.encode()) == json.loads(text)


@pytest.mark.parametrize(
    "blob",
    [b"", b"\x0d", b"\xc7", b"\x17ab", b"\x0b\x13", b"\x2c\x13\x13", b"\x1c\x00", b"\x0f",
     b'"s"'],
    ids=["empty", "reserved", "truncated size", "past the end", "trailing", "label not text",
         "odd object", "reserved 15", "false with a payload"],
)
def test_malformed_blobs_are_refused(blob: bytes) -> None:
    with pytest.raises(jsonb.JsonbError):
        jsonb.decode(blob)


def test_the_sqlite_store_reads_mastras_jsonb_columns(tmp_path: Path) -> None:
    """get_thread_by_id, get_resource_by_id and load_workflow_snapshot on rows whose JSON
    columns hold the blobs Mastra wrote (issue 16: they raised UnicodeDecodeError)."""
    path = tmp_path / "shared.db"
    url = f"sqlite:///{path}"
    by_table = {b["table"]: b for b in BLOBS}

    async def write() -> None:
        async with open_store(url) as store:
            await store.memory.save_thread(thread={"id": "t", "resource_id": "u", "title": "x"})
            await store.memory.save_resource(resource={"id": "u", "working_memory": "wm"})
            await store.workflows.persist_workflow_snapshot(
                workflow_name="w", run_id="r", snapshot={"status": "running"}
            )

    asyncio.run(write())
    with sqlite3.connect(path) as conn:
        for table, column, where in (
            ("mastra_threads", "metadata", "id = 't'"),
            ("mastra_resources", "metadata", "id = 'u'"),
            ("mastra_workflow_snapshot", "snapshot", "run_id = 'r'"),
        ):
            conn.execute(
                f"UPDATE {table} SET {column} = ? WHERE {where}",
                (bytes.fromhex(by_table[table]["jsonb"]),),
            )

    async def read() -> None:
        async with open_store(url) as store:
            thread = await store.memory.get_thread_by_id(thread_id="t")
            assert thread is not None
            assert thread.metadata == json.loads(by_table["mastra_threads"]["json"])
            resource = await store.memory.get_resource_by_id(resource_id="u")
            assert resource is not None
            assert resource.metadata == json.loads(by_table["mastra_resources"]["json"])
            snapshot = await store.workflows.load_workflow_snapshot(
                workflow_name="w", run_id="r"
            )
            assert snapshot == json.loads(by_table["mastra_workflow_snapshot"]["json"])

    asyncio.run(read())
