"""``Batch``: the writes of one operation, guarded and grouped into single-slot steps.

A domain reads what it needs, then describes its writes as a batch: guards (the values it read
must still hold) and commands, each naming the key it touches. ``RedisConnection.apply`` runs
a batch as one script call on a standalone server, so the operation is atomic; on Redis
Cluster it runs one script per slot (a hash tag keeps each record group in one slot), guarded
steps first. A failed guard means a concurrent writer won: the domain reads again and retries.
TTLs are applied here, so no domain forgets one: records get an expiry instant, and each index
entry is mirrored in the index's TTL companion so readers purge it when its record expires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import orjson
from redis.crc import key_slot

from composite_store.errors import ValidationError

__all__ = ["BATCH_CHUNK", "Batch", "Step"]

#: A guard: (its key, (op, key, field, value) as the script reads them).
_Guard = tuple[str, tuple[str, str, str, str]]

#: Arguments per command a script can unpack at once (Lua's stack limit is ~8000).
BATCH_CHUNK = 1000


@dataclass
class Step:
    """One script call: the keys it declares, its guards and its commands."""

    keys: list[str] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)
    commands: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def guarded(self) -> bool:
        return bool(self.guards)

    def argv(self) -> list[str | bytes]:
        """The script's arguments: the guard count, the guards (four each), and the commands
        as one JSON array of arrays, which the script decodes with ``cjson``.

        One argument rather than one per command word: redis-py packs every argument in
        Python (an encode, a length and a join each), and a trace of 10 spans has about 550
        (W6 write: 1.52 -> 1.20 ms a trace). Raises ``UnicodeEncodeError`` for text that is
        not UTF-8.
        """
        try:
            commands = orjson.dumps(self.commands)
        except orjson.JSONEncodeError:
            for args in self.commands:
                for arg in args:
                    arg.encode("utf-8")  # the UnicodeEncodeError of the lone surrogate
            raise
        return [str(len(self.guards) // 4), *self.guards, commands]


class Batch:
    """The guards and commands of one write operation (see the module docstring).

    ``expire_at`` is the absolute expiry (ms since the epoch) of everything written, or None
    without TTL.
    """

    def __init__(self, *, expire_at: int | None = None) -> None:
        self.expire_at = expire_at
        self._guards: list[_Guard] = []
        self._commands: list[tuple[str, ...]] = []

    def __bool__(self) -> bool:
        return bool(self._commands)

    # -- guards ------------------------------------------------------------------------------------

    def expect_field(self, key: str, name: str, value: str | None) -> None:
        """The hash field must still be ``value`` (None: absent)."""
        if value is None:
            self._guard(key, "hn", name, "")
        else:
            self._guard(key, "h", name, value)

    def expect_value(self, key: str, value: str | None) -> None:
        """The string key must still hold ``value`` (None: absent)."""
        self._guard(key, "g" if value is not None else "gn", "", value or "")

    def expect_exists(self, key: str, exists: bool = True) -> None:
        self._guard(key, "x" if exists else "xn", "", "")

    def expect_digest(self, key: str, name: str, sha1: str) -> None:
        """The SHA-1 of the hash field must still be ``sha1`` ('': absent)."""
        self._guard(key, "s", name, sha1)

    def _guard(self, key: str, op: str, name: str, value: str) -> None:
        self._guards.append((key, (op, key, name, value)))

    # -- records -----------------------------------------------------------------------------------

    def put_record(self, key: str, fields: Mapping[str, str]) -> None:
        """Replace the whole hash (fields left out are gone) and set its expiry."""
        self.command("DEL", key)
        self.set_fields(key, fields)

    def set_fields(self, key: str, fields: Mapping[str, str], clear: Iterable[str] = ()) -> None:
        """Set some fields, remove the ``clear`` ones, and renew the record's expiry."""
        flat = [x for item in fields.items() for x in item]
        if flat:
            self.command("HSET", key, *flat)
        cleared = list(clear)
        if cleared:
            self.command("HDEL", key, *cleared)
        self.expire(key)

    def set_string(self, key: str, value: str) -> None:
        self.command("SET", key, value)
        self.expire(key)

    def delete(self, *keys: str) -> None:
        for key in keys:
            self.command("DEL", key)

    def expire(self, key: str) -> None:
        if self.expire_at is not None:
            self.command("PEXPIREAT", key, str(self.expire_at))

    # -- indexes -----------------------------------------------------------------------------------

    def index_add(self, key: str, companion: str | None, score: int | str, member: str) -> None:
        """Add (or move) ``member`` in sorted set ``key``; ``companion`` is its TTL companion,
        given when the domain has a TTL."""
        self.command("ZADD", key, str(score), member)
        if self.expire_at is not None:
            if companion is None:
                raise ValidationError("an index written with a TTL needs its companion key")
            at = str(self.expire_at)
            self.command("ZADD", companion, at, member)
            # The sets live as long as their last entry: NX sets a first expiry, GT extends it.
            for target in (key, companion):
                self.command("PEXPIREAT", target, at, "NX")
                self.command("PEXPIREAT", target, at, "GT")

    def index_remove(self, key: str, companion: str | None, *members: str) -> None:
        for start in range(0, len(members), BATCH_CHUNK):
            chunk = members[start : start + BATCH_CHUNK]
            self.command("ZREM", key, *chunk)
            if companion is not None:
                self.command("ZREM", companion, *chunk)

    def command(self, *args: str) -> None:
        """A raw command whose one key is its first argument (``HSET key ...``)."""
        self._commands.append(args)

    # -- execution plan ----------------------------------------------------------------------------

    def steps(self, *, cluster: bool) -> list[Step]:
        """One step (standalone), or one per slot with the guarded ones first (cluster)."""
        if not self._guards and not self._commands:
            return []
        if not cluster:
            return [_step(self._guards, self._commands)]
        # slot -> (its guards, its commands), in the order the batch names them
        by_slot: dict[int, tuple[list[_Guard], list[tuple[str, ...]]]] = {}
        for guard in self._guards:
            by_slot.setdefault(key_slot(guard[0].encode()), ([], []))[0].append(guard)
        for args in self._commands:
            by_slot.setdefault(key_slot(args[1].encode()), ([], []))[1].append(args)
        steps = [_step(guards, commands) for guards, commands in by_slot.values()]
        return sorted(steps, key=lambda s: not s.guarded)


def _step(guards: Iterable[_Guard], commands: Iterable[tuple[str, ...]]) -> Step:
    """One script call running ``commands`` under ``guards``; it declares each key once."""
    step = Step()
    keys: dict[str, None] = {}  # an ordered set
    for key, guard in guards:
        keys[key] = None
        step.guards.extend(guard)
    for args in commands:
        keys[args[1]] = None
        step.commands.append(args)
    step.keys = list(keys)
    return step
