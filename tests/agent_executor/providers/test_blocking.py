"""``run_sync`` calls through the SDKs' synchronous clients, each attempt within the run's end."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

import httpcore2
import pytest

from agent_executor import OpenAIProvider
from agent_executor._providers.anthropic import SYNC_CLIENTS as ANTHROPIC_CLIENTS
from agent_executor._providers.base import ModelTurn, ModelTurnRequest
from agent_executor._providers.blocking import can_block, final_at_deadline, past_deadline
from agent_executor._providers.openai import SYNC_CLIENTS as OPENAI_CLIENTS
from tests.agent_executor.test_run import (
    APIS,
    INVALID,
    VALID,
    agent_for,
    call,
    provider_for,
)
from tests.fake_llm import FakeLLM, delayed, status_error

T = TypeVar("T")


def async_library(fake: FakeLLM, index: int = -1) -> str:
    """What the SDK said of its async library on a request (``false``: the sync client)."""
    return fake.requests[index].headers["x-stainless-async"]


@pytest.mark.parametrize("api", APIS)
async def test_run_sync_calls_through_the_sync_client_and_run_the_async_one(
    fake_llm: FakeLLM, api: str
) -> None:
    fake_llm.respond_always(call(api, "submit_result", VALID))
    agent = agent_for(provider_for(api, fake_llm))

    synced = await_free(lambda: agent.run_sync("Grade it."))
    assert async_library(fake_llm) == "false"
    awaited = await agent.run("Grade it.")
    assert async_library(fake_llm).startswith("async:")

    assert synced.result_data == awaited.result_data == VALID


def await_free(function: Callable[[], T]) -> T:
    """Call ``function`` from a thread with no running event loop (as sync code does)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(function).result(timeout=60)


