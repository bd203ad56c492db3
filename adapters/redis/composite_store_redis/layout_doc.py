"""Render the index reference of docs/redis.md from the domains' declared indexes.

    python -m composite_store_redis.layout_doc --write docs/redis.md

Rewrites the block between the ``BEGIN``/``END`` markers of the file; a test fails when the
block differs from :func:`render`, so the documented key layout cannot drift from the code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from composite_store_redis.domain import RedisDomain
from composite_store_redis.store import RedisStore

__all__ = ["BEGIN", "END", "render", "splice"]

BEGIN = "<!-- BEGIN index reference: python -m composite_store_redis.layout_doc -->"
END = "<!-- END index reference -->"


def _rows(cls: type[RedisDomain]) -> list[str]:
    rows = [
        f"### {cls.domain}",
        "",
        "| sorted set (after `<prefix>`) | one set per | ordered by | member |",
        "|---|---|---|---|",
    ]
    for index in cls.indexes:
        partition = ", ".join(f"`{p}`" for p in index.partition) or "(whole table)"
        order = f"`{index.order}`" + (" (ns, lexicographic)" if index.lex else "")
        member = ", ".join(f"`{m}`" for m in index.member)
        rows.append(f"| `{index.table}:{index.name}` | {partition} | {order} | {member} |")
    return [*rows, ""]


def render() -> str:
    """The generated block, markers included."""
    lines = [BEGIN, ""]
    for cls in RedisStore.domain_classes.values():
        lines += _rows(cls)
    return "\n".join([*lines, END])


def splice(text: str) -> str:
    """``text`` with its generated block replaced by :func:`render`."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + render() + text[end:]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        path = Path(sys.argv[2])
        path.write_text(splice(path.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        sys.stdout.write(render() + "\n")
