"""Runners under faults: a result the store cannot write, an error after a claim, runners that
keep dying, and cancels; over real HTTP, against real ``serve`` and ``runner`` processes."""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.fake_llm import FakeLLM, delayed, openai_tool_call

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
VALID = {"summary": "ok", "approval": "approve"}


def _env(fake_llm: FakeLLM) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}


def test_a_result_holding_a_lone_surrogate_is_stored_and_read_back_equal(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """A cut emoji (``"\\ud83d"``, legal JSON) is kept as data and written as its escape."""
    write_fleet(tmp_path / "agents")
    arguments = '{"summary": "cut \\ud83d here", "approval": "approve"}'
    fake_llm.respond_always(openai_tool_call("submit_result", arguments))
    server, url = serve(
        tmp_path, database, _env(fake_llm), "--model", "openai:gpt-test", "--lease", "3"
    )
    try:
        run = httpx.post(f"{url}/runs", params={"wait": 60}, json=REVIEW, timeout=90).json()
        assert run["status"] == "completed", run
        answer = {"summary": "cut \ud83d here", "approval": "approve"}
        assert run["result"]["result_data"] == answer  # POST /runs?wait='s own answer
        result = httpx.get(f"{url}/sessions/{run['session_id']}/result").json()
        assert result["result_data"] == answer
        session = httpx.get(f"{url}/sessions/{run['session_id']}")
        assert session.status_code == 200
        # the session can go on: its transcript holds the answer and was stored too
        resumed = httpx.post(
            f"{url}/runs",
            params={"wait": 60},
            json={"type": "resume_session", "session_id": run["session_id"], "prompt": "again"},
            timeout=90,
        ).json()
        assert resumed["status"] == "completed", resumed
    finally:
        server.stop()
    assert len(fake_llm.requests) == 2  # one model call a run, none paid twice


def test_an_error_after_a_claim_fails_the_run_with_where_it_happened(
    make_service: ServiceFactory,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Storing the result breaks (a full disk, a bug): the run fails, it is not run again."""
    fake_llm.respond_always(openai_tool_call("submit_result", VALID))
    service = make_service(env=_env(fake_llm), model="openai:gpt-test", lease_s=1.0)
    finish = service.store.finish

    def full_disk(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("result") is not None:
            raise OSError(28, "No space left on device")
        return finish(*args, **kwargs)

    monkeypatch.setattr(service.store, "finish", full_disk)
    with caplog.at_level(logging.ERROR, logger="agent_coordinator._runner"):
        run = service.run(REVIEW).json()
    assert run["status"] == "failed", run
    error = run["error"]
    assert error["type"] == "internal_error"
    assert "No space left on device" in error["message"]
    assert error["where"].startswith("storing the result at test_runner_faults.py:")
    view = service.client.get(f"/runs/{run['run_id']}").json()
    assert view["claims"] == 1 and [c["ended"] for c in view["claim_history"]] == ["failed"]
    assert service.client.get(f"/sessions/{run['session_id']}").json()["status"] == "failed"
    logged = [r for r in caplog.records if r.name == "agent_coordinator._runner"]
    assert any(run["run_id"] in r.getMessage() and r.exc_info is not None for r in logged), (
        "the failure and its traceback are not in the log"
    )
    assert len(fake_llm.requests) == 1


def test_a_run_whose_runners_keep_dying_fails_after_max_claims(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """Each claim's lease runs out (its runner is killed): the third claim ends the run."""
    write_fleet(tmp_path / "agents")
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 120))
    env = _env(fake_llm)
    common = ["--database", database, "--model", "openai:gpt-test", "--lease", "1"]
    server, url = serve(tmp_path, database, env, "--workers", "0", *common[2:])
    runners: list[Process] = []
    try:
        run = httpx.post(f"{url}/runs", json=REVIEW).json()
        for killed in (1, 2):
            runner = Process(
                ["runner", "--workers", "1", "--max-claims", "2", *common], cwd=tmp_path, env=env
            )
            runners.append(runner)
            runner.read_until("workers")
            deadline = time.monotonic() + 60
            while len(fake_llm.requests) < killed:  # the runner is inside the model call
                assert time.monotonic() < deadline, "no runner called the model"
                time.sleep(0.05)
            runner.kill()
        last = Process(
            ["runner", "--workers", "1", "--max-claims", "2", *common], cwd=tmp_path, env=env
        )
        runners.append(last)
        view = _until_ended(url, run["run_id"])
        session = httpx.get(f"{url}/sessions/{run['session_id']}").json()
    finally:
        for process in runners:
            if process.popen.poll() is None:
                process.stop()
        server.stop()
    assert view["status"] == "failed" and view["error"]["type"] == "lease_exhausted"
    history = view["claim_history"]
    assert [(c["number"], c["ended"]) for c in history] == [(1, "expired"), (2, "expired")]
    assert history[0]["runner"] != history[1]["runner"]
    assert session["status"] == "failed"
    assert session["runs"][0]["claim_history"] == history
    assert len(fake_llm.requests) == 2  # a poison run costs at most --max-claims model calls


