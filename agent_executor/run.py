"""The run loop: one async implementation for every output mode.

A run sends the system prompt (with the contract's "Required Output Format" section last) and the
task, then, by mode:

- ``tool``: offers the input tools and ``submit_result``. While input tools are offered the model
  must call some tool; on the last allowed step, or when there are no input tools,
  ``submit_result`` is forced by name. Invalid arguments go back in the same session as an error
  tool result listing every problem; a text reply is answered with a reminder.
- ``native``: asks for the provider's structured output; the reply text is judged as JSON.
- ``prompted``: the schema is in the prompt; JSON is extracted from the reply text.
- ``text``: no contract; the reply text is the result.

Each failed attempt costs one of ``max_retries`` re-prompts; when they are spent the run fails with
a typed error that keeps every problem and the last output. Provider failures, the token budget
and the overall timeout end the run with their own error types. The loop never raises for what a
model or provider did: every such outcome is a ``RunResult``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, JsonValue

from agent_contracts.errors import NoJSONFoundError, ProviderError, ToolExecutionError
from agent_contracts.events import (
    AttemptEvent,
    ModelTurnEvent,
    RetryEvent,
    RunCompletedEvent,
    RunFailedEvent,
    RunStartedEvent,
)
from agent_contracts.messages import Message, ToolCall, ToolResult, Usage
from agent_contracts.runs import (
    RUN_ERROR_TYPES,
    Attempt,
    OutputMode,
    RunError,
    RunErrorType,
    RunOptions,
    RunResult,
)
from agent_contracts.validation import ValidationIssue
from agent_core.extract import extract_json
from agent_core.prompts import (
    PromptMode,
    enriched_system_prompt,
    text_retry_prompt,
    tool_not_called_prompt,
    tool_retry_prompt,
)
from agent_executor.analytics import AnalyticsSink
from agent_executor.contract import OutputContract
from agent_executor.providers.base import (
    ModelTurn,
    ModelTurnRequest,
    Provider,
    ResponseFormat,
    ToolChoice,
    ToolDefinition,
)
from agent_executor.tools import InputTool

__all__ = ["DEFAULT_MAX_STEPS", "RunOutcome", "RunSpec", "execute"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 10
"""Model turns a run with input tools may take when the agent sets no ``limits.maxSteps``."""

SUBMIT = "submit_result"


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs, resolved by the caller (``Agent``).

    Attributes:
        agent_id: The agent's id, for results and analytics.
        provider: The model to call.
        system_prompt: The agent's own system prompt (the contract section is appended here).
        task: The user's task for this run.
        history: An earlier transcript to resume (never mutated).
        contract: The output contract, or ``None`` for a free-text run.
        tools: The agent's input tools.
        options: The merged run options.
        mode: The output mode.
        max_steps: Most model turns before ``submit_result`` is forced.
        max_tokens: Output-token cap per model call.
        temperature: Sampling temperature.
        model_tier: 0 for the agent's own model, ``n`` for an escalation tier.
    """

    agent_id: str
    provider: Provider
    system_prompt: str
    task: str
    history: Sequence[Message]
    contract: OutputContract | None
    tools: Sequence[InputTool]
    options: RunOptions
    mode: OutputMode
    max_steps: int
    max_tokens: int | None = None
    temperature: float | None = None
    model_tier: int = 0


@dataclass
class RunOutcome:
    """A finished run: the serialisable result and the typed output object.

    Attributes:
        result: The run's result.
        output: The output as an instance of the contract's class, for a completed run with one.
    """

    result: RunResult
    output: BaseModel | None = None


class _Failure(Exception):
    """Ends the loop with a failed run of the given type."""

    def __init__(
        self,
        type_: RunErrorType,
        message: str,
        *,
        errors: Sequence[ValidationIssue] = (),
        last_output: JsonValue = None,
    ) -> None:
        super().__init__(message)
        self.error = RunError(
            type=type_, message=message, validation_errors=list(errors), last_output=last_output
        )


