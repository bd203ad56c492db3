"""``MongoDomain``: what every MongoDB domain shares (connection ownership, collections,
capabilities, the schema hooks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pymongo import AsyncMongoClient
from pymongo.asynchronous.collection import AsyncCollection

from composite_store.domains.base import Capabilities
from composite_store.domains.hooks import Inspectable, Migratable, Transferable
from composite_store.errors import ValidationError
from composite_store.records.base import Record
from composite_store.schema import DEFAULT_PREFIX, TableSpec, table, tables_for
from composite_store.schema.physical import PhysicalTable
from composite_store_mongodb import catalog, schema_versions, transfer
from composite_store_mongodb.connection import Document, MongoConnection
from composite_store_mongodb.documents import NO_ID

if TYPE_CHECKING:
    from composite_store.schema.drift import Difference
    from composite_store.schema.migrations import Statement, Step

__all__ = ["MongoDomain"]


class MongoDomain(Transferable, Migratable, Inspectable):
    """Base of the MongoDB domains: owns or shares a ``MongoConnection``.

    Construct it standalone (``url=``, or ``client=`` with ``database=``) or with the
    ``connection=`` its store shares. Options: ``prefix`` (collection prefix, default
    ``mastra_``), ``validator`` (install ``$jsonSchema`` validators; off by default); other
    keywords go to ``AsyncMongoClient``.
    """

    backend: ClassVar[str] = "mongodb"

    def __init__(
        self,
        *,
        url: str | None = None,
        client: AsyncMongoClient[Document] | None = None,
        database: str | None = None,
        connection: MongoConnection | None = None,
        prefix: str = DEFAULT_PREFIX,
        validator: bool | str = False,
        **client_options: Any,
    ) -> None:
        super().__init__()
        if connection is not None:
            if url is not None or client is not None:
                raise ValidationError("pass connection= alone, or url=/client=, not both")
            self.conn = connection
            self._owns_conn = False
        else:
            self.conn = MongoConnection(
                url,
                client=client,
                database=database,
                prefix=prefix,
                validator=validator,
                client_options=client_options,
            )
            self._owns_conn = True
        self.specs: tuple[TableSpec, ...] = tables_for(self.domain)

    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]
        """What this domain guarantees on the deployment ``init()`` found.

        Single-document updates, compare-and-set loops and unique keys hold everywhere;
        batches are atomic only where the server runs transactions (replica sets and sharded
        clusters), which ``init()`` detects. Before ``init()`` the conservative answer is given.
        """
        transactions = self.conn.transactions
        return Capabilities(
            atomic_batches=transactions,
            concurrent_updates=True,
            compare_and_set=True,
            transactions=transactions,
            sort_threads=True,
            metadata_filters=True,
            list_scores_by_span=True,
            span_attribute_filters=True,
            reasons={} if transactions else {
                name: "a standalone MongoDB server has no multi-document transactions (a "
                "replica set or sharded cluster has)"
                for name in ("atomic_batches", "transactions")
            },
        )

    def c(self, base_name: str) -> AsyncCollection[Document]:
        """The collection of documented table ``base_name``."""
        return self.conn.collection(table(base_name))

    # -- lifecycle -----------------------------------------------------------------------------

    async def _init(self) -> None:
        await self.conn.open()
        await catalog.ensure(self.conn, self.specs)

    async def _clear(self) -> None:
        async def clear(session: Any) -> None:
            for spec in self.specs:
                await self.conn.collection(spec).delete_many({})

        await self.conn.run(clear)

    async def _open(self) -> None:
        await self.conn.open()

    async def _close(self) -> None:
        if self._owns_conn:
            await self.conn.close()

    async def _ping(self) -> None:
        await self.conn.open()
        await self.conn.ping()

    def describe(self) -> str:
        return f"{self.backend} {self.conn.describe()}"

    # -- schema hooks --------------------------------------------------------------------------

    async def describe_physical(self) -> list[PhysicalTable]:
        # docstring inherited
        self._check()
        return await catalog.describe(self.conn, self.specs)

    async def read_raw(self, table_name: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        # docstring inherited
        # The server's own ``_id`` is left out: it is not a documented field.
        self._check()
        spec = table(table_name)
        if spec not in self.specs:
            raise ValidationError(f"{table_name!r} is not a table of the {self.domain} domain")
        unknown = set(key) - set(spec.column_names)
        if unknown:
            raise ValidationError(f"unknown fields for {table_name}: {sorted(unknown)}")
        collection = self.conn.collection(spec)
        return await self.conn.run(lambda _: collection.find_one(dict(key), NO_ID))

    # -- export and import (transfer), schema versions and migrations (schema_versions) ---

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        # docstring inherited
        return await transfer.export_documents(self.conn, table, cursor, limit)

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        # docstring inherited
        return await transfer.fetch_documents(self.conn, table, keys)

    async def _import(self, table: str, records: list[Record]) -> None:
        # docstring inherited
        await transfer.import_documents(self.conn, table, records)

    async def _count(self, table: str) -> int:
        # docstring inherited
        return await transfer.count_documents(self.conn, table)

    async def _read_schema_version(self) -> int | None:
        # docstring inherited
        return await schema_versions.read_version(self.conn, self.domain)

    async def _write_schema_version(self, version: int) -> None:
        # docstring inherited
        await schema_versions.write_version(self.conn, self.domain, version)

    async def _migration_plan(self, step: Step) -> list[Statement]:
        # docstring inherited
        return await schema_versions.migration_plan(self.conn, step)

    def fix_statement(self, difference: Difference) -> str | None:
        # docstring inherited
        return schema_versions.fix_statement(self.conn, difference)
