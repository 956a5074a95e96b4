"""``agentshape init``, ``--version``, the did-you-mean for agent ids and a closed pipe."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from agent_executor._cli import main
from agent_executor._cli.init import STARTER_ID

AGENTSHAPE = [sys.executable, "-m", "agentshape"]


def test_init_writes_a_starter_fleet_that_lists_and_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", str(tmp_path)]) == 0
    written = tmp_path / "agents" / STARTER_ID / "agent.yml"
    assert written.is_file() and written.read_text().startswith("# An agentshape agent")
    assert "agentshape list" in capsys.readouterr().out

    fleet = str(tmp_path / "agents")
    assert main(["list", fleet]) == 0
    assert "every config valid" in capsys.readouterr().out
    run = ["run", STARTER_ID, "--task", "Login fails.", "--model", "test", "--agents-dir", fleet]
    assert main([*run, "--analytics-dir", str(tmp_path / "a"), "--json"]) == 0
    assert '"status": "completed"' in capsys.readouterr().out


def test_init_never_overwrites_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", str(tmp_path)]) == 0
    written = tmp_path / "agents" / STARTER_ID / "agent.yml"
    written.write_text("# mine\n")
    assert main(["init", str(tmp_path)]) == 2
    assert "exists already; --force overwrites it" in capsys.readouterr().err
    assert written.read_text() == "# mine\n"
    assert main(["init", str(tmp_path), "--force"]) == 0
    assert written.read_text() != "# mine\n"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"agentshape {version('agentshape')}"


def test_a_misspelt_agent_gets_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", str(tmp_path)]) == 0
    fleet = str(tmp_path / "agents")
    assert main(["run", "triag", "--task", "x", "--agents-dir", fleet, "--model", "test"]) == 2
    assert "did you mean 'triage'?" in capsys.readouterr().err


def test_an_empty_directory_points_at_init(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "x", "--task", "y", "--agents-dir", str(tmp_path)]) == 2
    assert "agentshape init" in capsys.readouterr().err


def test_every_command_says_its_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (
        "run",
        "run-many",
        "eval",
        "list",
        "show",
        "validate",
        "schemas",
        "analytics",
        "init",
    ):
        assert main([command, "--help"]) == 0
        assert "exit codes:" in capsys.readouterr().out


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path)]) == 0
    many = tmp_path / "agents"
    for n in range(200):  # enough rows to outlast the pipe's buffer
        (many / f"agent-{n:03}").mkdir()
        text = (
            (many / STARTER_ID / "agent.yml").read_text().replace("id: triage", f"id: agent-{n:03}")
        )
        (many / f"agent-{n:03}" / "agent.yml").write_text(text)
    command = " ".join(AGENTSHAPE) + f" list {many} | head -1"
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.startswith("id")
    assert done.stderr == "", done.stderr
    assert done.returncode == 0


def test_the_agentshape_command_has_the_service_commands() -> None:
    done = subprocess.run(
        [*AGENTSHAPE, "serve", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and "--database" in done.stdout and "exit codes:" in done.stdout
