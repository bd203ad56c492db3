"""``RedisDomain``: what every Redis domain shares (connection, catalog, index upkeep, retries)."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from composite_store.domains.base import Capabilities
from composite_store.domains.hooks import Inspectable, Migratable, Transferable
from composite_store.errors import ConflictError, SchemaMismatchError, ValidationError
from composite_store.records.base import Record, now_utc
from composite_store.schema import DEFAULT_PREFIX, SCHEMA_VERSION, TableSpec, table
from composite_store.schema.physical import PhysicalColumn, PhysicalIndex, PhysicalTable
from composite_store_redis import schema_versions, transfer
from composite_store_redis.batch import BATCH_CHUNK, Batch
from composite_store_redis.codec import ENCODINGS, HOLDS, dump_json, millis, nanos_member
from composite_store_redis.connection import RedisConnection
from composite_store_redis.keys import Keys, SortedIndex, pack

if TYPE_CHECKING:
    from composite_store.schema.drift import Difference
    from composite_store.schema.migrations import Statement, Step

__all__ = ["RedisDomain"]

T = TypeVar("T")

#: Attempts of an optimistic write before giving up with ``ConflictError``.
_ATTEMPTS = 200


class RedisDomain(Transferable, Migratable, Inspectable):
    """Base of the Redis domains: owns or shares a ``RedisConnection``.

    Construct it standalone (``url=`` or ``client=``, plus ``prefix=``/``ttl=``) or with the
    ``connection=`` its store shares. Capabilities depend on the deployment: a domain on Redis
    Cluster claims ``cluster_capabilities``, which lack what needs one slot per operation.
    """

    backend: ClassVar[str] = "redis"
    #: The documented tables (base names) of the domain.
    tables: ClassVar[tuple[str, ...]] = ()
    #: Every sorted-set index the domain maintains.
    indexes: ClassVar[tuple[SortedIndex, ...]] = ()
    #: Lookup keys (``T:<name>:{value}``): table -> (name, column of ``value``, column held).
    pointers: ClassVar[tuple[tuple[str, str, str, str], ...]] = ()
    #: Unique keys kept as one string key per value (``T:<name>:{first}:<rest>``): table ->
    #: (name, columns).
    uniques: ClassVar[tuple[tuple[str, str, tuple[str, ...]], ...]] = ()
    standalone_capabilities: ClassVar[Capabilities] = Capabilities()
    cluster_capabilities: ClassVar[Capabilities] = Capabilities()
    batch_limits: ClassVar[Mapping[str, int]] = {"ids": BATCH_CHUNK}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = [(i.table, i.name) for i in cls.indexes]
        clashing = sorted({n for n in names if names.count(n) > 1})
        if clashing:
            raise AssertionError(f"{cls.__name__}: two indexes share the keys of {clashing}")

    def __init__(
        self,
        *,
        url: str | None = None,
        client: Redis | RedisCluster | None = None,
        connection: RedisConnection | None = None,
        prefix: str = DEFAULT_PREFIX,
        ttl: float | Mapping[str, float] | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__()
        if connection is not None:
            if url is not None or client is not None:
                raise ValidationError("pass connection= alone, or url=/client=, not both")
            self.conn = connection
            self._owns_conn = False
        else:
            self.conn = RedisConnection(
                url, client=client, prefix=prefix, ttl=ttl, client_options=client_options
            )
            self._owns_conn = True
        # Capabilities are a class attribute of every domain; a Redis domain's depend on the
        # deployment it is given, so the instance shadows the class default.
        setattr(  # noqa: B010
            self,
            "capabilities",
            self.cluster_capabilities if self.conn.cluster else self.standalone_capabilities,
        )

    @property
    def keys(self) -> Keys:
        return self.conn.keys

    def describe(self) -> str:
        return self.conn.describe()

    # -- lifecycle ---------------------------------------------------------------------------------

    async def _init(self) -> None:
        await self.conn.open()
        layouts = {name: self._layout(name) for name in self.tables}
        found = await self.conn.read([["HGETALL", self.keys.catalog(n)] for n in self.tables])
        batch = Batch()
        for (name, layout), stored in zip(layouts.items(), found, strict=True):
            version = stored.get("version") if stored else None
            if version is not None and version != str(SCHEMA_VERSION):
                raise SchemaMismatchError(
                    f"the keys of {self.keys.table(name)!r} were written with schema version "
                    f"{version}, this adapter writes version {SCHEMA_VERSION}: migrate them, or "
                    "use another prefix (prefix=...) for a fresh key space"
                )
            # init() never alters an existing layout: a catalog that differs is drift, which
            # `composite-store inspect` reports and `composite-store migrate` fixes.
            if not stored:
                batch.put_record(self.keys.catalog(name), layout)
        if batch:
            await self.conn.apply(batch)

    def _layout(self, name: str) -> dict[str, str]:
        """The catalog entry of table ``name``: what ``init()`` records and
        ``describe_physical`` reads back."""
        spec = table(name)
        return {
            "version": str(SCHEMA_VERSION),
            "record": "hash",
            "key": dump_json(list(spec.key_columns)),
            "columns": dump_json([[c.name, ENCODINGS[c.type], c.nullable] for c in spec.columns]),
            "indexes": dump_json(
                [
                    [f"{self.keys.table(name)}_{i.name}", list(i.columns), False]
                    for i in self.indexes
                    if i.table == name
                ]
                + [
                    [f"{self.keys.table(name)}_{p_name}", [column], True]
                    for t, p_name, column, _ in self.pointers
                    if t == name
                ]
                + [
                    [f"{self.keys.table(name)}_{u_name}", list(columns), True]
                    for t, u_name, columns in self.uniques
                    if t == name
                ]
            ),
        }

    async def _clear(self) -> None:
        for name in self.tables:
            await self.conn.delete_matching(
                self.keys.pattern(name), keep=(self.keys.catalog(name),)
            )

    async def _open(self) -> None:
        await self.conn.open()

    async def _close(self) -> None:
        if self._owns_conn:
            await self.conn.close()

    # -- export (transfer), schema versions and migrations (schema_versions) ------------------

    async def _read_schema_version(self) -> int | None:
        # docstring inherited
        return await schema_versions.read_version(self)

    async def _write_schema_version(self, version: int) -> None:
        # docstring inherited
        await schema_versions.write_version(self, version)

    async def _migration_plan(self, step: Step) -> list[Statement]:
        # docstring inherited
        return await schema_versions.migration_plan(self, step)

    def fix_statement(self, difference: Difference) -> str | None:
        # docstring inherited
        return schema_versions.fix_statement(self, difference)

    async def _export_from(
        self,
        index: SortedIndex,
        cursor: str | None,
        limit: int,
        key_of: Callable[[str], str],
        build: Callable[[dict[str, str]], Record],
    ) -> tuple[list[Record], str | None]:
        """One export page of the table a whole-table ``index`` lists."""
        found, following = await transfer.export_index(self, index, cursor, limit, key_of)
        return [build(raw) for raw in found], following

    async def _fetch_keys(
        self, keys: Sequence[str], build: Callable[[dict[str, str]], Record]
    ) -> list[Record]:
        """The records stored at ``keys`` (missing ones skipped)."""
        return [build(raw) for raw in await transfer.read_hashes(self, keys) if raw]

    async def durability_warning(self) -> str | None:
        # docstring inherited
        return await self.conn.durability_warning()

    async def _ping(self) -> None:
        # Before init() too (Store.ping, composite-store inspect): open the client first.
        await self.conn.open()
        await self.conn.ping()

    # -- schema hooks ------------------------------------------------------------------------------

    async def describe_physical(self) -> list[PhysicalTable]:
        # docstring inherited
        self._check()
        found = await self.conn.read([["HGETALL", self.keys.catalog(n)] for n in self.tables])
        out = []
        for name, stored in zip(self.tables, found, strict=True):
            if not stored:
                continue
            columns = tuple(
                PhysicalColumn(name=n, type=enc, nullable=bool(nullable), holds=HOLDS[enc])
                for n, enc, nullable in json.loads(stored["columns"])
            )
            indexes = tuple(
                PhysicalIndex(name=n, columns=tuple(cols), unique=bool(unique))
                for n, cols, unique in json.loads(stored["indexes"])
            )
            out.append(
                PhysicalTable(
                    table=name,
                    name=self.keys.table(name),
                    columns=columns,
                    primary_key=tuple(json.loads(stored["key"])),
                    indexes=indexes,
                )
            )
        return out

    def _known_table(self, name: str) -> TableSpec:
        if name not in self.tables:
            raise ValidationError(f"{name!r} is not a table of the {self.domain} domain")
        return table(name)

    async def _raw(self, name: str, key: str) -> dict[str, Any] | None:
        """The hash at ``key`` as stored: every documented field of table ``name`` (an absent
        one is a null column) plus whatever else the hash holds."""
        [found] = await self.conn.read([["HGETALL", key]])
        if not found:
            return None
        return {**dict.fromkeys(table(name).column_names), **found}

    # -- writing -----------------------------------------------------------------------------------

    def batch(self) -> Batch:
        """A batch carrying the domain's TTL (records written now expire ``ttl`` from now)."""
        ttl = self.conn.ttl_ms(self.domain)
        return Batch(expire_at=None if ttl is None else millis(now_utc()) + ttl)

    def companion(self, index: SortedIndex, values: Sequence[str]) -> str | None:
        """The TTL companion of an index set, when the domain has a TTL."""
        if self.conn.ttl_ms(self.domain) is None:
            return None
        return self.keys.index(index, values, ttl=True)

    def index_set(self, index: SortedIndex, values: Sequence[str]) -> tuple[str, str | None]:
        """(sorted set, TTL companion or None) of ``index`` for partition ``values``."""
        return self.keys.index(index, values), self.companion(index, values)

    def reindex(
        self,
        batch: Batch,
        indexes: Sequence[SortedIndex],
        old: Mapping[str, Any] | None,
        new: Mapping[str, Any] | None,
    ) -> None:
        """Move a record's entries in ``indexes`` from its ``old`` stored values to its ``new``
        ones (None: absent); unchanged entries are rewritten, which renews their TTL."""
        if old is None and new is None:
            return
        keys, ttl = self.keys, self.conn.ttl_ms(self.domain) is not None
        before = _entries(indexes, old) if old is not None else {}
        after = _entries(indexes, new) if new is not None else {}
        for entry in before:
            if entry not in after:
                position, values, member = entry
                index = indexes[position]
                companion = keys.index(index, values, ttl=True) if ttl else None
                batch.index_remove(keys.index(index, values), companion, member)
        for (position, values, member), score in after.items():
            index = indexes[position]
            companion = keys.index(index, values, ttl=True) if ttl else None
            batch.index_add(keys.index(index, values), companion, score, member)

    async def optimistic(self, attempt: Callable[[], Awaitable[T | None]], what: str) -> T:
        """Run ``attempt`` (read, build a guarded batch, apply it) until no concurrent writer
        invalidates its reads; it returns None when a guard failed."""
        for n in range(_ATTEMPTS):
            result = await attempt()
            if result is not None:
                return result
            await asyncio.sleep(random.uniform(0, min(0.05, 0.0005 * 2 ** min(n, 7))))
        raise ConflictError(
            f"{what}: gave up after {_ATTEMPTS} attempts, every one overtaken by a concurrent "
            "writer; retry later"
        )


