"""Model providers behind one small interface: ``Provider.request`` makes one model call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_executor._providers.base import (
    JsonObject,
    ModelTurn,
    ModelTurnRequest,
    Provider,
    ResponseFormat,
    StopReason,
    ToolChoice,
    ToolDefinition,
    ToolNameMap,
)
from agent_executor._providers.function import FunctionModel, FunctionReply, TurnFunction
from agent_executor._providers.resolve import (
    DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_OLLAMA_BASE_URL,
    DEFAULT_OPENAI_MODEL,
    KNOWN_PREFIXES,
    resolve_model,
)
from agent_executor._providers.test import FAILURE_MODES, FailureMode, TestModel, generate_value

if TYPE_CHECKING:
    from agent_executor._providers.anthropic import AnthropicProvider
    from agent_executor._providers.openai import TOOL_ERROR_PREFIX, OpenAIProvider

_LAZY = {
    "AnthropicProvider": "agent_executor._providers.anthropic",
    "OpenAIProvider": "agent_executor._providers.openai",
    "TOOL_ERROR_PREFIX": "agent_executor._providers.openai",
}


def __getattr__(name: str) -> object:
    """Import the SDK-backed providers on first use (each SDK takes about a second to load)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_OLLAMA_BASE_URL",
    "DEFAULT_OPENAI_MODEL",
    "FAILURE_MODES",
    "KNOWN_PREFIXES",
    "TOOL_ERROR_PREFIX",
    "AnthropicProvider",
    "FailureMode",
    "FunctionModel",
    "FunctionReply",
    "JsonObject",
    "ModelTurn",
    "ModelTurnRequest",
    "OpenAIProvider",
    "Provider",
    "ResponseFormat",
    "StopReason",
    "TestModel",
    "ToolChoice",
    "ToolDefinition",
    "ToolNameMap",
    "TurnFunction",
    "generate_value",
    "resolve_model",
]
