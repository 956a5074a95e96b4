"""agentshape's data layer: configs, run requests and results, events, output contracts.

Pure Pydantic models and the error tree; no I/O and no imports from the other layers.
"""

from __future__ import annotations

from agent_contracts.errors import (
    AgentshapeError,
    ConfigError,
    ConfigFileError,
    InputValidationError,
    InvalidSchemaError,
    NoJSONFoundError,
    OutputError,
    OutputValidationError,
    ProviderError,
    SchemaError,
    SchemaReferenceError,
)
from agent_contracts.messages import Message, Role, ToolCall, ToolResult, Usage
from agent_contracts.validation import ValidationIssue

__all__ = [
    "AgentshapeError",
    "ConfigError",
    "ConfigFileError",
    "InputValidationError",
    "InvalidSchemaError",
    "Message",
    "NoJSONFoundError",
    "OutputError",
    "OutputValidationError",
    "ProviderError",
    "Role",
    "SchemaError",
    "SchemaReferenceError",
    "ToolCall",
    "ToolResult",
    "Usage",
    "ValidationIssue",
]
