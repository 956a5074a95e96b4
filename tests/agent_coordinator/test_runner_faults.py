"""Faults a long-running service meets: a result the store cannot write, a run nobody finishes."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import serve
from tests.fake_llm import FakeLLM, openai_tool_call

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}


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
        result = httpx.get(f"{url}/sessions/{run['session_id']}/result").json()
        assert result["result_data"] == {"summary": "cut \ud83d here", "approval": "approve"}
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
