"""The raw contender on Redis: redis-py asyncio doing the adapter's logical work by hand.

Same key layout as ``composite_store_redis`` (a hash per record, sorted-set indexes, the
message -> thread pointer, the trace revision counter; see its ``layout_doc``), so the same
keys are written and read. Same round trips: an operation reads what its guards need (one
command, or one non-transactional pipeline), then writes everything in one script call that
first checks the guards (the values read must still hold, else it writes nothing and the
operation reads again) and then runs the commands, so a record and its index entries change
atomically. Index pages and include windows are one script each, returning the records with
the members. Records read are decoded (JSON parsed, timestamps parsed) as the adapter must.

What the adapter does and this does not: validation, records, its generic batch and reindex
machinery, TTL companions (no TTL here), and escaping/packing of ids (a no-op for the
workloads' ids, which hold none of ``% : { }`` or NUL).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from redis.asyncio import Redis

from bench.targets.base import Msg, SpanRow, Target
from composite_store.schema import ColumnType, table

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_SPANS = table("ai_spans")
_SPAN_JSON = frozenset(_SPANS.columns_of(ColumnType.JSON))
_SPAN_TIMES = frozenset(_SPANS.columns_of(ColumnType.TIMESTAMP))

#: ARGV: guard count, (kind, key, field, expected) per guard, then (argc, args...) per command.
#: Returns 0 when every guard held and the commands ran, else the failed guard's number.
GUARDED = """
local n, i = tonumber(ARGV[1]), 2
for g = 1, n do
  local kind, key, field, want = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local ok
  if kind == 'field' then ok = redis.call('HGET', key, field) == want
  elseif kind == 'nofield' then ok = redis.call('HEXISTS', key, field) == 0
  elseif kind == 'value' then ok = redis.call('GET', key) == want
  elseif kind == 'exists' then ok = redis.call('EXISTS', key) == 1
  elseif kind == 'absent' then ok = redis.call('EXISTS', key) == 0
  elseif kind == 'sha1' then
    local v = redis.call('HGET', key, field)
    ok = (v and redis.sha1hex(v) or '') == want
  else return redis.error_reply('unknown guard ' .. kind) end
  if not ok then return g end
  i = i + 4
end
while i <= #ARGV do
  local argc = tonumber(ARGV[i])
  redis.call(unpack(ARGV, i + 1, i + argc))
  i = i + argc + 1
end
return 0
"""
#: KEYS[1]: a sorted set. ARGV: reverse '1'|'0', start, stop (ranks), record key prefix ('':
#: members only), count '1'|'0'. Returns {count or -1, members [, HGETALL of each]}.
PAGE = """
local members
if ARGV[1] == '1' then members = redis.call('ZRANGE', KEYS[1], ARGV[2], ARGV[3], 'REV')
else members = redis.call('ZRANGE', KEYS[1], ARGV[2], ARGV[3]) end
local total = -1
if ARGV[5] == '1' then total = redis.call('ZCARD', KEYS[1]) end
if ARGV[4] == '' then return {total, members} end
local out = {}
for i, m in ipairs(members) do out[i] = redis.call('HGETALL', ARGV[4] .. m) end
return {total, members, out}
"""
#: KEYS[1]: a sorted set. ARGV: member, before, after, record key prefix. The HGETALL of the
#: member and its neighbours by rank ({} when the member is absent).
WINDOW = """
local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
if not rank then return {} end
local low = math.max(rank - tonumber(ARGV[2]), 0)
local out = {}
for i, m in ipairs(redis.call('ZRANGE', KEYS[1], low, rank + tonumber(ARGV[3]))) do
  out[i] = redis.call('HGETALL', ARGV[4] .. m)
end
return out
"""
#: KEYS[1]: a run. What its guards and index entries depend on, without its snapshot:
#: false, or {createdAt, resourceId or '', status or '', sha1 of the snapshot}.
RUN_META = """
local v = redis.call('HMGET', KEYS[1], 'createdAt', 'resourceId', 'snapshot')
if not v[1] then return false end
local status = ''
if v[3] then
  local ok, doc = pcall(cjson.decode, v[3])
  if ok and type(doc) == 'table' and type(doc['status']) == 'string' then status = doc['status'] end
end
return {v[1], v[2] or '', status, v[3] and redis.sha1hex(v[3]) or ''}
"""

Entry = tuple[str, int | str, str]


def iso(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.sssZ`` in UTC."""
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    # isoformat is C all the way (strftime is twice as slow); [:-6] drops "+00:00".
    return value.isoformat(timespec="milliseconds")[:-6] + "Z"


