"""``/schemas`` and ``/agents`` over real HTTP."""

from __future__ import annotations

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
    taken = service.client.post("/schemas", json={"name": "dup", "schema": COUNT})
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
