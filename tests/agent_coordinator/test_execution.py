"""The service's calls into the library (``Execution``), over real HTTP on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from tests.agent_coordinator.conftest import ServiceFactory

CHECKER_YAML = """\
id: checker
system_prompt: You check pull requests.
parameters_schema:
  type: object
  required: [pr]
  properties:
    pr: {type: string}
"""


def test_a_changed_parameters_schema_holds_from_the_next_request_on(
    make_service: ServiceFactory, tmp_path: Path
) -> None:
    path = tmp_path / "agents" / "checker" / "agent.yml"
    path.parent.mkdir(parents=True)
    path.write_text(CHECKER_YAML)
    service = make_service()

    def posted(pr: object) -> tuple[int, str]:
        answer = service.run({"agent_name": "checker", "prompt": "Check", "parameters": {"pr": pr}})
        body = answer.json()
        return answer.status_code, body["status"] if answer.is_success else body["error"]

    # Each schema is checked by several requests, so the second and later use what the first
    # compiled.
    for _ in range(2):
        assert posted("u") == (200, "completed")
        assert posted(5) == (422, "InputValidationFailed")
    changed = service.client.patch(
        "/agents/checker",
        json={"parameters_schema": {"type": "object", "properties": {"pr": {"type": "integer"}}}},
    )
    assert changed.status_code == 200, changed.text
    for _ in range(2):
        assert posted(5) == (200, "completed")
        refused = service.run(
            {"agent_name": "checker", "prompt": "Check", "parameters": {"pr": "u"}}
        )
        assert refused.status_code == 422
        [detail] = refused.json()["details"]
        assert (detail["path"], detail["keyword"]) == ("$.pr", "type")
