from __future__ import annotations

import inspect
from collections.abc import Callable

import anthropic
import httpx2
import pytest

from agent_contracts import ConfigError, Message, ProviderError, ToolCall, ToolResult
from agent_executor import AnthropicProvider
from agent_executor._providers.anthropic import translate_errors
from agent_executor._providers.base import (
    ModelTurnRequest,
    ResponseFormat,
    ToolChoice,
    ToolDefinition,
)
from tests.fake_llm import (
    FakeLLM,
    anthropic_message,
    anthropic_text,
    anthropic_tool_use,
    delayed,
    status_error,
)

RESULT_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
    "additionalProperties": False,
}
SUBMIT = ToolDefinition(
    name="submit_result", description="Submit the answer.", parameters=RESULT_SCHEMA, strict=True
)
CONVERSATION = [Message.system("You review code."), Message.user("Review the change.")]

MakeProvider = Callable[..., AnthropicProvider]


@pytest.fixture
def make_provider(fake_llm: FakeLLM) -> MakeProvider:
    def make(**options: object) -> AnthropicProvider:
        settings: dict[str, object] = {
            "api_key": "test-key",
            "base_url": fake_llm.anthropic_base_url,
        }
        settings.update(options)
        return AnthropicProvider("claude-test", **settings)  # type: ignore[arg-type]

    return make


def request(choice: ToolChoice | None = None, **extra: object) -> ModelTurnRequest:
    return ModelTurnRequest(
        messages=CONVERSATION,
        tools=[SUBMIT],
        tool_choice=choice or ToolChoice.tool("submit_result"),
        **extra,
    )


async def test_forced_tool_use_round_trip(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(anthropic_tool_use("submit_result", {"summary": "fine"}, text="Submitting."))

    turn = await make_provider().request(request(temperature=0.2))

    sent = fake_llm.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["authorization"] == "Bearer test-key"
    assert sent.body["system"] == "You review code."
    assert sent.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Review the change."}]}
    ]
    assert sent.body["tools"] == [
        {
            "name": "submit_result",
            "description": "Submit the answer.",
            "input_schema": RESULT_SCHEMA,
            "strict": True,
        }
    ]
    assert sent.body["tool_choice"] == {"type": "tool", "name": "submit_result"}
    assert sent.body["max_tokens"] == 4096
    assert sent.body["temperature"] == 0.2
    assert "thinking" not in sent.body
    assert turn.text == "Submitting."
    assert turn.tool_calls == [
        ToolCall(
            id="toolu_1",
            name="submit_result",
            arguments={"summary": "fine"},
            raw_arguments='{"summary": "fine"}',
        )
    ]
    assert turn.stop_reason == "tool_use"
    assert (turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.requests) == (13, 5, 1)
    assert (turn.provider, turn.model) == ("anthropic", "claude-test")
    assert turn.raw["id"] == "msg_fake"
    assert turn.tool_choice_downgraded is False


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice.auto(), {"type": "auto", "disable_parallel_tool_use": True}),
        (ToolChoice.required(), {"type": "any", "disable_parallel_tool_use": True}),
        (ToolChoice.none(), {"type": "none"}),
    ],
)
async def test_tool_choice_spelling(
    fake_llm: FakeLLM, make_provider: MakeProvider, choice: ToolChoice, wire: dict[str, object]
) -> None:
    fake_llm.respond(anthropic_text("ok"))

    await make_provider().request(request(choice, parallel_tool_calls=False))

    assert fake_llm.requests[0].body["tool_choice"] == wire


@pytest.mark.parametrize(
    ("wire", "normalised"),
    [
        ("end_turn", "end_turn"),
        ("stop_sequence", "end_turn"),
        ("max_tokens", "max_tokens"),
        ("model_context_window_exceeded", "max_tokens"),
        ("refusal", "refusal"),
        ("pause_turn", "other"),
    ],
)
async def test_stop_reasons(
    fake_llm: FakeLLM, make_provider: MakeProvider, wire: str, normalised: str
) -> None:
    fake_llm.respond(anthropic_text("partial", stop_reason=wire))

    turn = await make_provider().request(ModelTurnRequest(messages=CONVERSATION))

    assert (turn.text, turn.stop_reason, turn.raw_stop_reason) == ("partial", normalised, wire)
    assert "tools" not in fake_llm.requests[0].body


