"""Every call the service makes into the library, in one place.

The API checks a request here before storing it (:meth:`Execution.check`), and a runner executes
a claimed run here (:meth:`Execution.run`); nothing else in the service imports ``Agent`` or the
contract resolver. When the library's entry point changes (``Agent.run(RunRequest)``), this module
is the one to change.

A run asked to stream (``RunInput.stream``) streams: :meth:`Execution.run` sets the library's
``STREAM_TO`` to the run's :class:`~agent_coordinator._event_log.EventBuffer`, so its log carries
the events ``Agent.run_stream`` yields beside its analytics events. Only when asked: the model
is then called with its streaming API, which costs more CPU.

Model choice, in order: the request's ``model``, the agent's ``llm.model``, the server's
``--model``; with none of them the library picks from the environment (and, once it stops falling
back to the offline test model, fails the run with a ``config_error`` saying how to pick one).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path

from pydantic import BaseModel, JsonValue, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from agent_contracts._call_limits import CallLimits
from agent_contracts._config import AgentConfig, suggest_key
from agent_contracts._errors import AgentshapeError, SchemaNotFoundError
from agent_contracts._messages import Message
from agent_contracts._runs import (
    JsonSchema,
    RunError,
    RunOptions,
    RunProgress,
    RunRequest,
    RunResult,
    merge_options,
)
from agent_coordinator._errors import (
    BadRequest,
    ErrorDetail,
    NotFound,
    Unprocessable,
    from_library,
)
from agent_coordinator._event_log import EventBuffer
from agent_coordinator._store.records import RunInput
from agent_core._compiled_schema import CompiledSchema, compile_schema
from agent_core._contract import resolve_contract
from agent_core._fleet import Fleet
from agent_core._output_validation import issues_from_pydantic
from agent_core._registry import SchemaRegistry
from agent_executor._agent import Agent
from agent_executor._analytics import AnalyticsSink
from agent_executor._batch import BATCH_RUN_TIMEOUT_S
from agent_executor._batching import Batcher, BatchLedger, BatchProgress
from agent_executor._call_limits import CallLimiter
from agent_executor._providers.base import Provider
from agent_executor._providers.batches import batch_api_for
from agent_executor._providers.resolve import resolve_model
from agent_executor._result import format_child_result
from agent_executor._stream_relay import STREAM_TO
from agent_executor._tools import InputTool

__all__ = ["COORDINATOR_TOOLS", "Execution", "ProgressRecorder", "child_result_text"]

logger = logging.getLogger(__name__)

COORDINATOR_TOOLS: frozenset[str] = frozenset({"agents:start_session"})
"""Tools the service gives agents itself (the library's input tools do not include them)."""


ProgressRecorder = Callable[[dict[str, JsonValue]], Awaitable[None]]
"""Keeps a run's finished turns (the library's ``RunProgress`` as JSON) before its next model
call; awaited by the run."""

_NO_OPTIONS = RunOptions()

_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
"""Reads a session's transcript (JSON) as the library's messages."""

_RUN_EVENTS: ContextVar[EventBuffer | None] = ContextVar("agentshape_run_events", default=None)
"""The event buffer of the run the current task executes."""


class _RunEvents:
    """The analytics sink of the agents the service keeps: events to the current run's buffer."""

    # One agent serves many runs at once, so the run is found through ``_RUN_EVENTS``.

    def __init__(self, log: AnalyticsSink | None) -> None:
        self._log = log

    def emit(self, event: BaseModel) -> None:
        """Pass the event to the current run's buffer and to the log."""
        events = _RUN_EVENTS.get()
        if events is not None:
            events.emit(event)
        if self._log is not None:
            self._log.emit(event)


class Execution:
    """Checks run requests against the fleet and runs them with the library.

    One :class:`Agent` per fleet agent is built on first use and kept, as a library user keeps
    theirs: its tools, contract and compiled schemas are made once, not once per run. A run
    whose agent gets tools of the service's own (``agents:start_session``) builds its own.

    Args:
        fleet: The agents the service runs.
        registry: The named schema registry.
        default_model: The model for runs that name none and whose agent names none.
        env: The environment for API keys and base URLs.
        workspace: The directory the agents' input tools may read.
        analytics: Where every run's analytics events are written as well (the command line's
            JSONL log), or ``None``.
        limiter: Where runs' model calls take their slots under the limits (the store's, shared
            by every runner), or ``None`` to keep no limits.
        call_limits: Limits for every model, beside each agent's ``llm.limits`` (the
            stricter of each wins).
    """

    def __init__(
        self,
        fleet: Fleet,
        registry: SchemaRegistry,
        *,
        default_model: str | None,
        env: Mapping[str, str],
        workspace: Path,
        analytics: AnalyticsSink | None = None,
        limiter: CallLimiter | None = None,
        call_limits: CallLimits | None = None,
    ) -> None:
        self.fleet = fleet
        self.limiter = limiter
        self.call_limits = call_limits
        self.registry = registry
        self.default_model = default_model
        self.env = env
        self.workspace = workspace
        self._agents: dict[str, tuple[AgentConfig, Agent[BaseModel]]] = {}
        # Kept by agent id with the config they were made from: a reloaded fleet's configs are
        # new objects, so a changed agent file is checked afresh (and an id() of a config
        # gone is never mistaken for a new one's).
        self._own_contracts: dict[tuple[str, bool], AgentConfig] = {}
        self._parameter_schemas: dict[str, tuple[AgentConfig, CompiledSchema]] = {}
        self._routed = _RunEvents(analytics)

    def warm(self) -> None:
        """Build the providers of the models runs will use now (importing their SDKs).

        So the first run does not pay for it, and the service's process starts with the SDKs
        it runs on. A model that cannot be resolved (an unknown prefix, a missing key) is left
        for its runs to report.
        """
        models = {self.default_model, *(config.model for config in self.fleet.values())}
        for model in sorted(model for model in models if model):
            with contextlib.suppress(AgentshapeError):
                resolve_model(model, env=self.env)

    def model_problems(self) -> list[tuple[AgentshapeError, list[str]]]:
        """Return why each model the fleet's runs would use cannot be made, with its agents.

        A model whose key is missing fails every run of its agents; the commands say so at
        start rather than at the first run.

        Returns:
            The error each failing model raises, and the sorted names of the agents using it.
        """
        agents_by_model: dict[str | None, list[str]] = {}
        for name, config in self.fleet.items():
            agents_by_model.setdefault(config.model or self.default_model, []).append(name)
        problems = []
        for model, agents in agents_by_model.items():
            try:
                resolve_model(model, env=self.env)
            except AgentshapeError as error:
                problems.append((error, sorted(agents)))
        return problems

    def config(self, agent_name: str) -> AgentConfig:
        """Return an agent's config.

        Raises:
            AgentNotFound: The fleet has no agent of that name (with a did-you-mean).
        """
        try:
            return self.fleet[agent_name]
        except KeyError:
            known = list(self.fleet.ids)
            raise NotFound(
                "AgentNotFound",
                f"no agent {agent_name!r} in {self.fleet.directory}",
                suggestion=suggest_key(agent_name, known) if known else None,
            ) from None

    def check(self, agent_name: str, run: RunInput) -> RunInput:
        """Check a run request before it is stored; return it with a named schema's content.

        The order: the inline schema, then the named one, then the agent's default. A request
        giving both runs on the inline one; the name is kept with the run (unread, unchecked)
        so its result can say it was not used. A request that already holds a named schema's
        content (``named_schema``: a resume continuing its session's contract) keeps it; the
        registry is read only for a name alone.

        Raises:
            AgentNotFound: No such agent (404).
            SchemaNotFound: ``output_schema_name`` is not registered (404).
            InvalidSchema: The inline schema is invalid (400, with the fault's path).
            ConfigError: The request replaces the agent's own contract (400).
            InvalidRequest: The options are not valid ``RunOptions`` (422).
            InputValidationFailed: The parameters break ``parameters_schema`` (422, every one).
        """
        config = self.config(agent_name)
        options = self.options(run.options)
        named: JsonSchema | None = None
        lenient = merge_options(config.options, options).lenient_formats
        own = run.output_schema is None and run.output_schema_name is None
        by_name = run.output_schema is None and run.output_schema_name is not None
        try:
            if by_name and run.output_schema_name is not None:
                named = run.named_schema  # a resume brings the content its session started with
                if named is None:
                    named = self.registry.get(run.output_schema_name)
            if not own or self._own_contracts.get((config.id, lenient)) is not config:
                resolve_contract(
                    config,
                    output_type=None,
                    inline=run.output_schema,
                    named=(run.output_schema_name, named)
                    if by_name and run.output_schema_name is not None and named is not None
                    else None,
                    lenient=lenient,
                )
                if own:  # the fleet's configs are immutable: its own contract stays good
                    self._own_contracts[config.id, lenient] = config
        except AgentshapeError as error:
            raise from_library(error) from error
        self._check_parameters(config, run.parameters)
        if run.named_schema is named:  # most requests: nothing to add
            return run
        return run.model_copy(update={"named_schema": named})

    @staticmethod
    def options(options: Mapping[str, JsonValue]) -> RunOptions:
        """Return a request's ``output_schema_options`` as ``RunOptions``.

        Raises:
            InvalidRequest: An option is unknown or has the wrong type (422, every problem).
        """
        if not options:  # most requests set none; RunOptions is frozen, so one serves all
            return _NO_OPTIONS
        try:
            return RunOptions.model_validate(dict(options))
        except PydanticValidationError as error:
            raise Unprocessable(
                "InvalidRequest",
                "output_schema_options is not valid",
                details=[
                    ErrorDetail(
                        path=issue.path.replace("$", "$.output_schema_options", 1),
                        message=issue.message,
                    )
                    for issue in issues_from_pydantic(error)
                ],
            ) from error

    def check_parameters(self, agent_name: str, parameters: Mapping[str, JsonValue]) -> None:
        """Check parameters against an agent's ``parameters_schema`` (a batch's later items).

        Raises:
            AgentNotFound: No such agent (404).
            InputValidationFailed: The parameters break ``parameters_schema`` (422, every one).
        """
        self._check_parameters(self.config(agent_name), parameters)

    def _check_parameters(self, config: AgentConfig, parameters: Mapping[str, JsonValue]) -> None:
        compiled = self._parameters_schema(config)
        if compiled is None:
            return
        issues = compiled.issues(dict(parameters))
        if issues:
            raise Unprocessable(
                "InputValidationFailed",
                f"the parameters do not match agent {config.id!r}'s parameters_schema; "
                "nothing was run",
                details=[
                    ErrorDetail(path=issue.path, message=issue.message, keyword=issue.keyword)
                    for issue in issues
                ],
            )

    def _parameters_schema(self, config: AgentConfig) -> CompiledSchema | None:
        """Return an agent's compiled ``parameters_schema`` (``None``: it has none).

        Compiled once for each config (a schema's canonical text and hash are not made for
        every request); one is kept for each agent id of the fleet.
        """
        if config.parameters_schema is None:
            return None
        kept = self._parameter_schemas.get(config.id)
        if kept is not None and kept[0] is config:
            return kept[1]
        compiled = compile_schema(
            config.parameters_schema, source=f"agent {config.id!r} parameters"
        )
        if config.id not in self._parameter_schemas:  # an agent removed leaves its entry
            for gone in [name for name in self._parameter_schemas if name not in self.fleet]:
                del self._parameter_schemas[gone]
        self._parameter_schemas[config.id] = (config, compiled)
        return compiled

    def batcher(
        self,
        agent_name: str,
        run: RunInput,
        *,
        ledger: BatchLedger | None = None,
        poll_interval_s: float = 10.0,
        on_progress: Callable[[BatchProgress], None] | None = None,
    ) -> Batcher:
        """Return a batcher for the runs of a batch, over the provider ``run`` would call.

        ``POST /batches`` calls it to check that the batch can run (a batcher with no ledger
        sends nothing); a runner, to run the batch.

        Args:
            agent_name: The agent every item runs.
            run: One item's stored request (its ``model`` picks the provider).
            ledger: Where the provider batches are recorded and found again.
            poll_interval_s: The first wait between two polls of a provider batch.
            on_progress: Called after every poll.

        Raises:
            AgentNotFound: No such agent (404).
            BatchNotSupported: The agent has input tools or MCP servers (each tool turn would
                be another batch of up to 24 hours) (400).
            ConfigError: The model cannot be made, or its provider has no batch API (400).
        """
        config = self.config(agent_name)
        if config.tools or config.mcp_servers:
            raise BadRequest(
                "BatchNotSupported",
                f"agent {agent_name!r} has input tools or MCP servers, and batches run agents "
                "without them (each tool turn would be another batch of up to 24 hours); "
                "start its sessions with POST /runs",
            )
        try:
            live = self._agent(config, ()).provider(self.model_for(config, run))
            api = batch_api_for(live)
        except AgentshapeError as error:
            raise from_library(error) from error
        return Batcher(
            api,
            live,
            ledger=ledger,
            poll_interval_s=poll_interval_s,
            max_poll_interval_s=max(poll_interval_s, 120.0),
            on_progress=on_progress,
        )

    def model_for(self, config: AgentConfig, run: RunInput) -> str | None:
        """Return the model string a run uses, or ``None`` to let the library choose."""
        if run.model:
            return run.model
        if config.model:
            return None
        return self.default_model

    async def run(
        self,
        agent_name: str,
        run: RunInput,
        transcript: Sequence[JsonValue],
        events: EventBuffer,
        *,
        tools: Sequence[InputTool] = (),
        run_id: str | None = None,
        progress: Mapping[str, JsonValue] | None = None,
        on_turn: ProgressRecorder | None = None,
        model: Provider | None = None,
    ) -> RunResult:
        """Execute one run with the library and return its result (a failed one, never raising).

        A run given ``progress`` continues after the turns it holds; ``progress`` that is not
        a ``RunProgress`` of this library (a store written by another version) is set aside
        with a warning and the run starts afresh.

        Args:
            agent_name: The agent.
            run: The stored request.
            transcript: The session's conversation so far (empty for a new session).
            events: Where the library's analytics events go, and the run's stream events
                when ``run.stream`` asks for them (what ``Agent.run_stream`` yields).
            tools: Tools the service adds to the agent's own (``agents:start_session``).
            run_id: The service's run id, carried by the library's result and events.
            progress: The turns an earlier claim of the run recorded, as JSON.
            on_turn: Awaited with the run's progress as JSON before each model call that
                follows a finished turn.
            model: The provider to call instead of the run's model (a batch's batched
                provider); the run's timeout is then a batch's unless its options set one.
        """
        current = _RUN_EVENTS.set(events)
        streamed = STREAM_TO.set(events.stream if run.stream else None)
        try:
            config = self.config(agent_name)
            agent = self._agent(config, tools)
            messages = _MESSAGES.validate_python(transcript)
            options = self.options(run.options)
            if model is not None and options.timeout_s is None:
                options = options.model_copy(update={"timeout_s": BATCH_RUN_TIMEOUT_S})
            request = RunRequest(
                task=run.prompt,
                parameters=dict(run.parameters),
                output_schema=run.output_schema,
                # the inline schema wins over a name given beside it
                schema_name=run.output_schema_name if run.output_schema is None else None,
                # the content fixed when the run was stored: a schema replaced or deleted in
                # the registry since does not change what this session is held to
                named_schema=run.named_schema if run.output_schema is None else None,
                options=options,
                messages=messages,
                run_id=run_id,
                progress=_progress(progress, run_id),
            )
            recorder = _recorder(on_turn) if on_turn is not None else None
            chosen = model if model is not None else self.model_for(config, run)
            # A batch calls one model: a contract failure is not escalated to another tier.
            result = await agent.run(
                request, model=chosen, on_turn=recorder, escalate=model is None
            )
            return result.result
        except (AgentshapeError, NotFound, Unprocessable) as error:
            text = error.format_message() if isinstance(error, AgentshapeError) else str(error)
            kind = "schema_not_found" if isinstance(error, SchemaNotFoundError) else "config_error"
            return _failed(kind, text)
        except Exception as error:  # a library bug must end the run, not leave it to be retried
            logger.exception("run of agent %s failed unexpectedly", agent_name)
            return _failed("internal_error", f"the run failed unexpectedly: {error!r}")
        finally:
            STREAM_TO.reset(streamed)
            _RUN_EVENTS.reset(current)

    def _agent(self, config: AgentConfig, tools: Sequence[InputTool]) -> Agent[BaseModel]:
        """Return the kept agent of ``config``, or a new one for a run with tools of its own."""
        kept = self._agents.get(config.id)
        if kept is not None and kept[0] is config and not tools:
            return kept[1]
        own_tools = [name for name in config.tools if name not in COORDINATOR_TOOLS]
        agent: Agent[BaseModel] = Agent(
            config.model_copy(update={"tools": own_tools}),
            analytics=self._routed,
            env=self.env,
            workspace=self.workspace,
            registry=self.registry,
            limiter=self.limiter,
            call_limits=self.call_limits,
        )
        if tools:
            agent.tools.extend(tools)
        else:
            self._agents[config.id] = (config, agent)
        return agent

    @staticmethod
    def known_tools(library_tools: Collection[str]) -> list[str]:
        """Return the tool names a fleet may list: the library's and the service's."""
        return sorted({*library_tools, *COORDINATOR_TOOLS})


def _progress(progress: Mapping[str, JsonValue] | None, run_id: str | None) -> RunProgress | None:
    """Return stored progress as the library's, or ``None`` (with a warning) when it is not."""
    if progress is None:
        return None
    try:
        return RunProgress.model_validate(dict(progress))
    except PydanticValidationError as error:
        logger.warning(
            "run %s: its recorded turns are unusable, starting afresh: %s", run_id, error
        )
        return None


def _recorder(on_turn: ProgressRecorder) -> Callable[[RunProgress], Awaitable[None]]:
    """Return the library's turn recorder over one that keeps JSON."""

    async def record(progress: RunProgress) -> None:
        await on_turn(progress.model_dump(mode="json"))

    return record


def _failed(kind: str, message: str) -> RunResult:
    error = RunError.model_validate({"type": kind, "message": message})
    return RunResult(status="failed", error=error)


def child_result_text(result: Mapping[str, JsonValue]) -> str:
    """Return a child run's stored result as its parent receives it."""
    text: str = format_child_result(result)
    return text
