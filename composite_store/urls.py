"""Store URLs: their scheme, and the composite-store options carried in their query string."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode

from composite_store.errors import ValidationError

__all__ = ["scheme_of", "split_options"]


def scheme_of(url: str) -> str:
    """The lower-cased scheme of ``url`` (``postgresql+psycopg``, ``sqlite``, ...)."""
    if not isinstance(url, str) or "://" not in url:
        raise ValidationError(
            f"not a store URL: {url!r} (expected e.g. 'sqlite:///agent.db' or 'memory://')"
        )
    return url.split("://", 1)[0].lower()


def split_options(url: str, keys: Iterable[str]) -> tuple[str, dict[str, str]]:
    """Remove the query parameters named in ``keys`` from ``url`` and return them apart."""
    wanted = set(keys)
    # Split by hand: urlunsplit would turn sqlite:////abs/path into sqlite://abs/path.
    base, _, rest = url.partition("?")
    query, hash_, fragment = rest.partition("#")
    if not query:
        return url, {}
    kept, taken = [], {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in wanted:
            taken[key] = value
        else:
            kept.append((key, value))
    rebuilt = base + (f"?{urlencode(kept)}" if kept else "")
    return rebuilt + (f"#{fragment}" if hash_ else ""), taken
