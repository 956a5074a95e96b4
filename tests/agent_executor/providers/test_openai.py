from __future__ import annotations

import asyncio
import dataclasses
import errno
import gc
import inspect
import json
import re
import socket
from collections.abc import Callable
from typing import Any

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion
from pydantic import ValidationError

from agent_contracts import ConfigError, Message, ProviderError, ToolCall, ToolResult
from agent_contracts._profiles import ProviderProfile
from agent_contracts._tools import ResponseFormat, ToolChoice, ToolDefinition
from agent_executor import OpenAIProvider
from agent_executor._providers.base import ModelTurnRequest, ToolNameMap
from agent_executor._providers.openai import (
    TOOL_ERROR_PREFIX,
    chat_body,
    chat_content,
    translate_errors,
)
from agent_executor._providers.tool_names import tool_names_for
from tests.fake_llm import (
    FakeLLM,
    ScriptedResponse,
    delayed,
    openai_completion,
    openai_text,
    openai_tool_call,
    openai_tool_calls,
    status_error,
)

RESULT_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["summary", "score"],
    "additionalProperties": False,
}
SUBMIT = ToolDefinition(
    name="submit_result", description="Submit the answer.", parameters=RESULT_SCHEMA, strict=True
)
CONVERSATION = [Message.system("You review code."), Message.user("Review the change.")]

MakeProvider = Callable[..., OpenAIProvider]


@pytest.fixture
def make_provider(fake_llm: FakeLLM) -> MakeProvider:
    def make(**options: object) -> OpenAIProvider:
        settings: dict[str, object] = {"api_key": "test-key", "base_url": fake_llm.openai_base_url}
        settings.update(options)
        return OpenAIProvider("gpt-test", **settings)  # type: ignore[arg-type]

    return make


def forced(
    *tools: ToolDefinition, name: str = "submit_result", **extra: object
) -> ModelTurnRequest:
    return ModelTurnRequest(
        messages=CONVERSATION,
        tools=list(tools) or [SUBMIT],
        tool_choice=ToolChoice.tool(name),
        **extra,
    )


async def test_forced_tool_call_round_trip(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(openai_tool_call("submit_result", '{"summary": "fine", "score": 4}'))

    turn = await make_provider().request(forced(max_tokens=300, temperature=0.0))

    sent = fake_llm.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer test-key"
    assert sent.body["model"] == "gpt-test"
    assert sent.body["tool_choice"] == {"type": "function", "function": {"name": "submit_result"}}
    assert sent.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "submit_result",
                "description": "Submit the answer.",
                "parameters": RESULT_SCHEMA,
                "strict": True,
            },
        }
    ]
    assert sent.body["messages"] == [
        {"role": "system", "content": "You review code."},
        {"role": "user", "content": "Review the change."},
    ]
    assert sent.body["max_tokens"] == 300
    assert sent.body["temperature"] == 0.0
    assert turn.tool_calls == [
        ToolCall(
            id="call_1",
            name="submit_result",
            arguments={"summary": "fine", "score": 4},
            raw_arguments='{"summary": "fine", "score": 4}',
        )
    ]
    assert turn.stop_reason == "tool_use"
    assert turn.raw_stop_reason == "tool_calls"
    assert (turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.requests) == (11, 7, 1)
    assert turn.provider == "openai"
    assert turn.model == "gpt-test"
    assert turn.raw["id"] == "chatcmpl-fake"
    assert turn.latency_ms > 0


@pytest.mark.parametrize("prefix", ["/v1", "/v1/", "/proxy/openai/v1"])
async def test_every_call_goes_to_chat_completions_under_the_base_urls_path(
    fake_llm: FakeLLM, prefix: str
) -> None:
    path = prefix.rstrip("/") + "/chat/completions"
    reply = dataclasses.replace(openai_tool_call("submit_result", '{"summary": "ok"}'), path=path)
    fake_llm.respond(reply, reply, reply)
    provider = OpenAIProvider("gpt-test", api_key="test-key", base_url=fake_llm.url + prefix)

    replies = [
        await provider.request(forced()),
        provider.request_blocking(forced(), None),
        await provider.stream(forced(), lambda delta: None),
    ]

    assert [sent.path for sent in fake_llm.requests] == [path, path, path]
    assert [turn.tool_calls[0].arguments for turn in replies] == [{"summary": "ok"}] * 3