#: One index entry of a record: (position of the index, partition values, member). By
#: position: a frozen dataclass would hash all its fields on every lookup.
Entry = tuple[int, tuple[str, ...], str]


def _entries(
    indexes: Sequence[SortedIndex], stored: Mapping[str, Any]
) -> dict[Entry, int | str]:
    """(index position, partition values, member) -> score of a record in ``indexes``: none in
    an index where a partition value or the order value is null, several where a partition
    value is a list (tags). An order value of ``+inf`` (a span still running) sorts after every
    instant. A record is in many indexes ordered by the same column with the same members (a
    root span in 48), so each (member, score) is worked out once per member and order column."""
    out: dict[Entry, int | str] = {}
    placed: dict[tuple[tuple[str, ...], str, bool], tuple[str, int | str]] = {}
    for position, index in enumerate(indexes):
        at = stored.get(index.order)
        if at is None:
            continue
        partition: list[Any] = []  # strings, and lists of them (tags)
        tags = False
        for column in index.partition:
            value = stored.get(column)
            if value is None:
                break
            if isinstance(value, list):
                tags = True
            elif type(value) is not str:
                value = str(value)
            partition.append(value)
        else:
            how = (index.member, index.order, index.lex)
            found = placed.get(how)
            if found is None:
                ids = [v if type(v := stored[c]) is str else str(v) for c in index.member]
                if index.lex:
                    found = (nanos_member(int(at), *ids), 0)
                elif isinstance(at, datetime):
                    found = (pack(*ids), millis(at))
                else:
                    found = (pack(*ids), at if at == "+inf" else int(at))
                placed[how] = found
            member, score = found
            if not tags:  # the usual record: one entry
                out[(position, tuple(partition), member)] = score
                continue
            choices = [[str(v) for v in p] if isinstance(p, list) else [p] for p in partition]
            for values in itertools.product(*choices):
                out[(position, values, member)] = score
    return out
