"""Write ``composite_store/sync_types.py``: the blocking twin of every domain contract.

``composite_store.sync`` runs the async API on a private loop thread and hands back plain
values. Python's type system cannot turn ``async def f() -> T`` into ``def f() -> T`` by
itself, so the typed sync protocols are generated from the contract classes' own source (their
signatures and annotations, verbatim) and a test keeps the file in step:

    uv run python tools/gen_sync_types.py > composite_store/sync_types.py
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "composite_store"

#: (contract module, contract class, sync protocol name), in the order of DESIGN.md's domains.
CONTRACTS = (
    ("domains/memory.py", "MemoryDomain", "SyncMemory"),
    ("domains/workflows.py", "WorkflowsDomain", "SyncWorkflows"),
    ("domains/workflow_definitions.py", "WorkflowDefinitionsDomain", "SyncWorkflowDefinitions"),
    ("domains/scores.py", "ScoresDomain", "SyncScores"),
    ("domains/observability.py", "ObservabilityDomain", "SyncObservability"),
    ("domains/datasets.py", "DatasetsDomain", "SyncDatasets"),
    ("domains/experiments.py", "ExperimentsDomain", "SyncExperiments"),
)
BASE = ("domains/base.py", "Domain")
#: Lifecycle methods of the base that the facade's context manager owns.
SKIPPED = {"init", "close", "attach"}


def _sources(tree: ast.Module, module: str) -> dict[str, str]:
    """Where each name a module can use comes from: its imports (TYPE_CHECKING blocks
    included) and its own top-level classes and functions."""
    found: dict[str, str] = {}
    for node in tree.body:
        nodes: list[ast.stmt] = [node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            nodes = list(node.body)
        for stmt in nodes:
            if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.module != "__future__":
                for alias in stmt.names:
                    found[alias.asname or alias.name] = stmt.module
            elif isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                found[stmt.name] = module
    return found


def _names(code: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)}


def _module_name(relative: str) -> str:
    return "composite_store." + relative.removesuffix(".py").replace("/", ".")


def _members(tree: ast.Module, class_name: str) -> list[str]:
    """Protocol members for the public methods and properties of ``class_name``."""
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    out: list[str] = []
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if node.name.startswith("_") or node.name in SKIPPED:
            continue
        decorators = [ast.unparse(d) for d in node.decorator_list]
        if any(d not in ("property",) for d in decorators):
            continue
        arguments = ast.parse(f"def f({ast.unparse(node.args)}): pass").body[0]
        assert isinstance(arguments, ast.FunctionDef)
        # A protocol states that a parameter has a default, not which one.
        spec = arguments.args
        spec.defaults = [ast.Constant(...) for _ in spec.defaults]
        spec.kw_defaults = [None if d is None else ast.Constant(...) for d in spec.kw_defaults]
        args = ast.unparse(spec)
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        doc = ast.get_docstring(node)
        summary = doc.strip().splitlines()[0] if doc else ""
        lines = ["    @property"] if "property" in decorators else []
        lines.append(f"    def {node.name}({args}){returns}:")
        if summary:
            lines.append(f'        """{summary}"""')
        lines.append("        ...")
        out.append("\n".join(lines))
    return out


def render() -> str:
    wanted: dict[str, str] = {}
    classes: list[str] = []
    base_path, base_class = BASE
    base_tree = ast.parse((PACKAGE / base_path).read_text(encoding="utf-8"))
    base_members = _members(base_tree, base_class)
    base_sources = _sources(base_tree, _module_name(base_path))
    for relative, class_name, protocol in CONTRACTS:
        tree = ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))
        members = _members(tree, class_name)
        sources = {**base_sources, **_sources(tree, _module_name(relative))}
        code = "class _X:\n" + "\n\n".join([*members, *base_members])
        for name in sorted(_names(code) - {"self", "_X"}):
            if name in sources:
                wanted[name] = sources[name]
        body = "\n\n".join([*members, *base_members])
        classes.append(
            f"class {protocol}(Protocol):\n"
            f'    """Blocking view of :class:`{_module_name(relative)}.{class_name}`."""\n\n'
            f"{body}\n"
        )
    by_module: dict[str, list[str]] = {"typing": ["Protocol"]}
    for name, module in sorted(wanted.items()):
        by_module.setdefault(module, []).append(name)
    groups = (
        [m for m in sorted(by_module) if not m.startswith("composite_store")],
        [m for m in sorted(by_module) if m.startswith("composite_store")],
    )
    imports = "\n\n".join(
        "\n".join(f"from {m} import {', '.join(sorted(set(by_module[m])))}" for m in group)
        for group in groups
    )
    header = (
        '"""Typed blocking views of the domain contracts, for ``composite_store.sync``.\n\n'
        "Generated by ``uv run python tools/gen_sync_types.py > composite_store/sync_types.py``\n"
        "from the contract classes in ``composite_store/domains/``. Do not edit by hand: a test\n"
        'compares the two.\n"""\n\n'
        "# ruff: noqa: E501, I001\n\n"
        "from __future__ import annotations\n\n"
    )
    names = ", ".join(f'"{p}"' for _, _, p in CONTRACTS)
    return header + imports + f"\n\n__all__ = [{names}]\n\n\n" + "\n\n".join(classes)


if __name__ == "__main__":
    sys.stdout.write(render())
