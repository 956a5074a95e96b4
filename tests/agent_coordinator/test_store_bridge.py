"""The greenlet bridge: blocking-style code on the event loop, awaiting through await_only."""

from __future__ import annotations

import asyncio
import contextvars
import warnings

import pytest

from agent_coordinator._store.bridge import NotBridged, await_only, bridged, spawn

REQUEST = contextvars.ContextVar("REQUEST", default="none")


async def _answer(value: str, pause: float = 0.0) -> str:
    await asyncio.sleep(pause)
    return value


async def _fail() -> str:
    await asyncio.sleep(0)
    raise KeyError("gone")


async def test_the_function_gets_each_answer_and_its_result_is_returned() -> None:
    def two_waits(prefix: str) -> str:
        assert bridged()
        return prefix + await_only(_answer("a")) + await_only(_answer("b"))

    assert not bridged()
    assert await spawn(two_waits, "x") == "xab"


async def test_an_awaitable_s_error_is_raised_in_the_function_which_may_handle_it() -> None:
    def handled() -> str:
        try:
            await_only(_fail())
        except KeyError as error:
            return f"handled {error}"
        return "not raised"

    def unhandled() -> str:
        return await_only(_fail())

    assert await spawn(handled) == "handled 'gone'"
    with pytest.raises(KeyError, match="gone"):
        await spawn(unhandled)


async def test_the_loop_serves_other_tasks_while_the_function_waits() -> None:
    ticks: list[int] = []

    async def tick() -> None:
        for n in range(3):
            ticks.append(n)
            await asyncio.sleep(0)

    def slow() -> str:
        return await_only(_answer("done", pause=0.05))

    assert await asyncio.gather(spawn(slow), tick()) == ["done", None]
    assert ticks == [0, 1, 2]


async def test_a_cancelled_caller_s_function_cleans_up_by_awaiting_before_it_ends() -> None:
    cleaned: list[str] = []

    def waits_long() -> str:
        try:
            return await_only(_answer("never", pause=3600))
        finally:
            cleaned.append(await_only(_answer("rolled back")))

    task = asyncio.create_task(spawn(waits_long))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["rolled back"]


async def test_the_function_sees_the_caller_s_context_variables() -> None:
    REQUEST.set("req-1")
    assert await spawn(REQUEST.get) == "req-1"


async def test_await_only_outside_spawn_is_refused_without_leaving_a_coroutine_behind() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine never awaited would warn when collected
        with pytest.raises(NotBridged, match="spawn"):
            await_only(_answer("x"))
