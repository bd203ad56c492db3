#!/bin/sh
# Regenerate the golden snapshot of Mastra's physical schema (tests/data/mastra/*.json) and
# the JSONB blobs Mastra writes (libsql-*-jsonb.json).
#
#   POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres sh tests/data/mastra/make_golden.sh
#
# Installs the pinned @mastra packages (npm ci, into a temporary copy of this folder), lets
# Mastra's own init() create every domain's tables in a fresh PostgreSQL database (schema
# public) and schema (a named one), and in a fresh libSQL file, and dumps their catalogs.
# Needs Node 20+, npm, uv, and a role that may create databases.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PG=${POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/postgres}
PGV=$(node -p "require('$HERE/package.json').dependencies['@mastra/pg']")
LSV=$(node -p "require('$HERE/package.json').dependencies['@mastra/libsql']")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$HERE/package.json" "$HERE/package-lock.json" "$HERE/make_dbs.mjs" "$WORK/"
(cd "$WORK" && npm ci --no-audit --no-fund --loglevel=error)
DB=mastra_golden_$$
BASE=${PG%/*}
psql "$PG" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
trap 'psql "$PG" -qc "DROP DATABASE IF EXISTS $DB"; rm -rf "$WORK"' EXIT
node "$WORK/make_dbs.mjs" pg "$BASE/$DB" public
node "$WORK/make_dbs.mjs" pg "$BASE/$DB" mastra_golden
node "$WORK/make_dbs.mjs" libsql "$WORK/golden.db"
node "$WORK/make_dbs.mjs" libsql-sample "$WORK/sample.db"
cd "$HERE/../../.."
uv run python "$HERE/dump_schema.py" postgres "$BASE/$DB" public > "$HERE/postgres-$PGV.json"
uv run python "$HERE/dump_schema.py" postgres "$BASE/$DB" mastra_golden \
  > "$HERE/postgres-$PGV-named-schema.json"
uv run python "$HERE/dump_schema.py" sqlite "$WORK/golden.db" > "$HERE/libsql-$LSV.json"
uv run python "$HERE/dump_jsonb.py" "$WORK/sample.db" > "$HERE/libsql-$LSV-jsonb.json"
