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

Each failed attempt costs one of ``max_retries`` re-prompts; then the run fails with a typed error
that keeps every problem and the last output; provider failures, the token budget and the timeout
end it with their own error types. The loop never raises for what a model or provider
did: every such outcome is a ``RunResult``, whose transcript can always be resumed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Callable

from pydantic import BaseModel, JsonValue

from agent_contracts._errors import AgentshapeError, ConfigError, ProviderError
from agent_contracts._events import RunCompletedEvent, RunFailedEvent, RunStartedEvent
from agent_contracts._json_data import PARSED_JSON
from agent_contracts._messages import Message, ToolCall, ToolResult
from agent_contracts._runs import RUN_ERROR_TYPES, RunError, RunResult
from agent_core._caches import SchemaCache, schema_cache
from agent_core._contract import BoundContract, Verdict
from agent_core._prompts import (
    FORCE_REMINDER,
    TOOLS_REQUIRED_REMINDER,
    UNANSWERED_TOOL_CALL,
    PromptMode,
    enriched_system_prompt,
)
from agent_executor._analytics import AnalyticsSink
from agent_executor._providers.base import ModelTurnRequest, ToolChoice
from agent_executor._run_modes import json_text_loop, text_loop, tool_loop
from agent_executor._run_state import (
    RunFailure,
    RunSpec,
    RunState,
    TurnRecorder,
    calls_block,
    emit,
    model_name,
)
from agent_executor._stream_relay import relay_for
from agent_executor._tools.base import RUN_DEADLINE

