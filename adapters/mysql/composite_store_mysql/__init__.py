"""MariaDB and MySQL for composite-store.

:URL: ``mysql://USER:PASSWORD@HOST:PORT/DATABASE``, ``mysql+pymysql://...`` or
    ``mariadb://...``, with optional query parameters ``prefix`` (default ``mastra_``),
    ``schema`` (another database on the server), ``pool_size``, ``max_overflow``,
    ``pool_timeout``, ``pool_recycle``; other parameters (``ssl_ca=...``,
    ``connect_timeout=10``) go to the driver. The connection charset is utf8mb4. Statements
    with parameters run as server-side prepared statements, up to 256 kept per connection
    (asyncmy's ``stmt_cache_size``; ``?stmt_cache_size=0`` sends every value in the SQL text
    instead).
:extra: ``pip install "composite-store[mysql]"`` (installs ``composite-store-mysql``).
:driver: asyncmy through SQLAlchemy's ``mysql+asyncmy`` async engine, for every URL form above
    (``mysql+pymysql://`` is accepted for compatibility and served by asyncmy too). Servers:
    MariaDB 10.11+ and MySQL 8.0+; one dialect serves both and reads which one it talks to
    from the server.

Why asyncmy: it speaks the protocol on asyncio sockets, so an operation never hops to a worker
thread (PyMySQL would need one per operation), and its protocol core is compiled (Cython),
where aiomysql runs PyMySQL's pure-Python core; SQLAlchemy supports it for both servers.

Layout: Mastra's table and column names; key columns ``VARCHAR(255)`` and other text
``LONGTEXT``, all utf8mb4 with a binary NO PAD collation (ids compare exactly: no case
folding, no trailing-space padding); timestamps ``DATETIME(3)`` holding UTC; JSON columns
``JSON`` (MariaDB: ``LONGTEXT`` checked by ``JSON_VALID``) holding compact JSON. Sessions run
``READ COMMITTED`` with a strict ``sql_mode``, so a value too long for a key column is a
``ValidationError``, never truncated.

    from composite_store_mysql import MysqlStore

    async with MysqlStore("mysql://app:secret@localhost/agents") as store:
        await store.memory.save_thread(thread={"id": "t1", "resourceId": "u1"})
"""

from composite_store_mysql.dialect import MysqlDialect
from composite_store_mysql.domains import (
    MysqlDatasets,
    MysqlExperiments,
    MysqlMemory,
    MysqlObservability,
    MysqlScores,
    MysqlWorkflowDefinitions,
    MysqlWorkflows,
)
from composite_store_mysql.store import MysqlStore

__all__ = [
    "MysqlDatasets",
    "MysqlDialect",
    "MysqlExperiments",
    "MysqlMemory",
    "MysqlObservability",
    "MysqlScores",
    "MysqlStore",
    "MysqlWorkflowDefinitions",
    "MysqlWorkflows",
]
