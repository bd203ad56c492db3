"""Compare-and-set read-modify-writes of one document, and sync loaders for pure updates.

A contract's ``update`` callables are pure Python: the document is read, the new version
computed, and written back only if the stored document is still the one read (every documented
field compared on the server). A writer that lost the race reads again and recomputes, so
concurrent updates never overwrite each other's changes, on every deployment.

Some updates take a synchronous loader (a dataset's current items, a version by id) that the
SQL backends answer inside their transaction. ``with_loader`` runs such an update with a loader
that asks for what it needs; the data is read asynchronously and the (pure) update called again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any, TypeVar

from pymongo.asynchronous.collection import AsyncCollection

from composite_store.errors import ConflictError
from composite_store.schema import TableSpec
from composite_store_mongodb.connection import Document, MongoConnection, Session
from composite_store_mongodb.documents import literal

__all__ = ["MAX_ATTEMPTS", "unchanged", "update_document", "with_loader"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
R = TypeVar("R")

#: Compare-and-set rounds before giving up. Each lost round means another writer's update
#: landed, so the bound is only reached under extreme contention.
MAX_ATTEMPTS = 1000


def unchanged(spec: TableSpec, doc: Mapping[str, Any]) -> dict[str, Any]:
    """A filter matching ``doc`` (read with its ``_id``) only while no documented field changed.

    ``$expr`` compares values, so keys starting with ``$`` inside JSON fields stay data; an
    absent field compares as null.
    """
    same = [
        {"$eq": [{"$ifNull": [f"${name}", None]}, literal(doc.get(name))]}
        for name in spec.column_names
    ]
    return {"_id": doc["_id"], "$expr": {"$and": same}}


async def update_document(
    conn: MongoConnection,
    collection: AsyncCollection[Document],
    spec: TableSpec,
    query: Mapping[str, Any],
    compute: Callable[[Document], Awaitable[Document]],
) -> Document | None:
    """Replace the document ``query`` finds with ``compute(current)`` atomically; return the new
    document, or None when there is none. ``compute`` may raise to abort (nothing written)."""

    async def attempt(session: Session) -> tuple[bool, Document | None]:
        current = await collection.find_one(dict(query), session=session)
        if current is None:
            return True, None
        new = await compute(current)
        result = await collection.replace_one(unchanged(spec, current), new, session=session)
        return result.matched_count == 1, new

    for _ in range(MAX_ATTEMPTS):
        done, new = await conn.run(attempt, atomic=True)
        if done:
            return new
    raise ConflictError(
        f"{spec.name(conn.prefix)} {dict(query)} kept changing under {MAX_ATTEMPTS} concurrent "
        "updates; retry the update"
    )


class _Missing(BaseException):
    """Raised by a loader for a key not loaded yet (a BaseException, so that no ``except
    Exception`` in the update swallows it)."""

    def __init__(self, key: Hashable) -> None:
        super().__init__(key)
        self.key = key


async def with_loader(
    fn: Callable[[Callable[[K], V]], R], load: Callable[[K], Awaitable[V]]
) -> R:
    """Call ``fn(loader)``, answering the loader's requests with ``await load(key)``.

    ``fn`` must be pure: it is called again (with what was loaded so far) after each key it
    asked for that was not loaded yet.
    """
    loaded: dict[K, V] = {}

    def loader(key: K) -> V:
        if key not in loaded:
            raise _Missing(key)
        return loaded[key]

    while True:
        try:
            return fn(loader)
        except _Missing as missing:
            key: K = missing.key  # type: ignore[assignment]
            loaded[key] = await load(key)