@dataclass
class _Judged:
    """One attempt's verdict."""

    raw: str
    value: JsonValue = None
    errors: list[ValidationIssue] = field(default_factory=list)
    recovered: bool = False
    failure: RunErrorType = "output_schema_validation_failed"

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass
class _State:
    """What the loop has done so far."""

    spec: RunSpec
    sink: AnalyticsSink
    run_id: str
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    attempts: list[Attempt] = field(default_factory=list)
    steps: int = 0
    last_output: JsonValue = None
    last_turn_usage: Usage = field(default_factory=Usage)
    last_latency_ms: float = 0.0

    @property
    def retries(self) -> int:
        return max(0, len(self.attempts) - 1)


def _issue(message: str, keyword: str | None = None) -> ValidationIssue:
    return ValidationIssue(path="$", message=message, keyword=keyword)


async def execute(spec: RunSpec, sink: AnalyticsSink) -> RunOutcome:
    """Run one agent conversation to a result; never raises for what a model or provider did.

    Args:
        spec: The resolved run.
        sink: Where analytics events go.

    Returns:
        The outcome: a completed or failed ``RunResult`` and, when completed with a contract,
        the typed output object.
    """
    started = time.perf_counter()
    contract = spec.contract
    system = spec.system_prompt
    if contract is not None:
        prompt_mode: PromptMode = "tool" if spec.mode == "tool" else "prompted"
        system = enriched_system_prompt(system, contract.schema, mode=prompt_mode)
    messages = [Message.system(system)] if system else []
    messages += [m for m in spec.history if m.role != "system"]
    messages.append(Message.user(spec.task))
    state = _State(spec=spec, sink=sink, run_id=uuid.uuid4().hex, messages=messages)
    _emit(
        state,
        RunStartedEvent(
            run_id=state.run_id,
            agent_id=spec.agent_id,
            model=_model_name(spec.provider),
            output_mode=spec.mode if contract is not None else None,
            schema_hash=contract.hash if contract else None,
            schema_name=contract.name if contract else None,
            max_retries=spec.options.max_retries,
        ),
    )
    output: BaseModel | None = None
    text: str | None = None
    data: JsonValue = None
    error: RunError | None = None
    recovered = False
    try:
        loop = _loop(state)
        timeout = spec.options.timeout_s
        judged = await (asyncio.wait_for(loop, timeout) if timeout else loop)
        if contract is None:
            text = judged.raw
        else:
            data, recovered = judged.value, judged.recovered
            output = contract.build(data)
    except _Failure as failure:
        error = failure.error
    except TimeoutError:
        error = RunError(
            type="run_timeout",
            message=f"the run took longer than its timeout of {spec.options.timeout_s} s",
            last_output=state.last_output,
        )
    except ProviderError as exc:
        kind = exc.kind if exc.kind in RUN_ERROR_TYPES else "provider_error"
        error = RunError(
            type=kind,
            message=exc.format_message(),
            last_output=state.last_output,
        )
    except Exception as exc:  # a bug of ours or of a user's FunctionModel: still a result
        logger.exception("run %s of agent %s failed unexpectedly", state.run_id, spec.agent_id)
        error = RunError(
            type="internal_error",
            message=f"unexpected {type(exc).__name__}: {exc}",
            last_output=state.last_output,
        )
    duration_ms = (time.perf_counter() - started) * 1000
    result = RunResult(
        status="failed" if error else "completed",
        result_text=text,
        result_data=data,
        error=error,
        attempts=state.attempts,
        retries=state.retries,
        usage=state.usage,
        duration_ms=duration_ms,
        transcript=state.messages,
        run_id=state.run_id,
        agent_id=spec.agent_id,
        model=_model_name(spec.provider),
        model_tier=spec.model_tier,
        schema_hash=contract.hash if contract else None,
        schema_name=contract.name if contract else None,
        schema_source=contract.source if contract else None,
        recovered_by_extraction=recovered,
    )
    if error is None:
        _emit(
            state,
            RunCompletedEvent(
                run_id=state.run_id,
                agent_id=spec.agent_id,
                usage=state.usage,
                duration_ms=duration_ms,
                attempts=len(state.attempts),
                retries=state.retries,
                model=result.model,
                model_tier=spec.model_tier,
                recovered_by_extraction=recovered,
            ),
        )
    else:
        _emit(
            state,
            RunFailedEvent(
                run_id=state.run_id,
                agent_id=spec.agent_id,
                error_type=error.type,
                message=error.message,
                usage=state.usage,
                duration_ms=duration_ms,
                attempts=len(state.attempts),
                retries=state.retries,
            ),
        )
    return RunOutcome(result=result, output=output)


