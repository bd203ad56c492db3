"""Domain contracts: one abstract base class per storage domain."""

from composite_store.domains.base import (
    Capabilities,
    Domain,
    PhysicalColumn,
    PhysicalIndex,
    PhysicalTable,
)
from composite_store.domains.memory import MemoryDomain
from composite_store.domains.workflows import WorkflowsDomain

__all__ = [
    "Capabilities",
    "Domain",
    "MemoryDomain",
    "PhysicalColumn",
    "PhysicalIndex",
    "PhysicalTable",
    "WorkflowsDomain",
]
