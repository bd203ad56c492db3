"""``RedisConnection``: the client (standalone or cluster), its options, scripts and I/O verbs.

Domains never call redis-py directly: they read through ``read`` (one pipeline), page through
indexes with ``page``/``window`` (one script each) and write with ``apply`` (guarded scripts, see
``batch.py``). Every call maps driver errors onto composite-store's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import redis.exceptions as rex
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from composite_store.errors import (
    BackendUnavailableError,
    CompositeStoreError,
    ConfigurationError,
    ValidationError,
    map_errors,
    redact,
)
from composite_store.schema import DEFAULT_PREFIX
from composite_store.urls import refused_url_option, split_options, url_flag
from composite_store_redis import scripts
from composite_store_redis.batch import Batch
from composite_store_redis.keys import Keys

try:
    from redis.maint_notifications import MaintNotificationsConfig
except ImportError:  # redis-py before 7: no maintenance notifications, nothing to turn off
    MaintNotificationsConfig = None  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript

__all__ = ["REDIS_DOMAINS", "PageResult", "RedisConnection", "parse_ttl"]

#: The domains whose records can expire (``ttl``). Workflow definitions, datasets and
#: experiments never do: a version history with expired rows would no longer be one.
REDIS_DOMAINS = ("memory", "workflows", "scores", "observability")
_SCHEMES = {"redis": False, "rediss": False, "redis+cluster": True, "rediss+cluster": True}

_ERRORS: dict[type[BaseException], type[CompositeStoreError]] = {
    rex.ConnectionError: BackendUnavailableError,
    rex.TimeoutError: BackendUnavailableError,
    rex.ClusterDownError: BackendUnavailableError,
    rex.TryAgainError: BackendUnavailableError,
    OSError: BackendUnavailableError,
    # Not a RedisError: what the cluster client raises when no startup node answers.
    rex.RedisClusterException: BackendUnavailableError,
    rex.RedisError: CompositeStoreError,
}


#: The query parameters a Redis store's URL carries for composite-store itself.
_URL_OPTIONS = ("prefix", "cluster", "ttl", *(f"ttl_{d}" for d in REDIS_DOMAINS))


def parse_ttl(value: Any, what: str) -> int:
    """Seconds (a positive number, or its text) as whole milliseconds."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{what} must be a number of seconds, got {value!r}") from None
    if isinstance(value, bool) or not seconds > 0 or seconds == float("inf"):
        raise ValidationError(f"{what} must be a positive number of seconds, got {value!r}")
    return max(1, round(seconds * 1000))


@dataclass(frozen=True)
class PageResult:
    """What the page script returns: the total (when counted), members and records."""

    total: int | None
    members: list[str]
    records: list[dict[str, str]] | None