async def test_history_with_error_results_and_a_reprompt(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(anthropic_text("ok"))
    history = [
        Message.system("First rule."),
        *CONVERSATION,
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="t1", name="fs:read", arguments={"path": "a.py"})],
        ),
        Message(
            role="tool",
            tool_results=[
                ToolResult(tool_call_id="t1", name="fs:read", content="missing", is_error=True)
            ],
        ),
        Message.user("Call submit_result now."),
        Message(role="assistant"),  # an empty reply is dropped
    ]
    read = ToolDefinition(name="fs:read", parameters={"type": "object"})

    await make_provider().request(ModelTurnRequest(messages=history, tools=[read, SUBMIT]))

    body = fake_llm.requests[0].body
    assert body["system"] == "First rule.\n\nYou review code."
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "fs_read", "input": {"path": "a.py"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": "missing",
                    "is_error": True,
                },
                {"type": "text", "text": "Call submit_result now."},
            ],
        },
    ]
    assert body["tools"][0]["name"] == "fs_read"


async def test_tool_name_is_mapped_back(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(anthropic_tool_use("mind_rag-query", {"text": "q"}))
    tool = ToolDefinition(name="mind:rag-query", parameters={"type": "object"})

    turn = await make_provider().request(
        ModelTurnRequest(
            messages=CONVERSATION, tools=[tool], tool_choice=ToolChoice.tool("mind:rag-query")
        )
    )

    assert fake_llm.requests[0].body["tool_choice"] == {"type": "tool", "name": "mind_rag-query"}
    assert turn.tool_calls[0].name == "mind:rag-query"


async def test_thinking_downgrades_a_forced_choice_and_keeps_thinking_blocks(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    thinking = {"type": "thinking", "thinking": "Let me think.", "signature": "sig"}
    fake_llm.respond(
        anthropic_message(
            [thinking, {"type": "tool_use", "id": "t9", "name": "submit_result", "input": {}}],
            stop_reason="tool_use",
        ),
        anthropic_text("ok"),
    )
    provider = make_provider(thinking_budget=2048)

    turn = await provider.request(request(max_tokens=1000, temperature=0.5))
    follow_up = [
        *CONVERSATION,
        turn.to_message(),
        Message(
            role="tool",
            tool_results=[ToolResult(tool_call_id="t9", name="submit_result", content="bad")],
        ),
    ]
    await provider.request(ModelTurnRequest(messages=follow_up, tools=[SUBMIT]))

    first = fake_llm.requests[0].body
    assert first["tool_choice"] == {"type": "auto"}
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert first["max_tokens"] == 3048
    assert "temperature" not in first
    assert turn.tool_choice_downgraded is True
    assert turn.text == ""
    assert fake_llm.requests[1].body["messages"][1]["content"] == [
        thinking,
        {"type": "tool_use", "id": "t9", "name": "submit_result", "input": {}},
    ]


async def test_thinking_blocks_travel_on_the_message_so_a_stored_transcript_resumes(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    thinking = {"type": "thinking", "thinking": "Hmm.", "signature": "sig2"}
    fake_llm.respond(
        anthropic_message(
            [thinking, {"type": "tool_use", "id": "t7", "name": "submit_result", "input": {}}],
            stop_reason="tool_use",
        ),
        anthropic_text("ok"),
    )
    turn = await make_provider(thinking_budget=2048).request(request())
    stored = turn.to_message().model_dump_json()  # e.g. in a service's session store
    assert turn.to_message().thinking == [thinking]

    resumed = make_provider(thinking_budget=2048)  # another provider object: no memory
    follow_up = [
        *CONVERSATION,
        Message.model_validate_json(stored),
        Message(
            role="tool",
            tool_results=[ToolResult(tool_call_id="t7", name="submit_result", content="bad")],
        ),
    ]
    await resumed.request(ModelTurnRequest(messages=follow_up, tools=[SUBMIT]))
    assert fake_llm.requests[1].body["messages"][1]["content"][0] == thinking


def test_thinking_budget_below_the_minimum_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="at least 1024"):
        AnthropicProvider("claude-test", api_key="k", thinking_budget=100)


async def test_native_structured_output(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(anthropic_text('{"summary": "ok"}'))
    fmt = ResponseFormat(name="review", json_schema=RESULT_SCHEMA)

    turn = await make_provider().request(
        ModelTurnRequest(messages=CONVERSATION, response_format=fmt)
    )

    assert fake_llm.requests[0].body["output_config"] == {
        "format": {"type": "json_schema", "schema": RESULT_SCHEMA}
    }
    assert turn.text == '{"summary": "ok"}'


async def test_usage_counts_cache_tokens_as_input(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 3,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 100,
    }
    fake_llm.respond(anthropic_message([{"type": "text", "text": "x"}], usage=usage))

    turn = await make_provider().request(ModelTurnRequest(messages=CONVERSATION))

    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (115, 3)


async def test_rate_limit_with_retry_after_then_success(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond(
        status_error(429, "rate limited", headers={"retry-after": "0.01"}, api="anthropic"),
        anthropic_tool_use("submit_result", {"summary": "ok"}),
    )

    turn = await make_provider().request(request())

    assert turn.tool_calls[0].arguments == {"summary": "ok"}
    assert len(fake_llm.requests) == 2


async def test_overloaded_every_time_ends_after_bounded_retries(
    fake_llm: FakeLLM, make_provider: MakeProvider
) -> None:
    fake_llm.respond_always(
        status_error(529, "Overloaded", headers={"retry-after-ms": "1"}, api="anthropic")
    )

    with pytest.raises(ProviderError) as caught:
        await make_provider(max_retries=1).request(request())

    error = caught.value
    assert (error.provider, error.kind, error.status) == ("anthropic", "provider_server_error", 529)
    assert error.body == {"type": "error", "error": {"type": "api_error", "message": "Overloaded"}}
    assert isinstance(error.__cause__, anthropic.OverloadedError)
    assert len(fake_llm.requests) == 2


async def test_timeout(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond(delayed(anthropic_text("late"), 10))

    with pytest.raises(ProviderError) as caught:
        await make_provider(max_retries=0, timeout_s=0.2).request(request())

    assert caught.value.kind == "provider_timeout"


async def test_authentication_error(fake_llm: FakeLLM, make_provider: MakeProvider) -> None:
    fake_llm.respond_always(status_error(401, "invalid x-api-key", api="anthropic"))

    with pytest.raises(ProviderError) as caught:
        await make_provider().request(request())

    assert (caught.value.kind, caught.value.status) == ("provider_authentication_error", 401)
    assert str(caught.value).startswith("anthropic 401: ")
    assert len(fake_llm.requests) == 1


def test_missing_api_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider("claude-test")


async def test_environment_key_and_base_url_are_honoured(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    fake_llm.respond(anthropic_text("hi"))
    provider = AnthropicProvider("claude-test")

    turn = await provider.request(ModelTurnRequest(messages=CONVERSATION))

    assert turn.text == "hi"
    assert fake_llm.requests[0].headers["authorization"] == "Bearer env-key"


# Every public SDK error maps to a specific kind --------------------------------------------------

BAD_REQUEST = "provider_bad_request"
AUTH = "provider_authentication_error"
RATE = "provider_rate_limited"
SERVER = "provider_server_error"
OTHER = "provider_error"
EXPECTED_KINDS = {
    "AnthropicError": OTHER,
    "APIError": OTHER,
    "APIStatusError": OTHER,  # built with status 418
    "APITimeoutError": "provider_timeout",
    "APIConnectionError": "provider_connection_error",
    "APIResponseValidationError": OTHER,
    "APIWebhookValidationError": OTHER,
    "BadRequestError": BAD_REQUEST,
    "WorkspaceHumanReviewDisabledError": BAD_REQUEST,
    "AuthenticationError": AUTH,
    "PaymentRequiredError": OTHER,
    "PermissionDeniedError": AUTH,
    "NotFoundError": BAD_REQUEST,
    "RequestTimeoutError": "provider_timeout",
    "ConflictError": OTHER,
    "PreconditionFailedError": OTHER,
    "ContentTooLargeError": BAD_REQUEST,
    "RequestTooLargeError": BAD_REQUEST,
    "UnprocessableEntityError": BAD_REQUEST,
    "RateLimitError": RATE,
    "RequestHeaderFieldsTooLargeError": BAD_REQUEST,
    "ClientClosedRequestError": OTHER,
    "InternalServerError": SERVER,
    "HTTPNotImplementedError": SERVER,
    "ServiceUnavailableError": SERVER,
    "GatewayTimeoutError": SERVER,
    "DeadlineExceededError": SERVER,
    "OverloadedError": SERVER,
    "ClaudeCodeKeyCreatorNotMemberError": BAD_REQUEST,
    "ClaudeCodeVersionTooOldError": BAD_REQUEST,
    "CMEKKeyDisabledError": BAD_REQUEST,
    "CMEKKeyNetworkBlockedError": BAD_REQUEST,
    "OrganizationOnHoldError": BAD_REQUEST,
    "OrganizationTypeNotSupportedError": BAD_REQUEST,
    "ParentOrganizationRequiredError": BAD_REQUEST,
    "RequestBodyEncodingInvalidError": BAD_REQUEST,
    "RequestBodyEncodingUnsupportedError": BAD_REQUEST,
    "LinkedOrganizationBillingUnavailableError": OTHER,
    "LinkedOrganizationSpendLimitReachedError": OTHER,
    "SandboxEgressRestrictedError": AUTH,
    "RequestBodyTooLargeAfterDecodingError": BAD_REQUEST,
    "ContractSpendLimitReachedError": RATE,
    "EnforcedSpendLimitReachedError": RATE,
    "RampLimitExceededError": RATE,
    "CMEKContextUnavailableError": SERVER,
    "CMEKKeyUnreachableError": SERVER,
    "RetryableError": OTHER,
    "CredentialsError": AUTH,
    "IdentityTokenFileError": AUTH,
}


def _sdk_errors() -> dict[str, type[BaseException]]:
    return {
        name: value
        for name in anthropic.__all__
        if inspect.isclass(value := getattr(anthropic, name, None))
        and issubclass(value, BaseException)
    }


def _instance(cls: type[BaseException]) -> BaseException:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    status = getattr(cls, "status_code", None)
    if not isinstance(status, int):
        status = 500 if issubclass(cls, anthropic.InternalServerError) else 418
    response = httpx2.Response(status, request=request, json={"error": {"message": "x"}})
    body = {"type": "error", "error": {"type": "api_error", "message": "x"}}
    if issubclass(cls, anthropic.APIStatusError):
        return cls("x", response=response, body=body)
    if issubclass(cls, anthropic.APITimeoutError):
        return cls(request)
    if issubclass(cls, anthropic.APIConnectionError):
        return cls(request=request)
    if issubclass(cls, anthropic.APIResponseValidationError):
        return cls(response, body)
    if issubclass(cls, anthropic.APIError):
        return cls("x", request, body=None)
    return cls("x")


def test_every_public_sdk_error_is_classified() -> None:
    assert sorted(_sdk_errors()) == sorted(EXPECTED_KINDS)


@pytest.mark.parametrize("name", sorted(_sdk_errors()))
def test_sdk_error_maps_to_its_kind(name: str) -> None:
    error = _instance(_sdk_errors()[name])

    with pytest.raises(ProviderError) as caught, translate_errors("anthropic"):
        raise error

    assert caught.value.kind == EXPECTED_KINDS[name]
    assert caught.value.__cause__ is error
