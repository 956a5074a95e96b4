"""Limits on model calls shared by every runner on one database, against a server that 429s."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.fake_llm import openai_tool_call
from tests.limited_llm import LimitedLLM

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
VALID = {"summary": "ok", "approval": "approve"}
RUNS = 12


def _wait_all_ended(url: str, run_ids: list[str], timeout: float = 240) -> list[dict[str, object]]:
    deadline = time.monotonic() + timeout
    while True:
        views = [httpx.get(f"{url}/runs/{run_id}").json() for run_id in run_ids]
        if all(view["status"] in ("completed", "failed", "cancelled") for view in views):
            return views
        assert time.monotonic() < deadline, [view["status"] for view in views]
        time.sleep(0.2)


def test_two_runner_processes_keep_one_concurrency_limit_and_the_server_never_429s(
    tmp_path: Path, database: str
) -> None:
    write_fleet(tmp_path / "agents")
    with LimitedLLM(
        openai_tool_call("submit_result", VALID), concurrency=2, requests_per_minute=600
    ) as llm:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.openai_base_url}
        limits = ["--concurrency", "2", "--rpm", "600"]
        common = ["--database", database, "--model", "openai:gpt-test", *limits]
        server, url = serve(tmp_path, database, env, "--workers", "0", *common[2:])
        runners = [
            Process(["runner", "--workers", "4", *common], cwd=tmp_path, env=env) for _ in range(2)
        ]
        try:
            for runner in runners:
                runner.read_until("workers")
            run_ids = [httpx.post(f"{url}/runs", json=REVIEW).json()["run_id"] for _ in range(RUNS)]
            views = _wait_all_ended(url, run_ids)
        finally:
            for runner in runners:
                runner.stop()
            server.stop()
        assert [view["status"] for view in views] == ["completed"] * RUNS
        assert llm.refused == 0
        assert llm.max_in_flight <= 2
        assert llm.accepted == RUNS


def test_an_agent_files_llm_limits_hold_across_runners(tmp_path: Path, database: str) -> None:
    agents = write_fleet(tmp_path / "agents")
    config_file = agents / "reviewer" / "agent.yml"
    config = json.loads(config_file.read_text())
    config["llm"] = {**config.get("llm", {}), "limits": {"concurrency": 1}}
    config_file.write_text(json.dumps(config))
    with LimitedLLM(
        openai_tool_call("submit_result", VALID), concurrency=1, requests_per_minute=600
    ) as llm:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.openai_base_url}
        common = ["--database", database, "--model", "openai:gpt-test"]
        server, url = serve(tmp_path, database, env, "--workers", "3", *common[2:])
        runner = Process(["runner", "--workers", "3", *common], cwd=tmp_path, env=env)
        try:
            runner.read_until("workers")
            run_ids = [httpx.post(f"{url}/runs", json=REVIEW).json()["run_id"] for _ in range(6)]
            views = _wait_all_ended(url, run_ids)
        finally:
            runner.stop()
            server.stop()
        assert [view["status"] for view in views] == ["completed"] * 6
        assert llm.refused == 0
        assert llm.max_in_flight == 1


def test_a_429_pauses_the_model_for_every_worker_and_the_call_is_made_again(
    tmp_path: Path, database: str
) -> None:
    # the server allows 1 call in flight and the runners are told 2: a second call in flight is
    # answered 429 (the SDK told not to retry it), which pauses the model for every worker
    # sharing the store; after the pause the call is made again and the run completes
    write_fleet(tmp_path / "agents")
    with LimitedLLM(
        openai_tool_call("submit_result", VALID),
        concurrency=1,
        requests_per_minute=600,
        delay_s=1.0,
        retry_after_s=0.5,
        sdk_retries=False,
    ) as llm:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.openai_base_url}
        common = ["--database", database, "--model", "openai:gpt-test", "--concurrency", "2"]
        server, url = serve(tmp_path, database, env, "--workers", "2", *common[2:])
        runner = Process(["runner", "--workers", "2", *common], cwd=tmp_path, env=env)
        try:
            runner.read_until("workers")
            run_ids = [httpx.post(f"{url}/runs", json=REVIEW).json()["run_id"] for _ in range(4)]
            views = _wait_all_ended(url, run_ids)
        finally:
            runner.stop()
            server.stop()
        assert [view["status"] for view in views] == ["completed"] * 4
        assert llm.refused >= 1
        assert llm.accepted == 4