async def test_required_and_none_choices_are_sent_as_strings(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(openai_text("a"), openai_text("b"))
    provider = make_provider()

    await provider.request(
        ModelTurnRequest(messages=CONVERSATION, tools=[SUBMIT], tool_choice=ToolChoice.required())
    )
    await provider.request(
        ModelTurnRequest(messages=CONVERSATION, tools=[SUBMIT], tool_choice=ToolChoice.none())
    )

    assert [r.body["tool_choice"] for r in fake_llm.requests] == ["required", "none"]


async def test_text_reply_without_tools(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(openai_text("All good."))

    turn = await make_provider().request(ModelTurnRequest(messages=CONVERSATION))

    assert "tools" not in fake_llm.requests[0].body
    assert "tool_choice" not in fake_llm.requests[0].body
    assert turn.text == "All good."
    assert turn.tool_calls == []
    assert turn.stop_reason == "end_turn"


async def test_history_with_tool_calls_and_error_results(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(openai_text("done"))
    history = [
        *CONVERSATION,
        Message(
            role="assistant",
            content="Let me look.",
            tool_calls=[
                ToolCall(id="c1", name="fs:read", arguments={"path": "a.py"}, raw_arguments="")
            ],
        ),
        Message(
            role="tool",
            tool_results=[
                ToolResult(tool_call_id="c1", name="fs:read", content="no such file", is_error=True)
            ],
        ),
        Message.user("Now submit."),
    ]
    read = ToolDefinition(name="fs:read", parameters={"type": "object"})

    await make_provider().request(ModelTurnRequest(messages=history, tools=[read, SUBMIT]))

    messages = fake_llm.requests[0].body["messages"]
    assert messages[2] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "fs_read", "arguments": '{"path": "a.py"}'},
            }
        ],
    }
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": TOOL_ERROR_PREFIX + "no such file",
    }
    assert messages[4] == {"role": "user", "content": "Now submit."}


