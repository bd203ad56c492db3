"""``MongoConnection``: the client, database and deployment facts one Mongo store shares.

The client is created at ``open()`` (the first ``init()``), never in a constructor, so
``open_store()`` does no I/O and a ``mongodb+srv://`` name is resolved on the event loop that
uses it. ``open()`` also asks the server what it is (``hello``): replica sets and sharded
clusters run multi-document operations in a transaction, a standalone server cannot.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote

from bson.codec_options import CodecOptions
from pymongo import AsyncMongoClient
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from composite_store.errors import ConfigurationError, ValidationError, redact
from composite_store.schema import DEFAULT_PREFIX, TableSpec, validate_prefix
from composite_store.urls import scheme_of, split_options, unknown_url_option, url_flag
from composite_store_mongodb.errors import mongo_errors
from composite_store_mongodb.transaction import in_transaction

__all__ = ["Document", "MongoConnection", "Session", "parse_url"]

T = TypeVar("T")
Document = dict[str, Any]
#: The session an operation runs in: a transaction's, or None where there is none.
Session = AsyncClientSession | None

#: Query parameters that are ours, not the driver's; they are removed before the client sees
#: the URL.
OPTIONS = ("prefix", "validator")
_SCHEMES = ("mongodb", "mongodb+srv")
#: Characters MongoDB refuses in database names (any platform).
_BAD_DB_CHARS = set('/\\. "$*<>:|?\x00')


def validate_database(name: str) -> str:
    """Return ``name`` if MongoDB accepts it as a database name, else raise."""
    bad = sorted(set(name) & _BAD_DB_CHARS)
    if not name or bad or len(name.encode()) > 63:
        raise ValidationError(
            f"invalid MongoDB database name {name!r}: use 1-63 bytes without "
            f"{' '.join(repr(c) for c in sorted(_BAD_DB_CHARS))}"
        )
    return name


def _unknown_uri_option(url: str) -> str | None:
    """The first query parameter of ``url`` that pymongo knows no option of, or None."""
    from pymongo.common import validate
    from pymongo.errors import ConfigurationError as UnknownOption

    for key, value in parse_qsl(url.partition("?")[2], keep_blank_values=True):
        try:
            validate(key, value)
        except UnknownOption as refused:
            if "Unknown option" in str(refused):
                return key
        except (TypeError, ValueError):
            pass  # a known option with a bad value: not what is looked for
    return None


def parse_url(url: str) -> tuple[str, str | None, dict[str, str]]:
    """Split a store URL into (driver URL, database from the path, our options).

    ``mongodb://user:pw@h1,h2/agent?replicaSet=rs&prefix=a_`` gives the driver URL without
    ``prefix``/``validator``, the database ``agent`` and ``{"prefix": "a_"}``.
    """
    scheme = scheme_of(url)
    if scheme not in _SCHEMES:
        raise ValidationError(
            f"not a MongoDB URL: {redact(url)!r} (expected mongodb:// or mongodb+srv://)"
        )
    driver_url, options = split_options(url, OPTIONS)
    rest = driver_url.split("://", 1)[1]
    # The URI spec requires '/' inside credentials to be percent-encoded, so the first '/'
    # ends the host list.
    _, slash, path = rest.partition("/")
    database = unquote(path.split("?", 1)[0]) if slash else ""
    return driver_url, (validate_database(database) if database else None), options



#: Client options composite-store sets unless the caller does (milliseconds).
_FAST_FAILURE = {"serverSelectionTimeoutMS": 5000, "connectTimeoutMS": 5000}

class MongoConnection:
    """The ``AsyncMongoClient`` and database shared by the domains of one store.

    Give ``url`` (the database is its path) or an existing ``client`` plus ``database``. A client
    passed in belongs to the caller and is never closed here. ``validator=True`` installs a
    ``$jsonSchema`` validator on every collection (off by default, so documents written by
    other clients are never rejected).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: AsyncMongoClient[Document] | None = None,
        database: str | None = None,
        prefix: str = DEFAULT_PREFIX,
        validator: bool | str = False,
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        if (url is None) == (client is None):
            raise ValidationError("pass exactly one of url= or client= (with database=)")
        options: dict[str, str] = {}
        self.url: str | None = None
        if url is not None:
            self.url, from_path, options = parse_url(url)
            database = database or from_path
        if not database:
            raise ValidationError(
                "no MongoDB database given: put it in the URL path "
                "(mongodb://host:27017/agent) or pass database="
            )
        self.database_name = validate_database(database)
        self.prefix = validate_prefix(options.get("prefix", prefix))
        self.validator = url_flag(options.get("validator", validator), option="validator")
        self.owns_client = client is None
        self._client = client
        self._client_options = dict(client_options or {})
        self._db: AsyncDatabase[Document] | None = None
        #: Whether the deployment runs multi-document transactions (replica set or mongos).
        self.transactions = False
        #: ``standalone``, ``replica set`` or ``sharded``, from ``hello`` at ``open()``.
        self.topology = "unknown"
        #: Shard key fields of each sharded collection (by collection name), read at ``open()``.
        self.shard_keys: dict[str, tuple[str, ...]] = {}
        #: Collections whose indexes and validator ``ensure`` has already checked.
        self.ensured: set[str] = set()

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def client(self) -> AsyncMongoClient[Document]:
        if self._client is None:
            raise RuntimeError("MongoConnection.open() has not run")
        return self._client

    @property
    def db(self) -> AsyncDatabase[Document]:
        if self._db is None:
            raise RuntimeError("MongoConnection.open() has not run")
        return self._db

    async def open(self) -> None:
        """Create the client (when this connection owns one) and learn the deployment."""
        if self._db is not None:
            return
        with mongo_errors():
            if self._client is None:
                options: dict[str, Any] = {"appname": "composite-store"}
                # pymongo waits 30 s for a server by default; an unreachable one should be a
                # BackendUnavailableError within seconds. Either option, as a keyword or in
                # the URL's query, overrides this.
                lowered = (self.url or "").lower()
                for name, default in _FAST_FAILURE.items():
                    if name.lower() not in lowered:
                        options[name] = default
                options.update(self._client_options)
                with warnings.catch_warnings():
                    # pymongo warns of a URI option it does not know, then ignores it.
                    warnings.filterwarnings("error", "Unknown option", UserWarning)
                    try:
                        self._client = AsyncMongoClient(self.url, **options)
                    except UserWarning as ignored:
                        unknown = _unknown_uri_option(self.url or "")
                        raise ConfigurationError(
                            unknown_url_option(unknown, OPTIONS) if unknown else str(ignored)
                        ) from None
            # Aware UTC datetimes whatever the caller's client says: timestamps are part of
            # the API.
            self._db = self._client.get_database(
                self.database_name, codec_options=CodecOptions(tz_aware=True, tzinfo=UTC)
            )
            hello = await self._db.command("hello")
            sessions = hello.get("logicalSessionTimeoutMinutes") is not None
            if hello.get("msg") == "isdbgrid":
                self.topology = "sharded"
                await self._read_shard_keys()
            elif hello.get("setName"):
                self.topology = "replica set"
            else:
                self.topology = "standalone"
            self.transactions = sessions and self.topology != "standalone"

    async def _read_shard_keys(self) -> None:
        from pymongo.errors import OperationFailure

        prefix = f"{self.database_name}."
        try:
            cursor = self.client["config"]["collections"].find(
                {"_id": {"$regex": f"^{prefix.replace('.', '[.]')}"}}, {"key": 1}
            )
            found = await cursor.to_list()
        except OperationFailure:
            # No right to read the cluster catalog: unique indexes are then created as
            # documented, and the server says so if a shard key forbids them.
            return
        for entry in found:
            name = str(entry["_id"]).removeprefix(prefix)
            self.shard_keys[name] = tuple(entry.get("key", {}))

    async def close(self) -> None:
        """Close the client if this connection created it."""
        if self.owns_client and self._client is not None:
            await self._client.close()
            self._client = None
        self._db = None
        self.ensured.clear()

    async def ping(self) -> None:
        with mongo_errors():
            await self.db.command("ping")

    # -- operations ----------------------------------------------------------------------------

    def collection(self, spec: TableSpec) -> AsyncCollection[Document]:
        """The collection holding documented table ``spec``."""
        return self.db[spec.name(self.prefix)]

    async def run(self, fn: Callable[[Session], Awaitable[T]], *, atomic: bool = False) -> T:
        """Run ``fn`` with driver errors mapped to ours.

        With ``atomic`` and a deployment that has transactions, ``fn`` runs in one transaction
        (retried from the start on a write conflict or a dropped connection, so ``fn`` must only
        read and write through the session it is given: ``transaction.in_transaction``);
        elsewhere it gets ``None`` and runs as it is.
        """
        with mongo_errors():
            if not (atomic and self.transactions):
                return await fn(None)
            return await in_transaction(self.client, fn)

    def describe(self) -> str:
        where = redact(self.url) if self.url else f"(client) {self.database_name}"
        parts = [where.split("?", 1)[0]]
        if self.prefix != DEFAULT_PREFIX:
            parts.append(f"prefix={self.prefix}")
        if self.validator:
            parts.append("validator=on")
        return " ".join(parts)