def _until_ended(url: str, run_id: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (view := httpx.get(f"{url}/runs/{run_id}").json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, f"run {run_id} never ended: {view}"
        time.sleep(0.1)
    result: dict[str, Any] = view
    return result


def test_max_claims_must_be_a_whole_number_of_at_least_one(tmp_path: Path) -> None:
    write_fleet(tmp_path / "agents")
    for command in ("serve", "runner"):
        process = Process([command, "--max-claims", "0"], cwd=tmp_path, env={})
        assert process.popen.wait(60) == 2
        process.stop()
        assert "--max-claims: '0' is not a whole number of at least 1" in process.rest


def test_a_cancel_reaches_a_runner_in_another_process_long_before_its_renewal(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """With a 120 s lease the renewal is 40 s away: the runner's short poll sees the cancel."""
    write_fleet(tmp_path / "agents")
    fake_llm.respond(
        delayed(openai_tool_call("submit_result", VALID), 120),
        openai_tool_call("submit_result", VALID),
    )
    env = _env(fake_llm)
    common = ["--database", database, "--model", "openai:gpt-test", "--lease", "120"]
    server, url = serve(tmp_path, database, env, "--workers", "0", *common[2:])
    runner = Process(["runner", "--workers", "1", *common], cwd=tmp_path, env=env)
    try:
        runner.read_until("workers")
        run = httpx.post(f"{url}/runs", json=REVIEW).json()
        deadline = time.monotonic() + 60
        while not fake_llm.requests:  # the runner is inside the model call
            assert time.monotonic() < deadline, "the runner never called the model"
            time.sleep(0.05)
        asked = httpx.post(f"{url}/runs/{run['run_id']}/cancel", params={"wait": 30}, timeout=60)
        assert asked.status_code == 200, asked.text
        assert asked.json()["status"] == "cancelled"
        view = httpx.get(f"{url}/runs/{run['run_id']}").json()
        assert [c["ended"] for c in view["claim_history"]] == ["cancelled"]
        result = httpx.get(f"{url}/sessions/{run['session_id']}/result").json()
        assert result["status"] == "cancelled" and result["error"]["type"] == "cancelled"
        # its one worker is free again: the model call in flight was cancelled, not awaited
        resumed = httpx.post(
            f"{url}/runs",
            params={"wait": 30},
            json={"type": "resume_session", "session_id": run["session_id"], "prompt": "again"},
            timeout=60,
        ).json()
        assert resumed["status"] == "completed", resumed
    finally:
        assert runner.stop() == 0
        server.stop()


def test_runs_cancelled_at_random_moments_end_as_the_cancel_answered(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """200 means it ended cancelled, 409 that it had already ended; never 200, then completed."""
    write_fleet(tmp_path / "agents")
    chance = random.Random(30)
    # model turns from instant to 0.6 s, and some that only a cancel ends (so some cancels
    # land on running runs however fast the machine is)
    delays = [chance.choice([0.0, 0.1, 0.3, 0.6, 120.0]) for _ in range(24)]
    fake_llm.respond(*(delayed(openai_tool_call("submit_result", VALID), d) for d in delays))
    server, url = serve(
        tmp_path, database, _env(fake_llm), "--model", "openai:gpt-test", "--workers", "4"
    )
    answers: dict[str, httpx.Response] = {}
    try:
        runs = [httpx.post(f"{url}/runs", json=REVIEW).json()["run_id"] for _ in range(24)]
        for run_id in runs:
            time.sleep(chance.uniform(0, 0.1))
            answers[run_id] = httpx.post(
                f"{url}/runs/{run_id}/cancel", params={"wait": 30}, timeout=60
            )
        ended = {run_id: _until_ended(url, run_id) for run_id in runs}
    finally:
        server.stop()
    for run_id, answer in answers.items():
        final = ended[run_id]["status"]
        if answer.status_code == 409:
            assert answer.json()["error"] == "RunNotCancellable"
            assert final == "completed" and "completed" in answer.json()["message"]
        else:
            assert final == "cancelled", f"cancel answered {answer.status_code}, run {final}"
            assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
    codes = {answer.status_code for answer in answers.values()}
    assert 200 in codes  # the cancels did land on queued and running runs
