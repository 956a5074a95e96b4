"""Runners as a user runs them (``agentshape runner``): what a runner's death costs.

A runner stores each finished model turn before the run's next model call, so a runner that
takes a run over after its runner was killed sends only the call that was in flight.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_contracts import RunResult
from agent_contracts._json_data import PARSED_JSON
from agent_coordinator import Execution, Runner, open_store
from agent_coordinator._runner import _result_json
from agent_coordinator._store import NewRun, RunInput, SqlStore
from agent_core import SchemaRegistry, load_fleet
from agent_executor import KNOWN_TOOLS
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import REVIEW_SCHEMA, write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.fake_llm import FakeLLM, ScriptedResponse, delayed, openai_tool_call

GRADER = {
    "id": "grader",
    "system_prompt": "You review the notes you are pointed to.",
    "tools": ["fs:read"],
    "output_schema": REVIEW_SCHEMA,
}
TASK = {"agent_name": "grader", "prompt": "Review notes.txt"}
INVALID = {"summary": "", "approval": "maybe"}
VALID = {"summary": "The notes are clear.", "approval": "approve"}


def three_turns() -> list[ScriptedResponse]:
    """An input tool turn, an invalid ``submit_result`` that is re-asked, then a valid one."""
    return [
        openai_tool_call("fs_read", json.dumps({"path": "notes.txt"}), call_id="call_read"),
        openai_tool_call("submit_result", json.dumps(INVALID), call_id="call_bad"),
        openai_tool_call("submit_result", json.dumps(VALID), call_id="call_good"),
    ]


def turn_of(body: dict[str, Any]) -> int:
    """Which model turn a request is: one more than the replies it carries."""
    return 1 + sum(message["role"] == "assistant" for message in body["messages"])


def ended(url: str, run_id: str, timeout: float = 120) -> dict[str, Any]:
    """Wait for a run's end; return what the API says of it, as two runs of one request compare.

    The run's view, its session's result, and the run's attempts and usage in its session;
    without ids, times and each attempt's latency, which differ between any two runs.
    """
    deadline = time.monotonic() + timeout
    while (view := httpx.get(f"{url}/runs/{run_id}").json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, f"run {run_id} did not end: {view}"
        time.sleep(0.1)
    session_id = view["session_id"]
    result = httpx.get(f"{url}/sessions/{session_id}/result").json()
    [in_session] = httpx.get(f"{url}/sessions/{session_id}").json()["runs"]
    attempts = [
        {key: value for key, value in attempt.items() if key != "latency_ms"}
        for attempt in in_session["attempts"]
    ]
    return {
        "status": view["status"],
        "result": {k: v for k, v in result.items() if k not in ("session_id", "run_id")},
        "attempts": attempts,
        "usage": in_session["usage"],
    }


def test_a_runner_killed_after_two_turns_costs_the_next_runner_only_the_third(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    write_fleet(tmp_path / "agents")
    (tmp_path / "agents" / "grader").mkdir()
    (tmp_path / "agents" / "grader" / "agent.yml").write_text(json.dumps(GRADER))
    (tmp_path / "notes.txt").write_text("Ship on Friday; tests first.\n")
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    common = ["--database", database, "--model", "openai:gpt-test", "--lease", "1.5"]
    server, url = serve(tmp_path, database, env, "--workers", "0", *common[2:])
    first = Process(["runner", "--workers", "1", *common], cwd=tmp_path, env=env)
    second: Process | None = None
    try:
        first.read_until("workers")
        fake_llm.respond(*three_turns())
        whole = httpx.post(f"{url}/runs", json=TASK).json()
        uninterrupted = ended(url, whole["run_id"])
        assert uninterrupted["result"]["result_data"] == VALID
        assert len(uninterrupted["attempts"]) == 2
        sent_whole = [request.body for request in fake_llm.requests]
        fake_llm.requests.clear()

        turns = three_turns()
        fake_llm.respond(*turns[:2], delayed(turns[2], 600), turns[2])
        run = httpx.post(f"{url}/runs", json=TASK).json()
        deadline = time.monotonic() + 60
        while len(fake_llm.requests) < 3:  # the first runner waits on the third turn's reply
            assert time.monotonic() < deadline, "the first runner never sent the third turn"
            time.sleep(0.05)
        first.kill()
        second = Process(["runner", "--workers", "1", *common], cwd=tmp_path, env=env)
        taken_over = ended(url, run["run_id"])
        claims = httpx.get(f"{url}/runs/{run['run_id']}").json()["claims"]
    finally:
        for process in (second, first):
            if process is not None and process.popen.poll() is None:
                assert process.stop() == 0
        server.stop()

    sent = [request.body for request in fake_llm.requests]
    # Turns 1 and 2 were paid once; turn 3 was sent twice and answered once (the first
    # runner died waiting for its reply), the second time exactly as the first.
    assert Counter(turn_of(body) for body in sent) == {1: 1, 2: 1, 3: 2}
    assert sent[:3] == sent_whole and sent[3] == sent_whole[2]
    assert claims == 2
    assert taken_over == uninterrupted
    assert taken_over["usage"]["requests"] == 3
    assert taken_over["result"]["schema_validation"]["retry_count"] == 1
    store = open_store(database)
    try:
        transcripts = [store.get_session(r["session_id"]).transcript for r in (whole, run)]
    finally:
        store.close()
    assert transcripts[0] == transcripts[1]


def test_a_runner_that_lost_the_lease_sends_no_further_model_call(
    make_service: ServiceFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    """The lease is found lost when the finished turn is stored: the run stops right there."""
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    # A lease renewed only every 20 s: the store of the turn, not a renewal, finds it lost.
    service = make_service(model="openai:gpt-test", env=env, workers=1, lease_s=60)
    answer = threading.Event()

    def held_back(body: object) -> None:
        answer.wait(60)  # the first reply waits until the run has changed hands

    fake_llm.refuse_when(held_back)
    fake_llm.respond(
        openai_tool_call("submit_result", json.dumps(INVALID), call_id="call_bad"),
        openai_tool_call("submit_result", json.dumps(VALID), call_id="call_good"),
    )
    review = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
    run_id = service.client.post("/runs", json=review).json()["run_id"]
    deadline = time.monotonic() + 60
    while not fake_llm.requests:
        assert time.monotonic() < deadline, "the runner never called the model"
        time.sleep(0.05)
    held = service.store.get_run(run_id)
    assert held is not None and held.lease_owner is not None
    # Another runner takes the run over while the first turn is on its way back.
    assert service.store.release(run_id, held.lease_owner)
    assert service.store.claim("another-runner", 600) is not None
    with caplog.at_level(logging.WARNING, logger="agent_coordinator._runner"):
        answer.set()
        while not any("lost the lease" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline + 60, "the runner did not stop the run"
            time.sleep(0.05)
    assert len(fake_llm.requests) == 1
    view = service.client.get(f"/runs/{run_id}").json()
    assert view["status"] == "running" and view["claims"] == 2


def _one_slot_runner(
    tmp_path: Path, fake_llm: FakeLLM, *, poll_s: float
) -> tuple[SqlStore, Runner]:
    """A store and a runner of the test fleet with one worker slot, its model ``fake_llm``."""
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    fleet = load_fleet(
        write_fleet(tmp_path / "agents"), known_tools=Execution.known_tools(KNOWN_TOOLS)
    )
    execution = Execution(
        fleet,
        SchemaRegistry(tmp_path / "schemas.db"),
        default_model="openai:gpt-test",
        env=env,
        workspace=tmp_path,
    )
    store = open_store(str(tmp_path / "data.db"))
    store.migrate()
    return store, Runner(store, execution, workers=1, lease_s=10, poll_s=poll_s, grace_s=2.0)


def _review(run_id: str, session_id: str) -> NewRun:
    """A run starting a session of the fleet's reviewer."""
    review = RunInput(prompt="Review PR 1", parameters={"pr_url": "u"})
    return NewRun(
        id=run_id, session_id=session_id, kind="start_session", agent_name="reviewer", input=review
    )