def _model_name(provider: Provider) -> str:
    return f"{provider.name}:{provider.model}" if provider.model else provider.name


def _emit(state: _State, event: BaseModel) -> None:
    try:
        state.sink.emit(event)
    except Exception:  # analytics must never break a run
        logger.warning("analytics sink failed; event dropped", exc_info=True)


async def _loop(state: _State) -> _Judged:
    mode = state.spec.mode
    if state.spec.contract is None:
        return await _text_loop(state)
    if mode == "tool":
        return await _tool_loop(state)
    return await _json_text_loop(state)


async def _call(
    state: _State,
    tools: list[ToolDefinition],
    choice: ToolChoice,
    response_format: ResponseFormat | None = None,
) -> ModelTurn:
    spec = state.spec
    request = ModelTurnRequest(
        messages=list(state.messages),
        tools=tools,
        tool_choice=choice if tools else ToolChoice.auto(),
        max_tokens=spec.max_tokens,
        temperature=spec.temperature,
        response_format=response_format,
    )
    turn = await spec.provider.request(request)
    state.steps += 1
    state.usage = state.usage + turn.usage
    state.last_turn_usage = turn.usage
    state.last_latency_ms = turn.latency_ms
    state.messages.append(turn.to_message())
    _emit(
        state,
        ModelTurnEvent(
            run_id=state.run_id,
            agent_id=spec.agent_id,
            step=state.steps,
            model=_model_name(spec.provider),
            usage=turn.usage,
            latency_ms=turn.latency_ms,
            stop_reason=turn.raw_stop_reason or turn.stop_reason,
            tool_calls=[call.name for call in turn.tool_calls],
        ),
    )
    budget = spec.options.token_budget
    if budget is not None and state.usage.total_tokens > budget:
        raise _Failure(
            "token_budget_exceeded",
            f"the run spent {state.usage.total_tokens} tokens, over its budget of {budget}",
            last_output=turn.text or _raw_of_calls(turn.tool_calls) or state.last_output,
        )
    return turn


def _raw_of_calls(calls: Sequence[ToolCall]) -> str:
    return "\n".join(call.raw_arguments for call in calls)


def _record(state: _State, judged: _Judged, mode: OutputMode, tool_name: str | None) -> None:
    """Record an attempt and its analytics event; raise ``_Failure`` when retries are spent."""
    spec = state.spec
    number = len(state.attempts) + 1
    state.last_output = judged.value if judged.value is not None else judged.raw
    state.attempts.append(
        Attempt(
            number=number,
            mode=mode,
            raw_output=judged.raw,
            parsed=judged.value,
            errors=judged.errors,
            usage=state.last_turn_usage,
            latency_ms=state.last_latency_ms,
            recovered_by_extraction=judged.recovered,
            tool_name=tool_name,
            model=_model_name(spec.provider),
        )
    )
    _emit(
        state,
        AttemptEvent(
            run_id=state.run_id,
            agent_id=spec.agent_id,
            number=number,
            mode=mode,
            schema_hash=spec.contract.hash if spec.contract else None,
            raw_output=judged.raw,
            errors=judged.errors,
            recovered_by_extraction=judged.recovered,
        ),
    )
    if judged.ok:
        return
    if number > spec.options.max_retries:
        what = (
            "the model did not call submit_result"
            if judged.failure == "output_tool_not_called"
            else "the output did not match the schema"
        )
        raise _Failure(
            judged.failure,
            f"{what} after {number} attempt{'s' if number > 1 else ''}",
            errors=judged.errors,
            last_output=state.last_output,
        )
    _emit(
        state,
        RetryEvent(
            run_id=state.run_id,
            agent_id=spec.agent_id,
            number=number,
            reason=judged.failure,
            error_count=len(judged.errors),
            model=_model_name(spec.provider),
            model_tier=spec.model_tier,
        ),
    )


