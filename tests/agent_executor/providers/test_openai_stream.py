"""``OpenAIProvider.stream``: the real SDK over real HTTP against streamed fake replies."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import replace

import pytest

from agent_contracts import Message, ProviderError, ToolResult
from agent_executor import OpenAIProvider
from agent_executor._providers.base import ModelTurn, ModelTurnRequest, ToolChoice, ToolDefinition
from agent_executor._providers.streaming import TurnDelta, stream_turn
from tests.compatible_servers import SERVERS
from tests.fake_llm import (
    FakeLLM,
    Json,
    ScriptedResponse,
    openai_completion,
    openai_text,
    openai_tool_call,
    openai_tool_calls,
    status_error,
)
from tests.fake_llm_streams import (
    openai_stream,
    stream_cut,
    stream_ended,
    stream_error,
)

SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["summary", "score"],
}
SUBMIT = ToolDefinition(name="submit_result", description="Submit.", parameters=SCHEMA)
LOOKUP = ToolDefinition(name="look.up", description="Look up.", parameters={"type": "object"})
ARGUMENTS = '{"summary": "fine \u00e9t\u00e9", "score": 4}'
FORCED = ModelTurnRequest(
    messages=[Message.system("You review code."), Message.user("Review the change.")],
    tools=[SUBMIT, LOOKUP],
    tool_choice=ToolChoice.tool("submit_result"),
    max_tokens=300,
)

MakeProvider = Callable[..., OpenAIProvider]


@pytest.fixture
def provider(fake_llm: FakeLLM) -> OpenAIProvider:
    return OpenAIProvider(
        "gpt-test", api_key="test-key", base_url=fake_llm.openai_base_url, max_retries=0
    )


async def streamed(
    provider: OpenAIProvider, turn: ModelTurnRequest
) -> tuple[ModelTurn, list[TurnDelta]]:
    deltas: list[TurnDelta] = []
    reply = await provider.stream(turn, deltas.append)
    return reply, deltas


def same_reply(streamed: ModelTurn, requested: ModelTurn) -> None:
    assert streamed.model_dump(exclude={"raw", "latency_ms"}) == requested.model_dump(
        exclude={"raw", "latency_ms"}
    )


def arguments_by_call(deltas: list[TurnDelta]) -> dict[int, str]:
    texts: dict[int, str] = {}
    for delta in deltas:
        if delta.call_index is not None:
            texts[delta.call_index] = texts.get(delta.call_index, "") + delta.arguments
    return texts


REPLIES = {
    "text": lambda: openai_text("Looks good to me, ship it."),
    "forced tool": lambda: openai_tool_call("submit_result", ARGUMENTS),
    "text and calls": lambda: openai_tool_calls(
        [("look_up", '{"q": "x"}', "call_a"), ("submit_result", ARGUMENTS, "call_b")],
        content="Let me check.",
    ),
    "missing ids": lambda: openai_tool_calls(
        [("look_up", '{"q": "x"}', None), ("submit_result", ARGUMENTS, None)]
    ),
    "object arguments": lambda: openai_tool_call("submit_result", {"summary": "s", "score": 1}),
    "broken arguments": lambda: openai_tool_call("submit_result", '{"summary": "s", "sco'),
    "cut off": lambda: openai_text("Half an ans", finish_reason="length"),
    "refusal": lambda: openai_completion({"content": None, "refusal": "I can't help."}),
}
SPLITS: dict[str, dict[str, Json]] = {
    "one character a chunk": {"piece_chars": 1},
    "whole arguments": {"whole_arguments": True, "piece_chars": 1000},
    "no indexes": {"indexes": False, "piece_chars": 2},
    "no indexes, whole": {"indexes": False, "whole_arguments": True},
    "content parts": {"content_parts": True},
    "no usage": {"usage": False},
    "finish on a delta": {"finish_with_delta": True},
}


@pytest.mark.parametrize("split", sorted(SPLITS))
@pytest.mark.parametrize("reply", sorted(REPLIES))
async def test_streamed_reply_equals_the_requested_one(
    fake_llm: FakeLLM, provider: OpenAIProvider, reply: str, split: str
) -> None:
    scripted = REPLIES[reply]()
    fake_llm.respond(scripted, openai_stream(scripted, **SPLITS[split]))

    requested = await provider.request(FORCED)
    got, deltas = await streamed(provider, FORCED)

    if SPLITS[split].get("usage") is False:  # no usage streamed: zeros, as a reply without any
        requested = requested.model_copy(update={"usage": got.usage})
        assert (got.usage.input_tokens, got.usage.output_tokens) == (0, 0)
    same_reply(got, requested)
    assert "".join(d.text for d in deltas if d.call_index is None) == requested.text
    by_call = arguments_by_call(deltas)
    assert sorted(by_call) == list(range(len(requested.tool_calls)))
    for index, call in enumerate(requested.tool_calls):
        assert by_call[index] == call.raw_arguments
        first = next(d for d in deltas if d.call_index == index)
        assert (first.call_id, first.name) == (
            call.id if reply != "missing ids" else None,
            call.name,
        )
    sent = fake_llm.requests[1].body
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert {k: v for k, v in sent.items() if not k.startswith("stream")} == fake_llm.requests[
        0
    ].body


async def test_pieces_arrive_one_by_one_and_names_are_mapped_back(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    stream = openai_stream(openai_tool_call("look_up", '{"q": "abc"}'), piece_chars=4)
    fake_llm.respond(dataclasses.replace(stream, gap_s=0.05))  # one event a network read

    got, deltas = await streamed(provider, FORCED)

    assert fake_llm.requests[0].body["tools"][1]["function"]["name"] == "look_up"
    assert [(d.call_index, d.arguments) for d in deltas] == [
        (0, ""),
        (0, '{"q"'),
        (0, ': "a'),
        (0, 'bc"}'),
    ]
    assert deltas[0].name == "look.up"
    assert got.tool_calls[0].name == "look.up"
    assert got.tool_calls[0].arguments == {"q": "abc"}
    assert got.raw["object"] == "chat.completion"


async def test_a_reply_scripted_plainly_is_streamed_when_asked(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", ARGUMENTS))

    got, deltas = await stream_turn_collect(provider)

    assert len(deltas) > 3
    assert got.tool_calls[0].arguments == {"summary": "fine \u00e9t\u00e9", "score": 4}
    assert (got.usage.input_tokens, got.usage.output_tokens) == (11, 7)


async def stream_turn_collect(provider: OpenAIProvider) -> tuple[ModelTurn, list[TurnDelta]]:
    deltas: list[TurnDelta] = []
    reply = await stream_turn(provider, FORCED, deltas.append)
    return reply, deltas


async def test_a_server_that_ignores_stream_is_read_whole(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    plain = openai_tool_call("submit_result", ARGUMENTS, content="Done.")
    fake_llm.respond(plain, replace(plain, never_stream=True))
    requested = await provider.request(FORCED)

    got, deltas = await streamed(provider, FORCED)

    same_reply(got, requested)
    assert [(d.text, d.arguments) for d in deltas] == [("Done.", ""), ("", ARGUMENTS)]


async def test_a_server_refusing_stream_options_is_asked_again_without_them(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    def refuse(body: Json) -> ScriptedResponse | None:
        if "stream_options" not in body:
            return None
        message = "body.stream_options.include_usage: Extra inputs are not permitted"
        return status_error(422, message)

    fake_llm.refuse_when(refuse)
    fake_llm.respond_always(openai_text("Hello there", finish_reason="stop"))

    first, deltas = await streamed(provider, FORCED)
    second, _ = await streamed(provider, FORCED)

    assert first.text == second.text == "Hello there"
    assert "".join(d.text for d in deltas) == "Hello there"
    assert ["stream_options" in r.body for r in fake_llm.requests] == [True, False, False]
    assert (first.usage.input_tokens, first.usage.output_tokens) == (11, 7)  # sent anyway


SERVER_STREAMS: dict[str, dict[str, Json]] = {
    "llamacpp": {"usage": False, "whole_arguments": True},  # llama-cpp-python streams no usage
    "ollama": {"whole_arguments": True},  # Ollama sends a call whole, in one chunk
    "vllm": {"piece_chars": 2},
}


@pytest.mark.parametrize("server", sorted(SERVERS))
async def test_compatible_servers_accept_the_streamed_follow_up_turn(
    fake_llm: FakeLLM, provider: OpenAIProvider, server: str
) -> None:
    fake_llm.refuse_when(SERVERS[server])
    first = openai_tool_call("look_up", '{"q": "x"}', call_id=None)
    fake_llm.respond(openai_stream(first, **SERVER_STREAMS[server]))
    fake_llm.respond(openai_stream(openai_tool_call("submit_result", ARGUMENTS)))

    reply, _ = await streamed(provider, FORCED)
    result = ToolResult(tool_call_id=reply.tool_calls[0].id, name="look.up", content="found")
    follow_up = FORCED.model_copy(
        update={
            "messages": [
                *FORCED.messages,
                reply.to_message(),
                Message(role="tool", tool_results=[result]),
            ]
        }
    )
    final, _ = await streamed(provider, follow_up)

    assert final.tool_calls[0].arguments == {"summary": "fine \u00e9t\u00e9", "score": 4}
    assert all(request.body["stream"] is True for request in fake_llm.requests)


async def test_another_bad_request_is_not_retried(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    fake_llm.respond(status_error(400, "messages: field required"))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider, FORCED)

    assert caught.value.kind == "provider_bad_request"
    assert len(fake_llm.requests) == 1


# Failures ---------------------------------------------------------------------------------------


async def test_an_error_status_before_the_stream_is_typed(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    fake_llm.respond(status_error(429, "slow down"))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider, FORCED)

    assert (caught.value.kind, caught.value.status) == ("provider_rate_limited", 429)


async def test_a_dropped_connection_mid_stream_is_a_connection_error(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    fake_llm.respond(
        stream_cut(openai_stream(openai_tool_call("submit_result", ARGUMENTS)), after=4)
    )
    deltas: list[TurnDelta] = []

    with pytest.raises(ProviderError) as caught:
        await provider.stream(FORCED, deltas.append)

    assert caught.value.kind == "provider_connection_error"
    assert deltas  # what came before the cut was handed over


async def test_a_stream_ending_without_finish_reason_is_an_error(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    fake_llm.respond(stream_ended(openai_stream(openai_text("Hello there")), after=3))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider, FORCED)

    assert caught.value.kind == "provider_connection_error"
    assert "finish_reason" in str(caught.value)


async def test_a_stream_that_stalls_times_out(fake_llm: FakeLLM, provider: OpenAIProvider) -> None:
    fake_llm.respond(replace(openai_stream(openai_text("Hello there")), gap_s=5.0))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider, FORCED.model_copy(update={"timeout_s": 0.2}))

    assert caught.value.kind == "provider_timeout"


async def test_two_streams_reuse_one_connection(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", ARGUMENTS))

    await streamed(provider, FORCED)
    await streamed(provider, FORCED)

    assert fake_llm.requests[0].client_port == fake_llm.requests[1].client_port


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"type": "server_error", "message": "The server had an error"}, "provider_server_error"),
        ({"type": "rate_limit_exceeded", "message": "Too fast"}, "provider_rate_limited"),
        (
            {"code": 400, "message": "This model's maximum context length is 8192 tokens"},
            "provider_context_length_exceeded",
        ),
        ({"message": "something odd"}, "provider_error"),
    ],
)
async def test_an_error_in_the_stream_is_typed_like_the_same_error_before_it(
    fake_llm: FakeLLM, provider: OpenAIProvider, error: dict[str, Json], kind: str
) -> None:
    stream = openai_stream(openai_text("Hello there"))
    fake_llm.respond(stream_error(stream, after=2, error=error))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider, FORCED)

    assert caught.value.kind == kind
    assert caught.value.status is None
    assert error["message"] in str(caught.value)
    assert caught.value.body == {"error": error}


async def test_a_chunk_that_is_not_json_is_a_provider_error(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    stream = openai_stream(openai_text("Hello there"))
    assert stream.events is not None
    fake_llm.respond(ScriptedResponse(events=(*stream.events[:2], (None, "{not json"))))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider, FORCED)

    assert caught.value.kind == "provider_error"
    assert "not JSON" in str(caught.value)


async def test_the_key_never_shows_in_a_streamed_error(
    fake_llm: FakeLLM, provider: OpenAIProvider
) -> None:
    stream = openai_stream(openai_text("Hello there"))
    error = {"type": "server_error", "message": "bad key test-key"}
    fake_llm.respond(stream_error(stream, after=1, error=error))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider, FORCED)

    assert "test-key" not in str(caught.value)
    assert "test-key" not in json.dumps(caught.value.body)