async def test_a_run_handed_to_a_runner_with_no_free_slot_goes_back_to_the_queue(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    # serve counts the runs it hands a runner process, but the process's claimer may have
    # filled its slots from the queue meanwhile: --workers still holds.
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 1.0))
    store, runner = _one_slot_runner(tmp_path, fake_llm, poll_s=0.1)
    queued, handed = _review("run_q", "ses_q"), _review("run_h", "ses_h")
    runner.start()
    try:
        store.create_run(queued)
        runner.wake()
        while store.get_run("run_q").status != "running":  # the claimer took the only slot
            await asyncio.sleep(0.02)
        _, claim = store.create_claimed_run(handed, runner.id, 10)
        assert claim is not None
        done: list[str] = []
        runner.take_handed(claim, done.append)
        while not done:
            await asyncio.sleep(0.02)
        assert done == ["run_h"]
        assert store.get_run("run_q").status == "running"
        assert store.get_run("run_h").status == "queued"  # not run beside run_q
        for run_id in ("run_q", "run_h"):
            while store.get_run(run_id).status not in ("completed", "failed"):
                await asyncio.sleep(0.05)
            assert store.get_run(run_id).status == "completed"
        events = [event.type for event in store.events_after("run_h")]
        assert events.count("run_requeued") == 1 and events.count("run_completed") == 1
        history = store.claim_history([store.get_run("run_h")])["run_h"]
        assert [claim.ended for claim in history] == ["requeued", "completed"]
    finally:
        await runner.stop()
        store.close()