def _judge_value(contract: OutputContract, raw: str, value: JsonValue) -> _Judged:
    return _Judged(raw=raw, value=value, errors=contract.issues(value))


def _judge_text(state: _State, text: str, turn: ModelTurn) -> _Judged:
    """Judge a reply whose text should hold the JSON value (native, prompted, quirky servers)."""
    contract = state.spec.contract
    assert contract is not None
    options = state.spec.options
    if turn.stop_reason == "max_tokens":
        return _Judged(
            raw=text,
            errors=[_issue("the reply was cut off by the max_tokens limit before it was complete")],
        )
    try:
        value = json.loads(text)
        recovered = False
    except ValueError:
        if not options.extract_json and not options.strict_json_only:
            return _Judged(raw=text, errors=[_issue("the reply is not valid JSON")])
        try:
            value = extract_json(
                text,
                contract.schema,
                strict_json_only=options.strict_json_only,
                is_valid=lambda v: not contract.issues(v),
            )
        except NoJSONFoundError as exc:
            return _Judged(raw=text, errors=[_issue(exc.message)])
        recovered = True
    judged = _judge_value(contract, text, value)
    judged.recovered = recovered
    return judged


async def _json_text_loop(state: _State) -> _Judged:
    spec = state.spec
    contract = spec.contract
    assert contract is not None
    response_format = None
    if spec.mode == "native":
        response_format = contract.response_format(spec.provider.name)
    while True:
        turn = await _call(state, [], ToolChoice.auto(), response_format)
        text = turn.text
        judged = _judge_text(state, text, turn)
        if judged.ok and response_format is not None:
            judged.value = contract.unwrap(judged.value, spec.provider.name)
            judged.errors = contract.issues(judged.value)
        _record(state, judged, spec.mode, None)
        if judged.ok:
            return judged
        state.messages.append(Message.user(text_retry_prompt(text, judged.errors)))


async def _text_loop(state: _State) -> _Judged:
    spec = state.spec
    tools = [tool.definition() for tool in spec.tools]
    while True:
        if state.steps >= spec.max_steps and tools:
            tools = []  # out of steps: ask for the answer without tools
        turn = await _call(state, tools, ToolChoice.auto())
        if not turn.tool_calls:
            return _Judged(raw=turn.text)
        results = [await _run_input_tool(spec.tools, call) for call in turn.tool_calls]
        state.messages.append(Message(role="tool", tool_results=results))


async def _run_input_tool(tools: Sequence[InputTool], call: ToolCall) -> ToolResult:
    tool = next((t for t in tools if t.name == call.name), None)
    if tool is None:
        return ToolResult(
            tool_call_id=call.id,
            name=call.name,
            content=f"there is no tool named {call.name!r}",
            is_error=True,
        )
    if call.arguments is None and call.parse_error:
        return ToolResult(
            tool_call_id=call.id,
            name=call.name,
            content=f"the arguments are not valid JSON: {call.parse_error}",
            is_error=True,
        )
    try:
        content = await tool.call(call.arguments)
    except ToolExecutionError as exc:
        content = exc.format_message()
        return ToolResult(tool_call_id=call.id, name=call.name, content=content, is_error=True)
    return ToolResult(tool_call_id=call.id, name=call.name, content=content)


def _judge_call(state: _State, call: ToolCall) -> _Judged:
    """Judge one ``submit_result`` call's arguments against the contract."""
    contract = state.spec.contract
    assert contract is not None
    dialect = state.spec.provider.name
    raw = call.raw_arguments or json.dumps(call.arguments)
    if call.arguments is None and call.parse_error is not None:
        if state.spec.options.extract_json:
            try:
                value = extract_json(raw, None)
            except NoJSONFoundError:
                value = None
            if value is not None:
                value = contract.unwrap(value, dialect)
                judged = _judge_value(contract, raw, value)
                if judged.ok:
                    judged.recovered = True
                    return judged
        return _Judged(
            raw=raw,
            errors=[_issue(f"the arguments are not valid JSON: {call.parse_error}")],
        )
    value = contract.unwrap(call.arguments, dialect)
    return _judge_value(contract, raw, value)


