"""What a run has done so far, and the steps every output mode shares.

:class:`RunState` carries a run's conversation, usage and attempts, and continues an earlier
run's (:meth:`RunState.resume`); :func:`record_attempt` records one attempt and its events and
ends the run with :class:`RunFailure` when the re-prompts are spent. A model call is made in
:mod:`agent_executor._model_turns`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, JsonValue

from agent_contracts._events import AttemptEvent, RetryEvent
from agent_contracts._messages import Message, ToolCall, Usage
from agent_contracts._profiles import ProviderProfile
from agent_contracts._runs import OutputMode, RunError, RunErrorType, RunOptions, RunProgress
from agent_contracts._validation import ValidationIssue
from agent_core._contract import BoundContract, OutputContract, Verdict
from agent_core._output_tool import OUTPUT_TOOL_NAME
from agent_core._prompts import ANSWER_END, ANSWER_STOPS
from agent_executor._analytics import AnalyticsSink
from agent_executor._providers.base import Provider
from agent_executor._providers.blocking import BLOCKING_CALLS, can_block
from agent_executor._providers.profiles import profile_of
from agent_executor._stream_relay import StreamRelay
from agent_executor._tools import InputTool

__all__ = [
    "RunFailure",
    "RunSpec",
    "RunState",
    "TurnRecorder",
    "calls_block",
    "emit",
    "model_name",
    "raw_of_calls",
    "record_attempt",
]

logger = logging.getLogger(__name__)

NO_USAGE = Usage()
"""No tokens and no requests yet (usage is frozen: one instance serves every run)."""

TurnRecorder = Callable[[RunProgress], Awaitable[None]]
"""Keeps a run's progress somewhere that outlives the run's process (see
:mod:`agent_executor._model_turns`)."""


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
        profile: The provider profile with the agent's and caller's overrides applied, decided
            once for the run; ``None`` uses the provider's own.
        run_id: The run's id; ``None`` makes a new one.
        progress: Turns an earlier run of this request finished: the run continues after them.
        on_turn: Awaited with the run's progress before each model call that follows a
            finished turn; what it raises ends the run (an ``Exception`` as ``internal_error``).
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
    profile: ProviderProfile | None = None
    run_id: str | None = None
    progress: RunProgress | None = None
    on_turn: TurnRecorder | None = None

    @property
    def wire(self) -> ProviderProfile:
        """The provider profile this run follows: ``profile``, else the provider's own."""
        return self.profile if self.profile is not None else profile_of(self.provider)

    @property
    def end_marker(self) -> str | None:
        """The marker a prompted answer closes with, also the model calls' stop sequence.

        Only in prompted mode with a contract, and only where the provider takes stop
        sequences; else ``None``.
        """
        if self.contract is None or self.mode != "prompted" or not self.wire.stop_sequences:
            return None
        return ANSWER_END

    @property
    def stops(self) -> list[str]:
        """The model calls' stop sequences: ``ANSWER_STOPS`` with an end marker, else none."""
        return list(ANSWER_STOPS) if self.end_marker else []


class RunFailure(Exception):
    """Ends the run loop with a failed run of the given type.

    Args:
        type_: The run error type.
        message: What went wrong, for a person.
        errors: The problems of the last attempt.
        last_output: The last thing the model produced.
    """

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
            type=type_,
            message=message,
            validation_errors=[str(issue) for issue in errors],
            issues=list(errors),
            last_output=last_output,
        )


@dataclass
class RunState:
    """What the loop has done so far.

    Attributes:
        spec: The run.
        sink: Where analytics events go.
        run_id: The run's id.
        messages: The conversation so far.
        usage: Tokens spent so far.
        attempts: Every attempt so far, as the fields of its ``Attempt`` (checked when the
            run's result is built, if it is).
        steps: Model calls made.
        last_output: The last thing the model produced (kept for a failure).
        last_turn_usage: The last call's usage (an attempt's usage).
        last_latency_ms: The last call's latency (an attempt's latency).
        cannot_force: The provider will not force a tool choice (reminders stand in).
        bound: The output contract bound to the provider's profile, or ``None`` (free text).
        relay: Where a streamed run's events go, or ``None`` when no one streams it.
        opened: How many of ``messages`` the run opened with (system prompt, history, task).
        recorded: Model calls whose turns ``spec.on_turn`` has recorded.
    """

    spec: RunSpec
    sink: AnalyticsSink
    run_id: str
    messages: list[Message]
    usage: Usage = NO_USAGE
    attempts: list[dict[str, object]] = field(default_factory=list)
    steps: int = 0
    last_output: JsonValue = None
    last_turn_usage: Usage = NO_USAGE
    last_latency_ms: float = 0.0
    cannot_force: bool = False
    bound: BoundContract | None = None
    relay: StreamRelay | None = None
    opened: int = 0
    recorded: int = 0

    def resume(self, progress: RunProgress | None) -> None:
        """Continue from an earlier run's finished turns: its conversation, attempts and usage.

        Args:
            progress: The turns to continue after (appended to the opening in ``messages``);
                ``None`` leaves the run as it is.
        """
        if progress is None:
            return
        self.messages.extend(progress.turns)
        self.attempts = [attempt.model_dump() for attempt in progress.attempts]
        self.usage = progress.usage
        self.steps = self.recorded = progress.steps
        self.last_output = progress.last_output
        self.cannot_force = self.cannot_force or progress.cannot_force

    @property
    def retries(self) -> int:
        """Re-prompts made so far (attempts after the first)."""
        return max(0, len(self.attempts) - 1)


