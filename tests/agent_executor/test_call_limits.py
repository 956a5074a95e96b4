"""Calls held to shared limits: a 429 costs our retry budget, not ours times the SDK's."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_contracts import CallLimits, Message, ProviderError
from agent_executor import AnthropicProvider, LocalCallLimiter, OpenAIProvider, Provider
from agent_executor._call_limits import RATE_LIMIT_RETRIES, LimitedProvider
from agent_executor._providers.base import ModelTurnRequest
from tests.fake_llm import ScriptedResponse, anthropic_text, openai_text
from tests.limited_llm import LimitedLLM

TURN = ModelTurnRequest(messages=[Message.user("Grade the essay.")])
SDK_RETRIES = 2


def _anthropic(server: LimitedLLM) -> Provider:
    return AnthropicProvider(
        "claude-test", api_key="k", base_url=server.anthropic_base_url, max_retries=SDK_RETRIES
    )


def _openai(server: LimitedLLM) -> Provider:
    return OpenAIProvider(
        "gpt-test", api_key="k", base_url=server.openai_base_url, max_retries=SDK_RETRIES
    )


PROVIDERS: dict[str, tuple[Callable[[LimitedLLM], Provider], ScriptedResponse]] = {
    "anthropic": (_anthropic, anthropic_text("ok")),
    "openai": (_openai, openai_text("ok")),
}


@pytest.mark.parametrize("name", sorted(PROVIDERS))
async def test_a_429_is_sent_our_budget_of_times_through_the_real_sdk(name: str) -> None:
    make, reply = PROVIDERS[name]
    # concurrency 0: every request is answered 429, with a retry-after the SDK would honour
    with LimitedLLM(reply, concurrency=0, requests_per_minute=1000, retry_after_s=0.05) as server:
        limited = LimitedProvider(make(server), LocalCallLimiter(), CallLimits(concurrency=4))
        with pytest.raises(ProviderError) as raised:
            await limited.request(TURN)
    assert raised.value.status == 429
    assert server.refused == 1 + RATE_LIMIT_RETRIES


@pytest.mark.parametrize("name", sorted(PROVIDERS))
async def test_a_server_error_is_still_retried_as_the_sdk_would(name: str) -> None:
    make, _ = PROVIDERS[name]
    failing = ScriptedResponse(status=500, body={"error": {"message": "boom", "type": "server"}})
    with LimitedLLM(failing, concurrency=10, requests_per_minute=1000, delay_s=0.0) as server:
        limited = LimitedProvider(make(server), LocalCallLimiter(), CallLimits(concurrency=4))
        with pytest.raises(ProviderError) as raised:
            await limited.request(TURN)
    assert raised.value.status == 500
    assert server.accepted == 1 + SDK_RETRIES


async def test_a_limited_call_that_succeeds_returns_the_reply() -> None:
    with LimitedLLM(anthropic_text("graded"), concurrency=1, requests_per_minute=1000) as server:
        limited = LimitedProvider(_anthropic(server), LocalCallLimiter(), CallLimits(concurrency=1))
        reply = await limited.request(TURN)
    assert reply.text == "graded"
    assert server.accepted == 1
