"""The service with the real provider SDKs against the local fake provider server."""

from __future__ import annotations

import pytest

from tests.agent_coordinator.conftest import ServiceFactory
from tests.fake_llm import FakeLLM, anthropic_tool_use, openai_tool_call

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
INVALID = {"summary": "", "approval": "maybe"}
VALID = {"summary": "Subtracts instead of adding.", "approval": "request_changes"}


def _env(fake_llm: FakeLLM) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "sk-test-key-0000000000000000",
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": fake_llm.anthropic_base_url,
    }


@pytest.mark.parametrize("model", ["openai:gpt-test", "anthropic:claude-test"])
def test_invalid_then_valid_completes_with_retry_count_1(
    make_service: ServiceFactory, fake_llm: FakeLLM, model: str
) -> None:
    reply = openai_tool_call if model.startswith("openai") else anthropic_tool_use
    fake_llm.respond(reply("submit_result", INVALID), reply("submit_result", VALID))
    service = make_service(env=_env(fake_llm), model=model)
    run = service.run(REVIEW).json()
    assert run["status"] == "completed"
    result = service.client.get(f"/sessions/{run['session_id']}/result").json()
    assert result["result_data"] == VALID == result["validated_output"]
    assert result["schema_validation"] == {
        "valid": True,
        "schema_name": None,
        "retry_count": 1,
        "errors": [],
        "schema_source": "agent",
        "unused_schema_name": None,
    }
    assert len(fake_llm.requests) == 2
    if model.startswith("openai"):
        forced = fake_llm.requests[0].body["tool_choice"]
        assert forced == {"type": "function", "function": {"name": "submit_result"}}
    session = service.client.get(f"/sessions/{run['session_id']}").json()
    assert session["runs"][0]["model"].endswith("test")


def test_invalid_always_gives_the_seed_failure_body(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", INVALID))
    service = make_service(env=_env(fake_llm), model="openai:gpt-test")
    run = service.run(REVIEW).json()
    assert run["status"] == "failed"
    body = service.client.get(f"/sessions/{run['session_id']}/result").json()
    error = body["error"]
    assert error["type"] == "output_schema_validation_failed"
    assert error["validation_errors"] == [
        "$.approval: 'maybe' is not one of ['approve', 'request_changes', 'comment']",
        "$.summary: '' should be non-empty",
    ]
    assert {issue["path"] for issue in error["issues"]} == {"$.summary", "$.approval"}
    assert error["last_output"] == INVALID
    assert body["result_data"] is None and body["result_text"] is None
    assert len(fake_llm.requests) == 2  # one retry, as the seeds say


def test_the_request_model_wins_over_the_server_default(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", VALID))
    service = make_service(env=_env(fake_llm), model="test")
    run = service.run({**REVIEW, "model": "openai:gpt-test"}).json()
    assert run["status"] == "completed"
    assert len(fake_llm.requests) == 1
