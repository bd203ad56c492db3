"""Domain contracts: one abstract base class per storage domain."""

from composite_store.domains.base import Capabilities, Domain
from composite_store.domains.datasets import DatasetsDomain
from composite_store.domains.experiments import ExperimentsDomain
from composite_store.domains.memory import MemoryDomain
from composite_store.domains.observability import ObservabilityDomain
from composite_store.domains.scores import ScoresDomain
from composite_store.domains.workflow_definitions import WorkflowDefinitionsDomain
from composite_store.domains.workflows import WorkflowsDomain

__all__ = [
    "Capabilities",
    "DatasetsDomain",
    "Domain",
    "ExperimentsDomain",
    "MemoryDomain",
    "ObservabilityDomain",
    "ScoresDomain",
    "WorkflowDefinitionsDomain",
    "WorkflowsDomain",
]
