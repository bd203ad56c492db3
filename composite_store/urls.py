"""Store URLs: their scheme, the composite-store options carried in their query string, and
the check of keyword options against what an adapter declares, and what to say of a query
parameter that neither a store nor its driver takes."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

from composite_store.errors import ConfigurationError, ValidationError

__all__ = [
    "check_options",
    "refused_url_option",
    "scheme_of",
    "split_options",
    "unknown_url_option",
    "url_flag",
]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


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


def check_options(
    options: Mapping[str, Any], accepted: Iterable[str], where: str, *, fold_case: bool = False
) -> None:
    """Raise ``ConfigurationError`` for a keyword option ``where`` (an adapter) does not take,
    naming the closest one it does (``prefx`` -> ``prefix``).

    A typo must not become a driver's TypeError, a warning nobody reads, or a silently ignored
    setting. ``fold_case`` compares case-insensitively (pymongo's options are).
    """
    known = set(accepted)
    folded = {name.lower(): name for name in known} if fold_case else {}
    for name in options:
        if name in known or (fold_case and name.lower() in folded):
            continue
        raise ConfigurationError(f"{where} takes no option {name!r}{_did_you_mean(name, known)}")


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known`` to ``name``, or ``""``."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


#: How drivers refuse a connection parameter they do not take: a Python driver's keyword
#: (asyncmy's ``connect()``, redis-py's connection), libpq's connection string (psycopg).
_REFUSED_PARAMETER = re.compile(
    r"unexpected keyword argument '([^']+)'|invalid connection option \"([^\"]+)\""
)


def refused_url_option(exc: BaseException, url: str | None, ours: Iterable[str]) -> str | None:
    """Why a driver refused to connect, when it is a query parameter of ``url`` that it does
    not take (a typo, another driver's option), in our words: the parameter, the store's own
    URL options ``ours`` and the closest of them. None for any other error.

    Query parameters that are not composite-store's go to the driver, which would otherwise
    raise its own ``TypeError`` from deep in a connect (asyncmy, redis-py) or a generic error
    (libpq)."""
    if url is None:
        return None
    found = _REFUSED_PARAMETER.search(str(exc))
    if found is None:
        return None
    name = found.group(1) or found.group(2)
    query = url.partition("?")[2].partition("#")[0]
    if name not in {key for key, _ in parse_qsl(query, keep_blank_values=True)}:
        return None
    return unknown_url_option(name, ours)


def unknown_url_option(name: str, ours: Iterable[str]) -> str:
    """What to say of query parameter ``name`` of a store URL that neither the store (its URL
    options ``ours``) nor its driver takes, naming the closest of ``ours``."""
    known = sorted(set(ours))
    return (
        f"the store URL's query parameter {name!r} is neither an option of the store "
        f"({', '.join(known)}) nor one its driver takes{_did_you_mean(name, known)}"
    )


def url_flag(value: Any, *, option: str) -> bool:
    """Read on/off option ``option``, given as a keyword (a bool) or a URL query parameter
    (``1``/``true``/``yes``/``on``, ``0``/``false``/``no``/``off`` or empty; any case)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValidationError(f"invalid {option} option {value!r}: use true or false")
