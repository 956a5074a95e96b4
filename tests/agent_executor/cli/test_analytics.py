from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_executor._cli import main
from tests.agent_executor.cli.test_main import AGENT_YML


@pytest.fixture(autouse=True)
def logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline_model: None) -> Path:
    """Two runs of the grader logged to the default analytics directory: one ok, one failed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agents" / "grader").mkdir(parents=True)
    (tmp_path / "agents" / "grader" / "agent.yml").write_text(AGENT_YML)
    assert main(["run", "grader", "--task", "Go.", "--json"]) == 0
    assert (
        main(["run", "grader", "--task", "Go.", "--json", "--model", "test:fail_first=text+text"])
        == 1
    )
    return tmp_path / ".agentshape" / "analytics"


def test_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["analytics"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Analytics review of .agentshape/analytics (1 file, ")
    row = next(line for line in out.splitlines() if line.startswith("grader "))
    assert row.split()[1:5] == ["2", "1", "1", "0"]  # runs, ok, failed, incomplete
    assert "output_tool_not_called" in out


def test_json_and_filters(capsys: pytest.CaptureFixture[str], logged: Path) -> None:
    capsys.readouterr()
    assert main(["analytics", str(logged), "--json", "--agent", "grader"]) == 0
    review = json.loads(capsys.readouterr().out)
    assert review["agent"] == "grader" and review["overall"]["runs"] == 2
    assert review["agents"][0]["failures_by_type"] == {"output_tool_not_called": 1}
    assert main(["analytics", "--json", "--agent", "nobody"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["runs"] == 0
    assert main(["analytics", "--json", "--since", "2999-01-01"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["runs"] == 0
    assert main(["analytics", "--json", "--since", "1d"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["runs"] == 2


def test_html(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["analytics", "--html", "report/index.html"]) == 0
    assert capsys.readouterr().err == "wrote report/index.html\n"
    page = Path("report/index.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "grader" in page


def test_a_bad_since_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["analytics", "--since", "yesterday"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentshape: cannot read 'yesterday' as a time")


def test_a_since_span_past_the_calendar_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["analytics", "--since", "99999999999d"]) == 2
    assert capsys.readouterr().err == (
        "agentshape: --since '99999999999d' reaches back before the year 1; "
        "give a shorter span or a date\n"
    )


def test_a_missing_directory_is_an_empty_review(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["analytics", "nowhere"]) == 0
    out, err = capsys.readouterr()
    assert "No runs found." in out
    assert "note: nowhere does not exist" in err
