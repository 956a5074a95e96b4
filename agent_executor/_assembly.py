"""What ``Agent``'s constructor assembles from its arguments: a one-off config, the sink.

Kept apart from :mod:`agent_executor._agent` so the agent module holds the agent itself; both
functions are public for the layers above, which build agents the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from agent_contracts._config import AgentConfig
from agent_contracts._errors import ConfigError
from agent_contracts._runs import JsonSchema
from agent_executor._analytics import AnalyticsSink, JsonlAnalytics, NullAnalytics
from agent_executor._tracing import with_tracing

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["ENV_ANALYTICS_DIR", "config_of", "sink_for"]

ENV_ANALYTICS_DIR = "AGENTSHAPE_ANALYTICS_DIR"
"""Environment variable naming a directory for analytics JSONL files, when no sink is given."""


def config_of(
    config: AgentConfig | None,
    output_schema: JsonSchema | None,
    system_prompt: str | None,
    name: str | None,
    tools: Sequence[str],
) -> AgentConfig:
    """Return ``config``, or a one-off agent's config built from its parts.

    Args:
        config: The agent's config, or ``None`` for a one-off agent.
        output_schema: The one-off agent's output schema.
        system_prompt: The one-off agent's instructions.
        name: The one-off agent's id (default ``agent``).
        tools: The one-off agent's input tools.

    Raises:
        ConfigError: Both a config and one-off parts were given.
    """
    parts = {
        "output_schema": output_schema,
        "system_prompt": system_prompt,
        "name": name,
        "tools": list(tools) or None,
    }
    given = sorted(key for key, value in parts.items() if value is not None)
    if config is not None:
        if given:
            raise ConfigError(
                f"give an AgentConfig or the parts of a one-off agent, not both "
                f"(got a config and {', '.join(given)}); put them in the config instead"
            )
        return config
    data: dict[str, object] = {"name": name or "agent", "system_prompt": system_prompt or ""}
    if output_schema is not None:
        data["output_schema"] = output_schema
    if tools:
        data["tools"] = list(tools)
    return AgentConfig.model_validate(data)


def sink_for(
    analytics: AnalyticsSink | None,
    directory: str | os.PathLike[str] | None,
    env: Mapping[str, str],
    tracer_provider: TracerProvider | None = None,
) -> AnalyticsSink:
    """Return the sink a run writes to: the given one, a directory's, or none at all.

    When OpenTelemetry tracing is on (``tracer_provider``, or a configured global one), the
    sink is wrapped so its events also become spans (:mod:`agent_executor._tracing`).

    Args:
        analytics: A sink given by the caller.
        directory: A directory for JSONL files given by the caller.
        env: The environment (``AGENTSHAPE_ANALYTICS_DIR``, content capture for spans).
        tracer_provider: A tracer provider given by the caller.
    """
    if analytics is not None:
        sink = analytics
    elif directory is not None:
        sink = JsonlAnalytics(os.fspath(directory))
    else:
        from_env = env.get(ENV_ANALYTICS_DIR, "").strip()
        sink = JsonlAnalytics(from_env) if from_env else NullAnalytics()
    return with_tracing(sink, tracer_provider, env)
