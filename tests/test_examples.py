"""The programs in ``examples/`` run as a user runs them, on the offline test model or a local
fake server, and type-check under ``mypy --strict`` as a user's program would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent_coordinator.processes import serve
from tests.fake_llm import FakeLLM, openai_tool_call
from tests.strict_mypy import EXAMPLES, StrictMypy

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    scripts = Path(sys.executable).parent
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}",
        **extra,
    }


def _run(args: list[str], cwd: Path, **extra: str) -> str:
    done = subprocess.run(
        args,
        cwd=cwd,
        env=_env(**extra),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _fleet(tmp_path: Path) -> Path:
    """A copy of examples/fleet, so nothing the runs write lands in the repository."""
    fleet = tmp_path / "fleet"
    shutil.copytree(EXAMPLES / "fleet", fleet)
    return fleet


def test_extract_pydantic(tmp_path: Path) -> None:
    out = _run([sys.executable, str(EXAMPLES / "extract_pydantic.py")], tmp_path)
    assert "status=completed retries=0" in out


def test_streaming_shows_partial_output_and_the_retry(tmp_path: Path) -> None:
    out = _run([sys.executable, str(EXAMPLES / "streaming.py")], tmp_path)
    assert "retry after attempt 1" in out
    assert out.count("partial ") >= 2
    assert out.splitlines()[-1].startswith("final ")


def test_fleet_run_many_runs_every_task_then_skips_them(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path)
    out = _run(["bash", str(fleet / "run_many.sh")], tmp_path)
    assert "3 skipped (completed earlier)" in out
    rows = [line for line in out.splitlines() if " completed {" in line]
    assert [row.split()[0] for row in rows] == ["standup", "incident", "3"]


@pytest.mark.slow  # an `agentshape mcp` process
def test_mcp_client_over_stdio(tmp_path: Path) -> None:
    out = _run([sys.executable, str(EXAMPLES / "mcp_client.py")], _fleet(tmp_path))
    assert "'name': 'summarizer'" in out
    assert "started: completed {'title': " in out
    assert "resumed: {'title': " in out
    assert "refused: True" in out and "has its own output contract" in out


@pytest.mark.slow  # an `agentshape serve` process
def test_service_client_against_a_real_service(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path)
    process, url = serve(fleet, str(tmp_path / "service.db"), {"AGENTSHAPE_MODEL": "test"})
    try:
        out = _run([sys.executable, str(EXAMPLES / "service_client.py"), url], tmp_path)
    finally:
        process.stop()
    assert "agents: ['summarizer']" in out
    assert "completed: completed title=" in out
    assert "resumed: completed" in out
    assert "refused: Output schema 'sumary' not found; did you mean 'summary'?" in out
    assert "ended: completed" in out


def test_local_model_on_a_compatible_server(tmp_path: Path) -> None:
    server = FakeLLM()
    try:
        server.respond(openai_tool_call("submit_result", {"severity": 5, "reason": "data loss"}))
        out = _run(
            [sys.executable, str(EXAMPLES / "local_model.py"), "compatible:tiny"],
            tmp_path,
            OPENAI_COMPATIBLE_BASE_URL=server.openai_base_url,
        )
        sent = server.requests[0].body
    finally:
        server.close()
    assert out.strip() == "severity 5: data loss (retries: 0)"
    assert sent["model"] == "tiny"
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "submit_result"}}


@pytest.mark.slow  # mypy over every example
def test_examples_pass_mypy_strict(strict_mypy: StrictMypy) -> None:
    programs = [program for program in strict_mypy.programs if program.parent == EXAMPLES]
    assert len(programs) >= 5
    assert strict_mypy.problems(programs) == ""
