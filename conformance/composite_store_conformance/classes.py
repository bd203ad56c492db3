"""``suite_classes``: a backend's test classes, one per suite, without writing them out."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from composite_store_conformance.base import Suite
from composite_store_conformance.suite.test_capabilities import CapabilitiesSuite
from composite_store_conformance.suite.test_datasets import DatasetsSuite
from composite_store_conformance.suite.test_experiments import ExperimentsSuite
from composite_store_conformance.suite.test_isolation import IsolationSuite
from composite_store_conformance.suite.test_isolation_catalogs import (
    DatasetsIsolationSuite,
    ExperimentsIsolationSuite,
    WorkflowDefinitionsIsolationSuite,
)
from composite_store_conformance.suite.test_isolation_scores import ScoresIsolationSuite
from composite_store_conformance.suite.test_isolation_traces import ObservabilityIsolationSuite
from composite_store_conformance.suite.test_memory import MemorySuite
from composite_store_conformance.suite.test_memory_edges import MemoryEdgesSuite
from composite_store_conformance.suite.test_observability import ObservabilitySuite
from composite_store_conformance.suite.test_partial_updates import PartialUpdatesSuite
from composite_store_conformance.suite.test_router import RouterSuite
from composite_store_conformance.suite.test_schema import SchemaSuite
from composite_store_conformance.suite.test_scores import ScoresSuite
from composite_store_conformance.suite.test_transfer import TransferSuite
from composite_store_conformance.suite.test_workflow_definitions import WorkflowDefinitionsSuite
from composite_store_conformance.suite.test_workflows import WorkflowsSuite
from composite_store_conformance.suite.test_working_memory import WorkingMemorySuite

__all__ = ["SUITES", "suite_classes"]

#: Every suite, in the order a backend's test module runs them.
SUITES: tuple[type[Suite], ...] = (
    MemorySuite,
    MemoryEdgesSuite,
    WorkingMemorySuite,
    IsolationSuite,
    ScoresIsolationSuite,
    ObservabilityIsolationSuite,
    DatasetsIsolationSuite,
    ExperimentsIsolationSuite,
    WorkflowDefinitionsIsolationSuite,
    WorkflowsSuite,
    ScoresSuite,
    WorkflowDefinitionsSuite,
    DatasetsSuite,
    ExperimentsSuite,
    ObservabilitySuite,
    PartialUpdatesSuite,
    SchemaSuite,
    CapabilitiesSuite,
    RouterSuite,
    TransferSuite,
)


def suite_classes(prefix: str, *, without: Iterable[type[Suite]] = ()) -> dict[str, type[Suite]]:
    """Return one test class per suite, ``Test<prefix><Suite>`` (``TestSqliteMemory``), by name.

    A backend's test module takes them all with ``globals().update(suite_classes("Sqlite"))``;
    ``without`` leaves suites out (those a variant of a backend has nothing new to say in).
    Suites of a domain the store does not offer need not be left out: they skip, saying so.
    Raises ``ValueError`` for a ``without`` entry that is not one of ``SUITES``.
    """
    left_out = set(without)
    unknown = left_out - set(SUITES)
    if unknown:
        names = ", ".join(sorted(getattr(s, "__name__", repr(s)) for s in unknown))
        raise ValueError(f"not conformance suites: {names}; known: {_names(SUITES)}")
    # The caller's module, as namedtuple does, so the classes report where they were made.
    module = sys._getframe(1).f_globals.get("__name__", __name__)
    classes: dict[str, type[Suite]] = {}
    for suite in SUITES:
        if suite in left_out:
            continue
        name = f"Test{prefix}{suite.__name__.removesuffix('Suite')}"
        classes[name] = type(name, (suite,), {"__module__": module, "__qualname__": name})
    return classes


def _names(suites: Iterable[type[Suite]]) -> str:
    return ", ".join(s.__name__ for s in suites)
