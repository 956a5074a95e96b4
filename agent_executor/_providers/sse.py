"""Server-sent events read in batches: every event a network read completes, parsed at once.

A streamed reply is hundreds of small events (one a token). :func:`sse_batches` reads the response
body as it arrives and, for each read, parses the ``data`` of every event it completes as one JSON
array (pydantic-core's parser), so the run loop handles one batch a read: as fast as the server
sends, and little more than one parse when the whole reply arrives at once. ``[DONE]`` (OpenAI's end
marker) ends it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx2
import pydantic_core
from pydantic import JsonValue

__all__ = ["MAX_EVENT_BYTES", "MalformedEvent", "parse_data", "sse_batches", "sse_data"]

MAX_EVENT_BYTES = 16 * 1024 * 1024
"""Longest server-sent event read (16 MiB); a longer one is malformed."""

_DONE = b"[DONE]"
_BOM = b"\xef\xbb\xbf"
"""A byte order mark, which the specification drops from the start of a stream."""
_SHORT = 64
"""Events this short or shorter are looked at for ``[DONE]`` (and any text after it on its
line); a chunk's JSON is longer."""
_AFTER_DONE_BYTES = 64 * 1024
"""Most bytes read (and dropped) after ``[DONE]`` so that the connection can be used again."""


class MalformedEvent(ValueError):
    """A server-sent event's data was not JSON, or an event was too long.

    Args:
        message: What was wrong.
        data: The event's data (cut to 500 bytes), for the error report.
    """

    def __init__(self, message: str, data: bytes = b"") -> None:
        super().__init__(message)
        self.data = data[:500].decode("utf-8", "replace")


async def sse_batches(response: httpx2.Response) -> AsyncIterator[list[JsonValue]]:
    """Yield the parsed data of the events each read of ``response`` completes.

    Args:
        response: A streamed response (its body not read yet).

    Yields:
        The data of each complete event, in order, as JSON values; a read that completes no
        event yields nothing.

    Raises:
        MalformedEvent: An event's data is not JSON, or an event is longer than
            :data:`MAX_EVENT_BYTES`.
        httpx2.HTTPError: The connection failed while reading (the caller translates it).
    """
    async for datas in sse_data(response):
        yield parse_data(datas)


async def sse_data(response: httpx2.Response) -> AsyncIterator[list[bytes]]:
    r"""Yield the data of the events each read of ``response`` completes, unparsed.

    Lines end with ``\r\n``, ``\n`` or ``\r``, as the specification allows, wherever the
    reads split them.

    Args:
        response: A streamed response (its body not read yet).

    Yields:
        The ``data`` of each complete event, in order (the lines of a many-line event joined
        by newlines); a read that completes no event yields nothing. ``[DONE]`` ends it.

    Raises:
        MalformedEvent: An event is longer than :data:`MAX_EVENT_BYTES`.
        httpx2.HTTPError: The connection failed while reading (the caller translates it).
    """
    pending = b""  # the unfinished events, their line ends already made \n
    after_done = -1  # bytes read after [DONE], once it came
    after_cr = False  # the last read ended with \r: a \n starting this one ends the same line
    head: bytes | None = b""  # the stream's first bytes, until a byte order mark can be told
    async for raw in response.aiter_bytes():
        if after_done >= 0:
            after_done += len(raw)
            if after_done > _AFTER_DONE_BYTES:
                return  # more than a body's end: the connection is closed, not kept
            continue
        if not raw:
            continue
        if head is not None:
            head += raw
            if len(head) < len(_BOM) and _BOM.startswith(head):
                continue
            raw, head = head.removeprefix(_BOM), None
        if after_cr and raw[:1] == b"\n":
            raw = raw[1:]
        after_cr = raw[-1:] == b"\r"
        if b"\r" in raw:
            raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        pending += raw
        end = pending.rfind(b"\n\n")
        if end < 0:
            if len(pending) > MAX_EVENT_BYTES:
                raise MalformedEvent(f"an event is longer than {MAX_EVENT_BYTES:,} bytes")
            continue
        complete, pending = pending[:end], pending[end + 2 :]
        datas, done = _split(complete)
        if datas:
            yield datas
        if done:
            after_done = len(pending)  # the body's end is read, so the connection is kept
    if after_done < 0 and pending.strip():
        datas, _ = _split(pending)
        if datas:
            yield datas


def parse_data(datas: list[bytes]) -> list[JsonValue]:
    """Parse the data of events (from :func:`sse_data`) as JSON, all in one go.

    Returns:
        Each event's JSON value, in order.

    Raises:
        MalformedEvent: An event's data is not JSON (the first such event is named).
    """
    try:
        values: list[JsonValue] = pydantic_core.from_json(
            b"[" + b",".join(datas) + b"]", cache_strings="keys"
        )
    except ValueError:
        values = []
    if len(values) == len(datas):
        return values
    return _parse(datas)


def _split(events: bytes) -> tuple[list[bytes], bool]:
    """Return the data of each event in ``events``, and whether ``[DONE]`` came."""
    if not events.startswith(b"data: "):
        return _data_of(events)
    datas = events.split(b"\n\ndata: ")
    if events.count(b"\n") != 2 * (len(datas) - 1):  # a newline other than between events
        return _data_of(events)
    datas[0] = datas[0][6:]
    if min(map(len, datas)) <= _SHORT:  # an event as short as [DONE] (a JSON chunk is longer)
        done_at = next((at for at, data in enumerate(datas) if data[:6] == _DONE), None)
        if done_at is not None:
            return datas[:done_at], True
    return datas, False


def _data_of(events: bytes) -> tuple[list[bytes], bool]:
    """Return the ``data`` of each event in ``events``, and whether ``[DONE]`` came."""
    datas: list[bytes] = []
    for event in events.split(b"\n\n"):
        # A line "data" without a colon is a data field with an empty value.
        lines = [
            line for line in event.split(b"\n") if line.startswith(b"data:") or line == b"data"
        ]
        if not lines:
            continue  # a comment, a ping with no data, or an empty event
        data = b"\n".join(line[6:] if line[5:6] == b" " else line[5:] for line in lines)
        if data.strip() == _DONE:
            return datas, True
        datas.append(data)
    return datas, False


def _parse(datas: list[bytes]) -> list[JsonValue]:
    """Parse each event's data on its own; name the event that is not JSON."""
    values: list[JsonValue] = []
    for data in datas:
        try:
            values.append(json.loads(data))
        except ValueError as exc:
            raise MalformedEvent(f"a streamed event is not JSON ({exc})", data) from exc
    return values
