"""``/schemas`` and ``/agents`` over real HTTP."""

from __future__ import annotations

import time
from typing import Any

from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Service

COUNT = {
    "type": "object",
    "required": ["files", "loc"],
    "properties": {"files": {"type": "integer"}, "loc": {"type": "integer"}},
}


def test_schemas_can_be_added_listed_read_used_and_removed(service: Service) -> None:
    added = service.client.post(
        "/schemas", json={"name": "code-count", "description": "files and loc", "schema": COUNT}
    )
    assert added.status_code == 201
    assert added.json()["name"] == "code-count" and added.json()["schema"] == COUNT
    listing = service.client.get("/schemas").json()
    assert [(s["name"], s["description"]) for s in listing] == [("code-count", "files and loc")]
    assert service.client.get("/schemas/code-count").json()["schema"] == COUNT
    run = service.run(
        {"agent_name": "summariser", "prompt": "count", "output_schema_name": "code-count"}
    ).json()
    result = service.client.get(f"/sessions/{run['session_id']}/result").json()
    assert set(result["result_data"]) == {"files", "loc"}
    assert result["schema_validation"]["schema_name"] == "code-count"
    assert service.client.delete("/schemas/code-count").status_code == 204
    assert service.client.get("/schemas").json() == []


def test_schema_errors_have_seed_001s_codes(service: Service) -> None:
    missing = service.client.get("/schemas/nope")
    assert missing.status_code == 404 and missing.json()["error"] == "SchemaNotFound"
    assert service.client.delete("/schemas/nope").json()["error"] == "SchemaNotFound"
    invalid = service.client.post(
        "/schemas", json={"name": "bad", "schema": {"type": "object", "properties": []}}
    )
    assert invalid.status_code == 400
    assert invalid.json()["error"] == "InvalidSchema"
    assert invalid.json()["details"][0]["path"] == "$.properties"
    service.client.post("/schemas", json={"name": "dup", "schema": COUNT})
    taken = service.client.post("/schemas", json={"name": "dup", "schema": {"type": "object"}})
    assert taken.status_code == 409 and taken.json()["error"] == "SchemaExists"
    replaced = service.client.post("/schemas", json={"name": "dup", "schema": {}, "replace": True})
    assert replaced.status_code == 201
    bad_name = service.client.post("/schemas", json={"name": "no spaces", "schema": COUNT})
    assert bad_name.status_code == 422


def test_a_near_miss_schema_name_gets_a_suggestion(service: Service) -> None:
    service.client.post("/schemas", json={"name": "code-count", "schema": COUNT})
    response = service.client.get("/schemas/code-cont")
    assert response.json()["suggestion"] == "code-count"


def test_agents_are_listed_with_their_contracts(service: Service) -> None:
    agents = {a["name"]: a for a in service.client.get("/agents").json()}
    assert sorted(agents) == ["orchestrator", "reviewer", "summariser", "writer"]
    assert agents["reviewer"]["contract"] == "agent" and agents["reviewer"]["has_parameters"]
    assert agents["summariser"]["contract"] == "default"
    assert agents["writer"]["contract"] is None
    detail = service.client.get("/agents/reviewer").json()
    assert detail["output_schema"]["required"] == ["summary", "approval"]
    assert detail["parameters_schema"]["required"] == ["pr_url"]
    assert detail["system_prompt"] == "You review pull requests."
    missing = service.client.get("/agents/reviewr")
    assert missing.status_code == 404 and missing.json()["suggestion"] == "reviewer"


def test_validate_schema_runs_the_fleet_checks(service: Service) -> None:
    good = service.client.post("/agents/validate-schema", json={"schema": COUNT}).json()
    assert good == {"valid": True, "findings": []}
    bad = service.client.post(
        "/agents/validate-schema",
        json={"schema": {"type": "object", "properties": {"n": {"type": "integr"}}}},
    ).json()
    assert bad["valid"] is False
    assert any(f["path"].startswith("$.properties.n") for f in bad["findings"])
    params = service.client.post(
        "/agents/validate-schema", json={"schema": [1], "kind": "parameters"}
    ).json()
    assert params["valid"] is False