def ms(value: datetime) -> int:
    return (value - _EPOCH) // _MS


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def as_hash(flat: Sequence[str]) -> dict[str, str]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


class _Write:
    """The guards and commands of one guarded script call."""

    def __init__(self) -> None:
        self.keys: dict[str, None] = {}
        self.guards: list[str] = []
        self.commands: list[str] = []

    def guard(self, kind: str, key: str, field: str = "", want: str = "") -> None:
        self.guards += (kind, key, field, want)
        self.keys[key] = None

    def expect_field(self, key: str, field: str, value: str | None) -> None:
        self.guard("field" if value is not None else "nofield", key, field, value or "")

    def do(self, *args: str) -> None:
        self.commands += (str(len(args)), *args)
        self.keys[args[1]] = None

    def put(self, key: str, fields: dict[str, str]) -> None:
        self.do("DEL", key)
        self.do("HSET", key, *(x for item in fields.items() for x in item))

    def move(self, old: Sequence[Entry], new: Sequence[Entry]) -> None:
        """Index entries from ``old`` to ``new`` (key, score, member)."""
        kept = {(k, m) for k, _, m in new}
        for key, _, member in old:
            if (key, member) not in kept:
                self.do("ZREM", key, member)
        for key, score, member in new:
            self.do("ZADD", key, str(score), member)

    def argv(self) -> list[str]:
        return [str(len(self.guards) // 4), *self.guards, *self.commands]


class RawRedisTarget(Target):
    kind = "raw"

    def __init__(self, url: str, prefix: str) -> None:
        self.url, self.p = url, prefix
        self.r: Redis | None = None

    async def open(self) -> None:
        self.r = Redis.from_url(self.url, decode_responses=True)
        self._guarded = self.r.register_script(GUARDED)
        self._page = self.r.register_script(PAGE)
        self._window = self.r.register_script(WINDOW)
        self._run_meta = self.r.register_script(RUN_META)

    @property
    def redis(self) -> Redis:
        assert self.r is not None, "open() first"
        return self.r

    async def close(self) -> None:
        if self.r is not None:
            await self.r.aclose()
            self.r = None

    async def reset(self) -> None:
        keys = [k async for k in self.redis.scan_iter(match=f"{self.p}*", count=1000)]
        for start in range(0, len(keys), 500):
            await self.redis.unlink(*keys[start : start + 500])

    async def _hash(self, key: str) -> dict[str, str]:
        # decode_responses=True: replies are str, which redis-py's annotations do not track.
        return cast(dict[str, str], await self.redis.hgetall(key))

    async def _apply(self, w: _Write) -> bool:
        return int(await self._guarded(keys=list(w.keys), args=w.argv())) == 0

    # -- keys (the adapter's layout) ---------------------------------------------------------------

    def _thread(self, tid: str) -> str:
        return f"{self.p}threads:{{{tid}}}"

    def _messages(self, tid: str) -> str:
        return f"{self.p}messages:{{{tid}}}:"

    def _pointer(self, mid: str) -> str:
        return f"{self.p}messages:id_thread_id_idx:{{{mid}}}"

    def _by_thread(self, tid: str) -> str:
        return f"{self.p}messages:thread_id_createdat_idx:{{{tid}}}"

    def _thread_entries(self, tid: str, rid: str, created: int, updated: int) -> list[Entry]:
        t = f"{self.p}threads:"
        return [
            (f"{t}resourceid_createdat_idx:{{{rid}}}", created, tid),
            (f"{t}resourceid_updatedat_idx:{{{rid}}}", updated, tid),
            (f"{t}createdat_idx:{{*}}", created, tid),
            (f"{t}updatedat_idx:{{*}}", updated, tid),
        ]

    def _message_entries(self, tid: str, mid: str, rid: str | None, at: int) -> list[Entry]:
        found: list[Entry] = [(self._by_thread(tid), at, mid)]
        if rid is not None:
            key = f"{self.p}messages:thread_id_resourceid_createdat_idx:{{{tid}}}:{rid}"
            found.append((key, at, mid))
        return found

    # -- memory ------------------------------------------------------------------------------------

    async def save_thread(self, thread_id: str, resource_id: str, created_at: datetime) -> None:
        key, at = self._thread(thread_id), ms(created_at)
        stamp = iso(created_at)
        while True:
            old = await self._hash(key)
            w = _Write()
            w.expect_field(key, "resourceId", old.get("resourceId"))
            w.put(key, {"id": thread_id, "resourceId": resource_id, "title": "bench",
                        "createdAt": stamp, "updatedAt": stamp})
            before = (
                self._thread_entries(thread_id, old["resourceId"], 0, 0)
                if old.get("resourceId") is not None
                else []
            )
            w.move(before, self._thread_entries(thread_id, resource_id, at, at))
            if await self._apply(w):
                return

    async def save_messages(self, messages: list[Msg]) -> None:
        targets = list(dict.fromkeys(m.thread_id for m in messages))
        stamp = datetime.now(UTC)
        while True:
            pipe = self.redis.pipeline(transaction=False)
            for tid in targets:
                pipe.hget(self._thread(tid), "resourceId")
            for m in messages:
                pipe.get(self._pointer(m.id))
            found = await pipe.execute()
            owners = dict(zip(targets, found[: len(targets)], strict=True))
            missing = sorted(t for t, owner in owners.items() if owner is None)
            if missing:
                raise LookupError(f"thread(s) not found: {missing}")
            previous = dict(zip((m.id for m in messages), found[len(targets) :], strict=True))
            existing = [(m, previous[m.id]) for m in messages if previous[m.id] is not None]
            moved_from = sorted({t for _, t in existing} - set(owners))
            old_resource: dict[str, str | None] = {}
            if existing or moved_from:
                pipe = self.redis.pipeline(transaction=False)
                for m, tid in existing:
                    pipe.hget(f"{self._messages(tid)}{m.id}", "resourceId")
                for tid in moved_from:
                    pipe.hget(self._thread(tid), "resourceId")
                more = await pipe.execute()
                old_resource = {m.id: r for (m, _), r in zip(existing, more, strict=False)}
                owners.update(zip(moved_from, more[len(existing) :], strict=True))
            w = _Write()
            for tid, owner in owners.items():
                w.expect_field(self._thread(tid), "resourceId", owner)
            for m in messages:
                pointer, before = self._pointer(m.id), previous[m.id]
                w.guard("value" if before is not None else "absent", pointer, "", before or "")
                if before is not None:
                    old_key = f"{self._messages(before)}{m.id}"
                    w.expect_field(old_key, "resourceId", old_resource.get(m.id))
                    if before != m.thread_id:
                        w.do("DEL", old_key)
                    w.move(self._message_entries(before, m.id, old_resource.get(m.id), 0), [])
                w.put(f"{self._messages(m.thread_id)}{m.id}", {
                    "id": m.id, "thread_id": m.thread_id, "content": dumps(m.content),
                    "role": m.role, "type": "v2", "createdAt": iso(m.created_at),
                    "resourceId": m.resource_id,
                })
                w.move([], self._message_entries(m.thread_id, m.id, m.resource_id,
                                                 ms(m.created_at)))
                w.do("SET", pointer, m.thread_id)
            for tid, owner in owners.items():
                if owner is None:
                    continue
                w.do("HSET", self._thread(tid), "updatedAt", iso(stamp))
                at = ms(stamp)
                w.do("ZADD", f"{self.p}threads:resourceid_updatedat_idx:{{{owner}}}", str(at), tid)
                w.do("ZADD", f"{self.p}threads:updatedat_idx:{{*}}", str(at), tid)
            if await self._apply(w):
                return

    def _message(self, flat: Sequence[str]) -> dict[str, Any]:
        fields: dict[str, Any] = as_hash(flat)
        fields["content"] = json.loads(fields["content"])
        fields["createdAt"] = datetime.fromisoformat(fields["createdAt"])
        return fields

    async def _newest(self, thread_id: str, n: int) -> list[dict[str, Any]]:
        reply = await self._page(
            keys=[self._by_thread(thread_id)], args=["1", 0, n, self._messages(thread_id), "0"]
        )
        return [self._message(flat) for flat in reply[2] if flat]

    async def newest(self, thread_id: str, n: int) -> list[str]:
        return [m["id"] for m in (await self._newest(thread_id, n))[:n]]

    async def newest_with_window(
        self, thread_id: str, n: int, message_id: str, before: int, after: int
    ) -> list[str]:
        merged = {m["id"]: m for m in (await self._newest(thread_id, n))[:n]}
        owner = cast(str | None, await self.redis.get(self._pointer(message_id)))
        if owner is not None:
            found = await self._window(
                keys=[self._by_thread(owner)],
                args=[message_id, before, after, self._messages(owner)],
            )
            for flat in found:
                if flat:
                    m = self._message(flat)
                    merged.setdefault(m["id"], m)
        ordered = sorted(merged.values(), key=lambda m: (m["createdAt"], m["id"]), reverse=True)
        return [m["id"] for m in ordered]

    async def thread_page(self, resource_id: str, page: int, per_page: int) -> list[str]:
        start = page * per_page
        reply = await self._page(
            keys=[f"{self.p}threads:resourceid_createdat_idx:{{{resource_id}}}"],
            args=["1", start, start + per_page, "", "1"],
        )
        pipe = self.redis.pipeline(transaction=False)
        for tid in reply[1]:
            pipe.hgetall(self._thread(tid))
        threads = []
        for fields in await pipe.execute():
            if fields and fields.get("resourceId") == resource_id:
                fields["createdAt"] = datetime.fromisoformat(fields["createdAt"])
                fields["updatedAt"] = datetime.fromisoformat(fields["updatedAt"])
                threads.append(fields["id"])
        return threads[:per_page]

    async def update_working_memory(self, resource_id: str, text: str) -> None:
        key = f"{self.p}resources:{{{resource_id}}}"
        while True:
            raw = await self._hash(key)
            stamp = iso(datetime.now(UTC))
            if raw:
                datetime.fromisoformat(raw["createdAt"])  # the adapter decodes the record
            w = _Write()
            w.guard("exists" if raw else "absent", key)
            for name in ("workingMemory", "metadata", "createdAt"):
                w.expect_field(key, name, raw.get(name))
            created = raw.get("createdAt", stamp)
            fields = {"id": resource_id, "workingMemory": text, "createdAt": created,
                      "updatedAt": stamp}
            if "metadata" in raw:
                fields["metadata"] = raw["metadata"]
            w.put(key, fields)
            at = ms(datetime.fromisoformat(created))
            w.move([], [(f"{self.p}resources:createdat_idx:{{*}}", at, resource_id)])
            if await self._apply(w):
                return

    async def get_working_memory(self, resource_id: str) -> str | None:
        raw = await self._hash(f"{self.p}resources:{{{resource_id}}}")
        if not raw:
            return None
        datetime.fromisoformat(raw["createdAt"])
        datetime.fromisoformat(raw["updatedAt"])
        return raw.get("workingMemory")

    # -- workflows ---------------------------------------------------------------------------------

    def _run(self, name: str, run_id: str) -> str:
        return f"{self.p}workflow_snapshot:{{{name}}}:{run_id}"

    def _run_entries(self, name: str, run_id: str, status: str, at: int) -> list[Entry]:
        t, both = f"{self.p}workflow_snapshot:", f"{run_id}\x00{name}"
        found: list[Entry] = [
            (f"{t}workflow_name_createdat_idx:{{{name}}}", at, run_id),
            (f"{t}createdat_idx:{{*}}", at, both),
            (f"{t}run_id_createdat_idx:{{{run_id}}}", at, name),
        ]
        if status:
            found.append((f"{t}workflow_name_snapshot_status_createdat_idx:{{{name}}}:{status}",
                          at, run_id))
            found.append((f"{t}snapshot_status_createdat_idx:{{{status}}}", at, both))
        return found

    async def save_snapshot(self, name: str, run_id: str, snapshot: dict[str, Any]) -> None:
        key = self._run(name, run_id)
        body = dumps(snapshot)
        status = snapshot.get("status")
        status = status if isinstance(status, str) else ""
        while True:
            meta = await self._run_meta(keys=[key], args=[])
            stamp = iso(datetime.now(UTC))
            w = _Write()
            if not meta:
                w.guard("absent", key)
                created, old = stamp, []
            else:
                created, resource, old_status, digest = meta
                w.expect_field(key, "createdAt", created)
                w.expect_field(key, "resourceId", resource or None)
                w.guard("sha1", key, "snapshot", digest)
                old = self._run_entries(
                    name, run_id, old_status, ms(datetime.fromisoformat(created))
                )
            w.put(key, {"workflow_name": name, "run_id": run_id, "snapshot": body,
                        "createdAt": created, "updatedAt": stamp})
            w.move(old, self._run_entries(name, run_id, status,
                                          ms(datetime.fromisoformat(created))))
            if await self._apply(w):
                return

    async def load_snapshot(self, name: str, run_id: str) -> dict[str, Any] | None:
        raw = await self._hash(self._run(name, run_id))
        if not raw:
            return None
        datetime.fromisoformat(raw["createdAt"])
        datetime.fromisoformat(raw["updatedAt"])
        value: dict[str, Any] = json.loads(raw["snapshot"])
        return value

    # -- observability -----------------------------------------------------------------------------

    def _span(self, tid: str, sid: str) -> str:
        return f"{self.p}ai_spans:{{{tid}}}:{sid}"

    def _span_entries(self, fields: dict[str, str]) -> list[Entry]:
        """A span's index entries: its trace's sets and the set of all spans, and for a root
        the listing sets (the facets the workloads' spans carry: span type, trace id, status,
        child error, ended)."""
        tid, sid, t = fields["traceId"], fields["spanId"], f"{self.p}ai_spans:"
        started = ms(datetime.fromisoformat(fields["startedAt"]))
        member = f"{tid}\x00{sid}"
        found: list[Entry] = [(f"{t}traceid_startedat_idx:{{{tid}}}", started, sid),
                              (f"{t}started_at_idx:{{*}}", started, member)]
        if "parentSpanId" in fields:
            return found
        found.append((f"{t}traceid_root_startedat_idx:{{{tid}}}:1", started, sid))
        ended_at = fields.get("endedAt")
        ended: int | str = ms(datetime.fromisoformat(ended_at)) if ended_at else "+inf"
        found += [(f"{t}roots_started_at_idx:{{*}}", started, member),
                  (f"{t}roots_ended_idx:{{*}}", ended, member)]
        facets = {
            "spantype": fields["spanType"],
            "traceid": tid,
            "status": "success" if ended_at else "running",
            "haschilderror": "false",
            "hasended": "true" if ended_at else "false",
        }
        for facet, value in facets.items():
            found += [(f"{t}roots_{facet}_startedat_idx:{{{value}}}", started, member),
                      (f"{t}roots_{facet}_ended_idx:{{{value}}}", ended, member)]
        return found

    async def save_spans(self, spans: list[SpanRow]) -> None:
        traces = list(dict.fromkeys(s.trace_id for s in spans))
        stamp = iso(datetime.now(UTC))
        new = []
        for s in spans:
            fields = {"traceId": s.trace_id, "spanId": s.span_id, "name": s.name,
                      "spanType": s.span_type, "isEvent": "false",
                      "startedAt": iso(s.started_at), "attributes": dumps(s.attributes),
                      "input": dumps(s.input), "output": dumps(s.output),
                      "createdAt": stamp, "updatedAt": stamp}
            if s.parent_span_id is not None:
                fields["parentSpanId"] = s.parent_span_id
            if s.ended_at is not None:
                fields["endedAt"] = iso(s.ended_at)
            new.append(fields)
        while True:
            pipe = self.redis.pipeline(transaction=False)
            for s in spans:
                pipe.hgetall(self._span(s.trace_id, s.span_id))
            for tid in traces:
                pipe.get(f"{self.p}ai_spans:trace_rev:{{{tid}}}")
                pipe.zrange(f"{self.p}ai_spans:traceid_error_startedat_idx:{{{tid}}}:1", 0, -1)
                pipe.zrange(f"{self.p}ai_spans:traceid_root_startedat_idx:{{{tid}}}:1", 0, -1)
            found = await pipe.execute()
            w = _Write()
            for i, tid in enumerate(traces):
                rev, errors = found[len(spans) + 3 * i], found[len(spans) + 3 * i + 1]
                if errors:
                    raise NotImplementedError("the workloads write no span errors")
                rev_key = f"{self.p}ai_spans:trace_rev:{{{tid}}}"
                w.guard("value" if rev is not None else "absent", rev_key, "", rev or "")
                w.do("INCR", rev_key)
            for fields, old in zip(new, found[: len(spans)], strict=True):
                key = self._span(fields["traceId"], fields["spanId"])
                w.put(key, fields)
                w.move(self._span_entries(old) if old else [], self._span_entries(fields))
            if await self._apply(w):
                return

    async def read_trace(self, trace_id: str) -> int:
        reply = await self._page(
            keys=[f"{self.p}ai_spans:traceid_startedat_idx:{{{trace_id}}}"],
            args=["0", 0, -1, f"{self.p}ai_spans:{{{trace_id}}}:", "0"],
        )
        count = 0
        for flat in reply[2]:
            if not flat:
                continue
            fields: dict[str, Any] = as_hash(flat)
            for name, value in fields.items():
                if name in _SPAN_JSON:
                    fields[name] = json.loads(value)
                elif name in _SPAN_TIMES:
                    fields[name] = datetime.fromisoformat(value)
            fields["isEvent"] = fields.get("isEvent") == "true"
            count += 1
        return count
