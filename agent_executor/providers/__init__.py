"""Model providers behind one small interface: ``Provider.request`` makes one model call."""

from __future__ import annotations

from agent_executor.providers.anthropic import AnthropicProvider
from agent_executor.providers.base import (
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
from agent_executor.providers.function import FunctionModel, FunctionReply, TurnFunction
from agent_executor.providers.openai import TOOL_ERROR_PREFIX, OpenAIProvider
from agent_executor.providers.resolve import (
    DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_OLLAMA_BASE_URL,
    DEFAULT_OPENAI_MODEL,
    KNOWN_PREFIXES,
    resolve_model,
)
from agent_executor.providers.test import FAILURE_MODES, FailureMode, TestModel, generate_value

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
