"""How streamed Chat Completions chunks become the pieces of a reply, and then the whole reply.

:class:`CompletionChunks` reads each ``chat.completion.chunk`` as plain JSON, hands every text
piece and every piece of a tool call's arguments to the run loop's sink as it comes, and at the
end assembles the ``chat.completion`` body the same reply would have had without streaming, so
the one reply parser (:mod:`agent_executor._providers.openai_replies`) reads both. An event that
is the one before with only its arguments string changed is read from its bytes, unparsed (see
:meth:`CompletionChunks.read`).

Compatible servers stream loosely, and every quirk is read as the non-streamed reply's would be:
a tool call's arguments whole in one chunk (or as an object, not a string), tool-call entries
without ``index`` or ``id`` (a new id starts a new call; pieces with neither continue the last
one), ``content`` as a list of parts, ``usage`` in the last chunk, in every chunk or nowhere, and
``finish_reason`` on a chunk that still carries a delta.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import cast

import pydantic_core
from pydantic import JsonValue

from agent_executor._providers.base import JsonObject, ToolNameMap
from agent_executor._providers.openai_replies import _content_text
from agent_executor._providers.replies import echo_text
from agent_executor._providers.sse import parse_data
from agent_executor._providers.streaming import DeltaSink, TurnDelta

__all__ = ["CompletionChunks"]


@dataclass(slots=True)
class _Call:
    """One tool call being assembled."""

    index: int | None
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    """The arguments text's pieces (joined once, at the end)."""
    whole: JsonValue = None
    """Arguments sent as a JSON value instead of text (a compatible server's quirk)."""
    announced: bool = False
    """A piece naming this call went to the sink already."""


