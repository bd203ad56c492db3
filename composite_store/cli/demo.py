"""``composite-store demo``: store a short agent session, read it back, show where it went.

The session is a conversation (a thread and three messages), the working memory of the user
it belongs to, and the snapshot of a workflow run. Each record goes to the domain that owns
it, and so to whichever backend the routing gives that domain. Running the demo twice is
harmless: every write is an upsert of the same ids.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

import composite_store
from composite_store import config
from composite_store.cli.main import Subparsers
from composite_store.composite import CompositeStore
from composite_store.errors import CompositeStoreError, redact
from composite_store.records.base import now_utc
from composite_store.records.memory import Message, Thread
from composite_store.schema import DOMAINS
from composite_store.urls import scheme_of

__all__ = ["DEFAULT_URL", "add_parser", "run"]

#: The embedded default: a SQLite file in the current directory.
DEFAULT_URL = "sqlite:///composite-store-demo.db"

RESOURCE_ID = "demo-user"
THREAD_ID = "demo-thread"
WORKFLOW = "trip-planner"
RUN_ID = "demo-run-1"
CONVERSATION = (
    ("user", "Can you help me plan three days in Lisbon?"),
    ("assistant", "Gladly: Alfama and the castle, then Belem, then a day trip to Sintra."),
    ("user", "Perfect. Remember that I travel with a bike."),
)
WORKING_MEMORY = "# User\n- Name: Ada\n- Trip: Lisbon, 3 days\n- Travels with: a bike\n"
SNAPSHOT: dict[str, Any] = {
    "runId": RUN_ID,
    "status": "success",
    "value": {},
    "context": {
        "input": {"city": "Lisbon", "days": 3},
        "pick-sights": {"status": "success", "output": {"sights": ["Alfama", "Belem"]}},
        "book-bikes": {"status": "success", "output": {"bikes": 1}},
    },
    "activePaths": [],
    "suspendedPaths": {},
    "result": {"itinerary": ["Alfama", "Belem", "Sintra"]},
}


def add_parser(subparsers: Subparsers) -> None:
    """Register ``composite-store demo``."""
    parser = subparsers.add_parser(
        "demo",
        help="store a short agent session, read it back and show which backend holds what",
        description=(
            "Store a conversation (thread and messages), a user's working memory and a "
            "workflow snapshot, read them back, and print which backend serves each domain. "
            f"Every domain goes to the demo's own database, {DEFAULT_URL} (a file in the "
            "current directory), unless these options route it elsewhere; the environment "
            "(COMPOSITE_STORE_URL / COMPOSITE_STORE_<DOMAIN>_URL) and composite-store.toml, "
            "which may name an application's real databases, are followed only with "
            "--use-config."
        ),
    )
    parser.add_argument(
        "--use-config",
        action="store_true",
        help=(
            "also follow the environment and composite-store.toml (CompositeStore's "
            "precedence: these options, then the environment, then the file)"
        ),
    )
    parser.add_argument(
        "--url", metavar="URL", help=f"the default store for every domain (default: {DEFAULT_URL})"
    )
    for domain in DOMAINS:
        parser.add_argument(
            f"--{domain.replace('_', '-')}-url",
            dest=f"{domain}_url",
            metavar="URL",
            help=f"route the {domain} domain to its own store",
        )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo with parsed arguments; return the exit status."""
    domains: dict[str, str] = {}
    for domain in DOMAINS:
        value = getattr(args, f"{domain}_url", None)
        if value:
            domains[domain] = value
    default = args.url
    if args.use_config:
        if default is None and config.merge(config.from_env(), config.discover()).default is None:
            default = DEFAULT_URL
        store = CompositeStore(default, domains)
    else:
        # A user's composite-store.toml or COMPOSITE_STORE_URL may route to production: the
        # demo's sample records go there only when asked (--use-config).
        default = default or DEFAULT_URL
        store = CompositeStore(default, domains, use_environment=False, use_config_file=False)
    return asyncio.run(_demo(store, default))


async def _demo(store: CompositeStore, default: str | None) -> int:
    started = time.perf_counter()
    print(f"composite-store {composite_store.__version__} demo")
    print()
    print("Routing (CompositeStore.describe(), credentials redacted)")
    _print_routing(store.describe())
    print()
    async with store:
        stored = await _write_and_read(store)
    print("Stored and read back")
    _print_table(stored)
    print()
    elapsed = time.perf_counter() - started
    print(f"Every record read back equals what was written ({elapsed:.2f} s).")
    path = _sqlite_file(default)
    if path is not None and not {"memory", "workflows"} <= set(store.routing.domains):
        print(f"Data file: {path} (delete it to start over).")
    return 0


