"""The agent a run command runs: built from its config and flags, and the provider it uses."""

from __future__ import annotations

import argparse
import os
from typing import TextIO

from pydantic import BaseModel

from agent_contracts.config import AgentConfig
from agent_core.registry import DEFAULT_REGISTRY_PATH, SchemaRegistry
from agent_executor.agent import ENV_ANALYTICS_DIR, Agent
from agent_executor.analytics import DEFAULT_ANALYTICS_DIR, JsonlAnalytics
from agent_executor.cli.inputs import profile_overrides
from agent_executor.providers.base import Provider

__all__ = ["build_agent", "resolve_provider", "unoffered_tools_note"]


def resolve_provider(agent: Agent[BaseModel], model: str | None, err: TextIO) -> Provider:
    """Return the run's provider, noting on ``err`` when it is the offline test model.

    Raises:
        ConfigError: The model string is unknown or its API key is missing.
    """
    provider = agent.provider(model)
    if provider.name == "test":
        why = "as asked" if model or agent.config.model else "named by AGENTSHAPE_MODEL"
        print(
            f"note: using the offline test model ({why}); its answers are generated from the "
            "schema, not by a language model. Pass --model openai:gpt-4.1-mini (with "
            "OPENAI_API_KEY set), or another real model, to use a language model.",
            file=err,
        )
    return provider


def build_agent(args: argparse.Namespace, config: AgentConfig) -> Agent[BaseModel]:
    """Return the agent a run command runs: its workspace, registry, profile and analytics.

    The command line always writes analytics: to ``--analytics-dir``, else
    ``$AGENTSHAPE_ANALYTICS_DIR``, else ``.agentshape/analytics``.

    Raises:
        ConfigError: The config names an unknown tool, or a ``--profile`` field is unknown.
        InvalidSchemaError: The agent's schema is invalid.
    """
    directory = args.analytics_dir or os.environ.get(ENV_ANALYTICS_DIR) or DEFAULT_ANALYTICS_DIR
    return Agent(
        config,
        workspace=args.workspace,
        analytics=JsonlAnalytics(directory),
        registry=SchemaRegistry(getattr(args, "registry", DEFAULT_REGISTRY_PATH)),
        profile=profile_overrides(args),
    )


def unoffered_tools_note(tools: list[str], mode: str) -> str | None:
    """Return why an agent's input tools are not offered in ``mode``, if they are not.

    Args:
        tools: The agent's input tools, by name.
        mode: The output mode of the run.

    Returns:
        The note, or ``None`` in tool and text modes or without input tools.
    """
    if not tools or mode not in ("native", "prompted"):
        return None
    return f"not offered in {mode} mode, which asks for the output alone"