@dataclass(slots=True)
class CompletionChunks:
    """The chunks of one streamed chat completion, read as they come.

    Attributes:
        names: Maps the wire's tool names back to the run loop's.
        on_delta: Takes each piece of the reply.
        finish_reason: The choice's ``finish_reason`` once a chunk has sent it.
    """

    names: ToolNameMap
    on_delta: DeltaSink
    finish_reason: str | None = None
    _head: JsonObject = field(default_factory=dict)
    _text: list[str] = field(default_factory=list)
    _refusal: list[str] = field(default_factory=list)
    _calls: list[_Call] = field(default_factory=list)
    _usage: JsonValue = None
    _unsent: list[str] = field(default_factory=list)
    """Pieces of the last call's arguments read by the fast path, not handed over yet."""
    _shape: tuple[bytes, bytes] | None = None
    """The bytes around the arguments string of the last piece read the fast way, while no
    other chunk has come since: a chunk with the same bytes around its string is one more."""
    _went: bool = False
    """Whether the last chunk :meth:`add` read was one more piece (:meth:`_went_on`)."""

    def read(self, datas: list[bytes], check: Callable[[JsonValue], None]) -> None:
        """Read the data of a batch of events (one network read) in order, then :meth:`flush`.

        An event whose bytes are those of the last argument piece with only the string in
        between changed is read as one more piece without parsing it (most of a tool call's
        events, each otherwise a JSON parse); the others are parsed and read by :meth:`add`.

        Args:
            datas: Each event's data (see :func:`~agent_executor._providers.sse.sse_data`).
            check: Called with each parsed chunk before it is read (to raise on an error).

        Raises:
            MalformedEvent: An event's data is not JSON.
        """
        slow: list[bytes] = []
        at, count = 0, len(datas)
        while at < count:
            if self._shape is not None:
                at = self._read_pieces(datas, at)
                if at == count:
                    break
                self._shape = None  # datas[at] is not one more piece
            data = datas[at]
            at += 1
            slow.append(data)
            if b'"arguments"' in data:  # read now: it may be a piece to take the shape of
                self._add_parsed(slow, check)
                slow = []
        if slow:
            self._add_parsed(slow, check)
        self.flush()

    def _read_pieces(self, datas: list[bytes], at: int) -> int:
        """Take the pieces of the events from ``at`` on that have the last piece's shape."""
        assert self._shape is not None
        before, after = self._shape
        fixed = len(before) + len(after)
        contents: list[bytes] = []
        for data in islice(datas, at, None):
            if len(data) < fixed or not (data.startswith(before) and data.endswith(after)):
                break
            contents.append(data[len(before) : len(data) - len(after)])
        pieces = _pieces(contents)
        if pieces is None:  # one is not a whole string: up to it, one by one
            pieces = []
            for content in contents:
                piece = _piece(content)
                if piece is None:
                    break
                pieces.append(piece)
        self._take([piece for piece in pieces if piece])
        return at + len(pieces)

    def _add_parsed(self, datas: list[bytes], check: Callable[[JsonValue], None]) -> None:
        for chunk in parse_data(datas):
            check(chunk)
            self.add(chunk)
        if self._went and self._calls and self._calls[-1].arguments:
            self._shape = _shape_of(datas[-1], self._calls[-1].arguments[-1])

    def _take(self, pieces: list[str]) -> None:
        if pieces:
            self._calls[-1].arguments.extend(pieces)
            self._unsent.extend(pieces)

    def add(self, chunk: object) -> None:
        """Read one chunk: hand its pieces to the sink and keep them for the whole reply.

        Anything that is not a chunk's shape (a keep-alive object, a second choice) is skipped.
        """
        self._went = False
        if not isinstance(chunk, dict):
            return
        if self._went_on(chunk):
            self._went = True
            return
        self.flush()
        for key in ("id", "created", "model", "system_fingerprint", "service_tier"):
            if key not in self._head and chunk.get(key) is not None:
                self._head[key] = chunk[key]
        if isinstance(usage := chunk.get("usage"), dict):
            self._usage = usage
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._read_delta(delta)
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self.finish_reason = finish

    def _went_on(self, chunk: dict[str, JsonValue]) -> bool:
        """Read the commonest chunk fast: one more piece of the last tool call's arguments."""
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1 or not self._calls:
            return False
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None:
            return False
        delta = choice.get("delta")
        if type(delta) is not dict or len(delta) != 1 or chunk.get("usage") is not None:
            return False
        entries = delta.get("tool_calls")
        if type(entries) is not list or len(entries) != 1 or choice.get("index", 0) != 0:
            return False
        entry, call = entries[0], self._calls[-1]
        if type(entry) is not dict or entry.get("index") != call.index or entry.get("id"):
            return False
        function = entry.get("function")
        if type(function) is not dict or len(function) != 1 or len(entry) > 3:
            return False
        piece = function.get("arguments")
        if (
            type(piece) is not str
            or not call.announced
            or entry.get("type", "function") != "function"
        ):
            return False
        if piece:
            call.arguments.append(piece)
            self._unsent.append(piece)
        return True

    def flush(self) -> None:
        """Hand over the pieces the fast path kept, as one (call after each batch of chunks)."""
        if self._unsent:
            arguments = "".join(self._unsent)
            self._unsent.clear()
            self.on_delta(TurnDelta(call_index=len(self._calls) - 1, arguments=arguments))

    def completion(self) -> JsonObject:
        """Return the whole reply as the ``chat.completion`` body a non-streamed call gets.

        Pieces not handed over yet are handed over first.
        """
        self.flush()
        message: JsonObject = {"role": "assistant", "content": "".join(self._text) or None}
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        if self._calls:
            message["tool_calls"] = [_wire_call(call) for call in self._calls]
        body: JsonObject = {
            "id": self._head.get("id", ""),
            "object": "chat.completion",
            **{k: v for k, v in self._head.items() if k != "id"},
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        if self._usage is not None:
            body["usage"] = self._usage
        return body

    def _read_delta(self, delta: dict[str, JsonValue]) -> None:
        """Read one choice delta: text, refusal and tool-call pieces."""
        content = delta.get("content")
        text = content if isinstance(content, str) else _content_text(content)
        if text:
            self._text.append(text)
            self.on_delta(TurnDelta(text=text))
        if isinstance(refusal := delta.get("refusal"), str) and refusal:
            self._refusal.append(refusal)
            if not self._text:  # a refusal is the reply's text when there is no other
                self.on_delta(TurnDelta(text=refusal))
        entries = delta.get("tool_calls")
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict):
                self._read_call(entry)

    def _read_call(self, entry: dict[str, JsonValue]) -> None:
        """Read one tool-call entry of a delta and hand its arguments piece to the sink."""
        function = entry.get("function")
        function = function if isinstance(function, dict) else {}
        call_id, name = entry.get("id"), function.get("name")
        call_id = call_id if isinstance(call_id, str) else ""
        name = name if isinstance(name, str) else ""
        position = self._position(entry.get("index"), call_id, name)
        call = self._calls[position]
        call.call_id = call.call_id or call_id
        call.name = call.name or name
        arguments = function.get("arguments")
        piece = ""
        if isinstance(arguments, str):
            piece = arguments
            call.arguments.append(piece)
        elif arguments is not None:  # the arguments whole, as a JSON value
            call.whole = arguments
            piece = echo_text(arguments)
        if piece or (not call.announced and call.name):
            call.announced = True
            self.on_delta(
                TurnDelta(
                    call_index=position,
                    call_id=call.call_id or None,
                    name=self.names.from_wire(call.name) if call.name else None,
                    arguments=piece,
                )
            )

    def _position(self, index: JsonValue, call_id: str, name: str) -> int:
        """Return the position of the call an entry belongs to, starting a new one if needed."""
        calls = self._calls
        if isinstance(index, int) and not isinstance(index, bool):
            for position in range(len(calls) - 1, -1, -1):
                call = calls[position]
                if call.index == index:
                    if call_id and call.call_id and call_id != call.call_id:
                        break  # the same index again for another call: a server's quirk
                    return position
        elif call_id:
            for position, call in enumerate(calls):
                if call.call_id == call_id:
                    return position
        elif calls and not (name and calls[-1].name):
            return len(calls) - 1  # no index, no id: the last call goes on
        calls.append(_Call(index=index if isinstance(index, int) else None))
        return len(calls) - 1