def _results() -> list[RunResult]:
    """Results whose parsed values are shared as the library shares them, and one copied."""
    review = {"summary": "Fine.", "approval": "approve", "score": 1.0, "tags": ["a", None, True]}
    call = {"id": "call_1", "name": "submit_result", "arguments": review, "raw_arguments": "{}"}
    transcript = [
        {"role": "system", "content": "You review."},
        {"role": "user", "content": "Review it."},
        {"role": "assistant", "content": "", "tool_calls": [call], "thinking": [{"x": 1}]},
        {
            "role": "tool",
            "tool_results": [{"tool_call_id": "call_1", "name": "submit_result", "content": "ok"}],
        },
    ]
    attempt = {
        "number": 1,
        "mode": "tool",
        "raw_output": "{}",
        "parsed": review,
        "errors": [{"path": "$.summary", "message": "too short", "keyword": "minLength"}],
    }
    completed = {
        "status": "completed",
        "result_data": review,
        "attempts": [attempt],
        "transcript": transcript,
        "schema_hash": "abc",
        "retries": 0,
    }
    failed = {
        "status": "failed",
        "attempts": [attempt, {**attempt, "number": 2}],
        "error": {
            "type": "output_schema_validation_failed",
            "message": "no",
            "validation_errors": ["$.summary: too short"],
            "last_output": review,
        },
        "transcript": transcript,
        "schema_hash": "abc",
        "retries": 1,
    }
    text = {"status": "completed", "result_text": "Fine.", "transcript": transcript[:2]}
    return [
        RunResult.model_validate(completed, context=PARSED_JSON),
        RunResult.model_validate(failed, context=PARSED_JSON),
        RunResult.model_validate(text),
        RunResult.model_validate(completed),  # every value its own copy
    ]


async def test_a_run_put_back_for_want_of_a_slot_is_claimed_without_waiting_for_a_poll(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run comes while the claimer holds the only slot for a claim that finds nothing (a
    claim waiting for another process's write lock): no one else is told the run is queued
    again, so the runner looks again itself instead of at its next poll (a minute here)."""
    fake_llm.respond_always(openai_tool_call("submit_result", VALID))
    store, runner = _one_slot_runner(tmp_path, fake_llm, poll_s=60)
    handed = _review("run_h", "ses_h")
    done: list[str] = []
    claim_next = store.claim

    def claim(*args: Any, **kwargs: Any) -> Any:
        found = claim_next(*args, **kwargs)
        if not done and found is None:  # the run is handed over while this claim is made
            _, given = store.create_claimed_run(handed, runner.id, 10)
            assert given is not None
            runner.take_handed(given, done.append)
        return found

    monkeypatch.setattr(store, "claim", claim)
    runner.start()
    try:
        deadline = time.monotonic() + 20
        while store.get_run("run_h") is None or store.get_run("run_h").status != "completed":
            assert time.monotonic() < deadline, "the run waited for the runner's next poll"
            await asyncio.sleep(0.02)
        assert done == ["run_h"]
        history = store.claim_history([store.get_run("run_h")])["run_h"]
        assert [claim.ended for claim in history] == ["requeued", "completed"]
    finally:
        await runner.stop()
        store.close()


@pytest.mark.parametrize("result", _results())
def test_a_result_is_handed_to_the_store_as_its_json_dump_key_order_and_all(
    result: RunResult,
) -> None:
    # The stored rows are the text of what the runner hands over: it must be the dump's.
    handed = _result_json(result)
    dumped = result.model_dump(mode="json")
    assert handed == dumped
    assert json.dumps(handed) == json.dumps(dumped)
