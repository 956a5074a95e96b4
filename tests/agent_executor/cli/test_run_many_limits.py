"""``run-many`` held to call limits: the agent's ``llm.limits``, ``--rpm``/``--tpm``, 429 pauses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_executor._cli import main
from tests.agent_executor.cli.test_main import AGENT_YML
from tests.fake_llm import openai_tool_call
from tests.limited_llm import LimitedLLM

REPLY = openai_tool_call("submit_result", {"title": "ok", "score": 3})


@pytest.fixture(autouse=True)
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agents" / "grader").mkdir(parents=True)
    limited = AGENT_YML.replace(
        "name: Grader\n", "name: Grader\nllm:\n  limits: {concurrency: 1}\n"
    )
    (tmp_path / "agents" / "grader" / "agent.yml").write_text(limited)
    Path("tasks.jsonl").write_text(
        "".join(json.dumps(f"Grade essay {n}.") + "\n" for n in range(4))
    )
    return tmp_path / "agents"


def _run_many(llm: LimitedLLM, monkeypatch: pytest.MonkeyPatch, *flags: str) -> list[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    main(
        [
            "run-many",
            "grader",
            "--tasks",
            "tasks.jsonl",
            "--out",
            "results.jsonl",
            "--model",
            "openai:gpt-test",
            "--analytics-dir",
            "analytics",
            *flags,
        ]
    )
    lines = Path("results.jsonl").read_text().splitlines()
    return [json.loads(line)["status"] for line in lines]


def test_the_agents_llm_limits_hold_whatever_the_concurrency_flag(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with LimitedLLM(REPLY, concurrency=1, requests_per_minute=600, sdk_retries=False) as llm:
        statuses = _run_many(llm, monkeypatch, "--concurrency", "4")
    assert statuses == ["completed"] * 4
    assert llm.refused == 0
    assert llm.max_in_flight == 1


def test_a_429_pauses_every_run_and_the_call_is_made_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "agents" / "grader" / "agent.yml").write_text(AGENT_YML)
    Path("tasks.jsonl").write_text('"one"\n"two"\n')
    with LimitedLLM(
        REPLY,
        concurrency=1,
        requests_per_minute=600,
        delay_s=3.0,
        retry_after_s=4.0,
        sdk_retries=False,
    ) as llm:
        statuses = _run_many(llm, monkeypatch, "--concurrency", "2")
    assert statuses == ["completed"] * 2
    assert llm.refused == 1
    assert llm.accepted == 2


def test_rpm_and_tpm_below_one_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--rpm", "--tpm"):
        code = main(["run-many", "grader", "--tasks", "tasks.jsonl", "--out", "r.jsonl", flag, "0"])
        assert code == 2
        assert f"{flag} must be at least 1, got 0" in capsys.readouterr().err
