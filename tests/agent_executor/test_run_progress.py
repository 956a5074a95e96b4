"""A run's progress: recorded before each model call, and a later run continuing from it.

The scenario is a three-turn run over the real SDKs and a scripted local server: an input tool
turn, an invalid ``submit_result`` that is re-asked, then a valid one. The worker "dies" (the
recorder raises past the run loop) right before the third model call; a second run given the
recorded progress sends only that call, and ends as the run that never stopped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_contracts import RunOptions, RunProgress, RunRequest, RunResult
from agent_executor import Agent
from tests.agent_executor.test_run import (
    APIS,
    INVALID,
    VALID,
    agent_for,
    bodies,
    call,
    provider_for,
)
from tests.fake_llm import FakeLLM


class WorkerDied(BaseException):
    """Stands for the worker's process ending: nothing of the run survives but its records."""


def script(api: str) -> list[Any]:
    return [
        call(api, "fs_read", {"path": "essay.txt"}, "call_read"),
        call(api, "submit_result", INVALID, "call_bad"),
        call(api, "submit_result", VALID, "call_good"),
    ]


def grader(api: str, fake: FakeLLM, workspace: Path, **config: Any) -> Agent[Any]:
    return agent_for(provider_for(api, fake), tools=["fs:read"], workspace=workspace, **config)


def same_run(result: RunResult) -> dict[str, Any]:
    """What a user reads of a result, without the wall times that differ between two runs."""
    data = result.model_dump(mode="json", exclude={"duration_ms"})
    for attempt in data["attempts"]:
        attempt.pop("latency_ms")
    return data


@pytest.mark.parametrize("api", APIS)
async def test_a_continued_run_sends_only_the_turn_in_flight_and_ends_as_one_run(
    fake_llm: FakeLLM, api: str, tmp_path: Path
) -> None:
    (tmp_path / "essay.txt").write_text("A short essay about owls.\n")
    fake_llm.respond(*script(api))
    whole = await grader(api, fake_llm, tmp_path).run(
        RunRequest(task="Grade essay.txt.", run_id="r1")
    )
    uninterrupted = bodies(fake_llm)
    fake_llm.requests.clear()

    recorded: list[RunProgress] = []

    async def record(progress: RunProgress) -> None:
        recorded.append(progress)
        if progress.steps == 2:
            raise WorkerDied

    fake_llm.respond(*script(api)[:2])
    request = RunRequest(task="Grade essay.txt.", run_id="r1")
    with pytest.raises(WorkerDied):
        await grader(api, fake_llm, tmp_path).run(request, on_turn=record)
    assert [p.steps for p in recorded] == [1, 2]
    assert bodies(fake_llm) == uninterrupted[:2]  # the third call was never sent

    fake_llm.requests.clear()
    fake_llm.respond(script(api)[2])
    resumed = request.model_copy(update={"progress": recorded[-1]})
    again: list[RunProgress] = []

    async def record_again(progress: RunProgress) -> None:
        again.append(progress)

    result = await grader(api, fake_llm, tmp_path).run(resumed, on_turn=record_again)

    assert bodies(fake_llm) == uninterrupted[2:]  # one request: the third turn's, as sent before
    assert again == []  # nothing new finished before the last call
    assert result.ok and result.result_data == VALID
    assert same_run(result.result) == same_run(whole.result)
    assert result.usage.requests == 3 and result.retries == 1


async def test_the_retry_budget_counts_the_attempts_already_made(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    (tmp_path / "essay.txt").write_text("A short essay about owls.\n")
    recorded: list[RunProgress] = []

    async def record(progress: RunProgress) -> None:
        recorded.append(progress)
        if progress.attempts:
            raise WorkerDied

    fake_llm.respond(*script("openai")[:2])
    request = RunRequest(task="Grade essay.txt.", options=RunOptions(max_retries=1))
    with pytest.raises(WorkerDied):
        await grader("openai", fake_llm, tmp_path).run(request, on_turn=record)

    fake_llm.respond(call("openai", "submit_result", INVALID, "call_bad_again"))
    resumed = request.model_copy(update={"progress": recorded[-1]})
    result = await grader("openai", fake_llm, tmp_path).run(resumed)

    assert not result.ok and result.error is not None
    assert result.error.type == "output_schema_validation_failed"
    assert result.error.message.endswith("after 2 attempts")
    assert [a.number for a in result.attempts] == [1, 2]
    assert len(fake_llm.requests) == 3


async def test_a_recorder_that_fails_ends_the_run_before_the_next_call(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    (tmp_path / "essay.txt").write_text("A short essay about owls.\n")

    async def record(progress: RunProgress) -> None:
        raise OSError("the disk is full")

    fake_llm.respond(*script("openai"))
    result = await grader("openai", fake_llm, tmp_path).run("Grade essay.txt.", on_turn=record)

    assert not result.ok and result.error is not None
    assert result.error.type == "internal_error" and "the disk is full" in result.error.message
    assert len(fake_llm.requests) == 1
