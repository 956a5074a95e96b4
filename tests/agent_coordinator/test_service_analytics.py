"""``serve`` and ``runner`` write the command line's JSONL analytics log (issue 33 row 10)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import Process, serve

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
NO_SUBMIT = "test:fail_first=no_tool_call+no_tool_call"


def _events(directory: Path) -> list[dict[str, object]]:
    return [
        json.loads(line)
        for path in sorted(directory.glob("events-*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def _run(url: str, **extra: object) -> dict[str, object]:
    run: dict[str, object] = httpx.post(
        f"{url}/runs", params={"wait": 30}, json={**REVIEW, **extra}, timeout=60
    ).json()
    assert run["status"] in ("completed", "failed"), run
    return run


def test_serve_writes_the_analytics_log_where_the_command_line_does(
    tmp_path: Path, database: str
) -> None:
    write_fleet(tmp_path / "agents")
    process, url = serve(tmp_path, database, {}, "--model", "test")
    try:
        process.read_until("analytics:")
        assert ".agentshape/analytics/events-YYYY-MM-DD.jsonl" in process.lines[-1]
        done = _run(url)
        failed = _run(url, model=NO_SUBMIT)
    finally:
        assert process.stop() == 0
    events = _events(tmp_path / ".agentshape" / "analytics")
    kinds = {(e["run_id"], e["event"]) for e in events}
    assert {(done["run_id"], "run_started"), (done["run_id"], "run_completed")} <= kinds
    assert (failed["run_id"], "run_failed") in kinds
    # seed 004's recipe finds the service's run that never submitted a result
    found = subprocess.run(
        "grep -h 'did not call submit_result' .agentshape/analytics/*.jsonl",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert found and {json.loads(line)["run_id"] for line in found} == {failed["run_id"]}


def test_analytics_dir_and_no_analytics(tmp_path: Path, database: str) -> None:
    write_fleet(tmp_path / "agents")
    process, url = serve(tmp_path, database, {}, "--model", "test", "--analytics-dir", "logs")
    try:
        run = _run(url)
    finally:
        assert process.stop() == 0
    assert (run["run_id"], "run_completed") in {
        (e["run_id"], e["event"]) for e in _events(tmp_path / "logs")
    }
    quiet, url = serve(tmp_path, database, {}, "--model", "test", "--no-analytics")
    try:
        quiet.read_until("analytics:")
        assert "analytics: off" in quiet.lines[-1]
        _run(url)
    finally:
        assert quiet.stop() == 0
    assert not (tmp_path / ".agentshape" / "analytics").exists()
    assert len([e for e in _events(tmp_path / "logs") if e["event"] == "run_completed"]) == 1


def test_a_runner_process_writes_the_log_too(tmp_path: Path, database: str) -> None:
    write_fleet(tmp_path / "agents")
    env = {"AGENTSHAPE_ANALYTICS_DIR": str(tmp_path / "runner-log")}
    server, url = serve(tmp_path, database, {}, "--model", "test", "--workers", "0")
    runner = Process(
        ["runner", "--workers", "1", "--database", database, "--model", "test"],
        cwd=tmp_path,
        env=env,
    )
    try:
        runner.read_until("analytics:")
        run = _run(url)
    finally:
        assert runner.stop() == 0
        assert server.stop() == 0
    assert (run["run_id"], "run_completed") in {
        (e["run_id"], e["event"]) for e in _events(tmp_path / "runner-log")
    }
