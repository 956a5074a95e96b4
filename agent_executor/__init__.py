"""agentshape's executor: providers, the run loop, input tools, analytics and the CLI.

The entry points are :class:`Agent` (``Agent.from_yaml(path)``, ``await agent.run(task)``,
``agent.run_sync(task)``), :func:`run_many` for fleets, and the ``agentshape`` command.
"""

from __future__ import annotations

from agent_executor.agent import Agent, AgentResult, format_child_result, run_many
from agent_executor.analytics import (
    DEFAULT_ANALYTICS_DIR,
    AnalyticsSink,
    JsonlAnalytics,
    MemoryAnalytics,
    NullAnalytics,
    ReadResult,
    read_events,
)
from agent_executor.providers import (
    AnthropicProvider,
    FunctionModel,
    OpenAIProvider,
    Provider,
    TestModel,
    resolve_model,
)
from agent_executor.tools import KNOWN_TOOLS, FsLimits, InputTool, build_input_tools

__all__ = [
    "DEFAULT_ANALYTICS_DIR",
    "KNOWN_TOOLS",
    "Agent",
    "AgentResult",
    "AnalyticsSink",
    "AnthropicProvider",
    "FsLimits",
    "FunctionModel",
    "InputTool",
    "JsonlAnalytics",
    "MemoryAnalytics",
    "NullAnalytics",
    "OpenAIProvider",
    "Provider",
    "ReadResult",
    "TestModel",
    "build_input_tools",
    "format_child_result",
    "read_events",
    "resolve_model",
    "run_many",
]