@pytest.mark.parametrize("api", APIS)
def test_a_re_prompted_run_gives_the_same_result_either_way(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(
        call(api, "submit_result", INVALID),
        call(api, "submit_result", VALID),
        call(api, "submit_result", INVALID),
        call(api, "submit_result", VALID),
    )
    agent = agent_for(provider_for(api, fake_llm))

    synced = agent.run_sync("Grade it.")
    awaited = asyncio.run(agent.run("Grade it."))

    assert [async_library(fake_llm, i) == "false" for i in range(4)] == [True, True, False, False]
    assert synced.ok and awaited.ok
    assert synced.result_data == awaited.result_data == VALID
    assert synced.retries == awaited.retries == 1
    assert [a.errors for a in synced.attempts] == [a.errors for a in awaited.attempts]
    assert [m.model_dump(exclude={"tool_calls"}) for m in synced.transcript] == [
        m.model_dump(exclude={"tool_calls"}) for m in awaited.transcript
    ]


@pytest.mark.parametrize("api", APIS)
def test_the_run_timeout_cuts_a_blocking_call_and_no_retry_starts_after_it(
    fake_llm: FakeLLM, api: str
) -> None:
    fake_llm.respond(
        call(api, "submit_result", INVALID), delayed(call(api, "submit_result", VALID), 120)
    )
    # Time enough for the first, immediate, call on a loaded machine; the second is cut.
    agent = agent_for(provider_for(api, fake_llm, max_retries=2), options={"timeout_s": 5.0})

    result = agent.run_sync("Grade it.")

    assert result.error is not None and result.error.type == "run_timeout"
    assert result.error.last_output == INVALID
    assert len(result.attempts) == 1
    # The second call was cut at the run's end (not after the server's 120 s), and the SDK's
    # retries found the deadline passed: the server saw no third request.
    assert len(fake_llm.requests) == 2
    assert result.duration_ms < 60_000


@pytest.mark.parametrize("api", APIS)
def test_an_attempt_the_deadline_cut_is_not_retried_after_a_backoff(
    fake_llm: FakeLLM, api: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.respond(delayed(call(api, "submit_result", VALID), 30))
    agent = agent_for(provider_for(api, fake_llm, max_retries=2), options={"timeout_s": 1.0})

    with caplog.at_level(logging.INFO, logger=f"{api}._base_client"):
        result = agent.run_sync("Grade it.")

    assert result.error is not None and result.error.type == "run_timeout"
    assert len(fake_llm.requests) == 1
    # The run ends with the cut attempt: the SDK sleeps no backoff before a retry it would
    # refuse anyway (its log says when it does).
    assert not [r for r in caplog.records if "Retrying request" in r.getMessage()]


@pytest.mark.parametrize("api", APIS)
def test_a_retry_whose_wait_would_pass_the_deadline_is_not_waited_for(
    fake_llm: FakeLLM, api: str
) -> None:
    fake_llm.respond(
        status_error(429, "slow down", headers={"retry-after": "20"}, api=api),
        call(api, "submit_result", VALID),
    )
    agent = agent_for(provider_for(api, fake_llm, max_retries=2), options={"timeout_s": 5.0})

    result = agent.run_sync("Grade it.")

    assert result.error is not None and result.error.type == "provider_rate_limited"
    assert "slow down" in result.error.message
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("api", APIS)
def test_a_retry_well_within_the_deadline_is_made(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond(
        status_error(503, "busy", headers={"retry-after": "0.05"}, api=api),
        call(api, "submit_result", VALID),
    )
    agent = agent_for(provider_for(api, fake_llm, max_retries=2))

    result = agent.run_sync("Grade it.")

    assert result.ok and result.result_data == VALID
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize("api", APIS)
def test_provider_errors_are_the_same_typed_errors(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond_always(status_error(401, "bad key", api=api))
    agent = agent_for(provider_for(api, fake_llm))

    result = agent.run_sync("Grade it.")

    assert result.error is not None and result.error.type == "provider_authentication_error"
    assert "bad key" in result.error.message


def test_a_refused_connection_is_a_connection_error() -> None:
    server = FakeLLM()
    provider = provider_for("openai", server)
    server.close()

    result = agent_for(provider).run_sync("Grade it.")

    assert result.error is not None and result.error.type == "provider_connection_error"


@pytest.mark.parametrize("api", APIS)
def test_closed_clients_are_made_anew(fake_llm: FakeLLM, api: str) -> None:
    fake_llm.respond_always(call(api, "submit_result", VALID))
    agent = agent_for(provider_for(api, fake_llm))
    assert agent.run_sync("Grade it.").ok

    OPENAI_CLIENTS.close_all()
    ANTHROPIC_CLIENTS.close_all()

    assert agent.run_sync("Grade it.").ok
    ports = [request.client_port for request in fake_llm.requests]
    assert ports[0] != ports[1]


class Final(Exception):
    """The stand-in for an SDK's final timeout error."""


def test_only_a_timeout_at_the_deadline_is_made_final() -> None:
    seen: list[str] = []
    now = time.monotonic()

    def earlier(name: str, info: Mapping[str, object]) -> None:
        seen.append(name)

    at_end = final_at_deadline(now, earlier, Final)
    timeout = httpcore2.ReadTimeout("timed out")
    at_end("http11.receive_response_headers.started", {})
    with pytest.raises(Final) as raised:
        at_end("http11.receive_response_headers.failed", {"exception": timeout})
    assert raised.value.__cause__ is timeout
    # not a timeout (an interrupt, a reset connection): it goes on as it was
    at_end("http11.receive_response_body.failed", {"exception": KeyboardInterrupt()})
    at_end("http11.receive_response_body.failed", {"exception": httpcore2.ReadError("reset")})
    # a timeout well before the deadline is the request's own: the SDK may retry it
    final_at_deadline(now + 60, None, Final)(
        "http11.send_request_body.failed", {"exception": timeout}
    )
    assert seen == [
        "http11.receive_response_headers.started",
        "http11.receive_response_headers.failed",
        "http11.receive_response_body.failed",
        "http11.receive_response_body.failed",
    ]


def test_past_deadline() -> None:
    assert not past_deadline(None)
    assert past_deadline(0.0)
    assert not past_deadline(float("inf"))


def test_a_subclass_that_overrides_request_keeps_getting_every_call(fake_llm: FakeLLM) -> None:
    seen: list[int] = []

    class Recording(OpenAIProvider):
        async def request(self, turn: ModelTurnRequest) -> ModelTurn:
            seen.append(len(turn.messages))
            return await super().request(turn)

    fake_llm.respond_always(call("openai", "submit_result", VALID))
    provider = Recording("gpt-test", api_key="sk-x", base_url=fake_llm.openai_base_url)

    result = agent_for(provider).run_sync("Grade it.")

    assert result.ok and seen == [2]
    assert async_library(fake_llm).startswith("async:")
    assert can_block(OpenAIProvider("m", api_key="sk-x")) and not can_block(provider)
