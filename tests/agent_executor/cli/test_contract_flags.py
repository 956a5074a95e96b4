"""``agentshape run``'s contract flags: validation mode, JSON extraction, strict JSON only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_executor._cli import main
from tests.fake_llm import FakeLLM, openai_text, openai_tool_call

AGENT_YML = """\
schema: kb.agent/1
id: planner
context:
  static:
    system: You plan work.
output:
  schema:
    type: object
    required: [due]
    properties:
      due: { type: string, format: date }
"""


@pytest.fixture
def fleet(tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.delenv("SCHEMA_ENFORCEMENT_VALIDATION_MODE", raising=False)
    (tmp_path / "agents" / "planner").mkdir(parents=True)
    (tmp_path / "agents" / "planner" / "agent.yml").write_text(AGENT_YML)
    return tmp_path / "agents"


def run_cli(fleet: Path, *args: str) -> int:
    analytics = fleet.parent / "analytics"
    where = ["--agents-dir", str(fleet), "--analytics-dir", str(analytics)]
    return main(
        ["run", "planner", "--task", "When?", "--model", "openai:gpt-test", "--json", *args, *where]
    )


@pytest.mark.parametrize(
    ("flags", "status"),
    [
        ((), "failed"),
        (("--validation-mode", "strict"), "failed"),
        (("--validation-mode", "lenient"), "completed"),
    ],
)
def test_validation_mode_flag(
    fleet: Path,
    fake_llm: FakeLLM,
    capsys: pytest.CaptureFixture[str],
    flags: tuple[str, ...],
    status: str,
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", {"due": "next Tuesday"}))
    code = run_cli(fleet, "--max-retries", "0", *flags)
    body = json.loads(capsys.readouterr().out)
    assert (code, body["status"]) == ((0, status) if status == "completed" else (1, status))


def test_an_unknown_validation_mode_is_a_usage_error(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(fleet, "--validation-mode", "loose") == 2
    assert "--validation-mode: invalid choice: 'loose'" in capsys.readouterr().err


FENCED = 'Here it is:\n```json\n{"due": "2026-12-01"}\n```'


@pytest.mark.parametrize(
    ("flags", "status", "error"),
    [
        ((), "completed", None),
        (("--no-extract-json",), "failed", "no_json_found"),
        (("--strict-json-only",), "failed", "strict_json_only_violated"),
        (("--no-strict-json-only", "--extract-json"), "completed", None),
    ],
)
def test_extract_json_and_strict_json_only_flags(
    fleet: Path,
    fake_llm: FakeLLM,
    capsys: pytest.CaptureFixture[str],
    flags: tuple[str, ...],
    status: str,
    error: str | None,
) -> None:
    fake_llm.respond_always(openai_text(FENCED))
    run_cli(fleet, "--mode", "prompted", "--max-retries", "0", *flags)
    body = json.loads(capsys.readouterr().out)
    assert body["status"] == status
    assert (body["error"] or {}).get("type") == error
    if status == "completed":
        assert body["result_data"] == {"due": "2026-12-01"}
