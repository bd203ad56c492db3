"""Units of ``Capabilities.reasons`` and of how the check report counts capability skips."""

import pytest
from composite_store_conformance.base import CAPABILITY_OFF, capability_skip_reason
from composite_store_conformance.report import Report, Result

from composite_store.domains.base import Capabilities
from composite_store.inmemory import InMemoryStore


def test_reasons_are_not_a_flag_and_name_known_flags_only() -> None:
    caps = Capabilities(sort_threads=True, reasons={"metadata_filters": "no index"})
    assert caps.enabled() == ("sort_threads",)
    assert "reasons" not in Capabilities.names() and len(Capabilities.names()) == 8
    assert caps.reason("metadata_filters") == "no index"
    assert caps.reason("sort_threads") is None and caps.reason("transactions") is None
    assert caps == Capabilities(sort_threads=True) and hash(caps)
    with pytest.raises(ValueError, match=r"unknown capabilities \['sort_thread'\]"):
        Capabilities(reasons={"sort_thread": "typo"})


def test_skip_reasons_carry_the_backends_reason() -> None:
    domain = InMemoryStore().memory

    class Off(type(domain)):  # type: ignore[misc]
        capabilities = Capabilities(reasons={"compare_and_set": "no CAS here"})

    reason = capability_skip_reason(Off(), "compare_and_set")
    assert reason.startswith(CAPABILITY_OFF) and reason.endswith(": no CAS here")
    assert "claims sort_threads" in capability_skip_reason(domain, "sort_threads", needed_on=False)


def test_the_report_counts_capability_skips_apart() -> None:
    report = Report([
        Result("A::a", "memory", "skipped", f"{CAPABILITY_OFF}x does not claim y"),
        Result("A::b", "memory", "skipped", "x does not offer the datasets domain"),
        Result("A::c", "memory", "passed"),
    ])
    assert report.capability_skips() == 1
    assert report.as_json()["skipped_by_capability"] == 1
    assert "skipped by capability: 1 of 2" in report.render()
