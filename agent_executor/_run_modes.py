"""The run loop of each output mode: tool, native and prompted (JSON text), and free text.

Each loop calls the model until an attempt meets the contract (or, for free text, the model
answers without tools), recording every attempt; :func:`~agent_executor._run_state.record_attempt`
ends the run when the re-prompts are spent. Every word the model reads comes from
:mod:`agent_core._prompts`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from agent_contracts._errors import ToolExecutionError
from agent_contracts._events import ToolCallEvent
from agent_contracts._messages import Message, ToolCall, ToolResult
from agent_core._contract import Verdict, whole_reply_issue
from agent_core._output_tool import OUTPUT_TOOL_NAME
from agent_core._prompts import (
    FINAL_ANSWER_NOW,
    FORCE_REMINDER,
    REJECTED_SEE_BELOW,
    RESULT_ACCEPTED,
    bad_tool_arguments,
    duplicate_result_ignored,
    text_retry_prompt,
    tool_arguments_too_large,
    tool_call_not_run,
    tool_not_called_prompt,
    tool_retry_prompt,
    unknown_tool,
    wrong_tool,
)
from agent_executor._model_turns import call_model
from agent_executor._providers.base import ToolChoice
from agent_executor._run_state import (
    RunFailure,
    RunState,
    emit,
    raw_of_calls,
    record_attempt,
)
from agent_executor._tools import InputTool

__all__ = [
    "MAX_INPUT_CALLS_PER_TURN",
    "MAX_INPUT_TOOL_ARGUMENTS",
    "json_text_loop",
    "run_input_tool",
    "text_loop",
    "tool_loop",
]

SUBMIT = OUTPUT_TOOL_NAME

MAX_INPUT_CALLS_PER_TURN = 32
"""Most input-tool calls answered in one model turn; the rest get an error result, so that one
turn of 2,000 reads cannot build a request of hundreds of megabytes."""
MAX_INPUT_TOOL_ARGUMENTS = 64 * 1024
"""Longest arguments (in characters) an input-tool call may have; longer ones are refused."""


async def json_text_loop(state: RunState) -> Verdict:
    """Native and prompted modes: the reply text is judged as JSON; a failure re-prompts."""
    spec = state.spec
    contract = state.bound
    assert contract is not None
    response_format = contract.response_format() if spec.mode == "native" else None
    if spec.mode == "native" and spec.tools and spec.wire.grammar_output and not state.attempts:
        await _input_tool_turns(state)
    while True:
        turn = await call_model(state, [], ToolChoice.auto(), response_format)
        judged = contract.judge_text(
            turn.text,
            extract=spec.options.extract_json,
            strict_json_only=spec.options.strict_json_only,
            cut_off=turn.stop_reason == "max_tokens",
        )
        record_attempt(state, judged, spec.mode, None)
        if judged.ok:
            return judged
        if spec.end_marker and turn.stop_reason == "end_turn":
            state.messages[-1] = _closed_reply(turn.to_message(), spec.end_marker)
        retry = text_retry_prompt(turn.text, judged.errors, schema=contract.schema)
        state.messages.append(Message.user(retry))


def _closed_reply(reply: Message, end_marker: str) -> Message:
    """Return a prompted reply that ended before its token limit, closed with ``end_marker``.

    The server cuts a stop sequence out of the reply it returns. Sent back so, the reply ends
    mid-prompt where the model wrote the stop (a small model that echoes the prompt stops at
    the output section's first fence), and at temperature 0 the re-asked model copies that
    ending and writes on past it to the token limit; a reply closed with the marker the prompt
    asked for is copied up to a stop sequence instead.
    """
    if reply.content.endswith(end_marker):
        return reply
    return reply.model_copy(update={"content": reply.content + end_marker})


async def _input_tool_turns(state: RunState) -> None:
    """Offer the input tools (and no grammar) until the model answers without calling one."""
    # At most max_steps - 1 turns, so the constrained answer keeps its step; its turn offers no
    # tools, as llama.cpp's server refuses a grammar together with tools.
    spec = state.spec
    tools = [tool.definition() for tool in spec.tools]
    while state.steps < spec.max_steps - 1:
        turn = await call_model(state, tools, ToolChoice.auto())
        if not turn.tool_calls:
            state.messages.append(Message.user(FINAL_ANSWER_NOW))
            return
        results = [
            await _run_and_record(state, call, position=index)
            for index, call in enumerate(turn.tool_calls)
        ]
        state.messages.append(Message(role="tool", tool_results=results))


async def text_loop(state: RunState) -> Verdict:
    """Free text: input tools for up to ``max_steps - 1`` turns, then an answer without tools."""
    # The tools stay offered on the last turn (Anthropic refuses tool history without tool
    # definitions), with tool_choice none.
    spec = state.spec
    tools = [tool.definition() for tool in spec.tools]
    while True:
        last = state.steps >= spec.max_steps - 1
        choice = ToolChoice.none() if last else ToolChoice.auto()
        turn = await call_model(state, tools, choice)
        if not turn.tool_calls:
            judged = Verdict(raw=turn.text)
            record_attempt(state, judged, "text", None)
            return judged
        results = [
            await _run_and_record(state, call, position=index)
            for index, call in enumerate(turn.tool_calls)
        ]
        state.messages.append(Message(role="tool", tool_results=results))
        if last:
            raise RunFailure(
                "max_steps_exceeded",
                f"the model still called tools after its {spec.max_steps} steps "
                "instead of answering",
                last_output=turn.text or raw_of_calls(turn.tool_calls),
            )


async def run_input_tool(
    tools: Sequence[InputTool], call: ToolCall, *, position: int = 0
) -> ToolResult:
    """Run one input-tool call and return its result (an error result when it cannot run)."""
    tool = next((t for t in tools if t.name == call.name), None)
    if tool is None:
        content = unknown_tool(call.name, [t.name for t in tools])
        return ToolResult(tool_call_id=call.id, name=call.name, content=content, is_error=True)
    if position >= MAX_INPUT_CALLS_PER_TURN:
        content = tool_call_not_run(MAX_INPUT_CALLS_PER_TURN)
        return ToolResult(tool_call_id=call.id, name=call.name, content=content, is_error=True)
    if len(call.raw_arguments) > MAX_INPUT_TOOL_ARGUMENTS:
        content = tool_arguments_too_large(len(call.raw_arguments), MAX_INPUT_TOOL_ARGUMENTS)
        return ToolResult(tool_call_id=call.id, name=call.name, content=content, is_error=True)
    if call.arguments is None and call.parse_error:
        content = bad_tool_arguments(call.parse_error)
        return ToolResult(tool_call_id=call.id, name=call.name, content=content, is_error=True)
    try:
        content = await tool.call(call.arguments)
    except ToolExecutionError as exc:
        content = exc.format_message()
        return ToolResult(tool_call_id=call.id, name=call.name, content=content, is_error=True)
    return ToolResult(tool_call_id=call.id, name=call.name, content=content)


async def _run_and_record(state: RunState, call: ToolCall, *, position: int) -> ToolResult:
    """Run one input-tool call and emit its ``tool_call`` event (name, time, error or not)."""
    if state.relay is not None:
        state.relay.tool_started(call)
    started = time.perf_counter()
    result = await run_input_tool(state.spec.tools, call, position=position)
    if state.relay is not None:
        state.relay.tool_finished(result)
    emit(
        state,
        ToolCallEvent,
        run_id=state.run_id,
        agent_id=state.spec.agent_id,
        tool=call.name,
        duration_ms=(time.perf_counter() - started) * 1000,
        is_error=result.is_error,
    )
    return result


def _remind(state: RunState, forced: bool) -> None:
    """Before a turn that should force ``submit_result`` on a provider that cannot, say so."""
    # Added only after a round of input-tool results (a rejected call's result and the text-reply
    # reminder already ask for submit_result), so a reminder never repeats itself.
    if not (forced and state.cannot_force):
        return
    last = state.messages[-1]
    if last.role == "tool" and all(r.name != SUBMIT for r in last.tool_results):
        state.messages.append(Message.user(FORCE_REMINDER))


async def tool_loop(state: RunState) -> Verdict:
    """Tool mode: input tools while allowed, ``submit_result`` forced on the last step."""
    spec = state.spec
    contract = state.bound
    assert contract is not None
    submit = contract.tool_definition()
    any_tool = ToolChoice.required() if spec.wire.supports_required_tool_choice else None
    inputs = [tool.definition() for tool in spec.tools]
    # Only a failed attempt leads to another turn: a continued run with attempts is past its
    # input tools, as the run it continues was.
    output_phase = bool(state.attempts)
    while True:
        forced = output_phase or not inputs or state.steps >= spec.max_steps - 1
        tools = [submit] if forced else [*inputs, submit]
        choice = ToolChoice.tool(SUBMIT) if forced else any_tool or ToolChoice.auto()
        _remind(state, forced)
        turn = await call_model(state, tools, choice)
        cut_off = turn.stop_reason == "max_tokens"
        if not turn.tool_calls:
            judged = contract.judge_reply_without_tool(
                turn.text,
                extract=spec.options.extract_json,
                strict_json_only=spec.options.strict_json_only,
                cut_off=cut_off,
            )
            record_attempt(state, judged, "tool", None)
            if judged.ok:
                return judged
            output_phase = True
            state.messages.append(Message.user(tool_not_called_prompt(SUBMIT)))
            continue
        offered = [tool.name for tool in tools]
        accepted = await _answer_calls(state, turn.tool_calls, offered, forced, cut_off)
        if isinstance(accepted, Verdict) and accepted.ok:
            record_attempt(state, accepted, "tool", SUBMIT)
            return accepted
        if accepted is not None:
            called = any(call.name == SUBMIT for call in turn.tool_calls)
            record_attempt(state, accepted, "tool", SUBMIT if called else None)
            output_phase = True


async def _answer_calls(
    state: RunState, calls: Sequence[ToolCall], offered: list[str], forced: bool, cut_off: bool
) -> Verdict | None:
    """Answer one turn's tool calls; return the accepted verdict, the failed one, or ``None``."""
    spec = state.spec
    contract = state.bound
    assert contract is not None
    input_names = {tool.name for tool in spec.tools}
    results: list[ToolResult] = []
    accepted: Verdict | None = None
    verdicts: list[Verdict] = []
    inputs_run = 0
    for call in calls:
        if call.name == SUBMIT:
            judged = contract.judge_call(call, extract=spec.options.extract_json, cut_off=cut_off)
            if judged.ok and accepted is None:
                accepted, content = judged, RESULT_ACCEPTED
            elif judged.ok:
                content = duplicate_result_ignored(SUBMIT)
            else:
                verdicts.append(judged)
                content = tool_retry_prompt(judged.errors, schema=contract.schema)
            results.append(
                ToolResult(
                    tool_call_id=call.id, name=SUBMIT, content=content, is_error=not judged.ok
                )
            )
        elif call.name in input_names and not forced:
            results.append(await _run_and_record(state, call, position=inputs_run))
            inputs_run += 1
        else:
            message = wrong_tool(call.name, offered, known=call.name in input_names)
            verdicts.append(
                Verdict(
                    raw=call.raw_arguments,
                    errors=[whole_reply_issue(message, "tool")],
                    failure="output_tool_not_called",
                )
            )
            results.append(
                ToolResult(tool_call_id=call.id, name=call.name, content=message, is_error=True)
            )
    rejected = [result.content for result in results if result.is_error]
    if accepted is None and verdicts and spec.wire.reprompt_as == "user":
        # The server's chat template drops tool messages: every call is still answered (the
        # APIs require it), and the errors travel in a user message, which every template keeps.
        results = [
            result.model_copy(update={"content": REJECTED_SEE_BELOW}) if result.is_error else result
            for result in results
        ]
        state.messages.append(Message(role="tool", tool_results=results))
        state.messages.append(Message.user("\n\n".join(rejected)))
    else:
        state.messages.append(Message(role="tool", tool_results=results))
    if accepted is not None:
        return accepted
    return Verdict.merge(verdicts) if verdicts else None
