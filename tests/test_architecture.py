"""The import rules of docs/architecture.md, read from the source with ``ast``.

Every module of the core (``composite_store``), the conformance package and the adapters is
parsed; every import counts, at module level, inside functions and under ``TYPE_CHECKING``.
A module belongs to a layer (its unit); a unit imports only itself and the units ``ALLOWED``
lists for it. Cycles: no two modules import each other, directly or through others, and no
two units do; imports under ``TYPE_CHECKING`` count too (a helper module states what it needs
of the class it serves as a ``Protocol`` instead). The core imports only the standard library
and its own dependencies; a driver only under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES: dict[str, Path] = {
    "composite_store": ROOT / "composite_store",
    "composite_store_conformance": ROOT / "conformance" / "composite_store_conformance",
    **{p.name: p for p in sorted((ROOT / "adapters").glob("*/composite_store_*")) if p.is_dir()},
}

#: The units below the contracts, named once for the sets that follow.
_BASE = {"errors", "schema", "records", "types", "rules"}
_CONTRACT = _BASE | {"domains", "store"}
#: What each unit may import (besides itself): docs/architecture.md, "Import rules".
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "urls": {"errors"},
    "schema": {"errors"},
    "records": {"errors", "schema"},
    "types": {"errors", "schema", "records"},
    "rules": {"errors", "schema", "records", "types"},
    "domains": _BASE,
    "store": {"errors", "schema", "domains"},
    "inmemory": _CONTRACT | {"urls"},
    "sql": _CONTRACT | {"urls"},
    "registry": {"errors", "urls", "store"},
    "config": {"errors", "schema", "urls"},
    "composite": {"errors", "schema", "urls", "domains", "store", "registry", "config"},
    "sync": {"errors", "store", "registry", "composite", "sync_types"},
    "sync_types": _CONTRACT,
    "integrations": {"errors", "records", "store", "sync"},
    "memory": _BASE | {"domains"},
    "api": _CONTRACT | {"urls", "registry", "config", "composite"},
    "admin": _CONTRACT | {"urls", "registry"},
    "schema_doc": {"errors", "schema", "sql"},
    "cli": _CONTRACT | {"api", "urls", "registry", "config", "composite", "admin"},
    "conformance": _CONTRACT
    | {"api", "urls", "registry", "config", "composite", "sync", "memory", "admin", "inmemory"},
    "adapter": _CONTRACT | {"urls", "sql", "admin"},
}
CORE_UNITS = set(ALLOWED) - {"conformance", "adapter"}
#: Third-party packages the core may import at run time (its dependencies, and the ``cli``
#: extra's progress bars); anything else, a driver above all, only under TYPE_CHECKING.
#: (greenlet is SQLAlchemy's: its asyncio bridge runs on it.)
CORE_THIRD_PARTY = {"pydantic", "pydantic_core", "sqlalchemy", "greenlet", "jsonschema", "orjson"}
CLI_THIRD_PARTY = {"rich"}
#: What each bridge of ``composite_store.integrations`` bridges from (its extra installs it).
INTEGRATIONS_THIRD_PARTY = {"opentelemetry"}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (a package's __init__ when a name of it is imported)
    line: int
    type_checking: bool


def unit_of(module: str) -> str:
    """The layer unit a module belongs to."""
    parts = module.split(".")
    if parts[0] == "composite_store_conformance":
        return "conformance"
    if parts[0] != "composite_store":
        return "adapter"
    if len(parts) == 1:
        return "api"
    if module == "composite_store.schema.doc":
        return "schema_doc"  # the generator of docs/schema.md: a tool over sql
    return parts[1]


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                inside.update(id(n) for n in ast.walk(child))
    return inside


def imports_of(module: str, path: Path, source: str | None = None) -> Iterator[Import]:
    """Every import in ``module`` (from ``path``, or ``source`` when given), resolved."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    guarded = _type_checking_nodes(tree)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            # ``from pkg import sub`` imports the submodule, ``from pkg import name`` the package.
            names = [
                f"{origin}.{a.name}" if f"{origin}.{a.name}" in MODULES else origin
                for a in node.names
            ]
        else:
            continue
        for name in dict.fromkeys(names):
            yield Import(module, name, node.lineno, id(node) in guarded)


ALL_IMPORTS = [imp for module, path in MODULES.items() for imp in imports_of(module, path)]


