"""agentshape's executor: providers, the run loop, input tools, analytics and the CLI.

The entry points are :class:`Agent` (``Agent.from_yaml(path)``, ``await agent.run(task)``,
``agent.run_sync(task)``), :func:`run_many` for fleets, and the ``agentshape`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_executor._agent import ENV_ANALYTICS_DIR, Agent
from agent_executor._analytics import (
    DEFAULT_ANALYTICS_DIR,
    AnalyticsSink,
    JsonlAnalytics,
    MemoryAnalytics,
    NullAnalytics,
    ReadResult,
    read_events,
)
from agent_executor._batch import run_many
from agent_executor._escalation import ESCALATING_ERRORS
from agent_executor._providers import FunctionModel, Provider, TestModel, resolve_model
from agent_executor._result import AgentResult, format_child_result
from agent_executor._stream_events import (
    PartialOutput,
    RetryStarted,
    RunFinished,
    RunStarted,
    StreamEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from agent_executor._tools import KNOWN_TOOLS, FsLimits, InputTool, build_input_tools
from agent_executor._tracing import TracingSink

if TYPE_CHECKING:
    from agent_executor._providers.anthropic import AnthropicProvider
    from agent_executor._providers.openai import OpenAIProvider


def __getattr__(name: str) -> object:
    """Import the SDK-backed providers on first use (each SDK takes about a second to load)."""
    if name in ("AnthropicProvider", "OpenAIProvider"):
        from agent_executor import _providers as providers

        return getattr(providers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_ANALYTICS_DIR",
    "ENV_ANALYTICS_DIR",
    "ESCALATING_ERRORS",
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
    "PartialOutput",
    "Provider",
    "ReadResult",
    "RetryStarted",
    "RunFinished",
    "RunStarted",
    "StreamEvent",
    "TestModel",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "TracingSink",
    "build_input_tools",
    "format_child_result",
    "read_events",
    "resolve_model",
    "run_many",
]
