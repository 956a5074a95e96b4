"""Limits on model calls shared by every runner on one database, against a server that 429s.

The runs are stored before the runner processes start, so their workers all claim at once and
call the model together: without shared limits the server's own limit is overrun.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from agent_coordinator._cli import main
from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.fake_llm import openai_tool_call
from tests.limited_llm import LimitedLLM

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
VALID = {"summary": "ok", "approval": "approve"}
RATE_WINDOW_S = 4.0
"""The span ``--rpm`` counts over in these tests (``--rate-window``), not a real minute."""


def _run_all(
    tmp_path: Path,
    database: str,
    llm: LimitedLLM,
    *,
    runs: int,
    runners: list[list[str]],
    flags: list[str] = (),  # type: ignore[assignment]
    during: Callable[[], object] = lambda: None,
    banner: list[str] | None = None,
) -> list[str]:
    """Store ``runs`` runs, start one runner process per ``runners`` entry (its extra flags),
    call ``during``, and return the runs' statuses once every one has ended (``banner`` gets
    what ``serve`` printed on starting)."""
    banner = [] if banner is None else banner
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.openai_base_url}
    common = ["--database", database, "--model", "openai:gpt-test", *flags]
    server, url = serve(tmp_path, database, env, "--workers", "0", *common[2:])
    server.read_until("auth:")
    banner.append("".join(server.lines))
    started: list[Process] = []
    try:
        run_ids = [httpx.post(f"{url}/runs", json=REVIEW).json()["run_id"] for _ in range(runs)]
        for extra in runners:
            started.append(Process(["runner", *extra, *common], cwd=tmp_path, env=env))
        during()
        deadline = time.monotonic() + 240
        while True:
            views = [httpx.get(f"{url}/runs/{run_id}").json() for run_id in run_ids]
            if all(view["status"] in ("completed", "failed", "cancelled") for view in views):
                return [str(view["status"]) for view in views]
            assert time.monotonic() < deadline, [view["status"] for view in views]
            time.sleep(0.2)
    finally:
        for process in started:
            process.stop()
        server.stop()


def test_two_runners_and_a_run_many_keep_one_concurrency_limit_and_the_server_never_429s(
    tmp_path: Path, database: str
) -> None:
    # 16 runs of 1 s each at 2 at once keep the runners busy 8 s at least: the run-many started
    # once they are going calls the model while they do
    write_fleet(tmp_path / "agents")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": f"Review PR {n}"}) + "\n" for n in range(8)))
    reply = openai_tool_call("submit_result", VALID)
    started: list[subprocess.Popen[str]] = []
    banner: list[str] = []

    def run_many() -> None:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.openai_base_url}
        command = [
            *(sys.executable, "-m", "agentshape", "run-many", "reviewer"),
            *("--tasks", str(tasks), "--out", str(tmp_path / "results.jsonl")),
            *("--param", "pr_url=u", "--model", "openai:gpt-test", "--database", database),
            *("--concurrency", "2", "--rpm", "600"),
        ]
        started.append(
            subprocess.Popen(
                command,
                cwd=tmp_path,
                env={**os.environ, **env, "PYTHONPATH": str(Path(__file__).parents[2])},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )

    with LimitedLLM(
        reply, concurrency=2, requests_per_minute=600, delay_s=1.0, sdk_retries=False
    ) as llm:
        try:
            statuses = _run_all(
                tmp_path,
                database,
                llm,
                runs=16,
                runners=[["--workers", "4"], ["--workers", "4"]],
                flags=["--concurrency", "2", "--rpm", "600"],
                during=run_many,
                banner=banner,
            )
            out, err = started[0].communicate(timeout=240)
        finally:
            for process in started:
                if process.poll() is None:
                    process.kill()
                    process.communicate()
    assert statuses == ["completed"] * 16
    assert (
        "limits:   2 in flight, 600 requests/min per model, shared through the database"
        in (banner[0])
    )
    assert started[0].returncode == 0, err
    assert "8 task(s): 8 completed, 0 failed" in out
    assert llm.refused == 0
    assert llm.max_in_flight <= 2
    assert llm.accepted == 16 + 8


def test_an_agent_files_llm_limits_hold_across_runners(tmp_path: Path, database: str) -> None:
    agents = write_fleet(tmp_path / "agents")
    config_file = agents / "reviewer" / "agent.yml"
    config = json.loads(config_file.read_text())
    config["llm"] = {**config.get("llm", {}), "limits": {"concurrency": 1}}
    config_file.write_text(json.dumps(config))
    reply = openai_tool_call("submit_result", VALID)
    with LimitedLLM(reply, concurrency=1, requests_per_minute=600, sdk_retries=False) as llm:
        statuses = _run_all(
            tmp_path, database, llm, runs=6, runners=[["--workers", "3"], ["--workers", "3"]]
        )
    assert statuses == ["completed"] * 6
    assert llm.refused == 0
    assert llm.max_in_flight == 1


def test_requests_per_minute_hold_across_runners(tmp_path: Path, database: str) -> None:
    # The server and the processes count the "minute" over the same 4 s (the hidden
    # --rate-window), so the rule is seen without waiting a real minute.
    write_fleet(tmp_path / "agents")
    reply = openai_tool_call("submit_result", VALID)
    with LimitedLLM(
        reply,
        concurrency=10,
        requests_per_minute=3,
        delay_s=0.05,
        sdk_retries=False,
        window_s=RATE_WINDOW_S,
    ) as llm:
        statuses = _run_all(
            tmp_path,
            database,
            llm,
            runs=5,
            runners=[["--workers", "3"], ["--workers", "3"]],
            flags=["--rpm", "3", "--rate-window", str(RATE_WINDOW_S)],
        )
        # 3 calls in the first window; the other 2 wait for it to pass, then complete
    assert statuses == ["completed"] * 5
    assert llm.refused == 0
    assert llm.accepted == 5
    first, fourth = llm.accepted_at[0], llm.accepted_at[3]
    assert fourth - first >= RATE_WINDOW_S, llm.accepted_at


def test_a_429_pauses_the_model_for_every_runner_and_the_call_is_made_again(
    tmp_path: Path, database: str
) -> None:
    # The server allows 1 call in flight, each taking 3 s; the runners are told 2. The second
    # call is answered 429 with retry-after 4 (the SDK told not to retry it): the model is
    # paused for both runner processes, and the call made again after the pause, when the
    # first has ended, completes.
    write_fleet(tmp_path / "agents")
    reply = openai_tool_call("submit_result", VALID)
    with LimitedLLM(
        reply,
        concurrency=1,
        requests_per_minute=600,
        delay_s=3.0,
        retry_after_s=4.0,
        sdk_retries=False,
    ) as llm:
        statuses = _run_all(
            tmp_path,
            database,
            llm,
            runs=2,
            runners=[["--workers", "1"], ["--workers", "1"]],
            flags=["--concurrency", "2"],
        )
    assert statuses == ["completed"] * 2
    assert llm.refused == 1
    assert llm.accepted == 2


def test_the_rate_window_must_be_positive_and_is_not_in_the_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for command in ("serve", "runner"):
        with pytest.raises(SystemExit) as exited:
            main([command, "--rate-window", "0"])
        assert exited.value.code == 2
        assert "--rate-window: '0' is not a positive number of seconds" in capsys.readouterr().err
        with pytest.raises(SystemExit):
            main([command, "--help"])
        shown = capsys.readouterr().out
        assert "--rpm" in shown and "--rate-window" not in shown
