"""agentshape: LLM agents that return data in the shape their designer asked for.

The one import a user writes::

    from agentshape import Agent, RunRequest

    agent = Agent(output_type=Person, system_prompt="Extract the person.", model="test")
    result = agent.run_sync("Ada Lovelace, born 1815.")
    result.output  # a Person

Everything here is re-exported from the layer packages (``agent_contracts``, ``agent_core``,
``agent_executor``), which stay importable on their own.
"""

from __future__ import annotations

from agent_contracts import (
    AgentConfig,
    AgentshapeError,
    Attempt,
    ConfigError,
    ConfigFileError,
    FleetProblems,
    InvalidSchemaError,
    JsonSchema,
    Message,
    OutputMode,
    ProviderError,
    RunError,
    RunErrorType,
    RunFailedError,
    RunOptions,
    RunRequest,
    RunResult,
    SchemaError,
    SchemaNotFoundError,
    SchemaRegistryError,
    SchemaValidation,
    ToolExecutionError,
    Usage,
    ValidationIssue,
)
from agent_core import (
    Fleet,
    SchemaRegistry,
    clear_caches,
    compile_schema,
    extract_json,
    load_agent_config,
    load_fleet,
    model_from_schema,
    validate_output,
)
from agent_executor import (
    Agent,
    AgentResult,
    AnalyticsSink,
    FunctionModel,
    JsonlAnalytics,
    MemoryAnalytics,
    NullAnalytics,
    Provider,
    TestModel,
    format_child_result,
    read_events,
    resolve_model,
    run_many,
)
from agentshape._version import __version__

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentResult",
    "AgentshapeError",
    "AnalyticsSink",
    "Attempt",
    "ConfigError",
    "ConfigFileError",
    "Fleet",
    "FleetProblems",
    "FunctionModel",
    "InvalidSchemaError",
    "JsonSchema",
    "JsonlAnalytics",
    "MemoryAnalytics",
    "Message",
    "NullAnalytics",
    "OutputMode",
    "Provider",
    "ProviderError",
    "RunError",
    "RunErrorType",
    "RunFailedError",
    "RunOptions",
    "RunRequest",
    "RunResult",
    "SchemaError",
    "SchemaNotFoundError",
    "SchemaRegistry",
    "SchemaRegistryError",
    "SchemaValidation",
    "TestModel",
    "ToolExecutionError",
    "Usage",
    "ValidationIssue",
    "__version__",
    "clear_caches",
    "compile_schema",
    "extract_json",
    "format_child_result",
    "load_agent_config",
    "load_fleet",
    "model_from_schema",
    "read_events",
    "resolve_model",
    "run_many",
    "validate_output",
]
