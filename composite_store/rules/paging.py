"""Pagination rules shared by every backend: normalising page/per_page and building pages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from composite_store.errors import ValidationError
from composite_store.records.base import coerce
from composite_store.types import OrderBy, Page, Pagination, PerPage

__all__ = ["MAX_PAGE", "Window", "build_page", "order_field", "window", "window_from"]

T = TypeVar("T")

#: The largest ``page`` and ``per_page`` (2**31 - 1): every backend can compute the offset
#: ``page * per_page`` in a signed 64-bit integer. A larger value is a ``ValidationError``.
MAX_PAGE = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Window:
    """A normalised page request: what the caller asked for and the rows to fetch."""

    page: int
    per_page: PerPage
    offset: int
    #: Rows to return; None means all.
    limit: int | None

    @property
    def empty(self) -> bool:
        """``per_page=0``: no rows and no count."""
        return self.limit == 0

    @property
    def fetch(self) -> int | None:
        """Rows to read for this page: one past it, so :func:`build_page` tells ``has_more``
        from the extra row without a count; None reads all."""
        return None if self.limit is None else self.limit + 1

    @property
    def stop(self) -> int | None:
        """Where the rows to read end (``offset + fetch``), None for all: ``rows[w.offset :
        w.stop]`` cuts them from a sorted list."""
        return None if self.limit is None else self.offset + self.limit + 1


def window(page: int | None, per_page: PerPage | None, *, default: PerPage) -> Window:
    """Validate ``page``/``per_page`` and return the rows to fetch.

    Raises ``ValidationError`` for a negative or non-integer value, and for ``page != 0`` with
    ``per_page=False``.
    """
    page = 0 if page is None else page
    per_page = default if per_page is None else per_page
    if isinstance(page, bool) or not isinstance(page, int):
        raise ValidationError(f"page must be an integer, got {page!r}")
    if page < 0:
        raise ValidationError("page must be >= 0")
    if page > MAX_PAGE:
        raise ValidationError(f"page must be <= {MAX_PAGE}, got {page}")
    if per_page is False:
        if page != 0:
            raise ValidationError("page must be 0 when per_page is False")
        return Window(page=0, per_page=False, offset=0, limit=None)
    if isinstance(per_page, bool) or not isinstance(per_page, int):
        raise ValidationError(f"per_page must be an integer or False, got {per_page!r}")
    if per_page < 0:
        raise ValidationError("per_page must be >= 0")
    if per_page > MAX_PAGE:
        raise ValidationError(f"per_page must be <= {MAX_PAGE}, got {per_page}")
    return Window(page=page, per_page=per_page, offset=page * per_page, limit=per_page)


def window_from(pagination: Pagination | dict[str, Any] | None, *, default: PerPage) -> Window:
    """Like :func:`window`, from an optional ``Pagination`` (the non-memory domains)."""
    if pagination is None:
        return window(0, None, default=default)
    if isinstance(pagination, dict):
        pagination = coerce(Pagination, pagination, what="pagination")
    return window(pagination.page, pagination.per_page, default=default)


def build_page(rows: Sequence[T], w: Window, total: int | None) -> Page[T]:
    """Build a page from ``rows`` fetched with ``limit + 1`` (one row past the page).

    ``has_more`` comes from the extra row, so no count is needed to know it.
    """
    if w.limit is None:
        return Page(items=list(rows), total=total, page=w.page, per_page=w.per_page, has_more=False)
    return Page(
        items=list(rows[: w.limit]),
        total=total,
        page=w.page,
        per_page=w.per_page,
        has_more=len(rows) > w.limit,
    )


def order_field(
    order_by: OrderBy | dict[str, Any] | None,
    *,
    allowed: dict[str, str],
    default: tuple[str, str],
) -> tuple[str, bool]:
    """Return (stored field name, descending) for ``order_by``.

    ``allowed`` maps every accepted spelling (``created_at``, ``createdAt``) to the stored name.
    Raises ``ValidationError`` for another field or a malformed ``order_by``.
    """
    if order_by is None:
        return default[0], default[1] == "DESC"
    if isinstance(order_by, dict):
        order_by = coerce(OrderBy, order_by, what="order_by")
    if not isinstance(order_by, OrderBy):
        raise ValidationError(
            f"order_by must be an OrderBy or a dict, got {type(order_by).__name__}"
        )
    try:
        stored = allowed[order_by.field]
    except KeyError:
        known = ", ".join(sorted(set(allowed.values())))
        raise ValidationError(f"cannot order by {order_by.field!r}; allowed: {known}") from None
    return stored, order_by.direction == "DESC"
