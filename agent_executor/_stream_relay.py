"""From a run's inner steps to the events ``Agent.run_stream`` yields.

The run loop is one implementation whether a caller streams or not: ``run_stream`` sets
:data:`STREAM_TO` for the run's task, :func:`~agent_executor._run.execute` then gives the run a
:class:`StreamRelay`, and the loop hands it each model reply's pieces (``call_model`` streams
through :func:`~agent_executor._providers.streaming.stream_turn`), each input-tool call and each
re-prompt. A run no one streams has no relay and pays nothing.

:func:`stream_events` is ``run_stream`` itself: it starts the run as its own task with
:data:`STREAM_TO` set for it, yields each event the run hands over as soon as it is handed, and
ends with :class:`~agent_executor._stream_events.RunFinished` holding the run's ``AgentResult``,
the very object ``Agent.run`` would have returned. A caller that stops iterating early
(``break``, an exception, ``aclose()``) cancels the run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextvars import ContextVar

from pydantic import BaseModel, JsonValue

from agent_contracts._messages import ToolCall, ToolResult
from agent_contracts._runs import OutputMode
from agent_core._contract import OutputContract
from agent_core._output_tool import OUTPUT_TOOL_NAME
from agent_core._partial_output import PartialJson, partial_value
from agent_executor._providers.streaming import TurnDelta
from agent_executor._result import AgentResult, OutputT
from agent_executor._stream_events import (
    PartialOutput,
    RetryStarted,
    RunEvent,
    RunFinished,
    RunStarted,
    StreamEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)

__all__ = ["STREAM_TO", "StreamRelay", "relay_for", "stream_events"]

EventSink = Callable[[RunEvent], None]
"""Takes each event of a streamed run; it must not block (it runs on the event loop)."""

STREAM_TO: ContextVar[EventSink | None] = ContextVar("agentshape_stream_to", default=None)
"""Where the events of the runs started in this context go (``None``: not streamed)."""


class StreamRelay:
    """One run's events: its reply pieces, tool calls, partial outputs and re-prompts.

    Args:
        put: Where the events go.
        contract: The run's output contract, or ``None`` for free text.
        mode: The run's output mode.
    """

    def __init__(self, put: EventSink, contract: OutputContract | None, mode: OutputMode) -> None:
        self.put = put
        self.step = 0
        self.attempt = 1
        typed = contract is not None and not hasattr(contract.model, "agentshape_compiled")
        self._typed: type[BaseModel] | None = contract.model if typed and contract else None
        self._mode: OutputMode | None = mode if contract is not None else None
        self._names: dict[int, str | None] = {}
        self._outputs: dict[int, PartialJson] = {}
        self._text: PartialJson | None = None
        self._writing: int | None = None

    def started(self, run_id: str, agent_id: str, model: str, tier: int) -> None:
        """Say a run began (each escalation tier's run too)."""
        self.put(RunStarted(run_id, agent_id, model, tier, self._mode))

    def turn(self) -> Callable[[TurnDelta], None]:
        """Begin a model turn; return what takes its reply's pieces."""
        self.step += 1
        self._names.clear()
        self._outputs.clear()
        self._writing = None
        json_text = self._mode in ("native", "prompted")
        self._text = PartialJson(text_reply=self._mode == "prompted") if json_text else None
        return self._piece

    def _piece(self, delta: TurnDelta) -> None:
        """Take one piece of the reply: text, or a tool call's arguments."""
        if delta.call_index is None:
            if delta.text:
                self.put(TextDelta(delta.text, self.step))
                if self._text is not None and self._text.feed(delta.text):
                    self._partial(self._text.value)
            return
        index = delta.call_index
        if delta.name is not None or index not in self._names:
            self._names[index] = delta.name or self._names.get(index)
        if self._mode != "tool" or self._names[index] != OUTPUT_TOOL_NAME:
            return
        if self._writing is None:
            self._writing = index  # the first submit_result call of a turn is the output shown
        if index != self._writing:
            return
        parser = self._outputs.setdefault(index, PartialJson())
        if parser.feed(delta.arguments):
            self._partial(parser.value)

    def turn_ended(self) -> None:
        """End a model turn: what is left of its output is read whole."""
        if self._text is not None and self._text.feed("", final=True):
            self._partial(self._text.value)
        if self._writing is not None:
            parser = self._outputs[self._writing]
            if parser.feed("", final=True):
                self._partial(parser.value)

    def _partial(self, data: JsonValue) -> None:
        if self._typed is None:
            self.put(PartialOutput(data, data, self.attempt))
            return
        value = partial_value(self._typed, data)
        if value is not None:
            self.put(PartialOutput(value, data, self.attempt))

    def tool_started(self, call: ToolCall) -> None:
        """Say an input tool is being run."""
        self.put(ToolCallStarted(call.id, call.name, call.arguments, self.step))

    def tool_finished(self, result: ToolResult) -> None:
        """Say what an input tool answered."""
        self.put(
            ToolCallFinished(
                result.tool_call_id, result.name, result.content, result.is_error, self.step
            )
        )

    def retried(self, attempt: int, reason: str, errors: Sequence[str]) -> None:
        """Say an attempt failed and the model is asked again."""
        self.attempt = attempt + 1
        self.put(RetryStarted(attempt, reason, list(errors)))


def relay_for(contract: OutputContract | None, mode: OutputMode) -> StreamRelay | None:
    """Return a relay for a run started in this context, or ``None`` when no one streams it.

    Args:
        contract: The run's output contract, or ``None``.
        mode: The run's output mode.
    """
    put = STREAM_TO.get()
    return None if put is None else StreamRelay(put, contract, mode)


async def stream_events(
    start: Callable[[], Awaitable[AgentResult[OutputT]]],
) -> AsyncIterator[StreamEvent[OutputT]]:
    """Run ``start()`` streamed: yield its events as they come, then ``RunFinished``.

    Args:
        start: Starts the run (``lambda: agent.run(request)``).

    Yields:
        The run's events, :class:`RunFinished` last.

    Raises:
        ConfigError: As ``Agent.run`` raises it, before any event (a developer's mistake).
        SchemaNotFoundError: As ``Agent.run``.
        InvalidSchemaError: As ``Agent.run``.
    """
    queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
    token = STREAM_TO.set(queue.put_nowait)
    try:
        task = asyncio.ensure_future(start())  # the task's context holds STREAM_TO
    finally:
        STREAM_TO.reset(token)
    task.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        while (event := await queue.get()) is not None:
            yield event
        yield RunFinished(task.result())
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
