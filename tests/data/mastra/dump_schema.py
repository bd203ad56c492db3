"""Dump the physical schema of a database as JSON: the golden snapshot of Mastra's tables.

Reads only the catalogs (PostgreSQL: pg_catalog; SQLite/libSQL: sqlite_master and pragmas), so
the same dumper describes a database Mastra's init() created and one composite-store created::

    python tests/data/mastra/dump_schema.py postgres URL SCHEMA > postgres-1.27.1.json
    python tests/data/mastra/dump_schema.py sqlite FILE > libsql-1.23.1.json

Names that contain the PostgreSQL schema have it replaced by ``{schema}``, so a dump made in one
schema compares with tables created in another. ``make_golden.sh`` makes both golden files.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from typing import Any

__all__ = ["dump_postgres", "dump_sqlite", "normalize"]


def normalize(name: str, schema: str) -> str:
    """``name`` with the schema spelled ``{schema}`` (index and constraint names carry it)."""
    return re.sub(rf"(?<![A-Za-z0-9]){re.escape(schema.lower())}_", "{schema}_", name)


_PG_COLUMNS = """
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid), a.attnum
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum
"""

_PG_CONSTRAINTS = """
SELECT c.relname, k.conname, k.contype,
       ARRAY(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY AS u(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum
             ORDER BY u.ord)::text[],
       pg_get_constraintdef(k.oid)
FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND k.contype IN ('p', 'u', 'c', 'f')
ORDER BY c.relname, k.conname
"""

_PG_INDEXES = """
SELECT t.relname, i.relname, x.indisunique, x.indisprimary, am.amname,
       pg_get_expr(x.indpred, x.indrelid),
       ARRAY(SELECT pg_get_indexdef(x.indexrelid, k + 1, true)
             FROM generate_subscripts(x.indkey, 1) AS k ORDER BY k)::text[],
       ARRAY(SELECT (x.indoption[k] & 1) = 1
             FROM generate_subscripts(x.indkey, 1) AS k ORDER BY k)::bool[],
       EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid
               AND k.conrelid = x.indrelid)
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
JOIN pg_am am ON am.oid = i.relam
WHERE n.nspname = %s
ORDER BY t.relname, i.relname
"""

_PG_TRIGGERS = """
SELECT c.relname, g.tgname, pg_get_triggerdef(g.oid)
FROM pg_trigger g
JOIN pg_class c ON c.oid = g.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND NOT g.tgisinternal
ORDER BY c.relname, g.tgname
"""


def _unquote(part: str) -> str:
    return part[1:-1].replace('""', '"') if part.startswith('"') and part.endswith('"') else part


def dump_postgres(url: str, schema: str) -> dict[str, Any]:
    """Every table of ``schema`` in the PostgreSQL database at ``url``."""
    import psycopg

    tables: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return tables.setdefault(
            name,
            {"columns": [], "primary_key": None, "unique": [], "checks": [], "indexes": [],
             "triggers": []},
        )

    with psycopg.connect(url, autocommit=True) as conn:
        for rel, col, type_, nullable, default, _ in conn.execute(_PG_COLUMNS, (schema,)):
            entry(rel)["columns"].append(
                {"name": col, "type": type_, "nullable": nullable,
                 "default": None if default is None else normalize(default, schema)}
            )
        for rel, name, kind, columns, definition in conn.execute(_PG_CONSTRAINTS, (schema,)):
            found = {"name": normalize(name, schema), "columns": list(columns)}
            if kind == "p":
                entry(rel)["primary_key"] = found
            elif kind == "u":
                entry(rel)["unique"].append(found)
            else:
                entry(rel)["checks"].append(
                    {"name": normalize(name, schema), "definition": definition}
                )
        for rel, name, unique, primary, method, where, parts, desc, constraint in conn.execute(
            _PG_INDEXES, (schema,)
        ):
            entry(rel)["indexes"].append(
                {
                    "name": normalize(name, schema),
                    "columns": [_unquote(p) for p in parts],
                    "descending": list(desc),
                    "unique": unique,
                    "primary": primary,
                    "constraint": constraint,
                    "method": method,
                    "where": where,
                }
            )
        for rel, name, definition in conn.execute(_PG_TRIGGERS, (schema,)):
            entry(rel)["triggers"].append(
                {"name": normalize(name, schema), "definition": normalize(
                    definition.replace(f"{schema}.", "{schema}."), schema)}
            )
    return {"backend": "postgresql", "tables": dict(sorted(tables.items()))}


_WHERE = re.compile(r"\bWHERE\b(.*)$", re.IGNORECASE | re.DOTALL)


def dump_sqlite(path: str) -> dict[str, Any]:
    """Every table of the SQLite (libSQL) file at ``path``."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables: dict[str, Any] = {}
        rows = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        for name, sql in rows:
            quoted = '"' + name.replace('"', '""') + '"'
            columns = [
                {"name": col, "type": type_, "nullable": not notnull and not pk,
                 "default": default, "pk": pk}
                for _cid, col, type_, notnull, default, pk, _hidden in conn.execute(
                    f"PRAGMA table_xinfo({quoted})"
                )
            ]
            key = [c["name"] for c in sorted(columns, key=lambda c: c["pk"]) if c["pk"]]
            for c in columns:
                del c["pk"]
            indexes = []
            for _seq, ix_name, unique, origin, partial in conn.execute(
                f"PRAGMA index_list({quoted})"
            ):
                ix_quoted = '"' + ix_name.replace('"', '""') + '"'
                parts = [
                    (col, bool(desc))
                    for _seqno, _cid, col, desc, _coll, is_key in conn.execute(
                        f"PRAGMA index_xinfo({ix_quoted})"
                    )
                    if is_key
                ]
                (ix_sql,) = conn.execute(
                    "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (ix_name,)
                ).fetchone()
                where = _WHERE.search(ix_sql) if partial and ix_sql else None
                indexes.append(
                    {
                        # sqlite_autoindex_<table>_<n>: an unnamed PRIMARY KEY / UNIQUE.
                        "name": ix_name,
                        "columns": [c for c, _ in parts],
                        "descending": [d for _, d in parts],
                        "unique": bool(unique),
                        # c: CREATE INDEX; u: a UNIQUE constraint; pk: the PRIMARY KEY.
                        "origin": origin,
                        "where": where.group(1).strip() if where else None,
                    }
                )
            tables[name] = {
                "columns": columns,
                "primary_key": {"columns": key} if key else None,
                "indexes": sorted(indexes, key=lambda i: i["name"]),
                "sql": sql,
            }
        return {"backend": "sqlite", "tables": tables}
    finally:
        conn.close()


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "postgres":
        found = dump_postgres(argv[1], argv[2])
    elif len(argv) == 2 and argv[0] == "sqlite":
        found = dump_sqlite(argv[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    json.dump(found, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
