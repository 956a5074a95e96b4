"""``run_sync`` runs on a kept event loop per thread: connections reused, threads welcome."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

import httpx2
import pytest

from agent_contracts import AgentConfig, ConfigError
from agent_executor import Agent, NullAnalytics, OpenAIProvider
from agent_executor._sync import run_coroutine_sync, shutdown_sync_loop
from tests.fake_llm import FakeLLM, openai_tool_call

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["n"],
    "properties": {"n": {"type": "integer"}},
    "additionalProperties": False,
}


def agent(model: Any) -> Agent:
    config = AgentConfig.model_validate({"name": "counter", "output_schema": SCHEMA})
    return Agent(config, model=model, analytics=NullAnalytics(), env={})


def test_run_sync_reuses_one_connection_across_calls(fake_llm: FakeLLM) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", '{"n": 1}'))
    provider = OpenAIProvider("gpt-test", api_key="sk-x", base_url=fake_llm.openai_base_url)
    counter = agent(provider)

    results = [counter.run_sync("Count.") for _ in range(3)]

    assert [r.result_data for r in results] == [{"n": 1}] * 3
    assert len({request.client_port for request in fake_llm.requests}) == 1


def test_threads_one_after_another_share_the_sync_clients_connection(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", '{"n": 1}'))
    provider = OpenAIProvider("gpt-test", api_key="sk-x", base_url=fake_llm.openai_base_url)
    counter = agent(provider)
    ports: dict[str, set[int]] = {}

    def calls(name: str) -> None:
        before = len(fake_llm.requests)
        assert all(counter.run_sync("Count.").ok for _ in range(2))
        ports[name] = {request.client_port for request in fake_llm.requests[before:]}

    for name in ("first", "second"):
        thread = threading.Thread(target=calls, args=(name,))
        thread.start()
        thread.join(timeout=60)
    calls("main")

    # run_sync calls through the SDK's synchronous client, whose pool serves every thread.
    assert [len(ports[name]) for name in ("first", "second", "main")] == [1, 1, 1]
    assert len(ports["first"] | ports["second"] | ports["main"]) == 1
    shutdown_sync_loop()


def test_run_sync_from_several_threads_at_once() -> None:
    counter = agent("test")
    results: dict[int, Any] = {}

    def worker(index: int) -> None:
        results[index] = counter.run_sync(f"Count {index}.")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(results) == list(range(8))
    assert all(result.ok for result in results.values())


def test_inside_a_running_loop_is_a_clear_error() -> None:
    async def inside() -> None:
        agent("test").run_sync("Count.")

    with pytest.raises(ConfigError, match="await run"):
        asyncio.run(inside())


def test_other_event_loops_still_work_after_run_sync(fake_llm: FakeLLM) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", '{"n": 2}'))
    provider = OpenAIProvider("gpt-test", api_key="sk-x", base_url=fake_llm.openai_base_url)
    assert agent(provider).run_sync("Count.").ok

    async def elsewhere() -> int:
        async with httpx2.AsyncClient() as client:
            response = await client.post(f"{fake_llm.openai_base_url}/chat/completions", json={})
            return response.status_code

    assert asyncio.run(elsewhere()) == 200
    assert asyncio.run(agent(provider).run("Count.")).ok  # a run on the caller's own loop


def test_a_shut_down_loop_is_replaced_on_the_next_call() -> None:
    assert agent("test").run_sync("Count.").ok
    shutdown_sync_loop()
    shutdown_sync_loop()  # twice is fine
    assert agent("test").run_sync("Count.").ok


def test_exceptions_come_back_to_the_caller() -> None:
    async def boom() -> None:
        raise ValueError("from the loop")

    with pytest.raises(ValueError, match="from the loop"):
        run_coroutine_sync(boom())


def test_the_anthropic_adapter_keeps_its_client_too(fake_llm: FakeLLM) -> None:
    from agent_executor import AnthropicProvider
    from tests.fake_llm import anthropic_tool_use

    fake_llm.respond_always(anthropic_tool_use("submit_result", {"n": 3}))
    provider = AnthropicProvider("claude-x", api_key="k", base_url=fake_llm.anthropic_base_url)
    counter = agent(provider)

    assert [counter.run_sync("Count.").result_data for _ in range(3)] == [{"n": 3}] * 3
    assert len({request.client_port for request in fake_llm.requests}) == 1


def test_another_librarys_run_sync_keeps_its_loop_after_ours() -> None:
    # A library whose sync API runs on the main thread's event loop, with a lock bound to that
    # loop, must still work after run_sync: nothing of ours is bound to (or replaces) its loop.
    theirs = asyncio.new_event_loop()
    asyncio.set_event_loop(theirs)
    try:
        gate = asyncio.Lock()

        async def their_call() -> str:
            async with gate:
                await asyncio.sleep(0)
                return "theirs"

        assert theirs.run_until_complete(their_call()) == "theirs"
        assert agent("test").run_sync("Count.").ok
        assert asyncio.get_event_loop_policy().get_event_loop() is theirs
        assert theirs.run_until_complete(their_call()) == "theirs"
        assert asyncio.run(their_call_elsewhere()) == "elsewhere"
        assert agent("test").run_sync("Count.").ok
    finally:
        asyncio.set_event_loop(None)
        theirs.close()


async def their_call_elsewhere() -> str:
    lock = asyncio.Lock()
    async with lock:
        return "elsewhere"


def test_a_run_that_suspends_goes_on_in_a_task_with_its_timeout() -> None:
    # A model that awaits (suspends) is handed to a task of the kept loop; the run's timeout
    # then cancels the await, as it does for await run().
    from agent_contracts import RunOptions
    from agent_executor import FunctionModel

    async def slow(messages: Any, request: Any) -> dict[str, int]:
        await asyncio.sleep(30)
        return {"n": 1}

    async def quick(messages: Any, request: Any) -> dict[str, int]:
        await asyncio.sleep(0.01)
        return {"n": 2}

    assert agent(FunctionModel(quick)).run_sync("Count.").result_data == {"n": 2}
    result = agent(FunctionModel(slow)).run_sync("Count.", options=RunOptions(timeout_s=0.2))
    assert result.error is not None and result.error.type == "run_timeout"


def test_the_callers_context_is_left_alone() -> None:
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")

    async def run() -> str:
        marker.set("set inside the run")
        await asyncio.sleep(0.01)
        return marker.get()

    assert run_coroutine_sync(run(), blocking_calls=True) == "set inside the run"
    assert marker.get() == "unset"


def test_an_error_after_suspending_comes_back_and_the_loop_stays_usable() -> None:
    async def fails_later() -> None:
        await asyncio.sleep(0.01)
        raise ValueError("after suspending")

    async def finishes() -> str:
        await asyncio.sleep(0)
        return "done"

    with pytest.raises(ValueError, match="after suspending"):
        run_coroutine_sync(fails_later(), blocking_calls=True)
    assert run_coroutine_sync(finishes(), blocking_calls=True) == "done"
    with pytest.raises(RuntimeError, match="no running event loop"):
        asyncio.get_running_loop()  # the kept loop is not left running


def test_a_blocking_tier_then_a_suspending_one(fake_llm: FakeLLM) -> None:
    # Tier 0 (the SDK's sync client) fails its contract twice; the escalation to a model that
    # awaits goes on, and the run ends there.
    from agent_executor import FunctionModel

    fake_llm.respond_always(openai_tool_call("submit_result", {"n": "four"}))
    provider = OpenAIProvider("gpt-x", api_key="k", base_url=fake_llm.openai_base_url)

    async def careful(messages: Any, request: Any) -> dict[str, int]:
        await asyncio.sleep(0.01)
        return {"n": 4}

    config = AgentConfig.model_validate({"name": "counter", "output_schema": SCHEMA})
    counter = Agent(
        config,
        model=provider,
        analytics=NullAnalytics(),
        env={},
        model_tiers=[FunctionModel(careful)],
    )

    result = counter.run_sync("Count.")

    assert result.result_data == {"n": 4}
    assert result.model_tier == 1
    assert len(fake_llm.requests) == 2  # tier 0's attempt and its re-prompt
