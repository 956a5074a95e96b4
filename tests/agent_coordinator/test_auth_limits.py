"""Bearer-token auth and the size limits, over real HTTP."""

from __future__ import annotations

import httpx

from agent_coordinator._service.bodies import MAX_PROMPT_CHARS
from agent_coordinator._service.services import Limits
from tests.agent_coordinator.conftest import ServiceFactory


def test_every_endpoint_but_health_needs_the_token(make_service: ServiceFactory) -> None:
    service = make_service(token="s3cret-token")
    with httpx.Client(base_url=service.url) as anonymous:
        assert anonymous.get("/health").json() == {"status": "ok"}
        for path in ("/runs", "/sessions", "/schemas", "/agents"):
            response = anonymous.get(path)
            assert response.status_code == 401, path
            assert response.json()["error"] == "Unauthorized"
        wrong = anonymous.get("/runs", headers={"authorization": "Bearer s3cret-tokem"})
        assert wrong.status_code == 401
        assert "s3cret" not in wrong.text
    assert service.client.get("/runs").status_code == 200


def test_a_body_past_the_limit_is_413(make_service: ServiceFactory) -> None:
    service = make_service(limits=Limits(max_body_bytes=2000))
    response = service.client.post("/runs", json={"agent_name": "writer", "prompt": "x" * 5000})
    assert response.status_code == 413
    assert response.json()["error"] == "PayloadTooLarge"


def test_a_schema_past_the_limit_is_413(make_service: ServiceFactory) -> None:
    service = make_service(limits=Limits(max_schema_bytes=100))
    big = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(20)}}
    run = service.client.post(
        "/runs", json={"agent_name": "writer", "prompt": "x", "output_schema": big}
    )
    assert run.status_code == 413 and run.json()["error"] == "SchemaTooLarge"
    schema = service.client.post("/schemas", json={"name": "big", "schema": big})
    assert schema.status_code == 413


def test_a_prompt_past_the_limit_is_422(make_service: ServiceFactory) -> None:
    service = make_service(limits=Limits(max_body_bytes=4 * MAX_PROMPT_CHARS))
    response = service.client.post(
        "/runs", json={"agent_name": "writer", "prompt": "x" * (MAX_PROMPT_CHARS + 1)}
    )
    assert response.status_code == 422
    assert response.json()["details"][0]["path"] == "$.body.prompt"


def test_a_page_past_the_limit_is_422(make_service: ServiceFactory) -> None:
    service = make_service()
    response = service.client.get("/sessions", params={"limit": 201})
    assert response.status_code == 422 and response.json()["error"] == "InvalidRequest"
