"""The composite-store conformance suite: hold any backend to the documented behaviour and schema.

A backend author opts in to the pytest plugin, writes one fixture and takes one test class per
suite::

    # conftest.py
    pytest_plugins = ["composite_store_conformance.plugin"]

    # test_conformance.py
    import pytest
    from composite_store import open_store
    from composite_store_conformance import suite_classes

    @pytest.fixture(scope="session")
    def cs_store_factory(tmp_path_factory):
        return open_store(f"sqlite:///{tmp_path_factory.mktemp('db') / 'x.db'}")

    globals().update(suite_classes("Mine"))  # TestMineMemory, TestMineWorkflows, ...

The plugin runs the suites' async tests on one event loop per session.
"""

from composite_store_conformance.base import Suite
from composite_store_conformance.classes import SUITES, suite_classes
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

__all__ = [
    "SUITES",
    "CapabilitiesSuite",
    "DatasetsIsolationSuite",
    "DatasetsSuite",
    "ExperimentsIsolationSuite",
    "ExperimentsSuite",
    "IsolationSuite",
    "MemoryEdgesSuite",
    "MemorySuite",
    "ObservabilityIsolationSuite",
    "ObservabilitySuite",
    "PartialUpdatesSuite",
    "RouterSuite",
    "SchemaSuite",
    "ScoresIsolationSuite",
    "ScoresSuite",
    "Suite",
    "TransferSuite",
    "WorkflowDefinitionsIsolationSuite",
    "WorkflowDefinitionsSuite",
    "WorkflowsSuite",
    "WorkingMemorySuite",
    "suite_classes",
]