async def _write_and_read(store: CompositeStore) -> list[tuple[str, ...]]:
    """Write the session, read every record back, and describe what was stored."""
    memory, workflows = store.memory, store.workflows
    base = now_utc()
    thread = Thread(
        id=THREAD_ID,
        resource_id=RESOURCE_ID,
        title="Planning a trip to Lisbon",
        metadata={"source": "composite-store demo"},
        created_at=base,
        updated_at=base,
    )
    messages = [
        Message(
            id=f"{THREAD_ID}-{n}",
            thread_id=THREAD_ID,
            resource_id=RESOURCE_ID,
            role=role,
            content={"format": 2, "parts": [{"type": "text", "text": text}]},
            created_at=base + timedelta(seconds=n),
        )
        for n, (role, text) in enumerate(CONVERSATION, start=1)
    ]
    await memory.save_thread(thread=thread)
    await memory.save_messages(messages=messages)
    await memory.update_resource(resource_id=RESOURCE_ID, working_memory=WORKING_MEMORY)
    await workflows.persist_workflow_snapshot(
        workflow_name=WORKFLOW, run_id=RUN_ID, snapshot=SNAPSHOT, resource_id=RESOURCE_ID
    )

    got_thread = await memory.get_thread_by_id(thread_id=THREAD_ID)
    _same("thread title", got_thread.title if got_thread else None, thread.title)
    page = await memory.list_messages(thread_id=THREAD_ID, per_page=False)
    _same(
        "messages",
        [(m.role, _text(m)) for m in page.items],
        [(role, text) for role, text in CONVERSATION],
    )
    resource = await memory.get_resource_by_id(resource_id=RESOURCE_ID)
    _same("working memory", resource.working_memory if resource else None, WORKING_MEMORY)
    snapshot = await workflows.load_workflow_snapshot(workflow_name=WORKFLOW, run_id=RUN_ID)
    _same("workflow snapshot", snapshot, SNAPSHOT)

    rows: list[tuple[str, ...]] = [
        ("memory", f"thread {THREAD_ID}", f"{thread.title!r}, resource {RESOURCE_ID}"),
        ("memory", f"{len(page.items)} messages", "oldest first:"),
    ]
    rows += [("", f"  {m.role}", _text(m)) for m in page.items]
    lines = len(WORKING_MEMORY.splitlines())
    size = f"{lines} lines, {len(WORKING_MEMORY)} characters"
    rows.append(("memory", f"working memory of {RESOURCE_ID}", size))
    steps = [k for k in SNAPSHOT["context"] if k != "input"]
    rows.append(
        (
            "workflows",
            f"snapshot {WORKFLOW}/{RUN_ID}",
            f"status {SNAPSHOT['status']}, steps {', '.join(steps)}",
        )
    )
    backends = {"memory": memory.backend, "workflows": workflows.backend}
    return [(row[0], backends.get(row[0], ""), *row[1:]) for row in rows]


def _text(message: Message) -> str:
    parts = message.content.parts
    return " ".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


def _same(what: str, got: object, expected: object) -> None:
    if got != expected:
        raise CompositeStoreError(
            f"demo: the {what} read back differs from what was written: "
            f"got {got!r}, expected {expected!r}"
        )


def _sqlite_file(url: str | None) -> Path | None:
    """The absolute path of a ``sqlite:///`` file URL, else None."""
    if url is None or scheme_of(url) != "sqlite":
        return None
    database = make_url(url).database
    if not database or database == ":memory:":
        return None
    return Path(database).resolve()


def _print_routing(table: dict[str, str]) -> None:
    """Print the routing table; the reasons of unrouted domains become numbered notes."""
    notes: list[str] = []
    rows = []
    for domain, where in table.items():
        if where.startswith(_UNROUTED) and where.endswith(")"):
            reason = where[len(_UNROUTED) : -1]
            if reason not in notes:
                notes.append(reason)
            where = f"not configured ({notes.index(reason) + 1})"
        rows.append((domain, where))
    _print_table(rows)
    for number, reason in enumerate(notes, start=1):
        print(redact(f"  ({number}) {reason}"))


#: How ``CompositeStore.describe()`` introduces a domain that nothing serves.
_UNROUTED = "(not configured: "


def _print_table(rows: Sequence[tuple[str, ...]], indent: str = "  ") -> None:
    """Print rows as left-aligned columns (the last column is not padded)."""
    if not rows:
        return
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print(redact(indent + "  ".join([*cells, row[-1]]).rstrip()))
