"""Pages of the intersection of several sorted-set indexes (filters no single set serves).

The first set orders the page (its scores); the others only filter. Sets of one slot (a
resource's thread sets, the whole-table ``{*}`` sets, any set on a standalone server) are
intersected by the ``INTERSECT`` script, which stores the intersection in a scratch key of
that slot, reads the page and deletes the key. Sets of several slots (trace facets on Redis
Cluster) are intersected here: the smallest set is read whole (a bounded read: at most its
size), then ``ZMSCORE`` asks the others about its members.
"""

from __future__ import annotations

from collections.abc import Sequence

from composite_store_redis.connection import PageResult, RedisConnection
from composite_store_redis.keys import same_slot

__all__ = ["intersect_page"]


async def intersect_page(
    conn: RedisConnection,
    sets: Sequence[str],
    scratch: str,
    *,
    low: str = "-inf",
    high: str = "+inf",
    reverse: bool = False,
    offset: int = 0,
    count: int | None = None,
    total: bool = False,
) -> PageResult:
    """One page of the members in every one of ``sets``, by the scores of ``sets[0]`` (ties
    by member); ``scratch`` is a key of the sets' slot that nothing else uses."""
    if not conn.cluster or same_slot([scratch, *sets]):
        reply = await conn.script(
            "INTERSECT",
            [scratch, *sets],
            [low, high, "1" if reverse else "0", offset, -1 if count is None else count,
             "1" if total else "0"],
        )
        return PageResult(None if reply[0] == -1 else int(reply[0]), list(reply[1]), None)
    sizes = await conn.read([["ZCARD", key] for key in sets])
    smallest = min(range(len(sets)), key=lambda i: int(sizes[i]))
    [members] = await conn.read([["ZRANGE", sets[smallest], "0", "-1"]])
    if members:
        replies = await conn.read([["ZMSCORE", key, *members] for key in sets])
    else:
        replies = [[] for _ in sets]
    found: list[tuple[float, str]] = []
    for position, member in enumerate(members):
        scores = [reply[position] for reply in replies]
        if any(s is None for s in scores):
            continue
        score = float(scores[0])
        if _within(score, low, high):
            found.append((score, member))
    found.sort(reverse=reverse)
    page = found[offset:] if count is None else found[offset : offset + count]
    return PageResult(len(found) if total else None, [m for _, m in page], None)


def _within(score: float, low: str, high: str) -> bool:
    """Whether ``score`` lies within ZRANGE BYSCORE bounds (``(`` marks an exclusive one)."""
    for bound, above in ((low, True), (high, False)):
        exclusive = bound.startswith("(")
        limit = float(bound[1:] if exclusive else bound)
        if above and (score < limit or (exclusive and score == limit)):
            return False
        if not above and (score > limit or (exclusive and score == limit)):
            return False
    return True