class RedisConnection:
    """One Redis (or Redis Cluster) client shared by the domains of a store.

    Built from a URL (``redis://``, ``rediss://``, ``redis+cluster://``, ``?cluster=true``) or
    from a client the caller passes in (``Redis`` or ``RedisCluster``; it stays the caller's and
    must decode responses). Options: ``prefix`` (key prefix, default ``mastra_``), ``ttl``
    (seconds for every domain, or a mapping domain -> seconds; URL: ``ttl=`` and
    ``ttl_<domain>=``); other keywords go to redis-py's ``from_url``. No I/O before ``open()``.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Redis | RedisCluster | None = None,
        prefix: str = DEFAULT_PREFIX,
        ttl: float | Mapping[str, float] | None = None,
        cluster: bool | None = None,
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        if (url is None) == (client is None):
            raise ValidationError("pass a Redis URL or a client=, exactly one of them")
        ttls: dict[str, int] = {}
        if ttl is not None:
            items = ttl.items() if isinstance(ttl, Mapping) else ((d, ttl) for d in REDIS_DOMAINS)
            for domain, seconds in items:
                self._ttl_domain(domain)
                ttls[domain] = parse_ttl(seconds, f"ttl for {domain}")
        self._url: str | None = None
        if url is not None:
            url, query = split_options(url, _URL_OPTIONS)
            prefix = query.get("prefix", prefix)
            if "cluster" in query:
                cluster = url_flag(query["cluster"], option="cluster")
            if "ttl" in query:
                ttls.update(dict.fromkeys(REDIS_DOMAINS, parse_ttl(query["ttl"], "ttl")))
            for domain in REDIS_DOMAINS:
                if f"ttl_{domain}" in query:
                    ttls[domain] = parse_ttl(query[f"ttl_{domain}"], f"ttl_{domain}")
            url, scheme_cluster = self._client_url(url)
            cluster = scheme_cluster or bool(cluster)
            self._url = url
        else:
            is_cluster = isinstance(client, RedisCluster)
            if cluster is not None and cluster != is_cluster:
                raise ValidationError(
                    f"cluster={cluster} does not match the {type(client).__name__}"
                )
            cluster = is_cluster
        self.cluster: bool = bool(cluster)
        self.keys = Keys(prefix)
        self.ttls = ttls
        self._options = dict(client_options or {})
        self._client: Redis | RedisCluster | None = client
        self.owns_client = client is None
        self._scripts: dict[str, AsyncScript] = {}
        self._lock = asyncio.Lock()

    @staticmethod
    def _ttl_domain(domain: Any) -> None:
        if domain not in REDIS_DOMAINS:
            raise ValidationError(
                f"ttl: no TTL for domain {domain!r}; the Redis store expires records of "
                f"{', '.join(REDIS_DOMAINS)} only"
            )

    def _client_url(self, url: str) -> tuple[str, bool]:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise ValidationError(
                f"not a Redis URL: {redact(url)!r} (expected redis://, rediss://, redis+cluster://)"
            )
        cluster = _SCHEMES[scheme]
        base = "rediss" if scheme.startswith("rediss") else "redis"
        if cluster and parts.path not in ("", "/", "/0"):
            raise ValidationError(
                f"Redis Cluster has only database 0; remove {parts.path!r} from {redact(url)!r}"
            )
        return urlunsplit(parts._replace(scheme=base)), cluster

    def ttl_ms(self, domain: str) -> int | None:
        """The TTL of ``domain``'s records in milliseconds, or None (they never expire)."""
        return self.ttls.get(domain)

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def client(self) -> Redis | RedisCluster:
        if self._client is None:
            raise CompositeStoreError("the Redis connection is not open: call `await store.init()`")
        return self._client

    async def open(self) -> None:
        """Create the client (when built from a URL) and register the scripts; idempotent."""
        async with self._lock:
            if self._client is None:
                assert self._url is not None
                options = {"decode_responses": True, **self._options}
                if MaintNotificationsConfig is not None and not self.cluster:
                    # redis-py's pool checks that a pooled connection's socket is still open
                    # before handing it out (and reconnects it if not), but skips the check
                    # while maintenance notifications are on, and their default ("auto")
                    # counts as on even over RESP2, where none can arrive. A connection whose
                    # server had restarted, or closed it, was then handed out as it was, and
                    # the write sent on it failed with "Connection closed by server."
                    # (tests/reliability/test_faults.py). A client that wants them passes
                    # its own ``maint_notifications_config``.
                    options.setdefault(
                        "maint_notifications_config", MaintNotificationsConfig(enabled=False)
                    )
                client: Redis | RedisCluster
                with map_errors(_ERRORS):
                    try:
                        if self.cluster:
                            client = RedisCluster.from_url(self._url, **options)
                            await client.initialize()
                        else:
                            client = Redis.from_url(self._url, **options)
                            # One connection built, not connected: a query parameter of the
                            # URL that redis-py's connection does not take fails here, not at
                            # the first command.
                            pool = client.connection_pool
                            pool.connection_class(**pool.connection_kwargs)
                    except TypeError as exc:
                        refused = refused_url_option(exc, self._url, _URL_OPTIONS)
                        if refused is None:
                            raise
                        raise ConfigurationError(redact(refused)) from None
                    self._client = client
            if not self._scripts:
                for name in ("APPLY", "INTERSECT", "PAGE", "WINDOW", "RUN_META"):
                    self._scripts[name] = self.client.register_script(getattr(scripts, name))

    async def close(self) -> None:
        """Close the client if this connection created it."""
        async with self._lock:
            client, self._client = self._client, None
            self._scripts.clear()
            if client is not None and self.owns_client:
                with map_errors(_ERRORS):
                    await client.aclose()
            elif client is not None:
                self._client = client

    async def ping(self) -> None:
        with map_errors(_ERRORS):
            await self.client.ping()

    async def durability_warning(self) -> str | None:
        """What a restart of this server would lose of acknowledged writes (docs/reliability.md),
        from its persistence settings; None with an append-only file synced at least every
        second. A server that refuses CONFIG (a managed service) is reported as unknown."""
        with map_errors(_ERRORS):
            try:
                if self.cluster:
                    # Every primary holds a share of the data: the weakest one counts.
                    replies = await self.client.config_get(
                        "*", target_nodes=RedisCluster.PRIMARIES
                    )
                    nodes: list[Any] = (
                        list(replies.values()) if _by_node(replies) else [replies]
                    )
                else:
                    nodes = [await self.client.config_get("*")]
            except rex.ResponseError:
                return (
                    "cannot read this Redis server's persistence settings (CONFIG is refused): "
                    "make sure it runs with appendonly yes, or a restart may lose acknowledged "
                    "writes"
                )
        warnings = [w for w in (_durability(node) for node in nodes) if w is not None]
        return warnings[0] if warnings else None


    def describe(self) -> str:
        kind = "redis cluster" if self.cluster else "redis"
        if self._url:
            # Printed so that it opens the same kind of store when passed back.
            url = self._url
            if self.cluster:
                url += ("&" if "?" in url else "?") + "cluster=true"
            where = redact(url)
        else:
            where = f"client {type(self._client).__name__}"
        return f"{kind} {where} (prefix {self.keys.prefix!r})"

    # -- I/O verbs ---------------------------------------------------------------------------------

    async def read(self, commands: Sequence[Sequence[str]]) -> list[Any]:
        """Run read commands in one pipeline (not a transaction) and return their replies.

        Reads change nothing, so one whose connection the server had closed (an idle timeout,
        a restart, ``CLIENT KILL``) runs once more on a fresh connection instead of failing.
        Writes are not retried here: a script the server ran before the connection dropped
        would run twice; they surface as the retryable ``BackendUnavailableError``.
        """
        if not commands:
            return []
        try:
            with map_errors(_ERRORS):
                try:
                    return await self._read_once(commands)
                except rex.ConnectionError:
                    return await self._read_once(commands)
        except UnicodeEncodeError as exc:
            raise _not_utf8(exc) from exc

    async def _read_once(self, commands: Sequence[Sequence[str]]) -> list[Any]:
        if len(commands) == 1:
            return [await self.client.execute_command(*commands[0])]
        pipe = self._pipeline()
        for command in commands:
            pipe.execute_command(*command)
        return list(await pipe.execute())

    def _pipeline(self) -> Any:
        # A cluster pipeline splits by slot and never wraps commands in MULTI.
        return self.client.pipeline() if self.cluster else self.client.pipeline(transaction=False)

    async def script(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            with map_errors(_ERRORS):
                return await self._scripts[name](keys=list(keys), args=list(args))
        except UnicodeEncodeError as exc:
            raise _not_utf8(exc) from exc

    async def apply(self, batch: Batch) -> bool:
        """Run a batch; False when a guard failed (nothing of that step was written)."""
        steps = batch.steps(cluster=self.cluster)
        # Every step's arguments before the first runs (steps run one after the other):
        # what Redis cannot store is refused before anything is written.
        try:
            argvs = [step.argv() for step in steps]
            if len(steps) > 1:
                for step in steps:
                    for arg in (*step.keys, *step.guards):
                        arg.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _not_utf8(exc) from exc
        for step, argv in zip(steps, argvs, strict=True):
            if not step.guarded:
                break
            if await self.script("APPLY", step.keys, argv) != 0:
                return False
        rest = [(s, argv) for s, argv in zip(steps, argvs, strict=True) if not s.guarded]
        if rest:
            await asyncio.gather(*(self.script("APPLY", s.keys, argv) for s, argv in rest))
        return True

    async def page(
        self,
        index: str,
        companion: str | None,
        *,
        low: str = "-inf",
        high: str = "+inf",
        lex: bool = False,
        reverse: bool = False,
        offset: int = 0,
        count: int | None = None,
        total: bool = False,
        records: str | None = None,
        fields: Sequence[str] = (),
    ) -> PageResult:
        """Read one page of a sorted-set index (``count`` None: to the end), optionally with the
        group-local records whose keys are ``records`` + member."""
        if lex and (low, high) == ("-inf", "+inf"):
            low, high = "-", "+"
        keys = [index] if companion is None else [index, companion]
        args = [
            "lex" if lex else "score",
            low,
            high,
            "1" if reverse else "0",
            offset,
            -1 if count is None else count,
            "1" if total else "0",
            records or "",
            len(fields),
            *fields,
        ]
        reply = await self.script("PAGE", keys, args)
        found = None
        if records is not None:
            found = [_as_hash(r, fields) for r in reply[2]]
        return PageResult(None if reply[0] == -1 else int(reply[0]), list(reply[1]), found)

    async def window(
        self, index: str, companion: str | None, member: str, before: int, after: int, records: str
    ) -> list[dict[str, str]]:
        """The records of ``member`` and its ``before``/``after`` neighbours in ``index``."""
        keys = [index] if companion is None else [index, companion]
        reply = await self.script("WINDOW", keys, [member, before, after, records])
        if not reply:
            return []
        return [_as_hash(r, ()) for r in reply[1]]

    async def delete_matching(self, pattern: str, keep: Sequence[str] = ()) -> int:
        """Delete every key matching ``pattern`` except ``keep`` (SCAN: resets and provisioning
        only, never a query path). Returns how many were deleted."""
        kept = set(keep)
        deleted = 0
        batch: list[str] = []
        with map_errors(_ERRORS):
            async for key in self.client.scan_iter(match=pattern, count=1000):
                if key in kept:
                    continue
                batch.append(key)
                if len(batch) >= 500:
                    deleted += await self._unlink(batch)
                    batch = []
            if batch:
                deleted += await self._unlink(batch)
        return deleted

    async def scan(self, pattern: str) -> AsyncIterator[str]:
        """Every key matching ``pattern`` (SCAN: migrations and provisioning only, never a query
        path)."""
        with map_errors(_ERRORS):
            async for key in self.client.scan_iter(match=pattern, count=1000):
                yield key

    async def any_matching(self, pattern: str) -> bool:
        """Whether a key matches ``pattern`` (SCAN: provisioning only)."""
        with map_errors(_ERRORS):
            async for _ in self.client.scan_iter(match=pattern, count=1000):
                return True
        return False

    async def _unlink(self, keys: list[str]) -> int:
        pipe = self._pipeline()
        for key in keys:
            # execute_command: the cluster pipeline's own unlink() is a multi-slot coroutine.
            pipe.execute_command("UNLINK", key)
        return sum(int(n) for n in await pipe.execute())


def _not_utf8(exc: UnicodeEncodeError) -> ValidationError:
    bad = exc.object[exc.start : exc.end].encode("unicode_escape").decode("ascii")
    return ValidationError(
        f"cannot store text holding {bad!r} (a lone surrogate is not UTF-8, which Redis "
        "stores); remove or replace it. Nothing was written."
    )


def _as_hash(reply: Any, fields: Sequence[str]) -> dict[str, str]:
    """A script's HGETALL (flat list) or HMGET (values of ``fields``) reply as a dict."""
    if fields:
        return {f: v for f, v in zip(fields, reply, strict=True) if v is not None}
    return dict(zip(reply[::2], reply[1::2], strict=True))


def _by_node(replies: Any) -> bool:
    return isinstance(replies, dict) and all(isinstance(v, dict) for v in replies.values())


def _durability(config: Any) -> str | None:
    """The durability warning of one server's CONFIG GET * reply."""
    if not isinstance(config, dict):
        return "cannot read this Redis server's persistence settings (unexpected CONFIG reply)"
    if config.get("appendonly") == "yes":
        if config.get("appendfsync") == "no":
            return (
                "appendonly yes with appendfsync no: a crash may lose the writes the "
                "operating system had not flushed yet; use appendfsync everysec or always"
            )
        return None
    if config.get("save"):
        return (
            "appendonly no: a restart loses every write since the last RDB snapshot "
            f"(save {config['save']!r}); set appendonly yes to keep acknowledged writes"
        )
    return (
        "appendonly no and no RDB snapshots: this Redis server keeps everything in memory "
        "only, and a restart loses every acknowledged write; set appendonly yes"
    )
