"""Server-sent events read in batches, over real HTTP from a server that writes in pieces."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence

import httpx2
import pytest
from pydantic import JsonValue

from agent_executor._providers import sse
from agent_executor._providers.sse import MalformedEvent, sse_batches


async def serve_pieces(
    pieces: Sequence[bytes], finished: asyncio.Event
) -> tuple[asyncio.Server, int]:
    """Answer one request with a chunked event stream written piece by piece, a pause between."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            )
            for piece in pieces:
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
                await asyncio.sleep(0.02)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:
            pass  # the client stopped reading early ([DONE], an error)
        finally:
            writer.close()
            finished.set()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def read_batches(pieces: Sequence[bytes]) -> list[list[JsonValue]]:
    async def go() -> list[list[JsonValue]]:
        finished = asyncio.Event()
        server, port = await serve_pieces(pieces, finished)
        try:
            async with server, httpx2.AsyncClient() as client:
                url = f"http://127.0.0.1:{port}/"
                async with client.stream("GET", url) as response:
                    return [batch async for batch in sse_batches(response)]
        finally:
            await asyncio.wait_for(finished.wait(), 10)

    return asyncio.run(go())


def event(value: JsonValue) -> bytes:
    return b"data: " + json.dumps(value).encode() + b"\n\n"


def test_each_read_gives_the_events_it_completes_in_order() -> None:
    first = event({"n": 1}) + event({"n": 2}) + b'data: {"n": '
    second = b"3}\n\n" + event({"n": 4})
    batches = read_batches([first, second, b"data: [DONE]\n\n"])
    assert batches == [[{"n": 1}, {"n": 2}], [{"n": 3}, {"n": 4}]]


def test_done_ends_the_stream_and_what_follows_is_not_read() -> None:
    batches = read_batches([event({"n": 1}) + b"data: [DONE]\n\n" + event({"n": 2})])
    assert batches == [[{"n": 1}]]


def test_named_events_comments_crlf_and_data_over_several_lines() -> None:
    body = (
        b": a comment the server sends to keep the connection\r\n\r\n"
        b'event: message_start\r\ndata: {"type": "message_start"}\r\n\r\n'
        b"event: ping\r\n\r\n"
        b'data: {"type":\ndata: "delta", "text": "a\\u00e9"}\n\n'
        b'data:{"no_space": true}\n\n'
    )
    batches = read_batches([body])
    assert [value for batch in batches for value in batch] == [
        {"type": "message_start"},
        {"type": "delta", "text": "a\u00e9"},
        {"no_space": True},
    ]


def test_a_last_event_without_its_blank_line_is_still_read() -> None:
    assert read_batches([event({"n": 1}) + b'data: {"n": 2}']) == [[{"n": 1}], [{"n": 2}]]


def test_an_escaped_lone_surrogate_is_read_as_pythons_parser_reads_it() -> None:
    batches = read_batches([b'data: {"text": "\\ud800"}\n\n'])
    assert batches == [[{"text": "\ud800"}]]


def test_an_event_that_is_not_json_is_a_typed_error_naming_it() -> None:
    with pytest.raises(MalformedEvent, match="not JSON") as raised:
        read_batches([event({"n": 1}) + b"data: {broken\n\n"])
    assert raised.value.data == "{broken"


@pytest.mark.parametrize(
    "events",
    [
        b'data: {"a": 1}\n\ndata: {"b": 2}',
        b'data:{"a": 1}\n\ndata: {"b": 2}',  # no space after the colon
        b'data:  {"a": 1}\n\ndata: {"b": 2}',  # two: the second is the data's
        b'data: {"a": 1}\n\ndata: [DONE]',
        b'data: {"a": 1}\n\ndata: [DONE]   \n\ndata: {"late": 1}',
        b'data: {"a": 1}\n\ndata: [DONE]\n\ndata: {"late": 1}',
        b'data: {}\n\ndata: {"b": 2}',  # a short event that is not [DONE]
        b'data: {"a": 1}\ndata: {"b": 2}\n\ndata: {"c": 3}',  # two lines: one event
        b': ping\n\ndata: {"a": 1}\n\ndata: {"b": 2}',
        b'data: {"a": 1}\n\nevent: x\ndata: {"b": 2}',
        b'data: {"a": 1}\n\n\n\ndata: {"b": 2}',  # an empty event between
        b"\n\n".join(b'data: {"n": %d, "pad": "%s"}' % (n, b"x" * n) for n in range(300)),
    ],
)
def test_a_batch_is_split_as_the_exact_reading_splits_it(events: bytes) -> None:
    assert sse._split(events) == sse._data_of(events)


def test_a_crlf_event_over_two_lines_split_between_cr_and_lf_stays_one_event() -> None:
    batches = read_batches([b'data: {"a":\r', b"\ndata: 1}\r\n\r", b"\n"])
    assert batches == [[{"a": 1}]]


# The examples of the specification (HTML Living Standard, "Server-sent events", 9.2.4 and
# 9.2.6), each with the data of the events it dispatches.
SPEC_STREAMS = [
    (b"data: YHOO\ndata: +2\ndata: 10\n\n", [b"YHOO\n+2\n10"]),
    (
        b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n"
        b"data:  third event\n\n",
        [b"first event", b"second event", b" third event"],
    ),
    # The specification drops the last block (no blank line after it); a provider's stream
    # that ends without its blank line is read to the end, so it is read here too.
    (b"data\n\ndata\ndata\n\ndata:", [b"", b"\n", b""]),
    (b"data:test\n\ndata: test\n\n", [b"test", b"test"]),
    (b"\xef\xbb\xbfdata: after a byte order mark\n\n", [b"after a byte order mark"]),
    (b'data: {"a":\ndata: 1}\n\n', [b'{"a":\n1}']),
]


def _line_ends(stream: bytes, end: bytes) -> bytes:
    return stream.replace(b"\n", end)


async def _data_of_reads(reads: Sequence[bytes]) -> list[bytes]:
    async def body() -> AsyncIterator[bytes]:
        for read in reads:
            yield read

    response = httpx2.Response(200, content=body())
    return [data async for datas in sse.sse_data(response) for data in datas]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize(("stream", "expected"), SPEC_STREAMS, ids=range(len(SPEC_STREAMS)))
async def test_the_specifications_streams_read_alike_wherever_the_reads_split_them(
    stream: bytes, expected: list[bytes], end: bytes
) -> None:
    stream = _line_ends(stream, end)
    for at in range(len(stream) + 1):
        reads = [stream[:at], stream[at:]]
        assert await _data_of_reads(reads) == expected, f"split at {at}: {reads}"
    one_byte_a_read = [stream[at : at + 1] for at in range(len(stream))]
    assert await _data_of_reads(one_byte_a_read) == expected
