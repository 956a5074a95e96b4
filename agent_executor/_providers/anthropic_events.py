"""How a streamed Messages reply's events become the pieces of a reply, and then the whole reply.

:class:`MessageEvents` reads each server-sent event as plain JSON (``message_start``,
``content_block_start``/``_delta``/``_stop``, ``message_delta``, ``message_stop``; ``ping`` and
unknown events are skipped, an ``error`` event raises), hands every text piece and every
``input_json_delta`` of a tool call to the run loop's sink as it comes, and assembles the message
body the same reply has without streaming, so the one reply parser
(in :mod:`agent_executor._providers.anthropic`) reads both: thinking blocks keep their
signatures (a transcript can be resumed), and usage is ``message_start``'s updated by
``message_delta``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import JsonValue

from agent_executor._providers.base import JsonObject, ToolNameMap
from agent_executor._providers.replies import echo_text, model_arguments
from agent_executor._providers.stream_errors import stream_error
from agent_executor._providers.streaming import DeltaSink, TurnDelta

__all__ = ["MessageEvents"]

_TEXT_DELTAS = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}
"""Delta types whose piece is appended to a text field of the block, by the field's name."""


@dataclass(slots=True)
class _Block:
    """One content block being assembled."""

    block: JsonObject
    call_index: int | None = None
    """Its position among the reply's tool calls, for a ``tool_use`` block."""
    arguments: list[str] = field(default_factory=list)
    """The ``input_json_delta`` pieces of a ``tool_use`` block."""
    texts: dict[str, list[str]] = field(default_factory=dict)
    """The pieces of the block's text fields (``text``, ``thinking``, ``signature``), joined
    once at the end."""


@dataclass(slots=True)
class MessageEvents:
    """The events of one streamed message, read as they come.

    Attributes:
        provider: The provider's name, for errors.
        names: Maps the wire's tool names back to the run loop's.
        on_delta: Takes each piece of the reply.
        finished: ``message_stop`` has come.
    """

    provider: str
    names: ToolNameMap
    on_delta: DeltaSink
    finished: bool = False
    _message: JsonObject = field(default_factory=dict)
    _blocks: dict[int, _Block] = field(default_factory=dict)
    _calls: int = 0

    def add(self, event: str | None, data: JsonValue) -> None:
        """Read one event: hand its pieces to the sink and keep them for the whole reply.

        Args:
            event: The event's name (the data's ``type`` says it when the name is missing).
            data: The event's data as parsed.

        Raises:
            ProviderError: The event is an ``error`` event (typed as the same error is before
                a stream starts).
        """
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        kind = kind if isinstance(kind, str) else event
        if kind == "error":
            raise stream_error(self.provider, data)
        if kind == "message_start" and isinstance(message := data.get("message"), dict):
            self._message = dict(message)
        elif kind == "content_block_start" and isinstance(block := data.get("content_block"), dict):
            self._start(self._index(data, new=True), dict(block))
        elif kind == "content_block_delta" and isinstance(delta := data.get("delta"), dict):
            self._delta(self._index(data, new=False), delta)
        elif kind == "message_delta":
            if isinstance(delta := data.get("delta"), dict):
                self._message.update(delta)
            if isinstance(usage := data.get("usage"), dict):
                known = self._message.get("usage")
                merged = dict(known) if isinstance(known, dict) else {}
                merged.update({k: v for k, v in usage.items() if v is not None})
                self._message["usage"] = merged
        elif kind == "message_stop":
            self.finished = True

    def message(self) -> JsonObject:
        """Return the whole reply as the message body a non-streamed call gets."""
        content: list[JsonValue] = []
        for _, part in sorted(self._blocks.items()):
            block = part.block
            for key, texts in part.texts.items():
                known = block.get(key)
                block[key] = (known if isinstance(known, str) else "") + "".join(texts)
            if part.call_index is not None and part.arguments:
                text = "".join(part.arguments)
                value, problem = model_arguments(text) if text.strip() else ({}, None)
                block["input"] = text if problem else value  # unusable text: a failed attempt
            content.append(block)
        message: JsonObject = {"type": "message", "role": "assistant", **self._message}
        message["content"] = content
        return message

    def _index(self, data: dict[str, JsonValue], *, new: bool) -> int:
        """Return the block index an event is about (a missing one: the next or the last)."""
        index = data.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        last = max(self._blocks, default=-1)
        return last + 1 if new else last

    def _start(self, index: int, block: JsonObject) -> None:
        """Open a content block; a tool call is announced to the sink with its id and name."""
        part = self._blocks[index] = _Block(block)
        if block.get("type") == "text" and isinstance(text := block.get("text"), str) and text:
            self.on_delta(TurnDelta(text=text))
        if block.get("type") != "tool_use":
            return
        part.call_index, self._calls = self._calls, self._calls + 1
        whole = block.get("input")  # a server may send the input whole, here
        self.on_delta(self._call_delta(part, echo_text(whole) if whole not in (None, {}) else ""))

    def _delta(self, index: int, delta: dict[str, JsonValue]) -> None:
        """Apply one content block delta and hand its text or arguments piece to the sink."""
        part = self._blocks.get(index)
        if part is None:  # a delta for a block never started: start an empty one
            part = self._blocks[index] = _Block({"type": "text", "text": ""})
        block, kind = part.block, delta.get("type")
        if isinstance(kind, str) and (key := _TEXT_DELTAS.get(kind)):
            piece = delta.get(key)
            if isinstance(piece, str):
                part.texts.setdefault(key, []).append(piece)
                if kind == "text_delta" and piece:
                    self.on_delta(TurnDelta(text=piece))
        elif kind == "input_json_delta" and part.call_index is not None:
            piece = delta.get("partial_json")
            if isinstance(piece, str):
                part.arguments.append(piece)
                if piece:
                    self.on_delta(self._call_delta(part, piece))
        elif kind == "citations_delta" and (citation := delta.get("citation")) is not None:
            known = block.get("citations")
            block["citations"] = [*(known if isinstance(known, list) else []), citation]

    def _call_delta(self, part: _Block, piece: str) -> TurnDelta:
        """Return a tool call's piece, with its id and run-loop name."""
        call_id, name = part.block.get("id"), part.block.get("name")
        return TurnDelta(
            call_index=part.call_index,
            call_id=call_id if isinstance(call_id, str) and call_id else None,
            name=self.names.from_wire(name) if isinstance(name, str) and name else None,
            arguments=piece,
        )
