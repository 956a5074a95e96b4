"""The public way to run an agent: :class:`Agent`.

``Agent.run`` is the one implementation (async); ``run_sync`` is a thin wrapper over it. A run
takes a :class:`~agent_contracts._runs.RunRequest` (or just a task) and returns an
:class:`~agent_executor._result.AgentResult`; a failed run is a result too (``status ==
"failed"`` with a typed ``error``), so only a developer's mistake (a caller overriding the
agent's own contract, an invalid or unknown schema, no model to run on) raises.

Model escalation (see :mod:`agent_executor._escalation`): the run's model (the caller's
``model=``, else the agent's) is tier 0; ``model_tiers[n - 1]`` is tier ``n``. Each tier's run is
a run of its own in analytics; the returned result folds them all.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Generic, cast

from pydantic import JsonValue
from typing_extensions import Unpack

from agent_contracts._call_limits import CallLimits
from agent_contracts._config import AgentConfig
from agent_contracts._errors import ConfigError
from agent_contracts._messages import Message
from agent_contracts._profiles import ProviderProfile, apply_profile_overrides
from agent_contracts._runs import (
    JsonSchema,
    RunOptions,
    RunRequest,
    merge_options,
    options_from_env,
)
from agent_core._contract import OutputContract, resolve_contract
from agent_core._loading import load_agent_config
from agent_core._registry import SchemaRegistry
from agent_core._schema_model import compile_schema
from agent_executor._analytics import AnalyticsSink
from agent_executor._assembly import ENV_ANALYTICS_DIR, config_of, sink_for
from agent_executor._call_limits import CallLimiter, LimitedProvider
from agent_executor._escalation import escalates, fold_escalation
from agent_executor._mcp_tools import execute_with_mcp, require_mcp_sdk
from agent_executor._planning import (
    Rung,
    RunKeywords,
    RunPlan,
    choose_mode,
    model_ladder,
    parameter_failure,
    request_of,
    run_spec,
)
from agent_executor._providers.base import Provider
from agent_executor._providers.profiles import profile_of, with_profile
from agent_executor._providers.resolve import resolve_model
from agent_executor._result import AgentResult, OutputT
from agent_executor._run import RunOutcome, TurnRecorder
from agent_executor._stream_events import StreamEvent
from agent_executor._stream_relay import stream_events
from agent_executor._sync import run_coroutine_sync
from agent_executor._tools import InputTool, build_input_tools

__all__ = ["ENV_ANALYTICS_DIR", "Agent"]

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

logger = logging.getLogger(__name__)


class Agent(Generic[OutputT]):
    """An agent with its contract, ready to run against a model.

    Give a config (from YAML, or an ``AgentConfig``), or build a one-off from its parts:
    ``Agent(output_type=Person, system_prompt="...", model="openai:gpt-4.1-mini")``.

    Args:
        config: The agent's configuration; ``None`` builds one from ``name``,
            ``system_prompt``, ``output_schema`` and ``tools``.
        output_type: A Pydantic class as the agent's output contract, instead of a JSON Schema.
        output_schema: A JSON Schema as the output contract of a one-off agent (no ``config``).
        system_prompt: The instructions of a one-off agent (no ``config``).
        name: The id of a one-off agent (default ``agent``).
        tools: The input tools of a one-off agent, such as ``["fs:read"]``.
        model: A provider, or a model string such as ``openai:gpt-4.1-mini``,
            ``anthropic:claude-sonnet-4-5``, ``ollama:qwen3`` or ``test`` (the offline test
            model); ``None`` uses the agent's own model, else the default model of the provider
            whose API key is in the environment.
        workspace: The directory the input tools may read (default: the current directory).
        analytics: Where events go. Without one, events go to JSONL files under
            ``analytics_dir`` or ``$AGENTSHAPE_ANALYTICS_DIR`` when either is given, and
            nowhere otherwise.
        analytics_dir: A directory for JSONL analytics files (when no ``analytics`` sink).
        env: The environment for defaults and keys (default: ``os.environ``).
        model_tiers: The models to escalate to, in order, instead of the config's.
        registry: The named schema registry a request's ``schema_name`` is looked up in
            (default: ``.agentshape/schemas.db`` under the current directory).
        profile: Provider-profile fields to override for every run, over the config's
            ``llm.profile`` (such as ``{"strict_tools": False}``).
        tracer_provider: An OpenTelemetry tracer provider for this agent's spans; ``None``
            uses the configured global one, and without one no spans are made.
        limiter: Where the calls of runs on a model string (the agent's own or a run's) take
            their slots under the limits: the config's ``llm.limits`` and ``call_limits``
            together (the stricter of each). ``None``: no limits are kept.
        call_limits: Limits for every model this agent calls, beside the config's.

    Raises:
        ConfigError: The config names an unknown tool, gives both an ``output_schema`` and an
            ``output_type``, or both a ``config`` and one-off parts; or lists MCP servers
            without the ``mcp`` SDK installed (``agentshape[mcp]``) or two with one name.
        InvalidSchemaError: The agent's output or parameters schema is invalid.
    """

    def __init__(
        self,
        config: AgentConfig | None = None,
        *,
        output_type: type[OutputT] | None = None,
        output_schema: JsonSchema | None = None,
        system_prompt: str | None = None,
        name: str | None = None,
        tools: Sequence[str] = (),
        model: Provider | str | None = None,
        workspace: str | os.PathLike[str] | None = None,
        analytics: AnalyticsSink | None = None,
        analytics_dir: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        model_tiers: Sequence[Provider | str] | None = None,
        registry: SchemaRegistry | None = None,
        profile: Mapping[str, object] | None = None,
        tracer_provider: TracerProvider | None = None,
        limiter: CallLimiter | None = None,
        call_limits: CallLimits | None = None,
    ) -> None:
        config = config_of(config, output_schema, system_prompt, name, tools)
        if output_type is not None and config.output_schema is not None:
            raise ConfigError(
                f"agent {config.id!r} has an output_schema and an output_type; give one contract"
            )
        self.config = config
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.output_type = output_type
        self.workspace = Path(workspace) if workspace is not None else Path.cwd()
        self.tools: list[InputTool] = build_input_tools(config.tools, workspace=self.workspace)
        require_mcp_sdk(config.mcp_servers, config.id)  # MCP servers start per run (mcp_tools.py)
        self.analytics = sink_for(analytics, analytics_dir, self.env, tracer_provider)
        self.registry = registry if registry is not None else SchemaRegistry()
        self.profile_overrides: dict[str, object] = {**config.profile.fields(), **(profile or {})}
        """Provider-profile fields overridden for every run: the config's, then ``profile=``."""
        apply_profile_overrides(ProviderProfile(), self.profile_overrides, source="profile=")
        self._model = model
        self.limiter = limiter
        self.call_limits = (config.call_limits or CallLimits()).tightest(
            call_limits or CallLimits()
        )
        """The limits a run's calls are held to when a ``limiter`` keeps them."""
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
        self._contract = resolve_contract(
            config, output_type=output_type, inline=None, named=None, lenient=lenient
        )
        self._own: dict[bool, OutputContract | None] = {lenient: self._contract}
        """The agent's own contract by ``lenient_formats``: resolved (hashed, compiled) once."""

    @classmethod
    def from_yaml(
        cls,
        path: str | os.PathLike[str],
        *,
        model: Provider | str | None = None,
        workspace: str | os.PathLike[str] | None = None,
        analytics: AnalyticsSink | None = None,
        analytics_dir: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        model_tiers: Sequence[Provider | str] | None = None,
        registry: SchemaRegistry | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> Agent:
        """Load an agent from an ``agent.yml`` file.

        Args:
            path: The YAML file.
            model: As for :class:`Agent`.
            workspace: As for :class:`Agent`.
            analytics: As for :class:`Agent`.
            analytics_dir: As for :class:`Agent`.
            env: As for :class:`Agent`.
            model_tiers: As for :class:`Agent`.
            registry: As for :class:`Agent`.
            tracer_provider: As for :class:`Agent`.

        Returns:
            The agent.

        Raises:
            ConfigFileError: The file cannot be read or is not a valid agent config.
            InvalidSchemaError: Its output or parameters schema is invalid.
        """
        return Agent(
            load_agent_config(path),
            model=model,
            workspace=workspace,
            analytics=analytics,
            analytics_dir=analytics_dir,
            env=env,
            model_tiers=model_tiers,
            registry=registry,
            tracer_provider=tracer_provider,
        )

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
            ConfigError: The model string is unknown or its key is missing, or no model was
                given anywhere and no API key is set (the message says how to pick one).
        """
        chosen = model if model is not None else self._model
        if chosen is None:
            chosen = self.config.model
        if chosen is None or isinstance(chosen, str):
            return resolve_model(chosen, env=self.env)
        return chosen

    def _limited(self, model: Provider | str | None = None) -> Provider:
        """Return :meth:`provider`, its calls held to the limits when a limiter keeps them."""
        provider = self.provider(model)
        chosen = model if model is not None else self._model
        if (
            self.limiter is None
            or not self.call_limits.any()
            or not (chosen is None or isinstance(chosen, str))
        ):
            return provider
        return LimitedProvider(provider, self.limiter, self.call_limits)

    def _resolve(
        self,
        inline: JsonSchema | None,
        named: tuple[str, JsonSchema] | None,
        *,
        lenient: bool,
    ) -> OutputContract | None:
        """Return the run's contract; the agent's own is resolved once, not hashed every run."""
        if inline is None and named is None and lenient in self._own:
            return self._own[lenient]
        contract = resolve_contract(
            self.config,
            output_type=self.output_type,
            inline=inline,
            named=named,
            lenient=lenient,
        )
        if inline is None and named is None:
            self._own[lenient] = contract
        return contract

    async def run(
        self,
        request: RunRequest | str,
        *,
        parameters: Mapping[str, JsonValue] | None = None,
        output_schema: JsonSchema | None = None,
        schema_name: str | None = None,
        options: RunOptions | None = None,
        messages: Sequence[Message] | None = None,
        model: Provider | str | None = None,
        model_tier: int = 0,
        escalate: bool = True,
        on_turn: TurnRecorder | None = None,
    ) -> AgentResult[OutputT]:
        """Run the agent on a request (or a task) and return its result.

        Args:
            request: A :class:`RunRequest`, or the task alone (the keywords below then fill
                the request).
            parameters: Input values, checked against the agent's ``parameters_schema``.
            output_schema: An inline output schema for this run.
            schema_name: A registered output schema for this run, from :attr:`registry`.
            options: This run's options (over the agent's, over the environment's).
            messages: A previous run's transcript, to resume that conversation.
            model: A provider or model string for this run (tier ``model_tier``).
            model_tier: The tier to start on (``model_tiers[model_tier - 1]`` without ``model``).
            escalate: Escalate a contract failure to the next tier, when there is one.
            on_turn: Awaited with the run's progress before each model call after a finished
                turn (for ``RunRequest.progress``); what it raises ends the run.

        Returns:
            The result: completed with ``result_data`` (and ``output``) or ``result_text``, or
            failed with a typed ``error``.

        Raises:
            ConfigError: Keywords given with a ``RunRequest``; the run's schema would replace the
                agent's own; no model can be resolved; the output mode does not fit a provider;
                or ``model_tier`` is past the last tier.
            SchemaNotFoundError: ``schema_name`` is not in the registry.
            InvalidSchemaError: The inline or named schema is invalid.
        """
        given = dict(parameters=parameters, output_schema=output_schema, schema_name=schema_name)
        fields = {**given, "options": options, "messages": messages}
        plan = self.plan(request_of(request, fields), model, model_tier, escalate=escalate)
        outcomes: list[RunOutcome] = []
        for rung in plan.rungs:
            spec = run_spec(self.config, self.tools, plan, rung, on_turn)
            outcome = await execute_with_mcp(self.config.mcp_servers, spec, self.analytics)
            outcomes.append(outcome)
            if not escalates(outcome.error) or rung is plan.rungs[-1]:
                break
            logger.info(
                "agent %s: escalating from tier %d (%s) after %s",
                self.config.id,
                rung[0],
                outcome.result.model,
                outcome.error.type if outcome.error else "",
            )
        output = cast("OutputT | None", outcomes[-1].output)
        if len(outcomes) > 1:  # one run's RunResult is built if and when it is read
            return AgentResult(fold_escalation([each.result for each in outcomes]), output)
        return AgentResult.deferred(outcomes[0], output)

    def run_sync(
        self, request: RunRequest | str, **keywords: Unpack[RunKeywords]
    ) -> AgentResult[OutputT]:
        """Run the agent from synchronous code; the same arguments and result as :meth:`run`.

        Each calling thread runs its runs on an event loop it keeps (see
        :mod:`agent_executor._sync`); the SDKs' synchronous clients make the model calls, each
        attempt bounded by the run's timeout (:mod:`agent_executor._providers.blocking`).

        Raises:
            ConfigError: As :meth:`run`; also when called from inside a running event loop.
            SchemaNotFoundError: As :meth:`run`.
            InvalidSchemaError: As :meth:`run`.
        """
        return run_coroutine_sync(self.run(request, **keywords), blocking_calls=True)

    def run_stream(
        self, request: RunRequest | str, **keywords: Unpack[RunKeywords]
    ) -> AsyncIterator[StreamEvent[OutputT]]:
        """Run the agent and yield its events as they happen; the same arguments as :meth:`run`.

        ``async for event in agent.run_stream(task)``: text pieces, input-tool calls and
        results, :class:`~agent_executor._stream_events.PartialOutput` values while the output
        is written, a ``RetryStarted`` per re-prompt, and last a ``RunFinished`` whose
        ``result`` is what :meth:`run` returns. Stopping early cancels the run.

        Raises:
            ConfigError: As :meth:`run`, from the first step of the iteration.
            SchemaNotFoundError: As :meth:`run`.
            InvalidSchemaError: As :meth:`run`.
        """
        return stream_events(lambda: self.run(request, **keywords))

    def plan(
        self,
        request: RunRequest,
        model: Provider | str | None = None,
        model_tier: int = 0,
        *,
        escalate: bool = True,
    ) -> RunPlan:
        """Resolve a request before any model call, so every mistake surfaces up front.

        Args:
            request: The run's request.
            model: As for :meth:`run`.
            model_tier: As for :meth:`run`.
            escalate: As for :meth:`run`.

        Returns:
            The plan: merged options, the contract, every tier's provider and output mode,
            and the run parameters' failure when they break the ``parameters_schema``.

        Raises:
            ConfigError: As :meth:`run`.
            SchemaNotFoundError: The request's ``schema_name`` is not in the registry.
            InvalidSchemaError: The request's schema is invalid.
        """
        options = merge_options(options_from_env(self.env), self.config.options, request.options)
        named = None
        if request.schema_name is not None:
            held = request.named_schema
            content = held if held is not None else self.registry.get(request.schema_name)
            named = (request.schema_name, content)
        contract = self._resolve(request.output_schema, named, lenient=options.lenient_formats)
        ladder: list[Rung] = []
        tiers = model_ladder(
            self.config.id, self.model_tiers, self._limited, model, model_tier, escalate=escalate
        )
        for tier, provider in tiers:
            profile = apply_profile_overrides(
                profile_of(provider), self.profile_overrides, source=f"agent {self.id!r} profile"
            )
            mode = choose_mode(options.output_mode, contract, profile)
            if mode == "native" and contract is not None:
                contract.bind(profile).response_format()  # refused here, not mid-run
            ladder.append((tier, with_profile(provider, profile), mode, profile))
        issues = self._params.issues(dict(request.parameters)) if self._params else []
        precheck = parameter_failure(self.config.id, issues, request.parameters)
        return RunPlan(request, options, contract, ladder, precheck)
