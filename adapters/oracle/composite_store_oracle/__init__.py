"""Oracle Database for composite-store.

:URL: ``oracle://USER:PASSWORD@HOST:PORT/?service_name=SERVICE`` or ``oracle+oracledb://...``
    (SQLAlchemy's Oracle URL forms; ``HOST:PORT/SID`` names a SID), with optional query
    parameters ``schema`` (an existing Oracle user; default the connecting user's schema),
    ``prefix`` (default ``mastra_``), ``native_json`` (``true``: JSON columns use Oracle's
    ``JSON`` type, 21c+), ``pool_size``, ``max_overflow``, ``pool_timeout``,
    ``pool_recycle``; other parameters go to ``python-oracledb`` (``tcp_connect_timeout=5``).
:extra: ``pip install "composite-store[oracle]"`` (installs ``composite-store-oracle``).
:driver: python-oracledb in thin mode (no Oracle Client libraries), asyncio, through
    SQLAlchemy's ``oracle+oracledb_async`` dialect; every URL form above is served by it.

Oracle 19c or later (COMPATIBLE >= 12.2, for 128-byte identifiers); 23ai gets native
``BOOLEAN`` columns. Layout: the documented table and column names (mixed-case names quoted,
as ``"resourceId"``); ids and other key text ``VARCHAR2(255 CHAR)``, text that queries filter
or sort on (span attributes, statuses) ``VARCHAR2(1000 CHAR)``, longer values refused with
``ValidationError``; other text and JSON ``CLOB`` (JSON as compact text; ``native_json`` uses
the ``JSON`` type instead); timestamps ``TIMESTAMP(3)`` holding UTC; booleans ``BOOLEAN`` on
23ai, else ``SMALLINT`` checked to 0/1. Oracle stores ``''`` as NULL: NOT NULL text such as a
thread's title is nullable here and reads back as ``''``, and ``''`` in a nullable text column
reads back as None. Upserts are ``MERGE`` statements; every value is a bound parameter.

composite-store never creates an Oracle user: the ``schema`` must exist (create the user with
its quota and ``CREATE TABLE`` grant first); tables are created in it on ``init()``.

    from composite_store_oracle import OracleStore

    async with OracleStore("oracle://app:pw@db/?service_name=FREEPDB1") as store:
        await store.memory.save_thread(thread={"id": "t1", "resourceId": "u1"})
"""

from composite_store_oracle.dialect import OracleDialect
from composite_store_oracle.domains import (
    OracleDatasets,
    OracleExperiments,
    OracleMemory,
    OracleObservability,
    OracleScores,
    OracleWorkflowDefinitions,
    OracleWorkflows,
)
from composite_store_oracle.store import OracleStore

__all__ = [
    "OracleDatasets",
    "OracleDialect",
    "OracleExperiments",
    "OracleMemory",
    "OracleObservability",
    "OracleScores",
    "OracleStore",
    "OracleWorkflowDefinitions",
    "OracleWorkflows",
]
