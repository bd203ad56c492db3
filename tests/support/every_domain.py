"""Create every domain's tables of a store, as ``init()`` of each domain does."""

from __future__ import annotations

from composite_store import open_store
from composite_store.schema import DOMAINS

__all__ = ["create_every_domain"]


async def create_every_domain(url: str) -> None:
    """Open ``url``, initialize each of its domains (creating their tables), close it."""
    store = open_store(url)
    try:
        for domain in DOMAINS:
            found = store.get(domain)
            if found is not None:
                await found.init()
    finally:
        await store.close()
