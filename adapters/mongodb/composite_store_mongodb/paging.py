"""One page of a listing: a bounded, sorted find plus (when asked) the count, together."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from composite_store.rules.paging import Window
from composite_store_mongodb.connection import Document, MongoConnection, Session
from composite_store_mongodb.documents import NO_ID

__all__ = ["page_of"]


async def page_of(
    conn: MongoConnection,
    collection: AsyncCollection[Document],
    conditions: Mapping[str, Any],
    sort: Sequence[tuple[str, int]],
    window: Window,
    count: bool,
) -> tuple[list[Document], int | None]:
    """Return up to ``limit + 1`` documents from ``offset`` in ``sort`` order (the extra one
    tells ``has_more`` without a count) and the number of matching documents when ``count``.

    The page and the count are two independent reads, sent together.
    """
    query = dict(conditions)

    async def read(_: Session) -> tuple[list[Document], int | None]:
        cursor = collection.find(query, NO_ID).sort(list(sort))
        if window.offset:
            cursor = cursor.skip(window.offset)
        if window.fetch is not None:
            cursor = cursor.limit(window.fetch)
        if not count:
            return await cursor.to_list(), None
        docs, total = await asyncio.gather(cursor.to_list(), collection.count_documents(query))
        return docs, total

    return await conn.run(read)
