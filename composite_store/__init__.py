"""composite-store: persistent state for AI agents, each storage domain on its own backend.

    from composite_store import CompositeStore, open_store, Thread
    store = CompositeStore(default="sqlite:///agent.db",
                           domains={"observability": "mongodb://127.0.0.1:27017/agent"})
    async with store:
        await store.memory.save_thread(thread=Thread(id="t1", resource_id="u1", title="Hi"))
"""

from composite_store.composite import CompositeStore, DomainSource
from composite_store.domains.base import Capabilities, Domain
from composite_store.domains.datasets import DatasetsDomain
from composite_store.domains.experiments import ExperimentsDomain
from composite_store.domains.memory import MemoryDomain
from composite_store.domains.observability import ObservabilityDomain
from composite_store.domains.observability_filters import OtelSpanFilter, TraceFilter
from composite_store.domains.scores import ScoresDomain
from composite_store.domains.workflow_definitions import WorkflowDefinitionsDomain
from composite_store.domains.workflows import WorkflowsDomain
from composite_store.errors import (
    AdapterNotInstalledError,
    BackendUnavailableError,
    CompositeStoreError,
    ConfigurationError,
    ConflictError,
    DomainNotConfiguredError,
    NotFoundError,
    SchemaMismatchError,
    UnsupportedOperationError,
    ValidationError,
)
from composite_store.records.datasets import Dataset, DatasetItem, DatasetItemInput, DatasetVersion
from composite_store.records.experiments import Experiment, ExperimentResult, ReviewSummary
from composite_store.records.memory import (
    CloneResult,
    Message,
    MessageContent,
    MessageUpdate,
    Resource,
    Thread,
)
from composite_store.records.observability import (
    OtelSpan,
    Span,
    SpanUpdate,
    Trace,
    TraceStatus,
)
from composite_store.records.scores import EvalRecord, Score
from composite_store.records.workflow_definitions import (
    WorkflowDefinition,
    WorkflowDefinitionVersion,
)
from composite_store.records.workflows import WorkflowRun
from composite_store.registry import open_store, register_adapter
from composite_store.schema import DOMAINS
from composite_store.store import Store
from composite_store.types import DateRange, Include, OrderBy, Page, Pagination

__version__ = "0.1.0"

__all__ = [
    "DOMAINS",
    "AdapterNotInstalledError",
    "BackendUnavailableError",
    "Capabilities",
    "CloneResult",
    "CompositeStore",
    "CompositeStoreError",
    "ConfigurationError",
    "ConflictError",
    "Dataset",
    "DatasetItem",
    "DatasetItemInput",
    "DatasetVersion",
    "DatasetsDomain",
    "DateRange",
    "Domain",
    "DomainNotConfiguredError",
    "DomainSource",
    "EvalRecord",
    "Experiment",
    "ExperimentResult",
    "ExperimentsDomain",
    "Include",
    "MemoryDomain",
    "Message",
    "MessageContent",
    "MessageUpdate",
    "NotFoundError",
    "ObservabilityDomain",
    "OrderBy",
    "OtelSpan",
    "OtelSpanFilter",
    "Page",
    "Pagination",
    "Resource",
    "ReviewSummary",
    "SchemaMismatchError",
    "Score",
    "ScoresDomain",
    "Span",
    "SpanUpdate",
    "Store",
    "Thread",
    "Trace",
    "TraceFilter",
    "TraceStatus",
    "UnsupportedOperationError",
    "ValidationError",
    "WorkflowDefinition",
    "WorkflowDefinitionVersion",
    "WorkflowDefinitionsDomain",
    "WorkflowRun",
    "WorkflowsDomain",
    "__version__",
    "open_store",
    "register_adapter",
]
