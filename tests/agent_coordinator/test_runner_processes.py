"""``serve --processes N``: runner processes that claim runs beside serve and stop with it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx

from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.fake_llm import FakeLLM, delayed, openai_tool_call

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
VALID = {"summary": "ok", "approval": "approve"}


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting to be reaped has stopped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_serve_runs_runs_in_each_process_it_starts_and_stops_them_all(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """Three runs at once with one worker a process: three processes each hold one of them.

    The model holds its answers until the test has seen all three runs inside a model call
    (the delay only bounds a broken run); then they end and serve is stopped.
    """
    write_fleet(tmp_path / "agents")
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 150))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    server, url = serve(
        tmp_path,
        database,
        env,
        *("--model", "openai:gpt-test", "--workers", "1", "--processes", "3"),
    )
    banner = server.read_until("runners:")
    children = [int(pid) for pid in re.findall(r"\d+", banner.split("(", 1)[1])]
    try:
        runs = [
            httpx.post(f"{url}/runs", json={**REVIEW, "prompt": f"Review PR {n}"}).json()
            for n in range(3)
        ]
        deadline = time.monotonic() + 120
        while len(fake_llm.requests) < 3:  # each process's one worker is inside a model call
            assert time.monotonic() < deadline, f"{len(fake_llm.requests)} runs started"
            time.sleep(0.05)
        holders = {
            int(
                httpx.get(f"{url}/runs/{run['run_id']}")
                .json()["claim_history"][-1]["runner"]
                .split(":")[1]
            )
            for run in runs
        }
    finally:
        fake_llm.end_delays()
        code = server.stop(timeout=180)
    assert len(children) == 2
    assert holders == {server.popen.pid, *children}
    assert code == 0
    assert [pid for pid in children if _alive(pid)] == []


def test_processes_needs_workers(tmp_path: Path) -> None:
    write_fleet(tmp_path / "agents")
    process = Process(
        ["serve", "--port", "0", "--workers", "0", "--processes", "2"], cwd=tmp_path, env={}
    )
    code = process.stop(timeout=60) if process.popen.wait(60) is None else process.popen.returncode
    process.stop()
    assert code == 2
    assert "--processes runs runs in more processes: it needs --workers" in process.rest


def test_runner_processes_stop_when_serve_is_killed(tmp_path: Path) -> None:
    """SIGKILL gives serve no chance to stop them: they stop themselves (Linux)."""
    write_fleet(tmp_path / "agents")
    database = str(tmp_path / "coordinator.db")
    server, _ = serve(
        tmp_path, database, {}, "--model", "test", "--workers", "1", "--processes", "2"
    )
    banner = server.read_until("runners:")
    children = [int(pid) for pid in re.findall(r"\d+", banner.split("(", 1)[1])]
    assert len(children) == 1 and _alive(children[0])
    server.kill()
    deadline = time.monotonic() + 60
    while _alive(children[0]):
        assert time.monotonic() < deadline, "the runner process outlived serve"
        time.sleep(0.05)
