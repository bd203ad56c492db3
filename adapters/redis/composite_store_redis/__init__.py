"""composite-store on Redis: all seven domains.

URL forms: ``redis://[[user]:password@]host[:port][/db]``, ``rediss://`` (TLS), and for Redis
Cluster ``redis+cluster://host:port`` (any node; database 0 only) or ``redis://...?cluster=true``.
Query options: ``prefix`` (key prefix, default ``mastra_``), ``ttl`` / ``ttl_<domain>``
(seconds), plus redis-py's own (``socket_timeout``, ...).

Install: ``pip install "composite-store[redis]"`` (the ``redis`` extra). Driver: redis-py
(``redis.asyncio``: ``Redis`` and ``RedisCluster``), plain Redis 7 commands and Lua scripts
only; no RedisJSON, no RediSearch. Key layout, atomicity and capabilities: docs/redis.md.
"""

from composite_store_redis.connection import RedisConnection
from composite_store_redis.datasets import RedisDatasets
from composite_store_redis.experiments import RedisExperiments
from composite_store_redis.memory import RedisMemory
from composite_store_redis.observability import RedisObservability
from composite_store_redis.scores import RedisScores
from composite_store_redis.store import RedisStore
from composite_store_redis.workflow_definitions import RedisWorkflowDefinitions
from composite_store_redis.workflows import RedisWorkflows

__all__ = [
    "RedisConnection",
    "RedisDatasets",
    "RedisExperiments",
    "RedisMemory",
    "RedisObservability",
    "RedisScores",
    "RedisStore",
    "RedisWorkflowDefinitions",
    "RedisWorkflows",
]
