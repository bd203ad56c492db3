"""Argument rules written once (``composite_store.domains.args``, ``composite_store.rules.paging``):
every malformed argument is our ``ValidationError``, never pydantic's."""

from __future__ import annotations

import asyncio

import pydantic
import pytest

from composite_store import ValidationError, open_store
from composite_store.domains.args import (
    INT64_MAX,
    optional_id,
    optional_int,
    page_window,
    require_id,
)
from composite_store.rules.paging import order_field, window_from

ORDER = {"createdAt": "createdAt", "created_at": "createdAt"}


def test_an_integer_argument_fits_in_64_bits() -> None:
    """A version or count past 2**63 - 1 is refused before it reaches a driver (SQLite's
    raised OverflowError, an error type outside the API)."""
    assert optional_int(INT64_MAX, "version") == INT64_MAX
    with pytest.raises(ValidationError, match="version must be at most"):
        optional_int(INT64_MAX + 1, "version")


@pytest.mark.parametrize("value", ["", "   ", None, 3])
def test_a_blank_or_missing_id_is_refused(value: object) -> None:
    with pytest.raises(ValidationError, match="thread_id must be a non-empty string"):
        require_id(value, "thread_id")


def test_an_optional_id_may_be_none_but_not_blank() -> None:
    assert optional_id(None, "entity_id") is None
    assert optional_id("e1", "entity_id") == "e1"
    with pytest.raises(ValidationError, match="entity_id must be a non-empty string"):
        optional_id(" ", "entity_id")


@pytest.mark.parametrize(
    "order_by", [{"field": "createdAt", "direction": "sideways"}, {"direction": "ASC"}]
)
def test_a_malformed_order_by_is_our_validation_error(order_by: dict[str, str]) -> None:
    with pytest.raises(ValidationError, match="invalid order_by") as caught:
        order_field(order_by, allowed=ORDER, default=("createdAt", "DESC"))
    assert not isinstance(caught.value, pydantic.ValidationError)


def test_order_field_accepts_either_spelling() -> None:
    assert order_field({"field": "created_at", "direction": "ASC"}, allowed=ORDER,
                       default=("createdAt", "DESC")) == ("createdAt", False)
    with pytest.raises(ValidationError, match="cannot order by 'title'"):
        order_field({"field": "title"}, allowed=ORDER, default=("createdAt", "DESC"))


def test_a_malformed_pagination_is_our_validation_error() -> None:
    with pytest.raises(ValidationError, match="invalid pagination"):
        window_from({"page": "first"}, default=10)
    with pytest.raises(ValidationError, match="pagination must be a Pagination or a dict"):
        page_window(5, default=10)  # type: ignore[arg-type]
    assert page_window({"perPage": 3, "page": 2}, default=10).offset == 6


@pytest.mark.parametrize("name", ["", "  "])
def test_a_blank_workflow_name_or_step_is_refused(name: str) -> None:
    async def run() -> None:
        async with open_store("memory://") as store:
            with pytest.raises(ValidationError, match="workflow_name must be a non-empty"):
                await store.workflows.persist_workflow_snapshot(
                    workflow_name=name, run_id="r1", snapshot={}
                )
            with pytest.raises(ValidationError, match="step_id must be a non-empty string"):
                await store.workflows.update_workflow_results(
                    workflow_name="w", run_id="r1", step_id=name, result={}, request_context={}
                )

    asyncio.run(run())