# Seed 001's "Named Schema Registry" body, its schema written out where the seed elides it.
CODE_ANALYSIS = {
    "name": "code-analysis-result",
    "description": "Standard format for code analysis output",
    "schema": {
        "type": "object",
        "required": ["summary", "issues"],
        "properties": {
            "summary": {"type": "string"},
            "issues": {"type": "array", "items": {"type": "string"}},
        },
        "additionalProperties": False,
    },
}
VERDICT = {
    "type": "object",
    "required": ["verdict"],
    "properties": {"verdict": {"type": "boolean"}},
    "additionalProperties": False,
}
# Seed 001's run-level body: a named schema reference.
NAMED_RUN = {
    "agent_name": "summariser",
    "prompt": "Analyse the code",
    "output_schema_name": "code-analysis-result",
}


def _result(service: Service, session_id: str) -> dict[str, Any]:
    answer = service.client.get(f"/sessions/{session_id}/result")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_the_same_schema_again_is_200_and_another_under_its_name_409(service: Service) -> None:
    created = service.client.post("/schemas", json=CODE_ANALYSIS)
    assert created.status_code == 201, created.text
    again = service.client.post("/schemas", json=CODE_ANALYSIS)
    assert again.status_code == 200, again.text
    assert again.json() == created.json()
    other = service.client.post("/schemas", json={**CODE_ANALYSIS, "schema": VERDICT})
    assert other.status_code == 409
    assert other.json()["error"] == "SchemaExists"
    assert "immutable" in other.json()["message"]
    stored = service.client.get("/schemas/code-analysis-result").json()
    assert (stored["schema"], stored["hash"]) == (CODE_ANALYSIS["schema"], created.json()["hash"])


def test_a_deleted_schema_name_does_not_strand_its_sessions(service: Service) -> None:
    assert service.client.post("/schemas", json=CODE_ANALYSIS).status_code == 201
    started = service.run(NAMED_RUN).json()
    assert started["status"] == "completed", started
    assert set(_result(service, started["session_id"])["result_data"]) == {"summary", "issues"}
    assert service.client.delete("/schemas/code-analysis-result").status_code == 204
    assert service.client.get("/schemas/code-analysis-result").status_code == 404

    resume = {"type": "resume_session", "session_id": started["session_id"], "prompt": "Again"}
    resumed = service.run(resume)
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["status"] == "completed", resumed.text
    result = _result(service, started["session_id"])
    assert set(result["result_data"]) == {"summary", "issues"}
    assert result["schema_validation"]["schema_name"] == "code-analysis-result"
    # a new session naming it is refused: the name is gone, only the session holds the schema
    refused = service.run(NAMED_RUN)
    assert (refused.status_code, refused.json()["error"]) == (404, "SchemaNotFound")


def test_a_replaced_schema_changes_new_sessions_not_the_ones_that_used_it(
    service: Service,
) -> None:
    assert service.client.post("/schemas", json=CODE_ANALYSIS).status_code == 201
    before = service.run(NAMED_RUN).json()
    replaced = service.client.post(
        "/schemas", json={**CODE_ANALYSIS, "schema": VERDICT, "replace": True}
    )
    assert replaced.status_code == 201, replaced.text
    resume = {"type": "resume_session", "session_id": before["session_id"], "prompt": "Again"}
    assert service.run(resume).json()["status"] == "completed"
    assert set(_result(service, before["session_id"])["result_data"]) == {"summary", "issues"}
    after = service.run(NAMED_RUN).json()
    assert set(_result(service, after["session_id"])["result_data"]) == {"verdict"}


def test_a_run_queued_before_its_schema_was_deleted_runs_with_it(
    make_service: ServiceFactory,
) -> None:
    front = make_service(workers=0)  # stores runs; nobody claims them here
    assert front.client.post("/schemas", json=CODE_ANALYSIS).status_code == 201
    queued = front.client.post("/runs", json=NAMED_RUN)
    assert queued.status_code == 202, queued.text
    assert front.client.delete("/schemas/code-analysis-result").status_code == 204
    worker = make_service()  # the same store and registry, with runners
    run_id = queued.json()["run_id"]
    deadline = time.monotonic() + 120  # a bound, not a speed: the machine may be busy
    ended = worker.client.get(f"/runs/{run_id}").json()
    while ended["status"] not in {"completed", "failed", "cancelled"}:
        assert time.monotonic() < deadline, ended
        time.sleep(0.1)
        ended = worker.client.get(f"/runs/{run_id}").json()
    assert ended["status"] == "completed", ended
    result = _result(worker, queued.json()["session_id"])
    assert set(result["result_data"]) == {"summary", "issues"}
