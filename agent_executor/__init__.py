"""agentshape's executor: providers, the run loop, input tools, analytics and the CLI.

The entry points are :class:`Agent` (``Agent.from_yaml(path)``, ``await agent.run(task)``,
``agent.run_sync(task)``), :func:`run_many` for fleets, and the ``agentshape`` command.
"""

from __future__ import annotations

import typing

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
from agent_executor._call_limits import CallLimiter, LocalCallLimiter
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

if typing.TYPE_CHECKING:
    from agent_executor._providers.anthropic import AnthropicProvider
    from agent_executor._providers.openai import OpenAIProvider


# The SDK-backed providers are imported on first use: each SDK takes about a second to load.
_PROVIDER_NAMES = ("AnthropicProvider", "OpenAIProvider")


def __getattr__(name: str) -> object:
    """Import an SDK-backed provider class when it is first asked for.

    Args:
        name: The attribute asked for.

    Returns:
        The provider class.

    Raises:
        AttributeError: ``name`` is not one of the package's names.
    """
    if name in _PROVIDER_NAMES:
        from agent_executor import _providers as providers

        return getattr(providers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """List the package's names, the providers imported on first use included."""
    return sorted({*globals(), *_PROVIDER_NAMES})


__all__ = [
    "DEFAULT_ANALYTICS_DIR",
    "ENV_ANALYTICS_DIR",
    "ESCALATING_ERRORS",
    "KNOWN_TOOLS",
    "Agent",
    "AgentResult",
    "AnalyticsSink",
    "AnthropicProvider",
    "CallLimiter",
    "FsLimits",
    "FunctionModel",
    "InputTool",
    "JsonlAnalytics",
    "LocalCallLimiter",
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
