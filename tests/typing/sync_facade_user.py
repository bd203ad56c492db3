"""A user's script over the blocking facade, type-checked by CI (`mypy tests/typing`).

Every `assert_type` below is a claim about what the facade returns; mypy --strict fails the
build when one is wrong or a result is `Any`. tests/test_sync_facade.py also runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, assert_type

from composite_store import Message, Page, Resource, Thread, WorkflowRun
from composite_store.sync import open_store


def main(directory: Path) -> Thread | None:
    with open_store(f"sqlite:///{directory / 'typed.db'}") as store:
        saved = store.memory.save_thread(thread={"id": "t1", "resource_id": "u1", "title": "Hi"})
        assert_type(saved, Thread)
        found = store.memory.get_thread_by_id(thread_id="t1")
        assert_type(found, Thread | None)
        messages = store.memory.save_messages(
            messages=[
                {
                    "id": "m1",
                    "thread_id": "t1",
                    "resource_id": "u1",
                    "role": "user",
                    "content": {"format": 2, "parts": [{"type": "text", "text": "hi"}]},
                }
            ]
        )
        assert_type(messages, list[Message])
        page = store.memory.list_messages(thread_id="t1", per_page=20)
        assert_type(page, Page[Message])
        resource = store.memory.update_resource(resource_id="u1", working_memory="# User")
        assert_type(resource, Resource)
        store.workflows.persist_workflow_snapshot(workflow_name="wf", run_id="r1", snapshot={})
        snapshot = store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="r1")
        assert_type(snapshot, dict[str, Any] | None)
        runs = store.workflows.list_workflow_runs()
        assert_type(runs, Page[WorkflowRun])
        assert_type(store.describe(), dict[str, str])
        return found
