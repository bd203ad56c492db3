"""The workflow definitions domain contract (beta): definitions and their numbered versions."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from composite_store.domains.args import UNSET, given, optional_int, page_window, require_id
from composite_store.domains.base import Domain
from composite_store.errors import ConflictError, NotFoundError, ValidationError
from composite_store.records.base import coerce, now_utc, uuid4_str
from composite_store.records.workflow_definitions import (
    WorkflowDefinition,
    WorkflowDefinitionVersion,
)
from composite_store.rules.paging import Window, build_page, order_field, window
from composite_store.types import OrderBy, Page, Pagination

__all__ = [
    "DefinitionQuery",
    "DefinitionUpdate",
    "VersionFactory",
    "VersionLookup",
    "VersionQuery",
    "WorkflowDefinitionsDomain",
]

#: Default page size of every workflow definitions listing.
DEFAULT_PER_PAGE = 100
#: Attempts of ``create_version`` when a concurrent writer took the number it computed.
VERSION_ATTEMPTS = 8

#: Read a version by id inside the backend's transaction.
VersionLookup = Callable[[str], WorkflowDefinitionVersion | None]
#: A pure function from the stored definition to the updated one; raising aborts the update.
DefinitionUpdate = Callable[[WorkflowDefinition, VersionLookup], WorkflowDefinition]
#: Build the version record once its number is known.
VersionFactory = Callable[[int], WorkflowDefinitionVersion]

_DEFINITION_ORDER = {
    "createdAt": "createdAt",
    "created_at": "createdAt",
    "updatedAt": "updatedAt",
    "updated_at": "updatedAt",
}
_VERSION_ORDER = {
    "versionNumber": "versionNumber",
    "version_number": "versionNumber",
    "createdAt": "createdAt",
    "created_at": "createdAt",
}


@dataclass(frozen=True, slots=True)
class DefinitionQuery:
    """A normalised ``list_workflow_definitions`` request, handed to the backend hook."""

    order_field: str
    descending: bool
    window: Window


@dataclass(frozen=True, slots=True)
class VersionQuery:
    """A normalised version listing of one definition, handed to the backend hook."""

    workflow_definition_id: str
    order_field: str
    descending: bool
    window: Window
    count: bool = True


def _order(
    order_by: OrderBy | Mapping[str, Any] | None, allowed: dict[str, str], default: str
) -> tuple[str, bool]:
    if order_by is not None and not isinstance(order_by, OrderBy):
        order_by = coerce(OrderBy, order_by, what="order_by")
    return order_field(order_by, allowed=allowed, default=(default, "DESC"))


class WorkflowDefinitionsDomain(Domain):
    """Stored workflow definitions and their immutable, numbered versions (beta).

    A version snapshots a definition; versions of one definition are numbered 1, 2, ... with
    no duplicate even under concurrent ``create_version`` calls. ``update_workflow_definition(
    active_version_id=...)`` selects the version in use.
    """

    domain: ClassVar[str] = "workflow_definitions"

    # -- definitions -------------------------------------------------------------------------------

    async def create_workflow_definition(
        self, *, definition: WorkflowDefinition | Mapping[str, Any]
    ) -> WorkflowDefinition:
        """Create a definition (a record or a dict in any spelling; ``id`` defaults to a new
        UUID) and return it. Raises ``ConflictError`` when the id is taken."""
        self._check()
        record = coerce(WorkflowDefinition, definition, what="workflow definition")
        if record.active_version_id is not None:
            raise ValidationError(
                "a new workflow definition has no versions yet: create one with create_version, "
                "then set active_version_id with update_workflow_definition"
            )
        if not await self._insert_definition(record):
            raise ConflictError(f"workflow definition {record.id!r} already exists")
        return record

    async def get_workflow_definition_by_id(self, *, id: str) -> WorkflowDefinition | None:
        """Return the definition, or None."""
        self._check()
        return await self._get_definition(require_id(id, "id"))

    async def update_workflow_definition(
        self,
        *,
        id: str,
        name: str = UNSET,
        description: str | None = UNSET,
        metadata: Mapping[str, Any] | None = UNSET,
        active_version_id: str | None = UNSET,
    ) -> WorkflowDefinition:
        """Replace the given fields (``None`` clears an optional one), bump ``updated_at`` and
        return the definition.

        ``active_version_id`` must name a version of this definition (``ValidationError``
        otherwise). Raises ``NotFoundError`` when the definition does not exist.
        """
        self._check()
        definition_id = require_id(id, "id")
        changes = given(
            name=name,
            description=description,
            metadata=metadata,
            active_version_id=active_version_id,
        )
        target = changes.get("active_version_id")
        if target is not None:
            require_id(target, "active_version_id")
        now = now_utc()

        def update(current: WorkflowDefinition, lookup: VersionLookup) -> WorkflowDefinition:
            if target is not None:
                version = lookup(target)
                if version is None or version.workflow_definition_id != definition_id:
                    raise ValidationError(
                        f"active_version_id {target!r} is not a version of workflow "
                        f"definition {definition_id!r}"
                    )
            return coerce(
                WorkflowDefinition,
                {**current.model_dump(), **changes, "updated_at": now},
                what=f"workflow definition {definition_id!r}",
            )

        updated = await self._update_definition(definition_id, update)
        if updated is None:
            raise NotFoundError(f"workflow definition {definition_id!r} not found")
        return updated

    async def delete_workflow_definition(self, *, id: str) -> None:
        """Delete the definition and all its versions; a missing one is not an error."""
        self._check()
        await self._delete_definition(require_id(id, "id"))

    async def list_workflow_definitions(
        self,
        *,
        pagination: Pagination | Mapping[str, Any] | None = None,
        order_by: OrderBy | Mapping[str, Any] | None = None,
    ) -> Page[WorkflowDefinition]:
        """List definitions, newest first by default (``order_by`` createdAt or updatedAt,
        either direction; ties by id)."""
        self._check()
        field, descending = _order(order_by, _DEFINITION_ORDER, "createdAt")
        w = page_window(pagination, default=DEFAULT_PER_PAGE)
        if w.empty:
            return build_page([], w, 0)
        rows, total = await self._list_definitions(DefinitionQuery(field, descending, w))
        return build_page(rows, w, total)

    # -- versions ----------------------------------------------------------------------------------

    async def create_version(
        self,
        *,
        workflow_definition_id: str,
        snapshot: Any = None,
        changed_fields: Sequence[str] | None = None,
        change_message: str | None = None,
        version_number: int | None = None,
        id: str | None = None,
    ) -> WorkflowDefinitionVersion:
        """Add an immutable version of the definition and return it.

        Without ``version_number`` it gets the next number (1 for the first), atomically: two
        concurrent calls never get the same number. Raises ``NotFoundError`` when the definition
        does not exist and ``ConflictError`` when ``version_number`` or ``id`` is taken.
        """
        self._check()
        definition_id = require_id(workflow_definition_id, "workflow_definition_id")
        number = optional_int(version_number, "version_number", minimum=1)
        version_id = require_id(id, "id") if id is not None else uuid4_str()
        now = now_utc()
        fields: dict[str, Any] = {
            "id": version_id,
            "workflow_definition_id": definition_id,
            "snapshot": snapshot,
            "changed_fields": changed_fields,
            "change_message": change_message,
            "created_at": now,
        }
        # Validate everything but the number now, so a bad snapshot fails before any I/O.
        coerce(WorkflowDefinitionVersion, {**fields, "version_number": 1}, what="version")

        def build(n: int) -> WorkflowDefinitionVersion:
            return coerce(
                WorkflowDefinitionVersion, {**fields, "version_number": n}, what="version"
            )

        for attempt in range(VERSION_ATTEMPTS):
            try:
                outcome = await self._create_version(definition_id, number, build)
            except ConflictError:
                # A concurrent writer took the number computed in the same instant; recompute.
                if number is not None or attempt == VERSION_ATTEMPTS - 1:
                    raise
                continue
            if outcome == "missing_definition":
                raise NotFoundError(f"workflow definition {definition_id!r} not found")
            if outcome == "number_taken":
                raise ConflictError(
                    f"workflow definition {definition_id!r} already has version {number}"
                )
            if outcome == "id_taken":
                raise ConflictError(f"workflow definition version {version_id!r} already exists")
            return outcome
        raise AssertionError("unreachable")  # pragma: no cover

    async def get_version(self, *, id: str) -> WorkflowDefinitionVersion | None:
        """Return the version with this id, or None."""
        self._check()
        return await self._get_version(require_id(id, "id"))

    async def get_version_by_number(
        self, *, workflow_definition_id: str, version_number: int
    ) -> WorkflowDefinitionVersion | None:
        """Return version ``version_number`` of the definition, or None."""
        self._check()
        definition_id = require_id(workflow_definition_id, "workflow_definition_id")
        number = optional_int(version_number, "version_number", minimum=1)
        if number is None:
            raise ValidationError("version_number is required (an integer >= 1)")
        return await self._get_version_by_number(definition_id, number)

    async def get_latest_version(
        self, *, workflow_definition_id: str
    ) -> WorkflowDefinitionVersion | None:
        """Return the definition's highest-numbered version, or None when it has none."""
        self._check()
        definition_id = require_id(workflow_definition_id, "workflow_definition_id")
        rows, _ = await self._list_versions(
            VersionQuery(definition_id, "versionNumber", True, window(0, 1, default=1), False)
        )
        return rows[0] if rows else None

    async def list_versions(
        self,
        *,
        workflow_definition_id: str,
        pagination: Pagination | Mapping[str, Any] | None = None,
        order_by: OrderBy | Mapping[str, Any] | None = None,
    ) -> Page[WorkflowDefinitionVersion]:
        """List the definition's versions, highest number first by default (``order_by``
        versionNumber or createdAt, either direction)."""
        self._check()
        definition_id = require_id(workflow_definition_id, "workflow_definition_id")
        field, descending = _order(order_by, _VERSION_ORDER, "versionNumber")
        w = page_window(pagination, default=DEFAULT_PER_PAGE)
        if w.empty:
            return build_page([], w, 0)
        rows, total = await self._list_versions(VersionQuery(definition_id, field, descending, w))
        return build_page(rows, w, total)

    # -- hooks -------------------------------------------------------------------------------------

    @abstractmethod
    async def _insert_definition(self, definition: WorkflowDefinition) -> bool:
        """Insert the definition; return False (writing nothing) when its id is taken."""

    @abstractmethod
    async def _get_definition(self, definition_id: str) -> WorkflowDefinition | None:
        """Return the definition or None."""

    @abstractmethod
    async def _update_definition(
        self, definition_id: str, update: DefinitionUpdate
    ) -> WorkflowDefinition | None:
        """Atomically call ``update(definition, lookup)`` (``lookup`` reads a version by id in
        the same transaction) and store every field of the result; return it, or None when the
        definition does not exist."""

    @abstractmethod
    async def _delete_definition(self, definition_id: str) -> None:
        """Delete the definition and its versions atomically."""

    @abstractmethod
    async def _list_definitions(
        self, query: DefinitionQuery
    ) -> tuple[list[WorkflowDefinition], int]:
        """Return up to ``limit + 1`` definitions from ``offset`` ordered by
        (``order_field``, id), and the total."""

    @abstractmethod
    async def _create_version(
        self, definition_id: str, number: int | None, build: VersionFactory
    ) -> WorkflowDefinitionVersion | Literal["missing_definition", "number_taken", "id_taken"]:
        """Atomically: check the definition exists, take ``number`` (or, when None, one more
        than the highest number of the definition, 1 for the first), insert ``build(number)``
        and return it. Return why nothing was written instead when the definition is missing
        or the number or the id is taken. A concurrent writer that took the computed number
        may surface as ``ConflictError`` (the unique key); the caller retries."""

    @abstractmethod
    async def _get_version(self, version_id: str) -> WorkflowDefinitionVersion | None:
        """Return the version or None."""

    @abstractmethod
    async def _get_version_by_number(
        self, definition_id: str, number: int
    ) -> WorkflowDefinitionVersion | None:
        """Return the definition's version ``number`` or None."""

    @abstractmethod
    async def _list_versions(
        self, query: VersionQuery
    ) -> tuple[list[WorkflowDefinitionVersion], int]:
        """Return up to ``limit + 1`` versions of the definition from ``offset`` ordered by
        (``order_field``, id), and the total (0 unless ``query.count``)."""
