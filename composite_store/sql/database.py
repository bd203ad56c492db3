"""``SqlDatabase``: one engine, the rendered tables, and one transaction per operation."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.engine import Connection, Engine, Inspector
from sqlalchemy.util import await_only

from composite_store.errors import (
    BackendUnavailableError,
    CompositeStoreError,
    ConfigurationError,
    SchemaMismatchError,
    ValidationError,
    map_errors,
    redact,
)
from composite_store.records.trusted import column_view
from composite_store.schema import (
    DEFAULT_PREFIX,
    ColumnType,
    TableSpec,
    validate_identifier,
    validate_prefix,
)
from composite_store.sql.dialect import PLACEMENT_OPTIONS, URL_OPTIONS, SqlDialect
from composite_store.sql.engine import HeldConnections, Prepared, StatementCache, driver_error
from composite_store.sql.tables import layout_of, shadow, shared_tables
from composite_store.urls import refused_url_option, split_options

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["SqlDatabase"]

T = TypeVar("T")

#: Tries of one operation whose transaction the server aborted as transient (a deadlock).
TRANSIENT_ATTEMPTS = 5



def _create_engine(dialect: SqlDialect, url: str, options: dict[str, Any]) -> Engine | AsyncEngine:
    """``dialect.create_engine``, with a malformed URL reported as our ValidationError (the
    URL redacted): SQLAlchemy raises ArgumentError, and a bad port a bare ValueError."""
    try:
        return dialect.create_engine(url, options)
    except (sa.exc.ArgumentError, ValueError) as exc:
        if isinstance(exc, CompositeStoreError):
            raise
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValidationError(f"invalid store URL {redact(url)!r}: {redact(reason)}") from None

class SqlDatabase:
    """The engine and tables one relational store shares between its domains.

    Every domain operation is one call of :meth:`run`: one transaction, and for synchronous
    drivers (SQLite) one hop to the database's worker thread, never one hop per statement.
    """

    def __init__(
        self,
        dialect: SqlDialect,
        url: str | None = None,
        *,
        engine: Engine | AsyncEngine | None = None,
        prefix: str = DEFAULT_PREFIX,
        schema: str | None = None,
        engine_options: Mapping[str, Any] | None = None,
    ) -> None:
        if (url is None) == (engine is None):
            raise TypeError("pass exactly one of url= or engine=")
        self.dialect = dialect
        if url is not None:
            # Standalone domains get their URL unsplit (stores split it before): take the
            # composite-store options out so the driver never sees them.
            url, query = split_options(url, PLACEMENT_OPTIONS)
            prefix = query.get("prefix", prefix)
            schema = query.get("schema", schema)
        schema = schema or dialect.default_schema
        self.prefix = validate_prefix(prefix)
        self.schema = validate_identifier(schema, what="schema name") if schema else None
        self.owns_engine = engine is None
        #: The URL as the caller spelled it (None for a shared engine): ``describe()`` shows it
        #: redacted, so what it prints can be passed back to ``open_store``.
        self.url = url
        self._engine_options = dict(engine_options or {})
        self.engine: Engine | AsyncEngine = engine or _create_engine(
            dialect, url or "", self._engine_options
        )
        #: Whether the engine was swapped for a read-only one (``attach_read_only``).
        self.read_only = False
        self.metadata, self.tables = shared_tables(dialect, self.prefix, self.schema)
        #: An ``AsyncEngine`` (checked without importing the asyncio extension and greenlet).
        self.is_async = hasattr(self.engine, "sync_engine")
        self._executor: ThreadPoolExecutor | None = None
        #: Async connections kept between operations (see ``sql.engine.connections``); None for
        #: synchronous drivers and for pools that keep nothing (``NullPool``).
        self._held = HeldConnections.for_engine(self.engine) if self.is_async else None  # type: ignore[arg-type]
        if self.is_async:  # greenlet is there: async engines need it
            from composite_store.sql.engine.greenlets import run_in_greenlet

            self._in_greenlet = run_in_greenlet
        #: How an operation of one statement awaits it on the driver (``fetch``, ``execute``):
        #: only with held connections, in autocommit (the statement its own transaction).
        self._direct = (
            dialect.driver_executor() if self._held is not None and dialect.autocommit else None
        )
        #: The worker thread's connection (synchronous drivers): kept open between operations
        #: so an operation is not also a pool checkout and a reset.
        self._worker_conn: Connection | None = None
        #: Held by whichever thread uses the worker connection: the worker, or the event loop's
        #: thread running a short operation inline (``run(..., short=True)``).
        self._sync_lock = threading.Lock()
        #: Base names of the documented tables known to exist: created by :meth:`create` or
        #: found in the catalog by it.
        self._created: set[str] = set()
        #: The tables of this database's schema that the catalog listed at the latest
        #: :meth:`create` that looked (empty before one did).
        self.listed_tables: frozenset[str] = frozenset()
        #: ``record_values``' functions by (table, record class).
        self._column_views: dict[
            tuple[str, type[BaseModel]], Callable[[BaseModel], dict[str, Any]]
        ] = {}
        #: Statements compiled once, run on the driver's cursor (see ``sql.engine``).
        self.statements = self._statement_cache()

    def _statement_cache(self) -> StatementCache:
        """Statements compiled once, run on the driver's cursor (see ``sql.engine``), shared
        with the other databases of this one's :meth:`layout`."""
        return StatementCache(
            self.engine.dialect,
            adapt=self.dialect.statement_dialect,
            executor=self.dialect.execute_prepared,
            streamer=self.dialect.stream_prepared,
            layout=self.layout,
        )

    def layout(self) -> Hashable:
        """What shapes this database's statements besides the dialect they are compiled with:
        the backend's dialect and its settings (``MysqlDialect.is_mariadb``, Oracle's
        ``native_json``: they choose column types and statement forms), the table prefix and
        the schema, from which the tables are rendered (``layout_of``). Statement
        builders read nothing else of their domain or database (``SqlDomain.prepared``;
        checked by ``tests/test_shared_statements.py``)."""
        return layout_of(self.dialect, self.prefix, self.schema)

    def table(self, base_name: str) -> sa.Table:
        return self.tables[base_name]

    # -- running operations ----------------------------------------------------------------------

    async def run(
        self,
        fn: Callable[[Connection], T],
        *,
        write: bool = False,
        single: bool = False,
        short: bool = False,
    ) -> T:
        """Run ``fn(connection)`` in one transaction, committed when it returns.

        ``single``: ``fn`` runs one statement (a point read, one upsert, a bounded page), or
        reads that need no common snapshot (each statement of a READ COMMITTED transaction
        takes its own anyway); it then runs without an explicit transaction, in autocommit: one
        round trip on a server instead of BEGIN, statement, COMMIT. ``short``: the operation is
        bounded and short (a point read, a bounded page, a small write); on a synchronous driver
        (SQLite) it runs inline on the caller's thread when the worker is idle, instead of
        hopping to the worker thread (DESIGN.md section 8); large ones keep the hop.

        A transaction the server aborted as a deadlock victim (or serialization failure) is run
        again from the start, a few times: it rolled back whole, so ``fn`` sees a clean slate.

        Reads of many records return their rows and build the records after ``run`` returns
        (``SqlDomain.read_page``, ``Prepared.rows``), not inside ``fn``: on an async driver the
        COMMIT is awaited after ``fn``, and records alive across that await outlive the
        collector's youngest generation while other operations run (16 concurrent reads of 20
        messages then cost two full collections per thousand reads, a third of their CPU;
        built after, they die young: docs/benchmarks.md, W2c).
        """
        return await self._guarded(self._attempt, fn, write, single, short)

    async def fetch(
        self,
        stmt: Prepared,
        values: Mapping[str, Any] | None = None,
        *,
        write: bool = False,
        short: bool = True,
    ) -> list[Any]:
        """The driver's rows of the one statement ``stmt`` run with ``values`` as an operation
        of its own: what ``run(lambda conn: stmt.rows(conn, values), single=True,
        short=short)`` returns. The caller builds records from them (``Prepared.reader``).
        ``write``: the statement writes (an upsert returning its row); ``short=False``: a
        large read, which on SQLite keeps the hop to the worker thread (:meth:`run`)."""
        if self._direct is None:
            return await self.run(
                lambda conn: stmt.rows(conn, values), write=write, single=True, short=short
            )
        rows, _ = await self._guarded(self._run_direct, stmt, values or {}, True)
        return rows or []

    async def execute(self, stmt: Prepared, values: Mapping[str, Any] | None = None) -> int:
        """Run the one write ``stmt`` with ``values`` as an operation of its own (``run`` with
        ``single=True, short=True``) and return the driver's row count."""
        if self._direct is None:
            return await self.run(
                lambda conn: stmt.execute(conn, values), write=True, single=True, short=True
            )
        _, count = await self._guarded(self._run_direct, stmt, values or {}, False)
        return count

    async def _guarded(self, attempt: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``await attempt(*args)``, one operation: driver errors raised as ours, a transaction
        aborted as transient run again, a held connection found dropped replaced once."""
        try:
            # The usual case, apart: an operation that succeeds enters no error mapping and
            # no retry loop (a point read is a few such steps: docs/benchmarks.md).
            return await attempt(*args)
        except Exception as exc:  # noqa: BLE001 - handled below, as any attempt's failure is
            failure: Exception | None = exc
        reconnected = False
        with map_errors(self.dialect.error_map):
            for attempt_number in range(1, TRANSIENT_ATTEMPTS + 1):
                try:
                    if failure is not None:  # the first attempt's, handled as a later one's
                        first, failure = failure, None
                        raise first
                    return await attempt(*args)
                except (sa.exc.OperationalError, sa.exc.InterfaceError) as exc:
                    if exc.connection_invalidated and not reconnected and self.is_async:
                        # A held connection the server dropped, found by a statement before
                        # COMMIT: nothing was applied, so the operation runs again once on a
                        # fresh connection (a drop during COMMIT raises from _transaction).
                        reconnected = True
                        if self._held is not None:
                            await self._held.discard_idle()
                        continue
                    refusal = self.dialect.login_refusal(exc.orig) if exc.orig else None
                    if refusal is not None:
                        raise ConfigurationError(redact(refusal)) from None
                    lacking = self.dialect.schema_refusal(exc.orig) if exc.orig else None
                    if lacking is not None:
                        raise SchemaMismatchError(redact(lacking)) from exc
                    if (
                        exc.connection_invalidated
                        or _is_connect_error(exc)
                        or self.dialect.is_unavailable(exc)
                    ):
                        raise BackendUnavailableError(redact(str(exc.orig))) from exc
                    if attempt_number < TRANSIENT_ATTEMPTS and self.dialect.is_transient(exc):
                        await asyncio.sleep(random.uniform(0, 0.02 * attempt_number))
                        continue
                    raise
                except (TypeError, sa.exc.ProgrammingError) as exc:
                    # A query parameter of the URL the driver does not take, found at connect.
                    refused = refused_url_option(exc, self.url, URL_OPTIONS)
                    if refused is None:
                        raise
                    raise ConfigurationError(redact(refused)) from None
                except sa.exc.StatementError as exc:
                    # A column type refused a value while binding it (PostgreSQL's JSON check):
                    # SQLAlchemy wraps whatever a bind processor raises; ours must surface as is.
                    if isinstance(exc.orig, CompositeStoreError):
                        raise exc.orig from None
                    raise
                except UnicodeEncodeError as exc:
                    # The driver encodes text to UTF-8 while binding; the transaction rolled back.
                    bad = exc.object[exc.start : exc.end]
                    raise ValidationError(
                        f"a text value cannot be stored as UTF-8: {bad!r} ({exc.reason}); "
                        "remove unpaired surrogates (\\ud800-\\udfff) from it"
                    ) from exc
            raise AssertionError("unreachable: the last attempt returns or raises")

    async def _attempt(
        self, fn: Callable[[Connection], T], write: bool, single: bool, short: bool
    ) -> T:
        """One try of :meth:`run`'s operation."""
        if self.is_async:
            return await self._run_async(fn, write, single)
        if short and self._sync_lock.acquire(blocking=False):
            try:  # the worker is idle: run here, no hop
                return self._run_sync_held(fn, write, single)
            finally:
                self._sync_lock.release()
        if self._executor is None:
            # One worker: SQLite serialises writers anyway, and one thread keeps every
            # read-modify-write of this process in order.
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="composite-store-sql")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._run_sync, fn, write, single)

    async def _run_direct(
        self, stmt: Prepared, values: Mapping[str, Any], fetch: bool
    ) -> tuple[list[Any] | None, int]:
        """One try of :meth:`fetch` or :meth:`execute` on the dialect's driver executor: a held
        connection's driver awaited from the event loop, the statement its own transaction
        (autocommit). What the greenlet path adds around one statement (the greenlet's
        switches, SQLAlchemy's connection and transaction bookkeeping) was a fifth of a point
        read's time on PostgreSQL: about 25 of 170 us, all of it spent while the reply was not
        yet awaited or already in. A driver error is raised as the greenlet path raises it
        (``driver_error``, in a greenlet: a disconnect invalidates the connection)."""
        held, execute = self._held, self._direct
        assert held is not None and execute is not None  # see fetch() and execute()
        # The common case without an await of its own: an idle connection needing no check,
        # given back as it came (a point read's whole time is a few of these steps).
        aconn = held.take() or await held.acquire()
        interrupted = False
        try:
            conn = aconn.sync_connection
            assert conn is not None  # a connection acquire() returns is connected
            driver = conn.connection.driver_connection
            pending = self.dialect.ensure_autocommit(driver)
            if pending is not None:
                await self._driver_call(conn, pending, "SET autocommit", ())
            bound = stmt.bind(values)
            reply = execute(driver, stmt.sql, bound, fetch)
            return await self._driver_call(conn, reply, stmt.sql, bound)
        except BaseException as exc:
            interrupted = not isinstance(exc, Exception)
            raise
        finally:
            if interrupted or not held.give_back(aconn):
                await held.release(aconn, interrupted=interrupted)

    async def _driver_call(
        self, conn: Connection, pending: Awaitable[T], sql: str, bound: Any
    ) -> T:
        """``await pending`` (a call of the driver's, for ``sql``), its failure raised as
        :func:`driver_error` makes it."""
        try:
            return await pending
        except Exception as exc:
            error = await self._in_greenlet(driver_error, conn, exc, sql, bound)
            raise error from exc

    async def _run_async(self, fn: Callable[[Connection], T], write: bool, single: bool) -> T:
        if self._held is None:  # a pool that keeps nothing: check out per operation
            engine: AsyncEngine = self.engine  # type: ignore[assignment]
            async with engine.connect() as aconn:
                return await self._in_greenlet(
                    self._driver_transaction, aconn.sync_connection, fn, write, single
                )
        aconn = await self._held.acquire()
        interrupted = False
        try:
            return await self._in_greenlet(
                self._driver_transaction, aconn.sync_connection, fn, write, single
            )
        except BaseException as exc:
            # On an error _transaction rolled back (release() still drops a connection that is
            # lost or left in a transaction); only a cancellation leaves it mid-statement.
            interrupted = not isinstance(exc, Exception)
            raise
        finally:
            await self._held.release(aconn, interrupted=interrupted)

    def _run_sync(self, fn: Callable[[Connection], T], write: bool, single: bool) -> T:
        with self._sync_lock:
            return self._run_sync_held(fn, write, single)

    def _run_sync_held(self, fn: Callable[[Connection], T], write: bool, single: bool) -> T:
        assert isinstance(self.engine, Engine)
        conn = self._worker_conn
        if conn is None or conn.closed or conn.invalidated:
            conn = self._worker_conn = self.engine.connect()
        try:
            return self._transaction(conn, fn, write, single)
        except sa.exc.DBAPIError as exc:
            if exc.connection_invalidated:
                self._worker_conn = None
            raise

    def _transaction(
        self, conn: Connection, fn: Callable[[Connection], T], write: bool, single: bool = False
    ) -> T:
        if self.is_async:
            return self._driver_transaction(conn, fn, write, single)
        if single:
            # One statement, its own transaction (the driver is in autocommit): no BEGIN, and
            # no SQLAlchemy bookkeeping unless ``fn`` went through it (then it ends it).
            try:
                result = fn(conn)
            except BaseException:
                if conn.in_transaction():
                    conn.rollback()
                raise
            if conn.in_transaction():
                self._commit(conn, conn.commit, write)
            return result
        # Begin SQLAlchemy's own transaction first: statements run on the driver cursor
        # (sql.engine.prepared) do not autobegin it, and commit() must reach the driver.
        if not conn.in_transaction():
            conn.begin()
        self.dialect.begin(conn, write=write)
        try:
            result = fn(conn)
        except BaseException:
            conn.rollback()
            raise
        self._commit(conn, conn.commit, write)
        return result

    def _driver_transaction(
        self, conn: Connection, fn: Callable[[Connection], T], write: bool, single: bool
    ) -> T:
        """One operation on an async driver. Where the dialect keeps its driver connections in
        autocommit (``SqlDialect.autocommit``), a ``single`` operation runs as it is (each
        statement its own transaction: one round trip for a point read) and any other one in
        an explicit ``BEGIN`` .. ``COMMIT``; elsewhere the driver begins the transaction
        implicitly with the first statement. Either way it is committed on the driver, one
        await, since SQLAlchemy's begin/commit bookkeeping costs more than a point read's
        statement. A statement that went through SQLAlchemy (``conn.execute``) began
        SQLAlchemy's own transaction, which then ends it (committing the same driver
        transaction)."""
        driver: Any = conn.connection.driver_connection
        autocommit = self.dialect.autocommit
        if autocommit:
            self._ensure_autocommit(conn, driver)
        if autocommit and not single:
            self._execute_driver(conn, "BEGIN")
        self.dialect.begin(conn, write=write)
        try:
            result = fn(conn)
        except BaseException:
            try:
                if conn.in_transaction():
                    conn.rollback()
                else:
                    await_only(driver.rollback())
            except Exception:  # noqa: BLE001 - any failure leaves the connection's state unknown
                conn.invalidate()  # so it is never reused (the original error is raised)
            raise

        def commit() -> None:
            if conn.in_transaction():
                conn.commit()
                return
            if autocommit and single:
                return  # nothing was begun: each statement committed itself
            try:
                await_only(driver.commit())
            except Exception as exc:
                raise driver_error(conn, exc, "COMMIT", ()) from exc

        self._commit(conn, commit, write)
        return result

    def _ensure_autocommit(self, conn: Connection, driver: Any) -> None:
        """Put ``driver`` in autocommit if it is not (a new connection, or one SQLAlchemy reset
        after an ``isolation_level`` option)."""
        pending = self.dialect.ensure_autocommit(driver)
        if pending is not None:
            try:
                await_only(pending)
            except Exception as exc:
                raise driver_error(conn, exc, "SET autocommit", ()) from exc

    def _execute_driver(self, conn: Connection, sql: str) -> None:
        try:
            self.dialect.execute_prepared(conn, sql, None, False)
        except Exception as exc:
            raise driver_error(conn, exc, sql, ()) from exc

    @staticmethod
    def _commit(conn: Connection, commit: Callable[[], None], write: bool) -> None:
        try:
            commit()
        except sa.exc.DBAPIError as exc:
            if exc.connection_invalidated:
                if not write:
                    # A read's rows were all fetched before COMMIT, which had nothing to apply:
                    # the result stands (the dead connection is discarded, never reused).
                    return
                raise BackendUnavailableError(
                    "the connection was lost while committing: the operation may or may not "
                    f"have been applied ({redact(str(exc.orig))})"
                ) from exc
            raise

    # -- DDL -------------------------------------------------------------------------------------

    async def create(self, specs: Iterable[TableSpec]) -> set[str]:
        """Create the tables and indexes of ``specs`` if they do not exist (idempotent); return
        the base names of those this call created, none of which existed before it.

        The schema's tables are listed with one catalog query, and every documented table
        found is known to exist from then on, for the other domains' ``init()`` too: opening
        an existing database costs one query, not SQLAlchemy's check per table (PostgreSQL:
        28 statements and 44 ms for the seven domains' ``init()`` before; 2 statements, in
        autocommit, with the versions read once, ``sql.schema_versions.version_at_init``;
        docs/operations.md, "Opening a database that has its tables")."""
        wanted = {
            s.base_name: self.tables[s.base_name] for s in specs if s.base_name not in self._created
        }
        if not wanted:
            return set()

        def listing(inspector: Inspector) -> frozenset[str]:
            return frozenset(inspector.get_table_names(schema=self.schema))

        # In autocommit first: where every table wanted is there (a database opened again),
        # nothing follows the listing, which then needs no transaction (on a server, one
        # round trip instead of BEGIN, listing, COMMIT).
        listed = await self.run(lambda conn: listing(sa.inspect(conn)), single=True)
        if all(t.name in listed for t in wanted.values()):
            self._listed(listed, wanted)
            return set()

        def ddl(conn: Connection) -> tuple[frozenset[str], set[str]]:
            inspector = sa.inspect(conn)
            listed = listing(inspector)  # again: DDL follows, on what this transaction sees
            if not listed:
                # A schema with tables exists; an empty listing may be a schema that does
                # not (which lists as empty), to create before its tables.
                self.dialect.create_namespace(conn, self.schema)
            # A table the listing lacks is looked up by name before it is created: what
            # this call creates is then exactly what did not exist, whatever the catalog's
            # spelling of names (a CREATE that loses a race with another process fails, and
            # run_ddl looks again).
            absent = {
                base
                for base, t in wanted.items()
                if t.name not in listed and not inspector.has_table(t.name, schema=t.schema)
            }
            if absent:
                tables = [wanted[base] for base in absent]
                self.metadata.create_all(conn, tables=tables, checkfirst=False)
            return listed, absent

        listed, absent = await self.run_ddl(ddl)
        self._listed(listed, wanted)
        return absent

    def _listed(self, listed: frozenset[str], wanted: Iterable[str]) -> None:
        """Record ``listed`` (the schema's tables, as listed) and what is known to exist
        since: every documented table listed, and the base names ``wanted``, which are
        created by now."""
        self.listed_tables = listed
        self._created.update(b for b, t in self.tables.items() if t.name in listed)
        self._created.update(wanted)

    async def run_ddl(self, fn: Callable[[Connection], T]) -> T:
        """Run check-then-create DDL (a lookup, then CREATE), re-checking when another process
        created the same object between our check and our CREATE (on servers the two are not
        atomic, so concurrent ``init()`` calls race); return what ``fn`` returns."""
        for attempt in range(DDL_ATTEMPTS):
            try:
                return await self.run(fn, write=True)
            except CompositeStoreError as exc:
                if attempt == DDL_ATTEMPTS - 1 or not _created_concurrently(exc):
                    raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def clear(self, specs: Iterable[TableSpec]) -> None:
        """Delete every row of ``specs``' tables."""
        tables = [self.tables[s.base_name] for s in specs]

        await self.run(lambda conn: self.dialect.clear_tables(conn, tables), write=True)

    async def ping(self) -> None:
        # Compiled per dialect: Oracle before 23ai needs "SELECT 1 FROM DUAL".
        await self.run(lambda conn: conn.execute(sa.select(sa.literal_column("1"))).scalar())

    def attach_read_only(self) -> None:
        """Before any connection: swap the engine for one that cannot create or change the
        database, where the dialect has one (embedded files). ``Domain.attach`` calls it, so
        that looking at a database never creates its file or alters its header."""
        if self.read_only or not self.owns_engine or self.url is None:
            return
        if self._worker_conn is not None or self._created:
            return  # already connected (or initialized) through this engine: keep it
        engine = self.dialect.read_only_engine(self.url, self._engine_options)
        if engine is None:
            return
        if isinstance(self.engine, Engine):  # embedded engines are synchronous
            self.engine.dispose()  # never connected: nothing to close but the pool
        self.engine = engine
        self.statements = self._statement_cache()
        self.read_only = True

    async def dispose(self) -> None:
        """Close the engine if this database created it, and the worker thread."""
        if self.is_async:
            if self._held is not None:
                await self._held.close()
            if self.owns_engine:
                await self.engine.dispose()  # type: ignore[misc]
        else:

            def release() -> None:
                if self._worker_conn is not None:
                    self._worker_conn.close()
                    self._worker_conn = None
                if self.owns_engine:
                    self.engine.dispose()

            if self._executor is not None:
                await asyncio.get_running_loop().run_in_executor(self._executor, release)
            else:
                release()
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
        self._created.clear()
        self.listed_tables = frozenset()

    def describe(self) -> str:
        url = self.url or self.engine.url.render_as_string(hide_password=True)
        parts = [redact(url)]
        if self.schema:
            parts.append(f"schema={self.schema}")
        if self.prefix != DEFAULT_PREFIX:
            parts.append(f"prefix={self.prefix}")
        return " ".join(parts)

    # -- rows ------------------------------------------------------------------------------------

    def values(self, spec: TableSpec, record: Mapping[str, Any]) -> dict[str, Any]:
        """Bind values of one row: documented columns, plus shadow timestamps where the dialect
        keeps them."""
        row = {name: record.get(name) for name in spec.column_names}
        if self.dialect.shadow_timestamps:
            for name in spec.columns_of(ColumnType.TIMESTAMP):
                row[shadow(name)] = row[name]
        return row

    def record_values(self, spec: TableSpec, record: BaseModel) -> dict[str, Any]:
        """:meth:`values` of ``stored_view(record)``, the bind values of the row that stores
        ``record``, read off its attributes by a function generated once per record class
        and table (``records.trusted.column_view``): one dict a row instead of two."""
        key = (spec.base_name, record.__class__)
        view = self._column_views.get(key)
        if view is None:
            view = self._column_views[key] = column_view(
                record.__class__, self.value_sources(spec)
            )
        return view(record)

    def value_sources(self, spec: TableSpec) -> list[tuple[str, str]]:
        """The columns :meth:`values` binds, in its order, each with the documented column its
        value comes from (a shadow timestamp's is its naive twin)."""
        sources = [(name, name) for name in spec.column_names]
        if self.dialect.shadow_timestamps:
            sources += [(shadow(n), n) for n in spec.columns_of(ColumnType.TIMESTAMP)]
        return sources

    def timestamp_values(self, spec: TableSpec, name: str, value: datetime) -> dict[str, Any]:
        """Bind values that set timestamp ``name`` (and its shadow) to ``value``."""
        if self.dialect.shadow_timestamps:
            return {name: value, shadow(name): value}
        return {name: value}

    def readable(self, table: sa.Table, spec: TableSpec) -> list[sa.ColumnElement[Any]]:
        """The documented columns of ``table`` for a SELECT, timestamps read as the dialect
        prescribes (PostgreSQL prefers the shadow column)."""
        return [self.dialect.read_column(table, col) for col in spec.columns]


#: How often ``create`` re-checks after losing a race with another process's DDL.
DDL_ATTEMPTS = 4


def _created_concurrently(exc: BaseException) -> bool:
    text = str(exc.__cause__ or exc).lower()
    return "already exists" in text or ("duplicate key" in text and "pg_" in text)


def _is_connect_error(exc: sa.exc.DBAPIError) -> bool:
    text = str(exc.orig).lower()
    return any(
        s in text
        for s in (
            "could not connect",
            "connection refused",
            "server closed",
            "can't connect",
            "lost connection",
            "connection is closed",
            "gone away",
            # The server is stopping or starting (PostgreSQL's FATAL at connect; MariaDB's
            # "Server shutdown in progress"): unavailable now, worth retrying later.
            "shutting down",
            "starting up",
            "shutdown in progress",
            # Every connection slot is taken (PostgreSQL 53300, MariaDB 1040): busy now, free
            # again once other clients disconnect.
            "too many clients",
            "remaining connection slots are reserved",
            "too many connections",
        )
    )
