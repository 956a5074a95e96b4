"""The agent a run command runs: built from its config and flags, and the provider it uses."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel

from agent_contracts._config import AgentConfig
from agent_contracts._runs import RunRequest, RunResult
from agent_core._fleet import Fleet, load_fleet
from agent_core._registry import DEFAULT_REGISTRY_PATH, SchemaRegistry
from agent_executor._agent import ENV_ANALYTICS_DIR, Agent
from agent_executor._analytics import DEFAULT_ANALYTICS_DIR, JsonlAnalytics
from agent_executor._child_sessions import TOOL_NAME, ChildRunner, LocalStartSession
from agent_executor._cli.flags import profile_overrides
from agent_executor._providers.base import Provider
from agent_executor._providers.resolve import KNOWN_PREFIXES
from agent_executor._tools import KNOWN_TOOLS

__all__ = ["build_agent", "resolve_provider", "start_session_tool", "unoffered_tools_note"]


def resolve_provider(agent: Agent[BaseModel], model: str | None, err: TextIO) -> Provider:
    """Return the run's provider, noting on ``err`` when it is the offline test model."""
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


def build_agent(
    args: argparse.Namespace, config: AgentConfig, *, depth: int = 0
) -> Agent[BaseModel]:
    """Return the agent a run command runs: its workspace, registry, profile and analytics."""
    directory = args.analytics_dir or os.environ.get(ENV_ANALYTICS_DIR) or DEFAULT_ANALYTICS_DIR
    own_tools = [name for name in config.tools if name != TOOL_NAME]
    agent: Agent[BaseModel] = Agent(
        config.model_copy(update={"tools": own_tools}),
        workspace=args.workspace,
        analytics=JsonlAnalytics(directory),
        registry=SchemaRegistry(getattr(args, "registry", DEFAULT_REGISTRY_PATH)),
        profile=profile_overrides(args),
    )
    if len(own_tools) < len(config.tools):
        agent.tools.append(start_session_tool(args, depth))
    return agent


def start_session_tool(args: argparse.Namespace, depth: int = 0) -> LocalStartSession:
    """Return ``agents:start_session`` for a session at ``depth`` of a run command."""
    return LocalStartSession(_fleet_of(args), _child_runner(args), depth)


def _fleet_of(args: argparse.Namespace) -> Callable[[], Mapping[str, AgentConfig]]:
    """Return a loader of ``--agents-dir``'s fleet, loaded once, when a first child starts."""
    loaded: list[Fleet] = []

    def configs() -> Mapping[str, AgentConfig]:
        if not loaded:
            known = [*KNOWN_TOOLS, TOOL_NAME]
            fleet = load_fleet(
                getattr(args, "agents_dir", Path("agents")),
                known_tools=known,
                known_model_prefixes=KNOWN_PREFIXES,
            )
            loaded.append(fleet)
        return loaded[0]

    return configs


def _child_runner(args: argparse.Namespace) -> ChildRunner:
    """Return how a child runs: built as the parent was, on its own model, else ``--model``."""

    async def run_child(config: AgentConfig, request: RunRequest, depth: int) -> RunResult:
        child = build_agent(args, config, depth=depth)
        model = None if config.model else args.model
        return (await child.run(request, model=model)).result

    return run_child


def unoffered_tools_note(
    tools: list[str], mode: str, *, grammar_output: bool = False
) -> str | None:
    """Return why an agent's input tools are not offered in ``mode``, if they are not."""
    if not tools or mode not in ("native", "prompted"):
        return None
    if mode == "native" and grammar_output:
        return None
    return f"not offered in {mode} mode, which asks for the output alone"