_ARGUMENTS = re.compile(rb'"arguments"[ \t\r\n]*:[ \t\r\n]*"')
_NOT_PLAIN = re.compile(rb'["\x00-\x1f]')
"""Bytes a JSON string's content cannot hold as they are (a quote, a control character)."""
_NOT_PLAIN_BUT_NUL = re.compile(rb'["\x01-\x1f]')


def _shape_of(data: bytes, piece: str) -> tuple[bytes, bytes] | None:
    """Return the bytes before and after the arguments string of a piece's event, if exact."""
    matches = list(_ARGUMENTS.finditer(data))
    if not matches:
        return None
    start = matches[-1].end()
    end = data.find(b'"', start)
    while end > 0 and _escaped_quote(data, end):
        end = data.find(b'"', end + 1)
    if end < 0 or _piece(data[start:end]) != piece:
        return None
    return data[:start], data[end:]


def _escaped_quote(data: bytes, at: int) -> bool:
    backslashes = 0
    while data[at - 1 - backslashes] == 0x5C:
        backslashes += 1
    return backslashes % 2 == 1


def _pieces(contents: list[bytes]) -> list[str] | None:
    """Return :func:`_piece` of each of ``contents``, read at once; ``None`` if one is not."""
    if not contents:
        return []
    joined = b"\x00".join(contents)
    escaped = b"\\" in joined
    bare = joined.replace(b"\\\\", b"").replace(b'\\"', b"") if escaped else joined
    if joined.count(b"\x00") != len(contents) - 1 or _NOT_PLAIN_BUT_NUL.search(bare):
        return None  # a NUL, a quote that is not escaped or a control character in one
    try:
        if not escaped:
            return joined.decode("utf-8").split("\x00")
        values = pydantic_core.from_json(b'["' + b'","'.join(contents) + b'"]', cache_strings=False)
    except ValueError:  # not UTF-8, a broken escape, an escaped lone surrogate: one by one
        return None
    if len(values) != len(contents) or not all(isinstance(value, str) for value in values):
        return None
    return cast("list[str]", values)


def _piece(content: bytes) -> str | None:
    """Return a JSON string's content as text, or ``None`` when it is not one whole string."""
    try:
        if b"\\" in content:  # escapes: the JSON parser reads them (and refuses a broken one)
            quoted = b'"' + content + b'"'
            try:
                text = pydantic_core.from_json(quoted, cache_strings=False)
            except ValueError:  # an escaped lone surrogate: Python's parser reads it
                text = json.loads(quoted)
            return text if isinstance(text, str) else None
        if _NOT_PLAIN.search(content) is not None:
            return None
        return content.decode("utf-8")
    except ValueError:
        return None


def _wire_call(call: _Call) -> JsonObject:
    """Return one assembled call as a ``tool_calls`` entry of a non-streamed reply."""
    arguments: JsonValue = call.whole if call.whole is not None else "".join(call.arguments)
    entry: JsonObject = {
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }
    if call.call_id:
        entry["id"] = call.call_id
    return entry