__all__ = [
    "DEFAULT_MAX_STEPS",
    "DEFAULT_RUN_TIMEOUT_S",
    "FORCE_REMINDER",
    "TOOLS_REQUIRED_REMINDER",
    "RunOutcome",
    "RunSpec",
    "TurnRecorder",
    "execute",
    "first_request",
    "model_name",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 10
"""Model turns a run with input tools may take when the agent sets no ``limits.maxSteps``."""

DEFAULT_RUN_TIMEOUT_S = 300.0
"""Most seconds a run may take when neither the run nor the agent sets a timeout (or three
model requests' worth, when ``request_timeout_s`` allows a request longer than 100 s)."""


class RunOutcome:
    """A finished run: its result (built when first read) and the typed output object."""

    # Building the RunResult costs about as much as reading the model's reply: a caller that reads
    # only the output, or only whether the run failed, never pays it.

    __slots__ = ("_build", "_result", "error", "output")

    def __init__(
        self,
        result: RunResult | Callable[[], RunResult],
        output: BaseModel | None = None,
        *,
        error: RunError | None = None,
    ) -> None:
        self._result: RunResult | None = None
        self._build: Callable[[], RunResult] | None = None
        if isinstance(result, RunResult):
            self._result, error = result, result.error
        else:
            self._build = result
        self.error = error
        self.output = output

    @property
    def result(self) -> RunResult:
        """The run's result (built on first read)."""
        if self._result is None:
            assert self._build is not None
            self._result = self._build()
        return self._result


_SYSTEM_PROMPTS: SchemaCache[
    tuple[str, str, PromptMode, str, str | None, bool], tuple[JsonValue, str]
]
_SYSTEM_PROMPTS = schema_cache("agent_executor.system_prompts", 256)
# A tool's parameters carry every constraint but the ones a strict dialect sent weaker
# ("changed": minItems 3 as 1, oneOf as anyOf). A merged allOf and a respelled pattern mean
# what they meant, and a "dropped" keyword had no effect on validation either.
_SAME_MEANING = frozenset({"allOf", "pattern"})


def _system_prompt(
    system: str, bound: BoundContract, mode: PromptMode, end_marker: str | None, example: bool
) -> str:
    """Return ``system`` with the contract's output section, rendered once per prompt and schema."""
    # Rendering walks the whole schema, and contracts are built once per schema: the rendering is
    # kept for the same schema object.
    contract = bound.contract
    key = (system, contract.hash, mode, bound.dialect, end_marker, example)
    cached = _SYSTEM_PROMPTS.get(key)
    if cached is not None and cached[0] is contract.schema:
        return cached[1]
    not_in_tool: list[str] = []
    if mode == "tool":
        notes = contract.tool.report(bound.dialect).notes
        not_in_tool = [
            f"{note.path}: {note.keyword} ({note.detail})"
            for note in notes
            if note.action == "changed" and note.keyword not in _SAME_MEANING
        ]
    prompt = enriched_system_prompt(
        system,
        contract.schema,
        mode=mode,
        not_in_tool=not_in_tool,
        end_marker=end_marker,
        example=example,
    )
    _SYSTEM_PROMPTS.put(key, (contract.schema, prompt))
    return prompt


def _opening(spec: RunSpec) -> tuple[list[Message], bool]:
    """Return the conversation a run opens with, and whether reminders stand in for forcing."""
    contract = spec.contract
    system = spec.system_prompt
    if contract is not None:
        prompt_mode: PromptMode = "tool" if spec.mode == "tool" else "prompted"
        # Native mode's answer is decoded under a grammar or schema: only prompted mode's
        # model must be shown what JSON of the contract looks like.
        example = spec.mode == "prompted"
        system = _system_prompt(
            system, contract.bind(spec.wire), prompt_mode, spec.end_marker, example
        )
    cannot_force = spec.mode == "tool" and contract is not None and not spec.wire.can_force_tool
    task = spec.task
    if cannot_force:
        task += f"\n\n{TOOLS_REQUIRED_REMINDER if spec.tools else FORCE_REMINDER}"
    messages = [_system_message(system)] if system else []
    if spec.history:
        messages += _answered([m for m in spec.history if m.role != "system"])
    messages.append(Message.user(task))
    return messages, cannot_force


@functools.lru_cache(maxsize=256)
def _system_message(text: str) -> Message:
    """Return the system message of ``text``, made once per prompt (messages are frozen)."""
    return Message.system(text)


def first_request(spec: RunSpec) -> ModelTurnRequest:
    """Return the first model call a run of ``spec`` makes, exactly as the run loop builds it."""
    messages, _ = _opening(spec)
    contract = spec.contract.bind(spec.wire) if spec.contract else None
    inputs = [tool.definition() for tool in spec.tools]
    if contract is None or spec.mode != "tool":
        # Input tools run before a grammar-constrained answer (see run_modes.json_text_loop).
        tools_first = spec.mode == "native" and spec.wire.grammar_output and spec.max_steps > 1
        tools = inputs if contract is None or tools_first else []
        response_format = None
        if contract is not None and spec.mode == "native" and not tools:
            response_format = contract.response_format()
        return ModelTurnRequest(
            messages=messages,
            tools=tools,
            tool_choice=ToolChoice.none() if tools and spec.max_steps <= 1 else ToolChoice.auto(),
            max_tokens=spec.max_tokens,
            temperature=spec.temperature,
            response_format=response_format,
            stop=spec.stops,
            answer_schema=contract.schema if contract is not None else None,
        )
    submit = contract.tool_definition()
    forced = not inputs or spec.max_steps <= 1
    if not forced and not spec.wire.supports_required_tool_choice:
        any_tool = ToolChoice.auto()
    else:
        any_tool = ToolChoice.required()
    return ModelTurnRequest(
        messages=messages,
        tools=[submit] if forced else [*inputs, submit],
        tool_choice=ToolChoice.tool(submit.name) if forced else any_tool,
        max_tokens=spec.max_tokens,
        temperature=spec.temperature,
    )


async def execute(spec: RunSpec, sink: AnalyticsSink) -> RunOutcome:
    """Run one agent conversation to a result; never raises for what a model or provider did."""
    started = time.perf_counter()
    contract = spec.contract
    messages, cannot_force = _opening(spec)
    run_id = spec.run_id or uuid.uuid4().hex
    state = RunState(spec, sink, run_id, messages, cannot_force=cannot_force, opened=len(messages))
    state.resume(spec.progress)
    state.bound = contract.bind(spec.wire) if contract else None
    state.relay = relay_for(contract, spec.mode)
    if state.relay is not None:
        state.relay.started(run_id, spec.agent_id, model_name(spec.provider), spec.model_tier)
    emit(
        state,
        RunStartedEvent,
        run_id=state.run_id,
        agent_id=spec.agent_id,
        model=model_name(spec.provider),
        output_mode=spec.mode if contract is not None else None,
        schema_hash=contract.hash if contract else None,
        schema_name=contract.name if contract else None,
        max_retries=spec.options.max_retries,
    )
    judged: Verdict | None = None
    output: BaseModel | None = None
    error = spec.precheck
    if error is None:
        judged, output, error = await _settle(state)
    duration_ms = (time.perf_counter() - started) * 1000
    _emit_ending(state, judged, error, duration_ms)
    build = functools.partial(_result, state, judged, error, duration_ms)
    return RunOutcome(build, output, error=error)


_Settled = tuple[Verdict | None, BaseModel | None, RunError | None]


async def _settle(state: RunState) -> _Settled:
    """Run the mode's loop within the timeout; return the verdict and output, or the error."""
    spec, contract = state.spec, state.spec.contract
    loop = text_loop if contract is None else tool_loop if spec.mode == "tool" else json_text_loop
    request = spec.options.request_timeout_s or 0
    timeout = spec.options.timeout_s or max(DEFAULT_RUN_TIMEOUT_S, 3 * request)
    # The input tools run in threads a timeout cannot stop: they read the deadline and stop.
    deadline = RUN_DEADLINE.set(time.monotonic() + timeout)
    try:
        if calls_block(state):
            # Every call blocks and is bounded by the deadline (run_sync): there is no await
            # for a timeout to cancel, so none is armed.
            judged = await loop(state)
        else:
            # In the caller's task (asyncio.timeout), not a task of its own (wait_for): no
            # task to create and wake per run.
            async with asyncio.timeout(timeout):
                judged = await loop(state)
        return judged, contract.build(judged.value) if contract else None, None
    except RunFailure as failure:
        return None, None, failure.error
    except TimeoutError:
        kind, message = "run_timeout", f"the run took longer than its timeout of {timeout} s"
    except ProviderError as exc:
        kind = exc.kind if exc.kind in RUN_ERROR_TYPES else "provider_error"
        message = exc.format_message()
    except ConfigError as exc:  # e.g. a FunctionModel that returned something unusable
        kind, message = "config_error", exc.format_message()
    except Exception as exc:  # a bug of ours or of a user's FunctionModel: still a result
        logger.exception("run %s of agent %s failed unexpectedly", state.run_id, spec.agent_id)
        detail = exc.format_message() if isinstance(exc, AgentshapeError) else str(exc)
        kind, message = "internal_error", f"unexpected {type(exc).__name__}: {detail}"
    finally:
        RUN_DEADLINE.reset(deadline)
    error = {"type": kind, "message": message, "last_output": state.last_output}
    return None, None, RunError.model_validate(error)


def _result(
    state: RunState, judged: Verdict | None, error: RunError | None, duration_ms: float
) -> RunResult:
    """Return the run's result from its state and how it ended (once the run has ended)."""
    spec, contract = state.spec, state.spec.contract
    fields = dict(
        status="failed" if error else "completed",
        result_text=judged.raw if judged is not None and contract is None else None,
        result_data=judged.value if judged is not None and contract is not None else None,
        error=error,
        attempts=state.attempts,
        retries=state.retries,
        usage=state.usage,
        duration_ms=duration_ms,
        transcript=_answered(state.messages),
        run_id=state.run_id,
        agent_id=spec.agent_id,
        model=model_name(spec.provider),
        model_tier=spec.model_tier,
        schema_hash=contract.hash if contract else None,
        schema_name=contract.name if contract else None,
        schema_source=contract.source if contract else None,
        recovered_by_extraction=judged.recovered if judged is not None else False,
    )
    # The values were read by a JSON parser: checked once, not walked again (json_data.py).
    return RunResult.model_validate(fields, context=PARSED_JSON)


def _emit_ending(
    state: RunState, judged: Verdict | None, error: RunError | None, duration_ms: float
) -> None:
    """Send ``run_completed`` or ``run_failed``, with the fields both share."""
    spec = state.spec
    ending = {
        "run_id": state.run_id,
        "agent_id": spec.agent_id,
        "usage": state.usage,
        "duration_ms": duration_ms,
        "attempts": len(state.attempts),
        "retries": state.retries,
    }
    if error is None:
        completed = {
            "model": model_name(spec.provider),
            "model_tier": spec.model_tier,
            "recovered_by_extraction": judged.recovered if judged is not None else False,
        }
        emit(state, RunCompletedEvent, **ending, **completed)
    else:
        failed = {"error_type": error.type, "message": error.message}
        emit(state, RunFailedEvent, **ending, **failed)


def _answered(messages: list[Message]) -> list[Message]:
    """Return ``messages`` with an error result for every tool call left unanswered."""
    # OpenAI refuses a conversation that goes on after unanswered tool calls, which a run cut short
    # can end with.
    out: list[Message] = []
    pending: list[ToolCall] = []

    def close() -> None:
        if pending:
            results = [
                ToolResult(
                    tool_call_id=c.id, name=c.name, content=UNANSWERED_TOOL_CALL, is_error=True
                )
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