async def test_tool_names_with_colons_are_aliased_and_mapped_back(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(openai_tool_call("fs_read_2", {"path": "x"}))
    tools = [
        ToolDefinition(name="fs_read", parameters={"type": "object"}),
        ToolDefinition(name="fs:read", parameters={"type": "object"}),
    ]

    turn = await make_provider().request(forced(*tools, name="fs:read"))

    body = fake_llm.requests[0].body
    assert [t["function"]["name"] for t in body["tools"]] == ["fs_read", "fs_read_2"]
    assert body["tool_choice"]["function"]["name"] == "fs_read_2"
    assert turn.tool_calls[0].name == "fs:read"


async def test_arguments_sent_as_an_object_are_accepted(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", {"summary": "ok", "score": 1}))

    turn = await make_provider().request(forced())

    call = turn.tool_calls[0]
    assert call.arguments == {"summary": "ok", "score": 1}
    assert json.loads(call.raw_arguments) == {"summary": "ok", "score": 1}
    assert call.parse_error is None


async def test_unparseable_arguments_are_kept_with_the_parse_error(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", '{"summary": "trunc'))

    turn = await make_provider().request(forced())

    call = turn.tool_calls[0]
    assert call.arguments is None
    assert call.raw_arguments == '{"summary": "trunc'
    assert call.parse_error is not None
    assert call.parse_error.startswith("Unterminated string")


async def test_missing_tool_call_ids_are_made_up_deterministically(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    two_calls = openai_tool_calls(
        [("submit_result", '{"score": 1}', None), ("submit_result", '{"score": 2}', "")]
    )
    fake_llm.respond(two_calls, two_calls)
    provider = make_provider()

    first = await provider.request(forced())
    again = await provider.request(forced())

    ids = [call.id for call in first.tool_calls]
    assert len(set(ids)) == 2
    assert all(call_id.startswith("call_") for call_id in ids)
    assert [call.id for call in again.tool_calls] == ids
    assert [call.arguments for call in first.tool_calls] == [{"score": 1}, {"score": 2}]


async def test_ignored_tool_choice_comes_back_as_text(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    answer = 'Here you go: {"summary": "ok", "score": 3}'
    fake_llm.respond(openai_text(answer))

    turn = await make_provider().request(forced())

    assert turn.text == answer
    assert turn.tool_calls == []
    assert turn.stop_reason == "end_turn"


async def test_forced_call_with_finish_reason_stop_is_tool_use(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", "{}", finish_reason="stop"))

    turn = await make_provider().request(forced())

    assert turn.stop_reason == "tool_use"
    assert turn.raw_stop_reason == "stop"


async def test_length_cutoff_is_max_tokens(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(openai_tool_call("submit_result", '{"summ', finish_reason="length"))

    turn = await make_provider().request(forced(max_tokens=5))

    assert turn.stop_reason == "max_tokens"
    assert turn.tool_calls[0].parse_error is not None


async def test_content_as_parts_and_refusal(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(
        openai_completion(
            {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
        ),
        openai_completion({"content": None, "refusal": "I can't help with that."}),
    )
    provider = make_provider()

    parts = await provider.request(ModelTurnRequest(messages=CONVERSATION))
    refusal = await provider.request(ModelTurnRequest(messages=CONVERSATION))

    assert parts.text == "ab"
    assert (refusal.stop_reason, refusal.text) == ("refusal", "I can't help with that.")


async def test_native_structured_output(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(openai_text('{"summary": "ok", "score": 2}'))
    request = ModelTurnRequest(
        messages=CONVERSATION,
        response_format=ResponseFormat(name="review", json_schema=RESULT_SCHEMA),
    )

    turn = await make_provider().request(request)

    assert fake_llm.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "review", "schema": RESULT_SCHEMA, "strict": True},
    }
    assert turn.text == '{"summary": "ok", "score": 2}'


async def test_parallel_tool_calls_and_max_tokens_field(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(openai_text("x"))
    provider = make_provider(max_tokens_param="max_completion_tokens")

    await provider.request(forced(parallel_tool_calls=False, max_tokens=50))

    body = fake_llm.requests[0].body
    assert body["parallel_tool_calls"] is False
    assert body["max_completion_tokens"] == 50
    assert "max_tokens" not in body


async def test_rate_limit_with_retry_after_then_success(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(
        status_error(429, "slow down", headers={"retry-after": "0.01"}),
        openai_tool_call("submit_result", '{"summary": "ok", "score": 1}'),
    )

    turn = await make_provider().request(forced())

    assert turn.tool_calls[0].arguments == {"summary": "ok", "score": 1}
    assert len(fake_llm.requests) == 2


async def test_server_error_every_time_ends_after_bounded_retries(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond_always(status_error(500, "boom", headers={"retry-after-ms": "1"}))

    with pytest.raises(ProviderError) as caught:
        await make_provider(max_retries=2).request(forced())

    error = caught.value
    assert (error.provider, error.kind, error.status) == ("openai", "provider_server_error", 500)
    assert error.body == {"message": "boom", "type": "scripted", "param": None, "code": None}
    assert isinstance(error.__cause__, openai.InternalServerError)
    assert len(fake_llm.requests) == 3  # one call and two retries, then it gives up


async def test_timeout(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(delayed(openai_text("too late"), 10))

    with pytest.raises(ProviderError) as caught:
        await make_provider(max_retries=0).request(forced(timeout_s=0.2))

    assert caught.value.kind == "provider_timeout"
    assert str(caught.value).startswith("openai: ")


async def test_authentication_error_is_not_retried(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond_always(status_error(401, "Incorrect API key provided"))

    with pytest.raises(ProviderError) as caught:
        await make_provider().request(forced())

    assert (caught.value.kind, caught.value.status) == ("provider_authentication_error", 401)
    assert "Incorrect API key provided" in str(caught.value)
    assert "test-key" not in str(caught.value.body)
    assert len(fake_llm.requests) == 1


async def test_bad_request(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(status_error(400, "invalid_function_parameters"))

    with pytest.raises(ProviderError) as caught:
        await make_provider().request(forced())

    assert caught.value.kind == "provider_bad_request"


async def test_connection_refused(make_provider: MakeProvider) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free once closed: nothing listens there

    provider = make_provider(base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    with pytest.raises(ProviderError) as caught:
        await provider.request(forced())

    assert caught.value.kind == "provider_connection_error"


async def test_reply_that_is_not_a_completion(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(ScriptedResponse(body={"choices": []}), ScriptedResponse(body="<html>"))
    provider = make_provider()

    with pytest.raises(ProviderError, match="no choices") as no_choices:
        await provider.request(forced())
    with pytest.raises(ProviderError, match="not JSON") as not_json:
        await provider.request(forced())

    assert no_choices.value.body == {"choices": []}
    assert not_json.value.body == "<html>"


def _summary_reply(summary: str, encoding: str, content_type: str) -> ScriptedResponse:
    completion = openai_tool_call("submit_result", {"summary": summary, "score": 1}).body
    text = json.dumps(completion, ensure_ascii=False)
    return ScriptedResponse(payload=text.encode(encoding), content_type=content_type)


@pytest.mark.parametrize("blocking", [False, True])
async def test_a_reply_is_read_in_the_charset_it_declares(
    fake_llm: FakeLLM, make_provider: MakeProvider, blocking: bool
) -> None:
    fake_llm.respond(
        _summary_reply("Café ☕ 🐍", "utf-8", "application/json"),
        _summary_reply("Café ☕", "utf-8", "application/json; charset=UTF-8"),
        _summary_reply("Café", "latin-1", "application/json; charset=ISO-8859-1"),
        _summary_reply("naïve", "utf-16", "application/json"),  # JSON's own detection
        ScriptedResponse(payload=b'{"choices": [\xff', content_type="application/json"),
    )
    provider = make_provider()

    async def summary() -> object:
        turn = (
            provider.request_blocking(forced(), None)
            if blocking
            else await provider.request(forced())
        )
        arguments = turn.tool_calls[0].arguments
        assert isinstance(arguments, dict)
        return arguments["summary"]

    assert [await summary() for _ in range(4)] == ["Café ☕ 🐍", "Café ☕", "Café", "naïve"]
    with pytest.raises(ProviderError, match="not JSON") as broken:
        await summary()
    assert broken.value.body == '{"choices": [\ufffd'


def test_missing_api_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIProvider("gpt-test", base_url="http://127.0.0.1:1/v1")


async def test_environment_key_and_base_url_are_honoured(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    fake_llm.respond(openai_text("hi"))
    provider = OpenAIProvider("gpt-test")

    turn = await provider.request(ModelTurnRequest(messages=CONVERSATION))

    assert turn.text == "hi"
    assert fake_llm.requests[0].headers["authorization"] == "Bearer env-key"


# Every public SDK error maps to a specific kind --------------------------------------------------

EXPECTED_KINDS = {
    "OpenAIError": "provider_error",
    "APIError": "provider_error",
    "APIStatusError": "provider_error",  # built with status 418
    "APITimeoutError": "provider_timeout",
    "APIConnectionError": "provider_connection_error",
    "APIResponseValidationError": "provider_error",
    "BadRequestError": "provider_bad_request",
    "AuthenticationError": "provider_authentication_error",
    "OAuthError": "provider_authentication_error",
    "PermissionDeniedError": "provider_authentication_error",
    "NotFoundError": "provider_bad_request",
    "ConflictError": "provider_error",
    "UnprocessableEntityError": "provider_bad_request",
    "RateLimitError": "provider_rate_limited",
    "InternalServerError": "provider_server_error",
    "LengthFinishReasonError": "provider_error",
    "ContentFilterFinishReasonError": "provider_error",
    "InvalidWebhookSignatureError": "provider_error",
    "WebSocketQueueFullError": "provider_error",
    "WebSocketConnectionClosedError": "provider_error",
}


def _sdk_errors() -> list[type[BaseException]]:
    return [
        value
        for name in openai.__all__
        if inspect.isclass(value := getattr(openai, name, None))
        and issubclass(value, BaseException)
    ]


def _instance(cls: type[BaseException]) -> BaseException:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    status = getattr(cls, "status_code", None)
    status = (
        status
        if isinstance(status, int)
        else (500 if cls.__name__ == "InternalServerError" else 418)
    )
    response = httpx2.Response(status, request=request, json={"error": {"message": "x"}})
    body = {"error": {"message": "x"}}
    if issubclass(cls, openai.OAuthError):
        return cls(response=response, body=body)
    if issubclass(cls, openai.APIStatusError):
        return cls("x", response=response, body=body)
    if issubclass(cls, openai.APITimeoutError):
        return cls(request)
    if issubclass(cls, openai.APIConnectionError):
        return cls(request=request)
    if issubclass(cls, openai.APIResponseValidationError):
        return cls(response, body)
    if issubclass(cls, openai.APIError):
        return cls("x", request, body=None)
    if issubclass(cls, openai.LengthFinishReasonError):
        completion = ChatCompletion.model_construct(
            id="x", choices=[], created=0, model="m", object="chat.completion", usage=None
        )
        return cls(completion=completion)
    if issubclass(cls, openai.ContentFilterFinishReasonError):
        return cls(completion=None)
    if issubclass(cls, openai.WebSocketConnectionClosedError):
        return cls("x", unsent_messages=[])
    return cls("x")


def test_every_public_sdk_error_is_classified() -> None:
    assert sorted(cls.__name__ for cls in _sdk_errors()) == sorted(EXPECTED_KINDS)


@pytest.mark.parametrize("cls", _sdk_errors(), ids=lambda cls: cls.__name__)
def test_sdk_error_maps_to_its_kind(cls: type[BaseException]) -> None:
    error = _instance(cls)

    with pytest.raises(ProviderError) as caught, translate_errors("openai"):
        raise error

    assert caught.value.kind == EXPECTED_KINDS[cls.__name__]
    assert caught.value.__cause__ is error
    assert caught.value.provider == "openai"


def test_running_out_of_file_descriptors_is_named_not_blamed_on_the_provider() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    with pytest.raises(ProviderError) as caught, translate_errors("openai"):
        try:  # the transport's connect fails as it does when the process is out of fds
            raise OSError(errno.EMFILE, "Too many open files")
        except OSError as exc:
            raise openai.APIConnectionError(request=request) from exc

    assert caught.value.kind == "provider_connection_error"
    assert caught.value.message == (
        "Connection error.: this process is out of file descriptors (Too many open files), so "
        "no connection could be opened; raise the limit (ulimit -n) or run fewer at once"
    )


# The neutral request and tool-name aliases the adapters share ----------------------------------


def test_tool_name_aliases_are_safe_unique_and_reversible() -> None:
    long_a, long_b = "x:" + "a" * 70 + ":1", "x:" + "a" * 70 + ":2"
    names = ToolNameMap(["fs:read", "fs_read", "fs_read_2", long_a, long_b, "ok-name"])

    aliases = [names.to_wire(n) for n in ["fs:read", "fs_read", "fs_read_2", long_a, long_b]]

    assert aliases[1:3] == ["fs_read", "fs_read_2"]
    assert aliases[0] == "fs_read_3"
    assert len(set(aliases)) == 5
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", alias) for alias in aliases)
    assert [names.from_wire(alias) for alias in aliases] == [
        "fs:read",
        "fs_read",
        "fs_read_2",
        long_a,
        long_b,
    ]
    assert names.to_wire("ok-name") == "ok-name"
    assert names.from_wire("unknown_tool") == "unknown_tool"


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"tool_choice": ToolChoice.tool("missing")}, "not among"),
        ({"tool_choice": ToolChoice.required(), "tools": []}, "needs at least one tool"),
        ({"tools": [SUBMIT, SUBMIT]}, "must be unique"),
    ],
)
def test_inconsistent_requests_are_rejected(options: dict[str, object], problem: str) -> None:
    settings: dict[str, object] = {"messages": CONVERSATION, "tools": [SUBMIT], **options}

    with pytest.raises(ValidationError, match=problem):
        ModelTurnRequest(**settings)


def test_tool_choice_needs_a_name_only_in_tool_mode() -> None:
    with pytest.raises(ValidationError, match="tool_name is required"):
        ToolChoice(mode="tool")
    with pytest.raises(ValidationError, match="tool_name is required"):
        ToolChoice(mode="auto", tool_name="x")


# Pooled clients -----------------------------------------------------------------------------------


async def test_calls_on_one_event_loop_share_one_connection(
    fake_llm: FakeLLM, make_provider: MakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    connects: list[object] = []
    connect = socket.socket.connect

    def counting(self: socket.socket, address: object) -> None:
        connects.append(address)
        connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", counting)
    fake_llm.respond(openai_text("one"), openai_text("two"), openai_text("three"))
    provider, twin = make_provider(), make_provider()  # same settings, same pooled client

    turns = [await provider.request(forced()) for _ in range(2)]
    turns.append(await twin.request(forced()))

    assert [turn.text for turn in turns] == ["one", "two", "three"]
    assert len(connects) == 1


def test_each_event_loop_gets_a_client_closed_when_the_loop_shuts_down(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    provider = make_provider()

    for text in ("first loop", "second loop", "third loop"):
        fake_llm.respond(openai_text(text))
        turn = asyncio.run(provider.request(forced()))
        assert turn.text == text
    gc.collect()  # a connection left open by a closed loop would warn here (an error in tests)


# The request body ------------------------------------------------------------------------------


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _turn(tools: list[ToolDefinition], task: str = "count") -> ModelTurnRequest:
    return ModelTurnRequest(
        messages=[Message.user(task)],
        tools=tools,
        tool_choice=ToolChoice.tool(tools[0].name) if tools else ToolChoice.auto(),
        max_tokens=50,
    )


SETTINGS: dict[str, Any] = {
    "model": "m",
    "profile": ProviderProfile(),
    "max_tokens_param": "max_tokens",
}


def _content(turn: ModelTurnRequest, **extra: object) -> bytes:
    return chat_content(turn, tool_names_for(turn), extra=dict(extra) or None, **SETTINGS)


def _body(turn: ModelTurnRequest) -> dict[str, object]:
    return chat_body(turn, tool_names_for(turn), **SETTINGS)


def test_the_bytes_are_the_body_with_its_tools() -> None:
    tools = [
        ToolDefinition(name="fs:read", description="Read \u00e9 file", parameters=SCHEMA),
        ToolDefinition(name="submit_result", parameters=SCHEMA, strict=True),
    ]
    turn = _turn(tools)
    assert json.loads(_content(turn)) == _body(turn)
    sent = json.loads(_content(turn, stream=True))
    assert sent["stream"] is True and sent["tools"] == _body(turn)["tools"]
    assert sent["tools"][0]["function"]["name"] != "fs:read"  # its wire name


def test_the_same_tools_give_the_same_bytes_with_each_conversation() -> None:
    tools = [ToolDefinition(name="submit_result", parameters=SCHEMA)]
    first = json.loads(_content(_turn(tools, "one")))
    second = json.loads(_content(_turn(tools, "two")))
    assert first["tools"] == second["tools"]
    assert [m["content"] for m in (first["messages"][0], second["messages"][0])] == ["one", "two"]


def test_other_tools_are_serialised_for_themselves() -> None:
    first = _turn([ToolDefinition(name="submit_result", parameters=SCHEMA)])
    other = {"type": "object", "properties": {"s": {"type": "string"}}}
    second = _turn([ToolDefinition(name="submit_result", parameters=other)])
    _content(first)
    sent = json.loads(_content(second))
    assert sent["tools"][0]["function"]["parameters"] == other


def test_a_lone_surrogate_in_a_tool_goes_out_as_its_escape_text() -> None:
    tools = [ToolDefinition(name="t", description="bad \ud800 text", parameters=SCHEMA)]
    sent = json.loads(_content(_turn(tools)))  # UTF-8 bytes: the surrogate could not go as is
    assert sent["tools"][0]["function"]["description"] == "bad \\ud800 text"


def test_a_body_without_tools_has_no_tools_list() -> None:
    sent = json.loads(_content(_turn([])))
    assert "tools" not in sent and "tool_choice" not in sent
    assert sent["max_tokens"] == 50


def test_a_body_whose_floats_are_not_all_finite_is_refused() -> None:
    # A conversation of text is written without a search for NaN; the floats that can be in a
    # body (the temperature, a native schema's numbers, extra fields) are still refused.
    plain = _turn([]).model_copy(update={"temperature": 0.5})
    assert json.loads(_content(plain))["temperature"] == 0.5
    text_like_nan = _turn([], task="NaN and Infinity are words here")
    assert json.loads(_content(text_like_nan))["messages"][0]["content"].startswith("NaN")
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError):
            _content(_turn([]).model_copy(update={"temperature": bad}))
        with pytest.raises(ValueError):
            _content(_turn([]), stream_options={"weight": bad})
        with pytest.raises(ValueError):
            _content(_turn([]), top_p=bad)
    schema = {"type": "object", "properties": {"n": {"type": "number", "maximum": float("inf")}}}
    native = _turn([]).model_copy(
        update={"response_format": ResponseFormat(name="out", json_schema=schema)}
    )
    with pytest.raises(ValueError):
        _content(native)


@pytest.mark.parametrize(
    ("system", "rest"),
    [
        ("You count. " * 200, [Message.user("count")]),
        ("You count.", []),
        ('Quote "this", then \\ and \u00e9 and \n', [Message.user("a"), Message.user("b")]),
        ("bad \ud800 prompt", [Message.user("count")]),
    ],
)
def test_a_system_message_goes_first_exactly_as_written(system: str, rest: list[Message]) -> None:
    tools = [ToolDefinition(name="submit_result", parameters=SCHEMA)]
    for turn in (_turn(tools), _turn([])):
        turn = turn.model_copy(update={"messages": [Message.system(system), *rest]})
        for extra in ({}, {"stream": True}):
            sent = json.loads(_content(turn, **extra))
            body: Any = _body(turn)  # a lone surrogate goes out as its escape text
            body["messages"][0]["content"] = system.replace("\ud800", "\\ud800")
            assert sent == {**body, **extra}
            assert len(sent["messages"]) == 1 + len(rest)


def test_the_same_system_message_is_sent_the_same_with_each_task() -> None:
    system = Message.system("You count.")
    first, second = (
        _turn([]).model_copy(update={"messages": [system, Message.user(task)]})
        for task in ("one", "two")
    )
    assert json.loads(_content(first))["messages"][1]["content"] == "one"
    assert json.loads(_content(second))["messages"] == [
        {"role": "system", "content": "You count."},
        {"role": "user", "content": "two"},
    ]