async def _tool_loop(state: _State) -> _Judged:
    spec = state.spec
    contract = spec.contract
    assert contract is not None
    submit = contract.tool_definition(spec.provider.name)
    inputs = [tool.definition() for tool in spec.tools]
    input_names = {tool.name for tool in spec.tools}
    output_phase = False
    while True:
        forced = output_phase or not inputs or state.steps >= spec.max_steps - 1
        tools = [submit] if forced else [*inputs, submit]
        choice = ToolChoice.tool(SUBMIT) if forced else ToolChoice.required()
        turn = await _call(state, tools, choice)
        submits = [call for call in turn.tool_calls if call.name == SUBMIT]
        if not turn.tool_calls:
            judged = _reply_without_tool(state, turn)
            _record(state, judged, "tool", None)
            if judged.ok:
                return judged
            output_phase = True
            state.messages.append(Message.user(tool_not_called_prompt(SUBMIT)))
            continue
        results: list[ToolResult] = []
        accepted: _Judged | None = None
        verdicts: list[_Judged] = []
        for call in turn.tool_calls:
            if call.name == SUBMIT:
                judged = _judge_call(state, call)
                verdicts.append(judged)
                if judged.ok and accepted is None:
                    accepted = judged
                    content = "Result accepted."
                elif judged.ok:
                    content = "An earlier submit_result call in this turn was already accepted."
                else:
                    content = tool_retry_prompt(judged.errors)
                results.append(
                    ToolResult(
                        tool_call_id=call.id, name=SUBMIT, content=content, is_error=not judged.ok
                    )
                )
            elif call.name in input_names and not forced:
                results.append(await _run_input_tool(spec.tools, call))
            else:
                offered = ", ".join(t.name for t in tools)
                message = (
                    f"{call.name!r} is not a tool you can call now; call {SUBMIT} "
                    f"with your final result (tools offered: {offered})"
                )
                verdicts.append(
                    _Judged(
                        raw=call.raw_arguments,
                        errors=[_issue(message, "tool")],
                        failure="output_tool_not_called",
                    )
                )
                results.append(
                    ToolResult(tool_call_id=call.id, name=call.name, content=message, is_error=True)
                )
        state.messages.append(Message(role="tool", tool_results=results))
        if accepted is not None:
            _record(state, accepted, "tool", SUBMIT)
            return accepted
        if verdicts:
            _record(state, _merge(verdicts), "tool", SUBMIT if submits else None)
            output_phase = True


def _merge(verdicts: list[_Judged]) -> _Judged:
    """Fold one turn's failed verdicts into one attempt, each error stated once."""
    if len(verdicts) == 1:
        return verdicts[0]
    errors: list[ValidationIssue] = []
    for verdict in verdicts:
        errors += [e for e in verdict.errors if e not in errors]
    failure: RunErrorType = (
        "output_tool_not_called"
        if all(v.failure == "output_tool_not_called" for v in verdicts)
        else "output_schema_validation_failed"
    )
    last = verdicts[-1]
    return _Judged(raw=last.raw, value=last.value, errors=errors, failure=failure)


def _reply_without_tool(state: _State, turn: ModelTurn) -> _Judged:
    """Judge a reply that called no tool: a text answer may still hold valid JSON."""
    text = turn.text
    if state.spec.options.extract_json and text.strip():
        judged = _judge_text(state, text, turn)
        if judged.ok:
            return judged
    reason = "the reply was empty" if not text.strip() else "the model answered in text"
    if turn.stop_reason == "max_tokens":
        reason = "the reply was cut off by the max_tokens limit"
    return _Judged(
        raw=text,
        errors=[_issue(f"{reason} instead of calling {SUBMIT}", "tool")],
        failure="output_tool_not_called",
    )
