"""``/sessions`` over real HTTP: the result bodies of seeds 000 and 001, resume, runs, paging."""

from __future__ import annotations

from pathlib import Path

from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Service

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}


def test_a_completed_result_has_seed_001s_body_and_result_data(service: Service) -> None:
    run = service.run({**REVIEW, "model": "test:fail_first=invalid_arguments"}).json()
    result = service.client.get(f"/sessions/{run['session_id']}/result")
    assert result.status_code == 200
    body = result.json()
    assert body["status"] == "completed"
    assert body["validated_output"] == body["result_data"] is not None
    assert body["result_text"] is None
    assert body["schema_validation"] == {
        "valid": True,
        "schema_name": None,
        "retry_count": 1,
        "errors": [],
        "schema_source": "agent",
        "unused_schema_name": None,
    }
    assert isinstance(body["result"], str) and body["error"] is None


def test_a_free_text_result_has_result_text_only(service: Service) -> None:
    run = service.run({"agent_name": "writer", "prompt": "Say hi"}).json()
    body = service.client.get(f"/sessions/{run['session_id']}/result").json()
    assert body["status"] == "completed"
    assert isinstance(body["result_text"], str) and body["result_text"]
    assert body["result_data"] is None and body["schema_validation"] is None


def test_a_failed_result_has_seed_000s_failure_body(service: Service) -> None:
    model = "test:fail_first=invalid_arguments+invalid_arguments"
    run = service.run({**REVIEW, "model": model}).json()
    body = service.client.get(f"/sessions/{run['session_id']}/result").json()
    assert body["status"] == "failed"
    assert body["result_data"] is None and body["result_text"] is None
    error = body["error"]
    assert error["type"] == "output_schema_validation_failed"
    assert error["validation_errors"] == [f"{i['path']}: {i['message']}" for i in error["issues"]]
    assert error["last_output"] is not None
    assert body["schema_validation"]["valid"] is False
    assert body["schema_validation"]["retry_count"] == 1
    assert body["schema_validation"]["errors"] == error["validation_errors"]


def test_the_result_of_a_run_still_waiting_is_409(make_service: ServiceFactory) -> None:
    service = make_service(workers=0)
    run = service.client.post("/runs", json=REVIEW).json()
    response = service.client.get(f"/sessions/{run['session_id']}/result")
    assert response.status_code == 409 and response.json()["error"] == "ResultNotReady"


def test_a_session_shows_its_runs_attempts_usage_and_timings(service: Service) -> None:
    run = service.run({**REVIEW, "model": "test:fail_first=invalid_arguments"}).json()
    session = service.client.get(f"/sessions/{run['session_id']}").json()
    assert session["agent_name"] == "reviewer" and session["status"] == "completed"
    assert session["parent_session_id"] is None and session["children"] == []
    (only,) = session["runs"]
    assert only["run_id"] == run["run_id"] and only["prompt"] == "Review PR 1"
    first, second = only["attempts"]
    assert first["errors"] and first["raw_output"]
    assert second["errors"] == []
    assert only["usage"]["requests"] == 2
    assert only["duration_ms"] is not None and only["finished_at"] is not None
    assert session["messages"] > 0


def test_resume_continues_the_same_conversation_and_enforces_the_contract(
    service: Service,
) -> None:
    first = service.run(REVIEW).json()
    before = service.client.get(f"/sessions/{first['session_id']}").json()["messages"]
    resumed = service.run(
        {"type": "resume_session", "session_id": first["session_id"], "prompt": "Shorter please"}
    ).json()
    assert resumed["session_id"] == first["session_id"] and resumed["status"] == "completed"
    session = service.client.get(f"/sessions/{first['session_id']}").json()
    assert [r["type"] for r in session["runs"]] == ["start_session", "resume_session"]
    assert session["messages"] > before
    result = service.client.get(f"/sessions/{first['session_id']}/result").json()
    assert result["run_id"] == resumed["run_id"]
    assert result["schema_validation"]["valid"] is True


def test_resume_works_after_a_restart_of_the_server(
    make_service: ServiceFactory, database: str, tmp_path: Path
) -> None:
    first_service = make_service()
    first = first_service.run(REVIEW).json()
    messages = first_service.client.get(f"/sessions/{first['session_id']}").json()["messages"]
    first_service.close()
    second_service = make_service()
    resumed = second_service.run(
        {"type": "resume_session", "session_id": first["session_id"], "prompt": "Again"}
    ).json()
    assert resumed["status"] == "completed"
    session = second_service.client.get(f"/sessions/{first['session_id']}").json()
    assert session["messages"] > messages


def test_resuming_a_busy_session_is_409(make_service: ServiceFactory) -> None:
    service = make_service(workers=0)
    run = service.client.post("/runs", json=REVIEW).json()
    response = service.client.post(
        "/runs", json={"type": "resume_session", "session_id": run["session_id"], "prompt": "x"}
    )
    assert response.status_code == 409 and response.json()["error"] == "SessionBusy"


def test_resume_with_another_agent_is_refused(service: Service) -> None:
    run = service.run(REVIEW).json()
    response = service.client.post(
        "/runs",
        json={
            "type": "resume_session",
            "session_id": run["session_id"],
            "agent_name": "writer",
            "prompt": "x",
        },
    )
    assert response.status_code == 422


def test_sessions_are_listed_and_filtered(service: Service) -> None:
    service.run(REVIEW)
    service.run({"agent_name": "writer", "prompt": "hi"})
    listing = service.client.get("/sessions").json()
    assert [s["agent_name"] for s in listing["items"]] == ["writer", "reviewer"]
    only = service.client.get("/sessions", params={"agent_name": "writer"}).json()
    assert len(only["items"]) == 1
    missing = service.client.get("/sessions/ses_nope")
    assert missing.status_code == 404 and missing.json()["error"] == "SessionNotFound"
    assert service.client.get("/sessions/ses_nope/result").status_code == 404