def _internal(target: str) -> str | None:
    """The module of ours ``target`` is (or lies in), None for a third-party or stdlib one."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def layer_violations(imports: list[Import]) -> list[str]:
    problems = []
    for imp in imports:
        target = _internal(imp.target)
        here = unit_of(imp.source)
        if target is None:
            top = imp.target.split(".")[0]
            allowed = CORE_THIRD_PARTY | (CLI_THIRD_PARTY if here == "cli" else set())
            if here == "integrations":
                allowed = allowed | INTEGRATIONS_THIRD_PARTY
            if (
                here in CORE_UNITS
                and not imp.type_checking
                and top not in sys.stdlib_module_names
                and top not in allowed
            ):
                problems.append(
                    f"{imp.source}:{imp.line} imports {imp.target} (not a core dependency)"
                )
            continue
        there = unit_of(target)
        if here == there == "adapter" and target.split(".")[0] != imp.source.split(".")[0]:
            problems.append(f"{imp.source}:{imp.line} imports another adapter: {target}")
        elif there != here and there not in ALLOWED[here]:
            problems.append(f"{imp.source}:{imp.line} ({here}) may not import {target} ({there})")
    return problems


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def module_cycles(imports: list[Import]) -> list[list[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in imports:
        target = _internal(imp.target)
        if target is not None and target != imp.source:
            edges[imp.source].add(target)
    return _cycles(edges)


def unit_cycles(imports: list[Import]) -> list[list[str]]:
    edges: dict[str, set[str]] = {u: set() for u in ALLOWED}
    for imp in imports:
        target = _internal(imp.target)
        if target is not None and unit_of(target) != unit_of(imp.source):
            edges[unit_of(imp.source)].add(unit_of(target))
    return _cycles(edges)


def test_every_module_is_read() -> None:
    assert {"composite_store.domains.base", "composite_store_redis.domain"} <= set(MODULES)
    assert {unit_of(m) for m in MODULES} <= set(ALLOWED)


def test_imports_follow_the_layers() -> None:
    problems = layer_violations(ALL_IMPORTS)
    assert not problems, "imports against docs/architecture.md:\n  " + "\n  ".join(problems)


def test_no_module_import_cycle() -> None:
    cycles = module_cycles(ALL_IMPORTS)
    assert not cycles, "modules importing each other:\n  " + "\n  ".join(
        " <-> ".join(c) for c in cycles
    )


def test_no_unit_cycle() -> None:
    assert not _cycles(ALLOWED), "the allowed imports of ALLOWED form a cycle"
    assert not unit_cycles(ALL_IMPORTS)


def test_the_rules_are_documented() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [unit for unit in ALLOWED if f"`{unit}`" not in doc]
    assert not missing, f"docs/architecture.md does not describe the units {missing}"


# -- the checks can fail -----------------------------------------------------------------------


def _with(module: str, code: str) -> list[Import]:
    """Every import, with ``code`` added to ``module``."""
    extra = list(imports_of(module, MODULES[module], MODULES[module].read_text() + code))
    return [i for i in ALL_IMPORTS if i.source != module] + extra


@pytest.mark.parametrize(
    ("module", "code", "expected"),
    [
        pytest.param(
            "composite_store.domains.base",
            "\ndef f():\n    from composite_store.admin import copy\n",
            "(domains) may not import composite_store.admin.copy (admin)",
            id="contract-imports-admin-in-a-function",
        ),
        pytest.param(
            "composite_store.schema.documented",
            "\nif TYPE_CHECKING:\n    from composite_store.domains.base import Domain\n",
            "(schema) may not import composite_store.domains.base (domains)",
            id="schema-names-a-domain-under-type-checking",
        ),
        pytest.param(
            "composite_store.registry",
            "\nimport composite_store_postgres\n",
            "(registry) may not import composite_store_postgres (adapter)",
            id="core-imports-an-adapter",
        ),
        pytest.param(
            "composite_store.sql.database",
            "\nimport psycopg\n",
            "imports psycopg (not a core dependency)",
            id="core-imports-a-driver",
        ),
        pytest.param(
            "composite_store_redis.keys",
            "\nfrom composite_store_mongodb import indexes\n",
            "imports another adapter",
            id="adapter-imports-another",
        ),
    ],
)
def test_a_forbidden_import_fails(module: str, code: str, expected: str) -> None:
    assert any(expected in p for p in layer_violations(_with(module, code)))


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("\nfrom composite_store.records import tables\n", id="module-level"),
        pytest.param(
            "\ndef f():\n    from composite_store.records import tables\n", id="in-a-function"
        ),
        pytest.param(
            "\nif TYPE_CHECKING:\n    from composite_store.records import tables\n",
            id="under-type-checking",
        ),
    ],
)
def test_a_cycle_fails(code: str) -> None:
    imports = _with("composite_store.records.base", code)
    assert any("composite_store.records.base" in c for c in module_cycles(imports))
