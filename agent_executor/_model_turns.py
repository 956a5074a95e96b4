"""A run's model turns: each model call made and accounted, each finished turn recorded first.

:func:`call_model` makes one model call (usage, the budget, a ``model_turn`` event). A run given
an ``on_turn`` recorder hands it the run's :class:`~agent_contracts._runs.RunProgress`
(:func:`progress_of`) before each model call that follows a finished turn, and waits for it. So
once the recorder has returned, a later failure of the run's process costs a continued run
(``RunRequest.progress``) none of those turns' model calls: only the turn in flight (its call
sent, or its reply in but its tool results not yet recorded with it) is sent again.
"""

from __future__ import annotations

from pydantic import JsonValue

from agent_contracts._events import ModelTurnEvent
from agent_contracts._runs import Attempt, RunProgress
from agent_executor._providers.base import (
    ModelTurn,
    ModelTurnRequest,
    ResponseFormat,
    ToolChoice,
    ToolDefinition,
)
from agent_executor._providers.blocking import BLOCKING_CALLS, blocking_turn, can_block
from agent_executor._providers.streaming import stream_turn
from agent_executor._run_state import RunFailure, RunState, emit, model_name, raw_of_calls
from agent_executor._tools.base import RUN_DEADLINE

__all__ = ["call_model", "progress_of"]


def progress_of(state: RunState) -> RunProgress:
    """Return what the run has done so far, for a later run to continue from.

    Args:
        state: The run, between two model calls.
    """
    return RunProgress(
        turns=state.messages[state.opened :],
        attempts=[Attempt.model_validate(attempt) for attempt in state.attempts],
        usage=state.usage,
        steps=state.steps,
        last_output=state.last_output,
        cannot_force=state.cannot_force,
        model_tier=state.spec.model_tier,
    )


async def call_model(
    state: RunState,
    tools: list[ToolDefinition],
    choice: ToolChoice,
    response_format: ResponseFormat | None = None,
) -> ModelTurn:
    """Make one model call on the conversation so far and append the reply to it.

    Args:
        state: The run.
        tools: The tools offered on this turn.
        choice: The tool choice (ignored when no tools are offered).
        response_format: Native structured output, when asked for.

    Returns:
        The reply.

    Raises:
        RunFailure: The run's token budget is spent.
        ProviderError: The provider failed.
        Exception: What ``spec.on_turn`` raised.
    """
    spec = state.spec
    if spec.on_turn is not None and state.steps > state.recorded:
        # Before the call, not after the reply: the turn is finished only once its tool
        # results (and any re-prompt) are in the conversation.
        await spec.on_turn(progress_of(state))
        state.recorded = state.steps
    request = ModelTurnRequest(
        messages=list(state.messages),
        tools=tools,
        tool_choice=choice if tools else ToolChoice.auto(),
        max_tokens=spec.max_tokens,
        temperature=spec.temperature,
        frequency_penalty=spec.wire.reask_frequency_penalty if _reasking(state) else None,
        response_format=response_format,
        stop=spec.stops,
        timeout_s=spec.options.request_timeout_s,
        answer_schema=_answer_schema(state),
    )
    relay = state.relay
    if relay is None and BLOCKING_CALLS.get() and can_block(spec.provider):
        turn = blocking_turn(spec.provider, request, RUN_DEADLINE.get())
    elif relay is None:
        turn = await spec.provider.request(request)
    else:
        turn = await stream_turn(spec.provider, request, relay.turn())
        relay.turn_ended()
    state.steps += 1
    state.usage = state.usage + turn.usage
    state.last_turn_usage = turn.usage
    state.last_latency_ms = turn.latency_ms
    state.cannot_force = state.cannot_force or turn.tool_choice_downgraded
    state.messages.append(turn.to_message())
    emit(
        state,
        ModelTurnEvent,
        run_id=state.run_id,
        agent_id=spec.agent_id,
        step=state.steps,
        model=model_name(spec.provider),
        usage=turn.usage,
        latency_ms=turn.latency_ms,
        stop_reason=turn.raw_stop_reason or turn.stop_reason,
        tool_calls=[call.name for call in turn.tool_calls],
        **({"batch_id": turn.batch_id} if turn.batch_id else {}),  # live turns' lines unchanged
    )
    budget = spec.options.token_budget
    if budget is not None and state.usage.total_tokens > budget:
        raise RunFailure(
            "token_budget_exceeded",
            f"the run spent {state.usage.total_tokens} tokens, over its budget of {budget}",
            last_output=turn.text or raw_of_calls(turn.tool_calls) or state.last_output,
        )
    return turn


def _reasking(state: RunState) -> bool:
    """Whether the next call follows a failed attempt (a re-ask)."""
    return bool(state.attempts) and bool(state.attempts[-1]["errors"])


def _answer_schema(state: RunState) -> JsonValue:
    """Return the schema a text answer is judged against, or ``None`` in tool mode."""
    contract = state.spec.contract
    if contract is None or state.spec.mode == "tool":
        return None
    return contract.schema
