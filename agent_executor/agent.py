"""The public way to run an agent: ``Agent``, ``run_many`` and ``format_child_result``.

``Agent.run`` is the one implementation (async); ``run_sync`` is a thin wrapper over it. A run
returns an :class:`AgentResult`; a failed run is a result too (``status == "failed"`` with a typed
``error``), so only a developer's mistake (a caller overriding the agent's own contract, an
invalid schema, an unknown option) raises.

Model escalation (seed 004): an agent with ``model_tiers`` (YAML ``llm.tiers``) escalates a run
that fails its *contract* (``output_schema_validation_failed``, ``output_tool_not_called``,
``no_json_found``, ``strict_json_only_violated``) on one model: the whole run is done again, from
the task, on the next tier's model. The run's model (the caller's ``model=``, else the agent's)
is tier 0; ``model_tiers[n - 1]`` is tier ``n``. Any other failure (a provider error, a timeout,
bad run parameters, a step or token limit) is returned as it is, without escalating. Each tier's
run is a run of its own in analytics; the returned result is the last tier's, with every tier's
attempts (each naming its model), and the tokens and time of them all.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, JsonValue

from agent_contracts.config import AgentConfig
from agent_contracts.errors import ConfigError, RunFailedError
from agent_contracts.messages import Message
from agent_contracts.runs import (
    JsonSchema,
    OutputMode,
    RunError,
    RunOptions,
    RunResult,
    merge_options,
    options_from_env,
)
from agent_contracts.validation import ValidationIssue
from agent_core.loading import load_agent_config
from agent_core.schema_model import compile_schema
from agent_executor.analytics import DEFAULT_ANALYTICS_DIR, AnalyticsSink, JsonlAnalytics
from agent_executor.contract import OutputContract, resolve_contract
from agent_executor.providers.base import Provider
from agent_executor.providers.resolve import resolve_model
from agent_executor.run import DEFAULT_MAX_STEPS, RunSpec, execute
from agent_executor.tools import InputTool, build_input_tools

__all__ = ["ESCALATING_ERRORS", "Agent", "AgentResult", "format_child_result", "run_many"]

logger = logging.getLogger(__name__)

ESCALATING_ERRORS: frozenset[str] = frozenset(
    {
        "output_schema_validation_failed",
        "output_tool_not_called",
        "no_json_found",
        "strict_json_only_violated",
    }
)
"""The failures of a run's output contract that escalate it to the agent's next model tier."""

OutputT = TypeVar("OutputT", bound=BaseModel)


class AgentResult(Generic[OutputT]):
    """A run's result (``.result``, a ``RunResult``) with the typed output object.

    Attribute access falls through to the ``RunResult``: ``result.status``,
    ``result.result_data``, ``result.error``, ``result.attempts``, ``result.usage``...
    """

    def __init__(self, result: RunResult, output: OutputT | None) -> None:
        self.result = result
        self._output = output

    def __getattr__(self, name: str) -> object:
        return getattr(self.result, name)

    def __repr__(self) -> str:
        return f"AgentResult(status={self.result.status!r}, run_id={self.result.run_id!r})"

    @property
    def ok(self) -> bool:
        """Whether the run completed."""
        return self.result.status == "completed"

    @property
    def status(self) -> str:
        """``completed`` or ``failed``."""
        return self.result.status

    @property
    def error(self) -> RunError | None:
        """Why the run failed, or ``None``."""
        return self.result.error

    @property
    def output(self) -> OutputT:
        """The validated output as an instance of the contract's class.

        Raises:
            RunFailedError: The run failed (carries the error type, problems and last output).
            ConfigError: The run had no output contract (read ``result_text`` instead).
        """
        self.raise_for_status()
        if self._output is None:
            raise ConfigError("this run had no output contract; its answer is in result_text")
        return self._output

    def raise_for_status(self) -> None:
        """Raise :class:`RunFailedError` when the run failed; do nothing when it completed.

        Raises:
            RunFailedError: The run failed.
        """
        error = self.result.error
        if error is not None:
            raise RunFailedError(
                error.message,
                type=error.type,
                errors=error.validation_errors,
                last_output=error.last_output,
            )


class Agent(Generic[OutputT]):
    """An agent with its contract, ready to run against a model.

    Args:
        config: The agent's configuration.
        model: A provider, or a model string such as ``openai:gpt-4.1-mini``,
            ``anthropic:claude-sonnet-4-5``, ``ollama:qwen3`` or ``test``; ``None`` uses the
            agent's own model, else picks from the environment (the offline test model when no
            API key is set).
        output_type: A Pydantic class as the agent's output contract, instead of a JSON Schema.
        workspace: The directory the input tools may read (default: the current directory).
        analytics: Where events go (default: JSONL files under ``.agentshape/analytics``).
        env: The environment for defaults and keys (default: ``os.environ``).
        model_tiers: The models to escalate to, in order, instead of the config's
            ``model_tiers`` (providers or model strings).

    Raises:
        ConfigError: The config names an unknown tool, or gives both an ``output_schema`` and an
            ``output_type``.
        InvalidSchemaError: The agent's output or parameters schema is invalid.
    """

    def __init__(
        self,
        config: AgentConfig,
        *,
        model: Provider | str | None = None,
        output_type: type[OutputT] | None = None,
        workspace: str | os.PathLike[str] | None = None,
        analytics: AnalyticsSink | None = None,
        env: Mapping[str, str] | None = None,
        model_tiers: Sequence[Provider | str] | None = None,
    ) -> None:
        if output_type is not None and config.output_schema is not None:
            raise ConfigError(
                f"agent {config.id!r} has an output_schema and an output_type; give one contract"
            )
        self.config = config
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.output_type = output_type
        self.workspace = Path(workspace) if workspace is not None else Path.cwd()
        self.tools: list[InputTool] = build_input_tools(config.tools, workspace=self.workspace)
        self.analytics: AnalyticsSink = analytics or JsonlAnalytics(DEFAULT_ANALYTICS_DIR)
        self._model = model
        self.model_tiers: list[Provider | str] = list(
            config.model_tiers if model_tiers is None else model_tiers
        )
        """The escalation tiers: tier ``n`` runs on ``model_tiers[n - 1]``."""
        self._params = (
            compile_schema(config.parameters_schema, source=f"agent {config.id!r} parameters")
            if config.parameters_schema is not None
            else None
        )
        # Check the agent's own contract now, so a bad schema fails at load, not at run.
        lenient = merge_options(self.config.options).lenient_formats
        self._contract = self._resolve(None, None, lenient=lenient)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str], **kwargs: object) -> Agent[BaseModel]:
        """Load an agent from an ``agent.yml`` file.

        Args:
            path: The YAML file.
            **kwargs: Passed to :class:`Agent` (``model``, ``workspace``, ``analytics``, ``env``,
                ``model_tiers``).

        Returns:
            The agent.

        Raises:
            ConfigFileError: The file cannot be read or is not a valid agent config.
            InvalidSchemaError: Its output or parameters schema is invalid.
        """
        return Agent(load_agent_config(path), **kwargs)  # type: ignore[arg-type]

    @property
    def id(self) -> str:
        """The agent's id."""
        return self.config.id

    @property
    def contract(self) -> OutputContract | None:
        """The agent's own output contract (or default), ``None`` for a free-text agent."""
        return self._contract

    def provider(self, model: Provider | str | None = None) -> Provider:
        """Return the provider a run would use.

        Args:
            model: A provider or model string overriding the agent's.

        Raises:
            ConfigError: The model string is unknown or its key is missing.
        """
        chosen = model if model is not None else self._model
        if chosen is None:
            chosen = self.config.model
        if chosen is None or isinstance(chosen, str):
            return resolve_model(chosen, env=self.env)
        return chosen

    def _resolve(
        self,
        inline: JsonSchema | None,
        named: tuple[str, JsonSchema] | None,
        *,
        lenient: bool,
    ) -> OutputContract | None:
        return resolve_contract(
            self.config,
            output_type=self.output_type,
            inline=inline,
            named=named,
            lenient=lenient,
        )

    def _options(self, options: RunOptions | None) -> RunOptions:
        return merge_options(options_from_env(self.env), self.config.options, options)

    async def run(
        self,
        task: str,
        *,
        parameters: Mapping[str, JsonValue] | None = None,
        output_schema: JsonSchema | None = None,
        schema_name: str | None = None,
        named_schema: JsonSchema | None = None,
        options: RunOptions | None = None,
        messages: Sequence[Message] | None = None,
        model: Provider | str | None = None,
        model_tier: int = 0,
        escalate: bool = True,
    ) -> AgentResult[OutputT]:
        """Run the agent on ``task`` and return its result.

        When the agent has ``model_tiers`` and ``escalate`` is on, a run that fails its output
        contract is done again on the next tier (see the module docstring); every tier's model
        is resolved before the first model call, so a missing key fails fast.

        Args:
            task: The user's task.
            parameters: Input values, validated against the agent's ``parameters_schema``
                before any model call.
            output_schema: An inline output schema for this run (only for an agent without an
                ``output_schema`` of its own; it replaces a ``default_output_schema``).
            schema_name: The registered name of ``named_schema``, recorded in the result.
            named_schema: A registered schema's content (the CLI looks it up by name).
            options: This run's options; unset fields fall through to the agent's, then to the
                environment defaults ``SCHEMA_ENFORCEMENT_MAX_RETRIES`` and
                ``SCHEMA_ENFORCEMENT_EXTRACT_JSON``.
            messages: A previous run's transcript, to resume that conversation (never mutated).
            model: A provider or model string for this run: tier 0 (or tier ``model_tier``).
            model_tier: The tier to start on. Without ``model`` the run starts on that tier's
                model (``model_tiers[model_tier - 1]``); with ``model``, ``model`` is taken as
                that tier's model (and recorded so).
            escalate: Escalate a contract failure to the next tier (when there is one).

        Returns:
            The result: completed with ``result_data`` (and ``output``) or ``result_text``, or
            failed with a typed ``error``.

        Raises:
            ConfigError: The caller gave a schema to an agent with its own contract, a model
                string (the run's or a tier's) is unknown or lacks its key, the output mode does
                not fit a provider, native mode was asked for with a schema a provider's
                structured output cannot take, or ``model_tier`` is past the last tier.
            InvalidSchemaError: The inline or named schema is invalid.
        """
        merged = self._options(options)
        named = (schema_name or "named", named_schema) if named_schema is not None else None
        contract = self._resolve(output_schema, named, lenient=merged.lenient_formats)
        ladder = self._ladder(model, model_tier, escalate=escalate)
        modes: list[OutputMode] = []
        for _, provider in ladder:
            mode = self._mode(merged.output_mode, contract, provider)
            if mode == "native" and contract is not None:
                contract.response_format(provider.name)  # a schema native output cannot take
            modes.append(mode)
        precheck = None
        if self._params is not None:
            issues = self._params.issues(dict(parameters or {}))
            if issues:
                precheck = self._input_failure(issues, parameters)
        task_text = task
        if parameters:
            task_text = f"{task}\n\nParameters:\n{_json(dict(parameters))}"
        results: list[RunResult] = []
        for (tier, provider), mode in zip(ladder, modes, strict=True):
            spec = RunSpec(
                agent_id=self.config.id,
                provider=provider,
                system_prompt=self.config.system_prompt,
                task=task_text,
                history=tuple(messages or ()),
                contract=contract,
                tools=self.tools,
                options=merged,
                mode=mode,
                max_steps=self.config.max_steps or DEFAULT_MAX_STEPS,
                max_tokens=self.config.max_tokens,
                temperature=self.config.temperature,
                model_tier=tier,
                precheck=precheck,
            )
            outcome = await execute(spec, self.analytics)
            results.append(outcome.result)
            error = outcome.result.error
            if error is None or error.type not in ESCALATING_ERRORS or tier == ladder[-1][0]:
                break
            logger.info(
                "agent %s: %s on tier %d (%s); escalating to tier %d",
                self.config.id,
                error.type,
                tier,
                outcome.result.model,
                tier + 1,
            )
        return AgentResult(_escalated(results), outcome.output)  # type: ignore[arg-type]

    def _ladder(
        self, model: Provider | str | None, start: int, *, escalate: bool
    ) -> list[tuple[int, Provider]]:
        """Return ``(tier, provider)`` for the tiers this run may use, starting at ``start``.

        Raises:
            ConfigError: ``start`` is negative or past the last tier, or a model is unknown or
                lacks its key.
        """
        if start < 0 or (model is None and start > len(self.model_tiers)):
            raise ConfigError(
                f"model_tier {start} does not exist: agent {self.config.id!r} has tiers 0 to "
                f"{len(self.model_tiers)}"
            )
        if model is None and start > 0:
            first = self.provider(self.model_tiers[start - 1])
        else:
            first = self.provider(model)
        ladder = [(start, first)]
        if escalate:
            for tier in range(start + 1, len(self.model_tiers) + 1):
                choice = self.model_tiers[tier - 1]
                try:
                    ladder.append((tier, self.provider(choice)))
                except ConfigError as exc:
                    raise ConfigError(
                        f"agent {self.config.id!r} cannot escalate to tier {tier}: "
                        f"{exc.format_message()}"
                    ) from exc
        return ladder

    def run_sync(self, task: str, **kwargs: object) -> AgentResult[OutputT]:
        """Run the agent without an event loop; the same arguments and result as :meth:`run`.

        Raises:
            ConfigError: As :meth:`run`; also when called from inside a running event loop.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(task, **kwargs))  # type: ignore[arg-type]
        raise ConfigError("run_sync cannot be called from a running event loop; await run()")

    @staticmethod
    def _mode(
        requested: OutputMode | None, contract: OutputContract | None, provider: Provider
    ) -> OutputMode:
        if contract is None:
            return "text"
        if requested == "text":
            raise ConfigError("output_mode 'text' needs a run without an output contract")
        if requested is None:
            return "tool" if provider.supports_tools else "prompted"
        if requested == "tool" and not provider.supports_tools:
            raise ConfigError(
                f"{provider.name} cannot call tools; use output_mode 'prompted' or 'native'"
            )
        return requested

    def _input_failure(
        self, issues: Sequence[ValidationIssue], parameters: Mapping[str, JsonValue] | None
    ) -> RunError:
        return RunError(
            type="input_validation_failed",
            message=f"the run parameters do not match agent {self.config.id!r}'s "
            "parameters_schema; no model call was made",
            validation_errors=list(issues),
            last_output=dict(parameters or {}),
        )


def _json(value: JsonValue) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _escalated(results: Sequence[RunResult]) -> RunResult:
    """Fold the runs of an escalation into the last one's result.

    The result is the last tier's, with every tier's attempts (numbered on from one tier to the
    next), and the tokens and time of every tier.
    """
    final = results[-1]
    if len(results) == 1:
        return final
    attempts = [attempt for result in results for attempt in result.attempts]
    usage = results[0].usage
    for result in results[1:]:
        usage = usage + result.usage
    return final.model_copy(
        update={
            "attempts": [
                attempt.model_copy(update={"number": number})
                for number, attempt in enumerate(attempts, start=1)
            ],
            "retries": max(0, len(attempts) - 1),
            "usage": usage,
            "duration_ms": sum(result.duration_ms for result in results),
        }
    )


async def run_many(
    agent: Agent[OutputT],
    tasks: Iterable[str],
    *,
    concurrency: int = 10,
    on_result: Callable[[int, AgentResult[OutputT]], Awaitable[None] | None] | None = None,
    **kwargs: object,
) -> list[AgentResult[OutputT]]:
    """Run ``agent`` on many tasks with at most ``concurrency`` runs in flight.

    Args:
        agent: The agent to run.
        tasks: The tasks, one run each.
        concurrency: Most runs in flight at once (at least 1).
        on_result: Called with ``(index, result)`` as each run finishes (may be async).
        **kwargs: Passed to :meth:`Agent.run` for every task.

    Returns:
        The results, in the order of ``tasks``.

    Raises:
        ConfigError: ``concurrency`` is below 1, or a run's arguments are invalid.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
    items = list(tasks)
    results: list[AgentResult[OutputT] | None] = [None] * len(items)
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, task: str) -> None:
        async with gate:
            result = await agent.run(task, **kwargs)  # type: ignore[arg-type]
        results[index] = result
        if on_result is not None:
            maybe = on_result(index, result)
            if maybe is not None:
                await maybe

    runs = [asyncio.ensure_future(one(i, task)) for i, task in enumerate(items)]
    try:
        await asyncio.gather(*runs)
    except BaseException:
        # A developer's mistake (or a cancellation) stops the whole batch, not just one run.
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        raise
    done = [r for r in results if r is not None]
    assert len(done) == len(items)
    return done


def format_child_result(
    result: RunResult | AgentResult[BaseModel] | Mapping[str, JsonValue],
) -> str:
    """Render a child run's result for its parent agent (seed 000's callback rule).

    ``result_data`` as indented JSON when present, otherwise ``result_text``, otherwise
    ``(No result available)``.

    Args:
        result: A run result, an agent result, or a result as a JSON mapping.

    Returns:
        The text the parent receives.
    """
    if isinstance(result, AgentResult):
        result = result.result
    if isinstance(result, RunResult):
        return result.as_text()
    data = result.get("result_data")
    if data is not None:
        return _json(data)
    text = result.get("result_text")
    return text if isinstance(text, str) and text else "(No result available)"
