"""``MongoStore``: the domains of one MongoDB database, sharing one client."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pymongo.common
from pymongo import AsyncMongoClient

from composite_store.schema import DEFAULT_PREFIX
from composite_store.store import Store
from composite_store.urls import check_options
from composite_store_mongodb.connection import Document, MongoConnection
from composite_store_mongodb.datasets import MongoDatasets
from composite_store_mongodb.domain import MongoDomain
from composite_store_mongodb.experiments import MongoExperiments
from composite_store_mongodb.memory import MongoMemory
from composite_store_mongodb.observability import MongoObservability
from composite_store_mongodb.scores import MongoScores
from composite_store_mongodb.workflow_definitions import MongoWorkflowDefinitions
from composite_store_mongodb.workflows import MongoWorkflows

__all__ = ["MongoStore"]



#: Keywords passed on to ``AsyncMongoClient``: pymongo's own table of client options (names
#: compared case-insensitively, as pymongo does), and its client-level keywords.
CLIENT_OPTIONS = frozenset(pymongo.common.VALIDATORS) | frozenset(
    {"document_class", "tz_aware", "connect", "type_registry", "tzinfo", "datetime_conversion"}
)

class MongoStore(Store):
    """Every domain on one MongoDB database: ``MongoStore("mongodb://127.0.0.1:27017/agent")``.

    Or share a client you own: ``MongoStore(client=client, database="agent")`` (it is not closed
    by ``close()``). Options, as keywords or URL query parameters: ``prefix`` (collection
    prefix, default ``mastra_``) and ``validator`` (install ``$jsonSchema`` validators, default
    off); other keywords go to ``AsyncMongoClient`` (``serverSelectionTimeoutMS=...``).
    """

    backend = "mongodb"
    domain_classes: ClassVar[Mapping[str, type[MongoDomain]]] = {
        "memory": MongoMemory,
        "workflows": MongoWorkflows,
        "workflow_definitions": MongoWorkflowDefinitions,
        "scores": MongoScores,
        "observability": MongoObservability,
        "datasets": MongoDatasets,
        "experiments": MongoExperiments,
    }

    @classmethod
    def option_names(cls) -> frozenset[str]:
        # docstring inherited
        return frozenset({"client", "database", "prefix", "validator"}) | CLIENT_OPTIONS

    def __init__(
        self,
        url: str | None = None,
        *,
        client: AsyncMongoClient[Document] | None = None,
        database: str | None = None,
        prefix: str = DEFAULT_PREFIX,
        validator: bool | str = False,
        **client_options: Any,
    ) -> None:
        # pymongo only warns about an option it does not know, and then ignores it.
        check_options(client_options, self.option_names(), type(self).__name__, fold_case=True)
        self.connection = MongoConnection(
            url,
            client=client,
            database=database,
            prefix=prefix,
            validator=validator,
            client_options=client_options,
        )
        super().__init__(
            {name: cls(connection=self.connection) for name, cls in self.domain_classes.items()}
        )

    async def _close(self) -> None:
        await self.connection.close()
