"""Working memory for agents, on top of any store with the memory domain.

    from composite_store import open_store
    from composite_store.memory import Memory, WorkingMemoryConfig

    store = open_store("sqlite:///agent.db")
    memory = Memory(store, working_memory=WorkingMemoryConfig(scope="resource"))
    async with store:
        await memory.create_thread(thread_id="t1", resource_id="u1")
        system = await memory.system_message(thread_id="t1", resource_id="u1")
        tools = memory.list_tools()          # offer these to the model
        # for each tool call the model makes:
        result = await memory.apply_tool_call(name, arguments, thread_id="t1", resource_id="u1")
        history = await memory.recall(thread_id="t1", last=20, format="openai")

Resource scope keeps one memory per resource in ``mastra_resources.workingMemory``; thread scope
keeps it in the thread's ``metadata["workingMemory"]``, as Mastra does, so a Mastra application
sharing the database sees the same memory.
"""

from composite_store.memory.config import (
    STATE_SIGNAL_TOOL_NAME,
    TOOL_NAME,
    Mode,
    Scope,
    ToolVersion,
    WorkingMemoryConfig,
)
from composite_store.memory.memory import HasMemory, Memory, WorkingMemoryValue
from composite_store.memory.recall import RecallFormat, to_anthropic, to_openai
from composite_store.memory.signals import STATE_ID, SignalTracking, StateSignal
from composite_store.memory.templates import DEFAULT_TEMPLATE
from composite_store.memory.tool import tool_definition

__all__ = [
    "DEFAULT_TEMPLATE",
    "STATE_ID",
    "STATE_SIGNAL_TOOL_NAME",
    "TOOL_NAME",
    "HasMemory",
    "Memory",
    "Mode",
    "RecallFormat",
    "Scope",
    "SignalTracking",
    "StateSignal",
    "ToolVersion",
    "WorkingMemoryConfig",
    "WorkingMemoryValue",
    "to_anthropic",
    "to_openai",
    "tool_definition",
]
