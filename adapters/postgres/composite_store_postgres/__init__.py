"""PostgreSQL for composite-store, sharing Mastra's tables (``@mastra/pg``).

:URL: ``postgresql://USER:PASSWORD@HOST:PORT/DATABASE`` or ``postgresql+psycopg://...``, with
    optional query parameters ``schema`` (default ``public``), ``prefix`` (default
    ``mastra_``), ``pool_size``, ``max_overflow``, ``pool_timeout``, ``pool_recycle``; any
    other parameter (``sslmode=require``, ``connect_timeout=10``,
    ``options=-c statement_timeout=5000``) is passed to libpq.
:extra: ``pip install "composite-store[postgres]"`` (installs ``composite-store-postgres``).
:driver: psycopg 3 in asyncio mode through SQLAlchemy's ``postgresql+psycopg`` async engine
    (every URL form above is served by it). Operations keep their connections between them
    (``composite_store.sql.engine.connections``): one idle for more than 5 seconds is pinged before
    use, one older than ``pool_recycle`` replaced, and an operation whose connection the
    server dropped runs again once on a new one; the pool pre-pings what it hands out.
:plans: the adapter's connections run ``SET enable_seqscan = off`` when they open, so that the
    plans psycopg keeps prepared use the indexes whatever the tables' sizes were when they were
    made (a plan made while a table was tiny otherwise scanned it whole after it grew, until
    the next ANALYZE). Statements with no index to use still scan; ``SET jit = off`` goes
    with it, since the disabled scan's cost would otherwise JIT-compile each of them (a URL
    that sets ``jit`` keeps its value). ``options=-c
    enable_seqscan=on`` in the URL, or an engine of your own (``engine=``), keeps the
    server's setting; a statement whose plan depends on the tables' sizes is then planned for
    every call.
:compression: the connections also set ``default_toast_compression = lz4`` where the server
    offers LZ4 (PostgreSQL 14 and later, built with it): values large enough for PostgreSQL
    to compress (a workflow snapshot, a long message) cost the server a third of pglz's CPU
    and take about 6% more space. Every reader decompresses either. Only the built-in
    default is replaced: a compression chosen in the server's configuration, for the
    database or role, or in the URL (``options=-c default_toast_compression=pglz``) is kept.

Layout (DESIGN.md section 9): tables in the given schema, created if missing and always
written out in statements; ``TIMESTAMP`` columns holding the UTC wall clock, each with a
``"...Z" TIMESTAMPTZ`` shadow written alongside and read in preference; JSON as ``JSONB``;
message content as compact JSON ``TEXT``. A database Mastra created is used as is. PostgreSQL
cannot store U+0000 or lone surrogates: such values are refused with ``ValidationError``.

    from composite_store_postgres import PostgresStore

    async with PostgresStore("postgresql://app@localhost/agents?schema=mastra") as store:
        await store.memory.save_thread(thread={"id": "t1", "resourceId": "u1"})
"""

from composite_store_postgres.dialect import PostgresDialect
from composite_store_postgres.domains import (
    PostgresDatasets,
    PostgresExperiments,
    PostgresMemory,
    PostgresObservability,
    PostgresScores,
    PostgresWorkflowDefinitions,
    PostgresWorkflows,
)
from composite_store_postgres.store import PostgresStore

__all__ = [
    "PostgresDatasets",
    "PostgresDialect",
    "PostgresExperiments",
    "PostgresMemory",
    "PostgresObservability",
    "PostgresScores",
    "PostgresStore",
    "PostgresWorkflowDefinitions",
    "PostgresWorkflows",
]
