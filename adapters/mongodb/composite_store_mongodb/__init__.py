"""MongoDB: ``mongodb://HOST[:PORT][,HOST...]/DATABASE`` and ``mongodb+srv://HOST/DATABASE``.

Install with ``pip install "composite-store[mongodb]"`` (the ``composite-store-mongodb``
package). Driver: pymongo's native asyncio client, ``pymongo.AsyncMongoClient`` (pymongo >=
4.10); no thread hops, no Motor.

The database is the URL's path. Driver options stay in the query string (``replicaSet``,
``tls``, ``authSource``, ``readPreference``, ...); two are ours: ``prefix`` (collection prefix,
default ``mastra_``, validated as an identifier) and ``validator`` (``true`` installs a
``$jsonSchema`` validator generated from the documented schema on every collection; off by
default, so documents written by other clients are never rejected)::

    open_store("mongodb://127.0.0.1:27017/agent")
    open_store("mongodb://u:pw@a:27017,b:27017,c:27017/agent?replicaSet=rs0&validator=true")
    open_store("mongodb+srv://u:pw@cluster0.example.net/agent?prefix=bot_")
    MongoStore(client=my_async_client, database="agent")   # share a client you own

Layout: one collection per documented table (``mastra_threads``, ``mastra_messages``, ...) with
the documented field names; timestamps are BSON dates (milliseconds, as the API), JSON columns
embedded BSON values, message content compact JSON text. The server's ``_id`` is its own
ObjectId; each documented key is a unique index (``<collection>_pkey``, ``..._key``) and each
documented index exists under its documented name.

Deployments: ``init()`` asks the server what it is. On a replica set or a sharded cluster
(``mongos``) multi-document writes (a ``save_messages`` batch, deleting a thread with its
messages) run in one transaction and ``capabilities.atomic_batches`` is on; a standalone
server has no transactions, so the flag is off there. Workflow step/state updates are
single-document compare-and-set loops, working-memory updates single-document pipeline updates,
so ``concurrent_updates`` and ``compare_and_set`` hold on every deployment.

Sharding: create the collections sharded before the first ``init()``, with shard keys that
keep what one operation touches together, e.g.::

    sh.shardCollection("agent.mastra_messages", {thread_id: 1})
    sh.shardCollection("agent.mastra_threads", {id: 1})
    sh.shardCollection("agent.mastra_resources", {id: 1})
    sh.shardCollection("agent.mastra_workflow_snapshot", {workflow_name: 1, run_id: 1})

A thread's messages then live on one shard, so a page or an include window is read from one
shard, and every message write names its thread (the shard key). MongoDB only accepts unique
indexes that start with the shard key: ``init()`` reads each collection's shard key and puts it
in front of the unique indexes (``mastra_messages_pkey`` becomes ``{thread_id, id}``); moving
a message to another thread deletes it from the old one in the same transaction, which keeps
message ids unique across threads. See docs/mongodb.md.
"""

from composite_store_mongodb.connection import MongoConnection
from composite_store_mongodb.datasets import MongoDatasets
from composite_store_mongodb.domain import MongoDomain
from composite_store_mongodb.experiments import MongoExperiments
from composite_store_mongodb.memory import MongoMemory
from composite_store_mongodb.observability import MongoObservability
from composite_store_mongodb.scores import MongoScores
from composite_store_mongodb.store import MongoStore
from composite_store_mongodb.workflow_definitions import MongoWorkflowDefinitions
from composite_store_mongodb.workflows import MongoWorkflows

__all__ = [
    "MongoConnection",
    "MongoDatasets",
    "MongoDomain",
    "MongoExperiments",
    "MongoMemory",
    "MongoObservability",
    "MongoScores",
    "MongoStore",
    "MongoWorkflowDefinitions",
    "MongoWorkflows",
]
