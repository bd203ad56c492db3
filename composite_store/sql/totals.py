"""A page and its total in one statement (issue 19, W3).

The total rides on every row of the page as an uncorrelated scalar subquery: the engine
evaluates it once (PostgreSQL an InitPlan, SQLite and MariaDB a cached constant subquery), from
the same snapshot as the page, and the whole read is one round trip with no transaction around
it. ``COUNT(*) OVER ()`` would give the same number but makes the engine read every matching
row in full before the LIMIT; the subquery counts from the index alone. A page past the end
has no row to carry the total: the caller counts alone then (``SqlDomain.read_counted``).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

__all__ = ["TOTAL", "with_total"]

#: The label of the total column appended to a counted page.
TOTAL = "page_total"


def with_total(page: sa.Select[Any], count: sa.Select[Any]) -> sa.Select[Any]:
    """``page`` with ``count`` (a ``SELECT count(*) ...``) as one more column, last."""
    # correlate(None): the count reads the same table as the page, and SQLAlchemy would
    # otherwise correlate that FROM away (a count of the current row).
    return page.add_columns(count.correlate(None).scalar_subquery().label(TOTAL))
