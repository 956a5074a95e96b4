"""The run loop: one async implementation for every output mode.

A run sends the system prompt (with the contract's "Required Output Format" section last) and the
task, then, by mode:

- ``tool``: offers the input tools and ``submit_result``. While input tools are offered the model
  must call some tool; on the last allowed step, or when there are no input tools (and after a
  failed attempt), ``submit_result`` is forced by name. Invalid arguments go back in the same
  session as an error tool result listing every problem; a text reply is answered with a reminder.
  A provider that cannot force a tool (Anthropic with extended thinking) gets a written reminder
  instead, and a reply without ``submit_result`` still counts as a failed attempt.
- ``native``: asks for the provider's structured output; the reply text is judged as JSON.
- ``prompted``: the schema is in the prompt; JSON is extracted from the reply text.
- ``text``: no contract; the reply text is the result. Input tools may be used for
  ``max_steps - 1`` turns; the last turn is asked to answer without tools.

Each failed attempt costs one of ``max_retries`` re-prompts; when they are spent the run fails with
a typed error that keeps every problem and the last output. Provider failures, the token budget
and the overall timeout end the run with their own error types. The loop never raises for what a
model or provider did: every such outcome is a ``RunResult``. Every tool call in the transcript
is answered (OpenAI refuses a conversation with an unanswered one), so a result's transcript can
always be resumed.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, JsonValue

from agent_contracts.errors import (
    AgentshapeError,
    ConfigError,
    ProviderError,
    ToolExecutionError,
)
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
from agent_core.prompts import (
    PromptMode,
    enriched_system_prompt,
    text_retry_prompt,
    tool_not_called_prompt,
    tool_retry_prompt,
)
from agent_executor.analytics import AnalyticsSink
from agent_executor.contract import OutputContract, Verdict
from agent_executor.providers.base import (
    ModelTurn,
    ModelTurnRequest,
    Provider,
    ResponseFormat,
    ToolChoice,
    ToolDefinition,
)
from agent_executor.tools import InputTool

__all__ = [
    "DEFAULT_MAX_STEPS",
    "FORCE_REMINDER",
    "TOOLS_REQUIRED_REMINDER",
    "RunOutcome",
    "RunSpec",
    "execute",
    "model_name",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 10
"""Model turns a run with input tools may take when the agent sets no ``limits.maxSteps``."""

SUBMIT = "submit_result"

FORCE_REMINDER = (
    "<output-tool-required>\n"
    f"Call the `{SUBMIT}` tool now, with your final result as its arguments. A reply without a "
    f"`{SUBMIT}` call is not accepted.\n"
    "</output-tool-required>"
)
"""The reminder sent before a turn that should force ``submit_result`` when the provider cannot
force a tool (Anthropic with extended thinking)."""

TOOLS_REQUIRED_REMINDER = (
    "<tool-call-required>\n"
    "Answer only by calling tools: use the other tools to look things up, and hand in your final "
    f"result by calling `{SUBMIT}`. A reply in plain text is not accepted.\n"
    "</tool-call-required>"
)
"""The reminder added to the task when the provider cannot be made to call a tool."""

_UNANSWERED = "not run: the conversation ended before this call was answered"


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
        max_steps: Most model turns before ``submit_result`` is forced (text mode: before the
            model is asked to answer without tools).
        max_tokens: Output-token cap per model call.
        temperature: Sampling temperature.
        model_tier: 0 for the agent's own model, ``n`` for an escalation tier.
        precheck: A failure found before any model call (run parameters that break the
            agent's ``parameters_schema``): the run ends with it at once, events included.
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
    precheck: RunError | None = None


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
    cannot_force: bool = False

    @property
    def retries(self) -> int:
        return max(0, len(self.attempts) - 1)


def _issue(message: str, keyword: str | None = None) -> ValidationIssue:
    return ValidationIssue(path="$", message=message, keyword=keyword)


def model_name(provider: Provider) -> str:
    """Return the model spec a provider stands for: ``openai:gpt-4.1-mini``, ``test``...

    Args:
        provider: The provider.

    Returns:
        ``name:model``, or just the name when the model repeats it or is empty.
    """
    name, model = provider.name, provider.model
    return name if not model or model == name else f"{name}:{model}"


def _cannot_force(provider: Provider) -> bool:
    """Whether the provider is known up front to downgrade a forced tool choice to ``auto``."""
    return getattr(provider, "thinking_budget", None) is not None


_SYSTEM_PROMPTS: dict[tuple[str, str, PromptMode], tuple[JsonValue, str]] = {}


def _system_prompt(system: str, contract: OutputContract, mode: PromptMode) -> str:
    """Return ``system`` with the contract's output section, rendered once per prompt and schema.

    Rendering dumps the whole schema, about 0.1 ms a run; contracts are built once per schema,
    so the rendering is kept and used again for the same schema object.
    """
    key = (system, contract.hash, mode)
    cached = _SYSTEM_PROMPTS.get(key)
    if cached is not None and cached[0] is contract.schema:
        return cached[1]
    prompt = enriched_system_prompt(system, contract.schema, mode=mode)
    if len(_SYSTEM_PROMPTS) >= 256:
        _SYSTEM_PROMPTS.clear()
    _SYSTEM_PROMPTS[key] = (contract.schema, prompt)
    return prompt


async def execute(spec: RunSpec, sink: AnalyticsSink) -> RunOutcome:
    """Run one agent conversation to a result; never raises for what a model or provider did.

    Args:
        spec: The resolved run.
        sink: Where analytics events go (a failing sink never breaks the run).

    Returns:
        The outcome: a completed or failed ``RunResult`` and, when completed with a contract,
        the typed output object.
    """
    started = time.perf_counter()
    contract = spec.contract
    system = spec.system_prompt
    if contract is not None:
        prompt_mode: PromptMode = "tool" if spec.mode == "tool" else "prompted"
        system = _system_prompt(system, contract, prompt_mode)
    cannot_force = spec.mode == "tool" and contract is not None and _cannot_force(spec.provider)
    task = spec.task
    if cannot_force:
        task += f"\n\n{TOOLS_REQUIRED_REMINDER if spec.tools else FORCE_REMINDER}"
    messages = [Message.system(system)] if system else []
    messages += _answered([m for m in spec.history if m.role != "system"])
    messages.append(Message.user(task))
    state = _State(
        spec=spec,
        sink=sink,
        run_id=uuid.uuid4().hex,
        messages=messages,
        cannot_force=cannot_force,
    )
    name = model_name(spec.provider)
    _emit(
        state,
        RunStartedEvent(
            run_id=state.run_id,
            agent_id=spec.agent_id,
            model=name,
            output_mode=spec.mode if contract is not None else None,
            schema_hash=contract.hash if contract else None,
            schema_name=contract.name if contract else None,
            max_retries=spec.options.max_retries,
        ),
    )
    output: BaseModel | None = None
    text: str | None = None
    data: JsonValue = None
    error: RunError | None = spec.precheck
    recovered = False
    try:
        if error is None:
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
    except ConfigError as exc:  # e.g. a FunctionModel that returned something unusable
        error = RunError(
            type="config_error", message=exc.format_message(), last_output=state.last_output
        )
    except Exception as exc:  # a bug of ours or of a user's FunctionModel: still a result
        logger.exception("run %s of agent %s failed unexpectedly", state.run_id, spec.agent_id)
        detail = exc.format_message() if isinstance(exc, AgentshapeError) else str(exc)
        error = RunError(
            type="internal_error",
            message=f"unexpected {type(exc).__name__}: {detail}",
            last_output=state.last_output,
        )
    if error is not None:
        text, data, output, recovered = None, None, None, False
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
        transcript=_answered(state.messages),
        run_id=state.run_id,
        agent_id=spec.agent_id,
        model=name,
        model_tier=spec.model_tier,
        schema_hash=contract.hash if contract else None,
        schema_name=contract.name if contract else None,
        schema_source=contract.source if contract else None,
        recovered_by_extraction=recovered,
    )
    ending = {
        "run_id": state.run_id,
        "agent_id": spec.agent_id,
        "usage": state.usage,
        "duration_ms": duration_ms,
        "attempts": len(state.attempts),
        "retries": state.retries,
    }
    if error is None:
        _emit(
            state,
            RunCompletedEvent.model_validate(
                {
                    **ending,
                    "model": name,
                    "model_tier": spec.model_tier,
                    "recovered_by_extraction": recovered,
                }
            ),
        )
    else:
        _emit(
            state,
            RunFailedEvent.model_validate(
                {**ending, "error_type": error.type, "message": error.message}
            ),
        )
    return RunOutcome(result=result, output=output)


def _answered(messages: list[Message]) -> list[Message]:
    """Return ``messages`` with an error result for every tool call left unanswered.

    A run cut short (timeout, token budget, provider error) can end right after the model's
    tool calls; OpenAI refuses a conversation that goes on from there, so the missing results
    are filled in, each right after its turn.
    """
    out: list[Message] = []
    pending: list[ToolCall] = []

    def close() -> None:
        if pending:
            results = [
                ToolResult(tool_call_id=c.id, name=c.name, content=_UNANSWERED, is_error=True)
                for c in pending
            ]
            out.append(Message(role="tool", tool_results=results))
            pending.clear()

    for message in messages:
        if message.role == "tool":
            answered = {r.tool_call_id for r in message.tool_results}
            pending[:] = [c for c in pending if c.id not in answered]
            out.append(message)
            continue
        close()
        out.append(message)
        if message.role == "assistant":
            pending.extend(message.tool_calls)
    close()
    return out


def _emit(state: _State, event: BaseModel) -> None:
    try:
        state.sink.emit(event)
    except Exception:  # analytics must never break a run
        logger.warning("analytics sink failed; event dropped", exc_info=True)


async def _loop(state: _State) -> Verdict:
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
    state.cannot_force = state.cannot_force or turn.tool_choice_downgraded
    state.messages.append(turn.to_message())
    _emit(
        state,
        ModelTurnEvent(
            run_id=state.run_id,
            agent_id=spec.agent_id,
            step=state.steps,
            model=model_name(spec.provider),
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


def _record(state: _State, judged: Verdict, mode: OutputMode, tool_name: str | None) -> None:
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
            model=model_name(spec.provider),
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
        what = _FAILURE_WORDS.get(judged.failure, "the output did not match the schema")
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
            model=model_name(spec.provider),
            model_tier=spec.model_tier,
        ),
    )


_FAILURE_WORDS: dict[str, str] = {
    "output_tool_not_called": f"the model did not call {SUBMIT}",
    "no_json_found": "the reply held no JSON value",
    "strict_json_only_violated": "the reply was not JSON alone (strict_json_only)",
}


async def _json_text_loop(state: _State) -> Verdict:
    spec = state.spec
    contract = spec.contract
    assert contract is not None
    response_format = None
    if spec.mode == "native":
        response_format = contract.response_format(spec.provider.name)
    while True:
        turn = await _call(state, [], ToolChoice.auto(), response_format)
        judged = contract.judge_text(
            turn.text,
            spec.provider.name,
            extract=spec.options.extract_json,
            strict_json_only=spec.options.strict_json_only,
            cut_off=turn.stop_reason == "max_tokens",
        )
        _record(state, judged, spec.mode, None)
        if judged.ok:
            return judged
        retry = text_retry_prompt(turn.text, judged.errors, schema=contract.schema)
        state.messages.append(Message.user(retry))


async def _text_loop(state: _State) -> Verdict:
    """Free text: input tools for up to ``max_steps - 1`` turns, then an answer without tools.

    The tools stay offered on the last turn (Anthropic refuses tool history without tool
    definitions) with ``tool_choice`` ``none``; a model that still calls tools then fails the
    run with ``max_steps_exceeded``.
    """
    spec = state.spec
    tools = [tool.definition() for tool in spec.tools]
    while True:
        last = state.steps >= spec.max_steps - 1
        choice = ToolChoice.none() if last else ToolChoice.auto()
        turn = await _call(state, tools, choice)
        if not turn.tool_calls:
            judged = Verdict(raw=turn.text)
            _record(state, judged, "text", None)
            return judged
        results = [await _run_input_tool(spec.tools, call) for call in turn.tool_calls]
        state.messages.append(Message(role="tool", tool_results=results))
        if last:
            raise _Failure(
                "max_steps_exceeded",
                f"the model still called tools after its {spec.max_steps} steps "
                "instead of answering",
                last_output=turn.text or _raw_of_calls(turn.tool_calls),
            )


async def _run_input_tool(tools: Sequence[InputTool], call: ToolCall) -> ToolResult:
    tool = next((t for t in tools if t.name == call.name), None)
    if tool is None:
        offered = ", ".join(t.name for t in tools) or "none"
        return ToolResult(
            tool_call_id=call.id,
            name=call.name,
            content=f"there is no tool named {call.name!r} (tools: {offered})",
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


def _remind(state: _State, forced: bool) -> None:
    """Before a turn that should force ``submit_result`` on a provider that cannot, say so.

    Added after a round of input-tool results (a rejected call's result and the text-reply
    reminder already ask for ``submit_result``), so a reminder never repeats itself.
    """
    if not (forced and state.cannot_force):
        return
    last = state.messages[-1]
    if last.role == "tool" and all(r.name != SUBMIT for r in last.tool_results):
        state.messages.append(Message.user(FORCE_REMINDER))


async def _tool_loop(state: _State) -> Verdict:
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
        _remind(state, forced)
        turn = await _call(state, tools, choice)
        cut_off = turn.stop_reason == "max_tokens"
        if not turn.tool_calls:
            judged = contract.judge_reply_without_tool(
                turn.text,
                spec.provider.name,
                extract=spec.options.extract_json,
                strict_json_only=spec.options.strict_json_only,
                cut_off=cut_off,
            )
            _record(state, judged, "tool", None)
            if judged.ok:
                return judged
            output_phase = True
            state.messages.append(Message.user(tool_not_called_prompt(SUBMIT)))
            continue
        results: list[ToolResult] = []
        accepted: Verdict | None = None
        verdicts: list[Verdict] = []
        for call in turn.tool_calls:
            if call.name == SUBMIT:
                judged = contract.judge_call(
                    call, spec.provider.name, extract=spec.options.extract_json, cut_off=cut_off
                )
                if judged.ok and accepted is None:
                    accepted = judged
                    content = "Result accepted."
                elif judged.ok:
                    content = f"Ignored: an earlier {SUBMIT} call in this turn was accepted."
                else:
                    verdicts.append(judged)
                    content = tool_retry_prompt(judged.errors, schema=contract.schema)
                results.append(
                    ToolResult(
                        tool_call_id=call.id, name=SUBMIT, content=content, is_error=not judged.ok
                    )
                )
            elif call.name in input_names and not forced:
                results.append(await _run_input_tool(spec.tools, call))
            else:
                offered = ", ".join(t.name for t in tools)
                what = "is not one of your tools"
                if call.name in input_names:
                    what = "is not a tool you can call now"
                message = (
                    f"{call.name!r} {what}; call {SUBMIT} with your final result "
                    f"(tools offered: {offered})"
                )
                verdicts.append(
                    Verdict(
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
            called = any(call.name == SUBMIT for call in turn.tool_calls)
            _record(state, Verdict.merge(verdicts), "tool", SUBMIT if called else None)
            output_phase = True
