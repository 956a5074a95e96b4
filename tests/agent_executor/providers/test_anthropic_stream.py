"""``AnthropicProvider.stream``: the real SDK over real HTTP against streamed fake replies."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import pytest

from agent_contracts import Message, ProviderError
from agent_executor import AnthropicProvider
from agent_executor._providers.base import ModelTurn, ModelTurnRequest, ToolChoice, ToolDefinition
from agent_executor._providers.streaming import TurnDelta, stream_turn
from tests.fake_llm import (
    FakeLLM,
    Json,
    ScriptedResponse,
    anthropic_message,
    anthropic_text,
    anthropic_tool_use,
    status_error,
)
from tests.fake_llm_streams import anthropic_stream, stream_cut, stream_ended, stream_error

SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["summary", "score"],
}
SUBMIT = ToolDefinition(name="submit_result", description="Submit.", parameters=SCHEMA)
LOOKUP = ToolDefinition(name="look.up", description="Look up.", parameters={"type": "object"})
INPUT = {"summary": "fine \u00e9t\u00e9", "score": 4, "notes": ["a", {"b": None}]}
THINKING = {"type": "thinking", "thinking": "The change looks safe.", "signature": "sig-123=="}
FORCED = ModelTurnRequest(
    messages=[Message.system("You review code."), Message.user("Review the change.")],
    tools=[SUBMIT, LOOKUP],
    tool_choice=ToolChoice.tool("submit_result"),
    max_tokens=300,
)


@pytest.fixture
def make_provider(fake_llm: FakeLLM) -> Callable[..., AnthropicProvider]:
    def make(**options: object) -> AnthropicProvider:
        return AnthropicProvider(
            "claude-test",
            api_key="test-key",
            base_url=fake_llm.anthropic_base_url,
            max_retries=0,
            **options,  # type: ignore[arg-type]
        )

    return make


@pytest.fixture
def provider(make_provider: Callable[..., AnthropicProvider]) -> AnthropicProvider:
    return make_provider()


async def streamed(
    provider: AnthropicProvider, turn: ModelTurnRequest = FORCED
) -> tuple[ModelTurn, list[TurnDelta]]:
    deltas: list[TurnDelta] = []
    reply = await provider.stream(turn, deltas.append)
    return reply, deltas


def without_timing(turn: ModelTurn) -> dict[str, Json]:
    return turn.model_dump(exclude={"raw", "latency_ms"})


REPLIES: dict[str, Callable[[], ScriptedResponse]] = {
    "text": lambda: anthropic_text("Looks good to me, ship it."),
    "forced tool": lambda: anthropic_tool_use("submit_result", INPUT),
    "text then tool": lambda: anthropic_tool_use("submit_result", INPUT, text="Submitting."),
    "two tools": lambda: anthropic_message(
        [
            {"type": "tool_use", "id": "toolu_a", "name": "look_up", "input": {"q": "x"}},
            {"type": "tool_use", "id": "toolu_b", "name": "submit_result", "input": INPUT},
        ],
        stop_reason="tool_use",
    ),
    "empty input": lambda: anthropic_tool_use("look_up", {}),
    "thinking": lambda: anthropic_message(
        [THINKING, {"type": "tool_use", "id": "toolu_t", "name": "submit_result", "input": INPUT}],
        stop_reason="tool_use",
        usage={"input_tokens": 20, "output_tokens": 9, "cache_read_input_tokens": 5},
    ),
    "redacted thinking": lambda: anthropic_message(
        [
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "toolu_r", "name": "submit_result", "input": INPUT},
        ],
        stop_reason="tool_use",
    ),
    "cut off": lambda: anthropic_text("Half an ans", stop_reason="max_tokens"),
}
SPLITS: dict[str, dict[str, Json]] = {
    "one character a delta": {"piece_chars": 1},
    "default": {},
    "whole input": {"whole_arguments": True},
}


@pytest.mark.parametrize("split", sorted(SPLITS))
@pytest.mark.parametrize("reply", sorted(REPLIES))
async def test_streamed_reply_equals_the_requested_one(
    fake_llm: FakeLLM, provider: AnthropicProvider, reply: str, split: str
) -> None:
    scripted = REPLIES[reply]()
    fake_llm.respond(scripted, anthropic_stream(scripted, **SPLITS[split]))

    requested = await provider.request(FORCED)
    got, deltas = await streamed(provider)

    assert without_timing(got) == without_timing(requested)
    assert got.raw["content"] == requested.raw["content"]
    assert "".join(d.text for d in deltas if d.call_index is None) == requested.text
    for index, call in enumerate(requested.tool_calls):
        mine = [d for d in deltas if d.call_index == index]
        assert (mine[0].call_id, mine[0].name) == (call.id, call.name)
        text = "".join(d.arguments for d in mine)
        assert (json.loads(text) if text else {}) == call.arguments
    assert sorted({d.call_index for d in deltas} - {None}) == list(  # type: ignore[type-var]
        range(len(requested.tool_calls))
    )
    sent = fake_llm.requests[1].body
    assert sent.pop("stream") is True
    assert sent == fake_llm.requests[0].body


async def test_thinking_and_its_signature_survive_for_resuming(
    fake_llm: FakeLLM, make_provider: Callable[..., AnthropicProvider]
) -> None:
    fake_llm.respond(anthropic_stream(REPLIES["thinking"](), piece_chars=2))
    provider = make_provider(thinking_budget=2048)

    got, _ = await streamed(provider)

    assert got.thinking == [THINKING]
    assert got.tool_choice_downgraded is True
    assert (got.usage.input_tokens, got.usage.output_tokens) == (25, 9)


async def test_pieces_arrive_in_order_with_names_mapped_back(
    fake_llm: FakeLLM, provider: AnthropicProvider
) -> None:
    scripted = anthropic_tool_use("look_up", {"q": "abc"}, text="Hi there")
    fake_llm.respond(anthropic_stream(scripted, piece_chars=4))

    got, deltas = await streamed(provider)

    assert [(d.text, d.call_index, d.name, d.arguments) for d in deltas] == [
        ("Hi t", None, None, ""),
        ("here", None, None, ""),
        ("", 0, "look.up", ""),
        ("", 0, "look.up", '{"q"'),
        ("", 0, "look.up", ': "a'),
        ("", 0, "look.up", 'bc"}'),
    ]
    assert got.tool_calls[0].name == "look.up"


async def test_a_reply_scripted_plainly_is_streamed_when_asked(
    fake_llm: FakeLLM, provider: AnthropicProvider
) -> None:
    fake_llm.respond(anthropic_tool_use("submit_result", INPUT))
    deltas: list[TurnDelta] = []

    got = await stream_turn(provider, FORCED, deltas.append)

    assert len(deltas) > 3
    assert got.tool_calls[0].arguments == INPUT
    assert (got.usage.input_tokens, got.usage.output_tokens) == (13, 5)


async def test_unparseable_streamed_input_is_a_failed_attempt_not_a_crash(
    fake_llm: FakeLLM, provider: AnthropicProvider
) -> None:
    scripted = anthropic_tool_use("submit_result", {"summary": "x"})
    stream = anthropic_stream(scripted, whole_arguments=True)
    assert stream.events is not None
    events = [(name, json.loads(data)) for name, data in stream.events]
    for name, data in events:
        if name == "content_block_delta":
            data["delta"]["partial_json"] = data["delta"]["partial_json"][:-1]  # cut short
    broken = tuple((name, json.dumps(data)) for name, data in events)
    fake_llm.respond(ScriptedResponse(events=broken))

    got, _ = await streamed(provider)

    assert got.tool_calls[0].arguments is None
    assert got.tool_calls[0].parse_error


async def test_a_server_that_ignores_stream_is_read_whole(
    fake_llm: FakeLLM, provider: AnthropicProvider
) -> None:
    plain = anthropic_tool_use("look_up", {"q": "x"}, text="Done.")
    fake_llm.respond(plain, replace(plain, never_stream=True))
    requested = await provider.request(FORCED)

    got, deltas = await streamed(provider)

    assert without_timing(got) == without_timing(requested)
    assert [(d.text, d.name, d.arguments) for d in deltas] == [
        ("Done.", None, ""),
        ("", "look.up", '{"q": "x"}'),
    ]


async def test_two_streams_reuse_one_connection(
    fake_llm: FakeLLM, provider: AnthropicProvider
) -> None:
    fake_llm.respond_always(anthropic_text("Hello there"))

    await streamed(provider)
    await streamed(provider)

    assert fake_llm.requests[0].client_port == fake_llm.requests[1].client_port


# Failures ---------------------------------------------------------------------------------------


async def test_an_error_status_before_the_stream_is_typed(
    fake_llm: FakeLLM, provider: AnthropicProvider
) -> None:
    fake_llm.respond(status_error(529, "Overloaded", api="anthropic"))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider)

    assert (caught.value.kind, caught.value.status) == ("provider_server_error", 529)


async def test_a_dropped_connection_mid_stream_is_a_connection_error(
    fake_llm: FakeLLM, provider: AnthropicProvider
) -> None:
    stream = anthropic_stream(anthropic_tool_use("submit_result", INPUT))
    fake_llm.respond(stream_cut(stream, after=5))
    deltas: list[TurnDelta] = []

    with pytest.raises(ProviderError) as caught:
        await provider.stream(FORCED, deltas.append)

    assert caught.value.kind == "provider_connection_error"
    assert deltas


async def test_a_stream_ending_without_message_stop_is_an_error(
    fake_llm: FakeLLM, provider: AnthropicProvider
) -> None:
    fake_llm.respond(stream_ended(anthropic_stream(anthropic_text("Hello there")), after=4))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider)

    assert caught.value.kind == "provider_connection_error"
    assert "message_stop" in str(caught.value)


async def test_a_stream_that_stalls_times_out(
    fake_llm: FakeLLM, provider: AnthropicProvider
) -> None:
    stream = anthropic_stream(anthropic_text("Hello there"))
    fake_llm.respond(replace(stream, gap_s=5.0))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider, FORCED.model_copy(update={"timeout_s": 0.2}))

    assert caught.value.kind == "provider_timeout"


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, "provider_server_error"),
        ({"type": "rate_limit_error", "message": "Too fast"}, "provider_rate_limited"),
        (
            {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens"},
            "provider_context_length_exceeded",
        ),
        ({"type": "api_error", "message": "Internal server error"}, "provider_server_error"),
    ],
)
async def test_an_error_event_is_typed_like_the_same_error_before_the_stream(
    fake_llm: FakeLLM, provider: AnthropicProvider, error: dict[str, Json], kind: str
) -> None:
    stream = anthropic_stream(anthropic_text("Hello there"))
    fake_llm.respond(stream_error(stream, after=3, error=error, api="anthropic"))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider)

    assert caught.value.kind == kind
    assert caught.value.status is None
    assert error["message"] in str(caught.value)
    assert caught.value.body == {"type": "error", "error": error}


async def test_an_event_that_is_not_json_is_a_provider_error(
    fake_llm: FakeLLM, provider: AnthropicProvider
) -> None:
    stream = anthropic_stream(anthropic_text("Hello there"))
    assert stream.events is not None
    fake_llm.respond(ScriptedResponse(events=(*stream.events[:2], ("content_block_delta", "{x"))))

    with pytest.raises(ProviderError) as caught:
        await streamed(provider)

    assert caught.value.kind == "provider_error"
    assert "not JSON" in str(caught.value)
