"""agentshape: LLM agents that return data in the shape their designer asked for.

The one import a user writes::

    from agentshape import Agent, RunRequest

    agent = Agent(output_type=Person, system_prompt="Extract the person.", model="test")
    result = agent.run_sync("Ada Lovelace, born 1815.")
    result.output  # a Person

and, for a service (``agentshape serve``) run from code::

    from agentshape import Client

    with Client("http://127.0.0.1:8100") as client:
        client.start_session("reviewer", "Review PR 1", output_type=Review).output  # a Review

Everything else here is re-exported from the layer packages (``agent_contracts``,
``agent_core``, ``agent_executor``), which stay importable on their own; the client is this
package's own (``agentshape._client``), imported on first use.
"""

from __future__ import annotations

import importlib
import typing

from agent_contracts import (
    AgentConfig,
    AgentshapeError,
    Attempt,
    ConfigError,
    ConfigFileError,
    FleetProblems,
    InputValidationError,
    InvalidSchemaError,
    JsonSchema,
    Message,
    OutputMode,
    OutputSchemaValidationError,
    OutputValidationError,
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
    PartialOutput,
    Provider,
    RetryStarted,
    RunFinished,
    RunStarted,
    StreamEvent,
    TestModel,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    format_child_result,
    read_events,
    resolve_model,
    run_many,
)
from agentshape._version import __version__

if typing.TYPE_CHECKING:
    from agentshape._async_client import AsyncClient
    from agentshape._client import Client
    from agentshape._client_errors import APIConnectionError, APIError
    from agentshape._client_events import RunEnded, RunEvent, RunResultEvent, ServiceEvent
    from agentshape._client_results import (
        AgentInfo,
        BatchInfo,
        BatchItemInfo,
        ProviderBatchInfo,
        ResultValidation,
        RunClaim,
        RunFailure,
        RunInfo,
        SchemaCheckResult,
        SchemaInfo,
        SessionResult,
        WebhookDelivery,
    )
    from agentshape._run_arguments import RunArguments

# The service's client is imported on first use: a program that only runs agents in-process
# (and the ``agentshape`` command) does not pay for its HTTP stack at start-up.
_CLIENT_NAMES = {
    "APIConnectionError": "agentshape._client_errors",
    "APIError": "agentshape._client_errors",
    "AsyncClient": "agentshape._async_client",
    "Client": "agentshape._client",
    "RunArguments": "agentshape._run_arguments",
    "RunEnded": "agentshape._client_events",
    "RunEvent": "agentshape._client_events",
    "RunResultEvent": "agentshape._client_events",
    "ServiceEvent": "agentshape._client_events",
    "AgentInfo": "agentshape._client_results",
    "BatchInfo": "agentshape._client_results",
    "BatchItemInfo": "agentshape._client_results",
    "ProviderBatchInfo": "agentshape._client_results",
    "ResultValidation": "agentshape._client_results",
    "RunClaim": "agentshape._client_results",
    "RunFailure": "agentshape._client_results",
    "RunInfo": "agentshape._client_results",
    "SchemaCheckResult": "agentshape._client_results",
    "SchemaInfo": "agentshape._client_results",
    "SessionResult": "agentshape._client_results",
    "WebhookDelivery": "agentshape._client_results",
}

__all__ = [
    "APIConnectionError",
    "APIError",
    "Agent",
    "AgentConfig",
    "AgentInfo",
    "AgentResult",
    "AgentshapeError",
    "AnalyticsSink",
    "AsyncClient",
    "Attempt",
    "BatchInfo",
    "BatchItemInfo",
    "Client",
    "ConfigError",
    "ConfigFileError",
    "Fleet",
    "FleetProblems",
    "FunctionModel",
    "InputValidationError",
    "InvalidSchemaError",
    "JsonSchema",
    "JsonlAnalytics",
    "MemoryAnalytics",
    "Message",
    "NullAnalytics",
    "OutputMode",
    "OutputSchemaValidationError",
    "OutputValidationError",
    "PartialOutput",
    "Provider",
    "ProviderBatchInfo",
    "ProviderError",
    "ResultValidation",
    "RetryStarted",
    "RunArguments",
    "RunClaim",
    "RunEnded",
    "RunError",
    "RunErrorType",
    "RunEvent",
    "RunFailedError",
    "RunFailure",
    "RunFinished",
    "RunInfo",
    "RunOptions",
    "RunRequest",
    "RunResult",
    "RunResultEvent",
    "RunStarted",
    "SchemaCheckResult",
    "SchemaError",
    "SchemaInfo",
    "SchemaNotFoundError",
    "SchemaRegistry",
    "SchemaRegistryError",
    "SchemaValidation",
    "ServiceEvent",
    "SessionResult",
    "StreamEvent",
    "TestModel",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolExecutionError",
    "Usage",
    "ValidationIssue",
    "WebhookDelivery",
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


def __getattr__(name: str) -> object:
    """Import a name of the service's client when it is first asked for."""
    module = _CLIENT_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'agentshape' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """List the package's names, the client's (imported on first use) included."""
    return sorted({*globals(), *_CLIENT_NAMES})