def model_name(provider: Provider) -> str:
    """Return the model spec a provider stands for: ``openai:gpt-4.1-mini``, ``test``...

    Returns:
        ``name:model``, or just the name when the model repeats it or is empty.
    """
    name, model = provider.name, provider.model
    return name if not model or model == name else f"{name}:{model}"


def raw_of_calls(calls: Sequence[ToolCall]) -> str:
    """Return the raw arguments of tool calls, one call a line."""
    return "\n".join(call.raw_arguments for call in calls)


def calls_block(state: RunState) -> bool:
    """Tell whether every await of this run completes without suspending (``run_sync``'s case).

    True when the model calls block within the run's deadline (``run_sync`` with a provider that
    has a synchronous path, not streamed) and there are no input tools to run in threads nor a
    turn recorder to await: such a run needs no timeout that cancels an await.
    """
    spec = state.spec
    return (
        state.relay is None
        and not spec.tools
        and spec.on_turn is None
        and BLOCKING_CALLS.get()
        and can_block(spec.provider)
    )


def emit(state: RunState, kind: type[BaseModel], **fields: object) -> None:
    """Send the analytics event ``kind(**fields)``; a failing sink never breaks the run."""
    try:
        state.sink.emit(kind.model_validate(fields))
    except Exception:  # analytics must never break a run
        logger.warning("analytics sink failed; event dropped", exc_info=True)


_FAILURE_WORDS: dict[str, str] = {
    "output_tool_not_called": f"the model did not call {OUTPUT_TOOL_NAME}",
    "no_json_found": "the reply held no JSON value",
    "strict_json_only_violated": "the reply was not JSON alone (strict_json_only)",
}


def record_attempt(
    state: RunState, judged: Verdict, mode: OutputMode, tool_name: str | None
) -> None:
    """Record an attempt and its analytics events.

    Args:
        state: The run.
        judged: The attempt's verdict.
        mode: The output mode of the attempt.
        tool_name: The tool the model answered with, when it called one.

    Raises:
        RunFailure: The attempt failed and the run's re-prompts are spent.
    """
    spec = state.spec
    number = len(state.attempts) + 1
    state.last_output = judged.value if judged.value is not None else judged.raw
    attempt: dict[str, object] = {
        "number": number,
        "mode": mode,
        "raw_output": judged.raw,
        "parsed": judged.value,
        "errors": judged.errors,
        "usage": state.last_turn_usage,
        "latency_ms": state.last_latency_ms,
        "recovered_by_extraction": judged.recovered,
        "tool_name": tool_name,
        "model": model_name(spec.provider),
    }
    state.attempts.append(attempt)  # an Attempt of the run's result, when it is built

    emit(
        state,
        AttemptEvent,
        run_id=state.run_id,
        agent_id=spec.agent_id,
        number=number,
        mode=mode,
        schema_hash=spec.contract.hash if spec.contract else None,
        raw_output=judged.raw,
        errors=judged.errors,
        recovered_by_extraction=judged.recovered,
    )
    if judged.ok:
        return
    if number > spec.options.max_retries:
        what = _FAILURE_WORDS.get(judged.failure, "the output did not match the schema")
        if judged.failure == "output_truncated":
            limit = spec.max_tokens if spec.max_tokens is not None else "the provider's default"
            what = f"the reply was cut off by the token limit (max_tokens: {limit})"
        raise RunFailure(
            judged.failure,
            f"{what} after {number} attempt{'s' if number > 1 else ''}",
            errors=judged.errors,
            last_output=state.last_output,
        )
    emit(
        state,
        RetryEvent,
        run_id=state.run_id,
        agent_id=spec.agent_id,
        number=number,
        reason=judged.failure,
        error_count=len(judged.errors),
        model=model_name(spec.provider),
        model_tier=spec.model_tier,
    )
    if state.relay is not None:
        state.relay.retried(number, judged.failure, [str(issue) for issue in judged.errors])
