"""The report of ``composite-store check``: a pytest plugin that files each conformance test
under its domain, and the table and JSON made from what it collected.

Imports nothing from pytest at run time: the core does not depend on it, the check command
does (through composite-store-conformance).
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from composite_store.errors import redact
from composite_store.schema import DOMAINS
from composite_store_conformance.base import is_capability_skip

if TYPE_CHECKING:
    import pytest

__all__ = ["OUTCOMES", "Collector", "Report", "Result"]

#: The outcome columns of the report, in order.
OUTCOMES = ("passed", "failed", "skipped", "xfailed")


@dataclass
class Result:
    """One conformance test: its id (``Class::test[params]``), group, outcome and message."""

    id: str
    group: str
    outcome: str
    message: str | None = None


@dataclass
class Report:
    """Every result of one check run, and how to show them."""

    results: list[Result]
    url: str = ""
    namespace: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Nothing failed, and something passed."""
        totals = self.totals()
        return totals["failed"] == 0 and totals["passed"] > 0

    def groups(self) -> dict[str, collections.Counter[str]]:
        """Outcome counts per group: domains in their documented order, then the rest."""
        found: dict[str, collections.Counter[str]] = {}
        for result in self.results:
            found.setdefault(result.group, collections.Counter())[result.outcome] += 1
        order = [d for d in DOMAINS if d in found] + sorted(set(found) - set(DOMAINS))
        return {group: found[group] for group in order}

    def totals(self) -> collections.Counter[str]:
        return collections.Counter(r.outcome for r in self.results)

    def capability_skips(self) -> int:
        """How many tests were skipped because of a capability flag (on or off)."""
        return sum(
            1 for r in self.results if r.outcome == "skipped" and is_capability_skip(r.message)
        )

    def render(self) -> str:
        """The report as text: a table per group, the verdict, failures and skip reasons."""
        lines = [f"composite-store check {self.url}"]
        if self.namespace:
            lines.append(f"namespace: {self.namespace} (throwaway, dropped after the run)")
        lines.append("")
        width = max([len("total"), *(len(g) for g in self.groups())]) + 2
        lines.append("domain".ljust(width) + "".join(o.rjust(9) for o in OUTCOMES))
        for group, counts in [*self.groups().items(), ("total", self.totals())]:
            lines.append(group.ljust(width) + "".join(str(counts[o]).rjust(9) for o in OUTCOMES))
        totals = self.totals()
        summary = ", ".join(f"{totals[o]} {o}" for o in OUTCOMES if totals[o])
        lines += ["", f"{'OK' if self.ok else 'FAILED'}: {summary or 'no tests'} "
                      f"in {self.seconds:.1f}s"]
        if totals["skipped"]:
            lines.append(
                f"skipped by capability: {self.capability_skips()} of {totals['skipped']}"
            )
        failed = [r for r in self.results if r.outcome == "failed"]
        if failed:
            lines += ["", "failures:"]
            lines += [f"  [{r.group}] {r.id}: {r.message}" for r in failed]
        reasons = collections.Counter(
            r.message for r in self.results if r.outcome == "skipped" and r.message
        )
        if reasons:
            lines += ["", "skipped:"]
            lines += [f"  {n:>4} x {reason}" for reason, n in reasons.most_common()]
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (``--json``)."""
        return {
            "url": self.url,
            "namespace": self.namespace,
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
            "totals": {o: self.totals()[o] for o in OUTCOMES},
            "skipped_by_capability": self.capability_skips(),
            "domains": {g: {o: c[o] for o in OUTCOMES} for g, c in self.groups().items()},
            "tests": [r.__dict__ for r in self.results],
        }


@dataclass
class Collector:
    """A pytest plugin: deselects tests of domains not chosen, records every outcome."""

    domains: Sequence[str]
    _groups: dict[str, str] = field(default_factory=dict)
    _results: dict[str, Result] = field(default_factory=dict)

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        keep, drop = [], []
        for item in items:
            group = _group(item)
            if group in DOMAINS and group not in self.domains:
                drop.append(item)
            else:
                self._groups[item.nodeid] = group
                keep.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and report.passed:
            return  # setup and teardown that went fine say nothing
        if report.when == "teardown" and report.skipped:
            return
        outcome, message = _outcome(report)
        previous = self._results.get(report.nodeid)
        if previous is not None and previous.outcome == "failed":
            return
        test_id = report.nodeid.split("::", 1)[-1]
        group = self._groups.get(report.nodeid, "other")
        self._results[report.nodeid] = Result(test_id, group, outcome, message)

    def report(self) -> Report:
        return Report(list(self._results.values()))


def _outcome(report: pytest.TestReport) -> tuple[str, str | None]:
    if hasattr(report, "wasxfail"):
        return ("xfailed", str(report.wasxfail)) if report.skipped else ("failed", "XPASS")
    if report.skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        return "skipped", reason.removeprefix("Skipped: ")
    if report.failed:
        return "failed", _first_error(report.longreprtext)
    return "passed", None


def _first_error(text: str) -> str:
    """The ``E`` lines of a failure (the assertion message), in one line."""
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    if errors and errors[0].startswith("AssertionError: "):
        # A message was given: pytest's introspection of the expression after it repeats it.
        cut = next((i for i, line in enumerate(errors) if line.startswith("assert ")), None)
        errors = errors[:cut]
    lines = errors or [line.strip() for line in text.splitlines() if line.strip()][-1:]
    message = " / ".join(line for line in lines[:4] if line)
    return redact(message[:500])


def _group(item: pytest.Item) -> str:
    """A test's report row: its suite's domain, the domain of its table or sample parameter,
    or else its suite's name (``capabilities``, ``router``)."""
    cls = getattr(item, "cls", None)
    domains = getattr(cls, "domains", ())
    if domains:
        return str(domains[0])
    own = getattr(getattr(item, "function", None), "cs_domain", None)
    if own in DOMAINS:
        return str(own)
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        spec = callspec.params.get("spec")
        if hasattr(spec, "domain"):
            return str(spec.domain)
        if callspec.params.get("domain_name") in DOMAINS:
            return str(callspec.params["domain_name"])
    for base in getattr(cls, "__mro__", ()):
        if base.__name__.endswith("Suite") and base.__name__ != "Suite":
            return str(base.__name__.removesuffix("Suite").lower())
    return "other"
