"""A run resolved before its first model call: :class:`RunPlan` and the steps that build it.

Everything a developer can get wrong is found here, before any model is called: keywords that
clash with a ``RunRequest``, a schema that would replace the agent's own, an unknown schema name, a
model that cannot be resolved, an output mode a provider cannot serve. Run parameters that break
the agent's ``parameters_schema`` are not a mistake of the developer's but of the run's input:
they become the run's ``precheck`` failure, returned as a failed result.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from pydantic import JsonValue

from agent_contracts._config import AgentConfig
from agent_contracts._errors import ConfigError
from agent_contracts._messages import Message
from agent_contracts._profiles import ProviderProfile
from agent_contracts._runs import JsonSchema, OutputMode, RunError, RunOptions, RunRequest
from agent_contracts._validation import ValidationIssue
from agent_core._contract import OutputContract
from agent_core._prompts import parameters_section
from agent_executor._providers.base import Provider
from agent_executor._run import DEFAULT_MAX_STEPS, RunSpec
from agent_executor._run_state import TurnRecorder
from agent_executor._tools import InputTool

__all__ = [
    "RunKeywords",
    "RunPlan",
    "Rung",
    "choose_mode",
    "model_ladder",
    "parameter_failure",
    "request_of",
    "run_spec",
]

logger = logging.getLogger(__name__)

Rung = tuple[int, Provider, OutputMode, ProviderProfile]
"""One tier of a run: its number, its provider, the output mode and the profile used on it."""


class RunKeywords(TypedDict, total=False):
    """The keywords ``Agent.run_sync`` and ``Agent.run_stream`` take, as ``Agent.run`` does."""

    parameters: Mapping[str, JsonValue] | None
    """Input values, checked against the agent's ``parameters_schema``."""
    output_schema: JsonSchema | None
    """An inline output schema for this run."""
    schema_name: str | None
    """A registered output schema for this run."""
    options: RunOptions | None
    """This run's options."""
    messages: Sequence[Message] | None
    """A previous run's transcript, to resume that conversation."""
    model: Provider | str | None
    """A provider or model string for this run."""
    model_tier: int
    """The tier to start on."""
    escalate: bool
    """Escalate a contract failure to the next tier, when there is one."""
    on_turn: TurnRecorder | None
    """Awaited with the run's progress before each model call that follows a finished turn."""


@dataclass(frozen=True)
class RunPlan:
    """One run, resolved before the first model call."""

    request: RunRequest
    options: RunOptions
    contract: OutputContract | None
    ladder: list[Rung]
    precheck: RunError | None

    @property
    def rungs(self) -> list[Rung]:
        """The tiers the run still has to use: the ladder from its progress's tier on."""
        progress = self.request.progress
        tiers = [rung[0] for rung in self.ladder]
        if progress is None or progress.model_tier not in tiers:
            return self.ladder
        return self.ladder[tiers.index(progress.model_tier) :]


def request_of(request: RunRequest | str, fields: Mapping[str, object]) -> RunRequest:
    """Return the run's request: ``request`` itself, or one built from a task and keywords."""
    given = {key: value for key, value in fields.items() if value is not None}
    if isinstance(request, RunRequest):
        if given:
            raise ConfigError(
                f"give these in the RunRequest, not as keywords: {', '.join(sorted(given))}"
            )
        return request
    if not isinstance(request, str):
        kind = type(request).__name__
        raise ConfigError(f"a run takes a RunRequest or a task string, not {kind}")
    return RunRequest.model_validate({"task": request, **given}, strict=False)


def choose_mode(
    requested: OutputMode | None,
    contract: OutputContract | None,
    profile: ProviderProfile,
) -> OutputMode:
    """Return the output mode a run uses on ``provider``."""
    if contract is None:
        return "text"
    if requested == "text":
        raise ConfigError("output_mode 'text' needs a run without an output contract")
    if requested is None:
        if profile.grammar_output and profile.native_output:
            return "native"
        return "tool" if profile.supports_tools else "prompted"
    if requested == "tool" and not profile.supports_tools:
        raise ConfigError(
            "this provider cannot call tools (its profile says supports_tools: false); use "
            "output_mode 'prompted' or 'native'"
        )
    return requested


def model_ladder(
    agent_id: str,
    tiers: Sequence[Provider | str],
    resolve: Callable[[Provider | str | None], Provider],
    model: Provider | str | None,
    start: int,
    *,
    escalate: bool,
) -> list[tuple[int, Provider]]:
    """Return ``(tier, provider)`` for the tiers a run may use, starting at ``start``."""
    if start < 0 or (model is None and start > len(tiers)):
        raise ConfigError(
            f"model_tier {start} does not exist: agent {agent_id!r} has tiers 0 to {len(tiers)}"
        )
    first = resolve(tiers[start - 1]) if model is None and start > 0 else resolve(model)
    ladder = [(start, first)]
    if escalate:
        for tier in range(start + 1, len(tiers) + 1):
            try:
                ladder.append((tier, resolve(tiers[tier - 1])))
            except ConfigError as exc:
                raise ConfigError(
                    f"agent {agent_id!r} cannot escalate to tier {tier}: {exc.format_message()}"
                ) from exc
    return ladder


def parameter_failure(
    agent_id: str, issues: Sequence[ValidationIssue], parameters: Mapping[str, JsonValue]
) -> RunError | None:
    """Return the failure for run parameters that break the agent's ``parameters_schema``."""
    if not issues:
        return None
    return RunError(
        type="input_validation_failed",
        message=f"the run parameters do not match agent {agent_id!r}'s parameters_schema; "
        "no model call was made",
        validation_errors=[str(issue) for issue in issues],
        issues=list(issues),
        last_output=dict(parameters),
    )


def run_spec(
    config: AgentConfig,
    tools: Sequence[InputTool],
    plan: RunPlan,
    rung: Rung,
    on_turn: TurnRecorder | None = None,
) -> RunSpec:
    """Return the run loop's spec for one tier of a plan."""
    tier, provider, mode, profile = rung
    grammar_first_tools = mode == "native" and profile.grammar_output
    if tools and mode in ("native", "prompted") and not grammar_first_tools:
        logger.warning(
            "agent %r: its input tools (%s) are not offered in %s mode, which asks for the "
            "output alone; use output mode 'tool' (--mode tool) for a run that uses them",
            config.id,
            ", ".join(tool.name for tool in tools),
            mode,
        )
    progress = plan.request.progress
    task = plan.request.task
    if plan.request.parameters:
        parameters = json.dumps(plan.request.parameters, indent=2, ensure_ascii=False)
        task = parameters_section(task, parameters)
    return RunSpec(
        agent_id=config.id,
        provider=provider,
        system_prompt=config.system_prompt,
        task=task,
        history=tuple(plan.request.messages),
        contract=plan.contract,
        tools=tools,
        options=plan.options,
        mode=mode,
        max_steps=config.max_steps or DEFAULT_MAX_STEPS,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        model_tier=tier,
        precheck=plan.precheck,
        profile=profile,
        run_id=_tier_run_id(plan.request.run_id, tier, plan.ladder[0][0]),
        progress=progress if progress is not None and progress.model_tier == tier else None,
        on_turn=on_turn,
    )


def _tier_run_id(run_id: str | None, tier: int, first: int) -> str | None:
    """Return the run id of one tier: the request's for the first, suffixed for the others."""
    if run_id is None or tier == first:
        return run_id
    return f"{run_id}.tier{tier}"
