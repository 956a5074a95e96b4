"""Agents over HTTP (issue 33 row 8), over real HTTP, on SQLite and PostgreSQL.

``POST /agents`` with seed 000's example blueprint verbatim, ``PATCH /agents/{name}`` (only the
fields given, comments and order kept, ``If-Match``) and ``DELETE /agents/{name}``.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Service

# Seed 000's "Example Agent Blueprint", verbatim.
PR_REVIEWER = json.loads("""
{
  "name": "pr-reviewer",
  "description": "Reviews pull requests and provides structured feedback",
  "type": "autonomous",
  "parameters_schema": {
    "type": "object",
    "required": ["pr_url"],
    "properties": {
      "pr_url": {
        "type": "string",
        "description": "GitHub PR URL to review"
      },
      "focus_areas": {
        "type": "array",
        "items": { "type": "string" },
        "description": "Specific areas to focus on"
      }
    }
  },
  "output_schema": {
    "type": "object",
    "required": ["summary", "approval", "comments"],
    "properties": {
      "summary": {
        "type": "string",
        "description": "Brief summary of the PR"
      },
      "approval": {
        "type": "string",
        "enum": ["approve", "request_changes", "comment"],
        "description": "Review decision"
      },
      "comments": {
        "type": "array",
        "items": {
          "type": "object",
          "required": ["file", "line", "severity", "message"],
          "properties": {
            "file": { "type": "string" },
            "line": { "type": "integer" },
            "severity": { "type": "string", "enum": ["nitpick", "suggestion", "concern", "blocker"] },
            "message": { "type": "string" }
          }
        }
      },
      "metrics": {
        "type": "object",
        "properties": {
          "files_reviewed": { "type": "integer" },
          "lines_changed": { "type": "integer" },
          "complexity_score": { "type": "number", "minimum": 0, "maximum": 10 }
        }
      }
    }
  },
  "system_prompt": "You are a thorough code reviewer..."
}
""")  # noqa: E501 (the seed's line, verbatim)

# Seed 000's first example, the code analyser, verbatim (it has no system prompt of its own).
CODE_ANALYZER = json.loads("""
{
  "name": "code-analyzer",
  "parameters_schema": {
    "type": "object",
    "required": ["repo_path"],
    "properties": {
      "repo_path": { "type": "string" }
    }
  },
  "output_schema": {
    "type": "object",
    "required": ["files_analyzed", "issues"],
    "properties": {
      "files_analyzed": { "type": "integer" },
      "issues": {
        "type": "array",
        "items": {
          "type": "object",
          "required": ["file", "severity", "message"],
          "properties": {
            "file": { "type": "string" },
            "severity": { "type": "string", "enum": ["low", "medium", "high"] },
            "message": { "type": "string" }
          }
        }
      }
    }
  }
}
""")

REVIEWER_YAML = """\
# Reviewer: this comment stays.
id: reviewer
system_prompt: You review pull requests.  # so does this one
parameters_schema:
  type: object
  required: [pr_url]
  properties:
    pr_url: {type: string}
output_schema:
  type: object
  required: [summary, approval]
  properties:
    summary: {type: string, minLength: 1}   # never empty
    approval:
      enum: [approve, request_changes, comment]
"""

FILE_FORM_YAML = """\
schema: kb.agent/1
id: reviewer
context:
  static:
    system: You review pull requests.
parameters_schema:
  type: object
  properties:
    pr_url: {type: string}
output:
  maxRetries: 1   # the seeds' one re-prompt
  schema:
    type: object
    required: [summary]
    properties:
      summary: {type: string}
"""


@pytest.fixture
def reviewer_file(service: Service, tmp_path: Path) -> Path:
    path = tmp_path / "agents" / "reviewer" / "agent.yml"
    path.write_text(REVIEWER_YAML)
    return path


def test_post_agents_creates_seed_000s_blueprint_and_the_service_runs_it(
    service: Service, tmp_path: Path
) -> None:
    created = service.client.post("/agents", json=PR_REVIEWER)
    assert created.status_code == 201, created.text
    body = created.json()
    path = tmp_path / "agents" / "pr-reviewer" / "agent.yml"
    assert body["file"] == str(path)
    assert created.headers["etag"] == f'"{body["version"]}"'
    assert (body["name"], body["reloaded"], body["contract"]) == ("pr-reviewer", True, "agent")
    assert yaml.safe_load(path.read_text()) == PR_REVIEWER
    agent = service.client.get("/agents/pr-reviewer").json()
    assert agent["output_schema"] == PR_REVIEWER["output_schema"]
    assert agent["parameters_schema"] == PR_REVIEWER["parameters_schema"]
    assert "pr-reviewer" in [a["name"] for a in service.client.get("/agents").json()]
    run = service.run(
        {"agent_name": "pr-reviewer", "prompt": "Review it", "parameters": {"pr_url": "u"}}
    )
    assert run.json()["status"] == "completed", run.text
    result = service.client.get(f"/sessions/{run.json()['session_id']}/result").json()
    assert set(result["result_data"]) >= {"summary", "approval", "comments"}
    assert result["result_data"]["approval"] in {"approve", "request_changes", "comment"}


def test_post_agents_twice_is_409_and_the_file_is_kept(service: Service, tmp_path: Path) -> None:
    assert service.client.post("/agents", json=PR_REVIEWER).status_code == 201
    path = tmp_path / "agents" / "pr-reviewer" / "agent.yml"
    before = path.read_text()
    again = service.client.post("/agents", json={**PR_REVIEWER, "description": "other"})
    assert again.status_code == 409
    assert again.json()["error"] == "AgentExists"
    assert path.read_text() == before
    taken = service.client.post("/agents", json={"id": "writer", "system_prompt": "Hi."})
    assert (taken.status_code, taken.json()["error"]) == (409, "AgentExists")


def test_post_agents_gives_every_problem_agentshape_list_finds_and_writes_nothing(
    service: Service, tmp_path: Path
) -> None:
    # seed 000's first example has no system prompt: `agentshape list` refuses it, so does POST
    refused = service.client.post("/agents", json=CODE_ANALYZER)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "ConfigError"
    assert any("system" in d["message"] for d in refused.json()["details"])
    assert not (tmp_path / "agents" / "code-analyzer").exists()

    broken = {
        **CODE_ANALYZER,
        "system_prompt": "You analyse code.",
        "tools": ["fs:raed"],
        "temprature": 0,
        "output_schema": {"type": "objct"},
    }
    refused = service.client.post("/agents", json=broken)
    assert refused.status_code == 400, refused.text
    messages = "\n".join(d["message"] for d in refused.json()["details"])
    assert "temprature" in messages and "temperature" in messages
    assert "objct" in messages
    assert all(
        ":" in d["message"] and "agent.yml" in d["message"] for d in refused.json()["details"]
    )
    assert not (tmp_path / "agents" / "code-analyzer").exists()
    assert service.client.get("/agents/code-analyzer").status_code == 404

    fixed = {**CODE_ANALYZER, "system_prompt": "You analyse code."}
    assert service.client.post("/agents", json=fixed).status_code == 201


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"system_prompt": "no name"}, "needs an 'id'"),
        ({"name": "../escape", "system_prompt": "x"}, "cannot name an agent's folder"),
        ({"id": ".hidden", "system_prompt": "x"}, "cannot name an agent's folder"),
        ({"id": 7, "system_prompt": "x"}, "needs an 'id'"),
    ],
)
def test_post_agents_refuses_an_id_that_cannot_be_a_folder(
    service: Service, tmp_path: Path, body: dict[str, object], message: str
) -> None:
    refused = service.client.post("/agents", json=body)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == "InvalidRequest"
    assert message in refused.json()["message"]
    assert not (tmp_path / "escape").exists()
    assert sorted(p.name for p in (tmp_path / "agents").iterdir()) == [
        "orchestrator",
        "reviewer",
        "summariser",
        "writer",
    ]


def test_post_agents_refuses_a_body_that_is_not_an_object(service: Service) -> None:
    refused = service.client.post("/agents", json=["pr-reviewer"])
    assert refused.status_code == 422
    assert refused.json()["error"] == "InvalidRequest"


def test_patch_sets_only_the_fields_given_keeping_comments_and_order(
    service: Service, reviewer_file: Path
) -> None:
    version = service.client.get("/agents/reviewer/source").json()["version"]
    schema = {
        "type": "object",
        "required": ["summary", "approval"],
        "properties": {
            "summary": {"type": "string", "minLength": 1},
            "approval": {"enum": ["approve", "request_changes", "comment"]},
            "risk": {"type": "integer", "minimum": 0},
        },
    }
    changed = service.client.patch(
        "/agents/reviewer",
        json={"description": "Reviews PRs.", "output_schema": schema},
        headers={"If-Match": f'"{version}"'},
    )
    assert changed.status_code == 200, changed.text
    text = reviewer_file.read_text()
    assert text.startswith("# Reviewer: this comment stays.\nid: reviewer\n")
    assert "system_prompt: You review pull requests.  # so does this one\n" in text
    assert "summary: {type: string, minLength: 1}   # never empty\n" in text
    assert text.index("system_prompt") < text.index("output_schema") < text.index("description")
    assert (
        changed.json()["version"] == service.client.get("/agents/reviewer/source").json()["version"]
    )
    assert changed.headers["etag"] == f'"{changed.json()["version"]}"'
    agent = service.client.get("/agents/reviewer").json()
    assert (agent["description"], agent["output_schema"]) == ("Reviews PRs.", schema)
    run = service.run({"agent_name": "reviewer", "prompt": "Review", "parameters": {"pr_url": "u"}})
    result = service.client.get(f"/sessions/{run.json()['session_id']}/result").json()
    assert isinstance(result["result_data"]["risk"], int)

    stale = service.client.patch(
        "/agents/reviewer", json={"description": "late"}, headers={"If-Match": version}
    )
    assert stale.status_code == 409
    assert stale.json()["error"] == "AgentFileChanged"
    assert "description: Reviews PRs.\n" in reviewer_file.read_text()


def test_patch_null_removes_a_field(service: Service, reviewer_file: Path) -> None:
    changed = service.client.patch("/agents/reviewer", json={"output_schema": None})
    assert changed.status_code == 200, changed.text
    assert "output_schema" not in reviewer_file.read_text()
    assert "# Reviewer: this comment stays." in reviewer_file.read_text()
    assert service.client.get("/agents/reviewer").json()["output_schema"] is None


def test_patch_writes_a_field_where_a_file_form_file_spells_it(
    service: Service, reviewer_file: Path
) -> None:
    reviewer_file.write_text(FILE_FORM_YAML)
    schema = {"type": "object", "required": ["verdict"], "properties": {"verdict": {}}}
    changed = service.client.patch(
        "/agents/reviewer",
        json={"output_schema": schema, "system_prompt": "Review.", "max_steps": 5},
    )
    assert changed.status_code == 200, changed.text
    written = yaml.safe_load(reviewer_file.read_text())
    assert written["output"] == {"maxRetries": 1, "schema": schema}
    assert written["context"] == {"static": {"system": "Review."}}
    assert written["limits"] == {"maxSteps": 5}
    assert "output_schema" not in written and "system_prompt" not in written
    assert "maxRetries: 1   # the seeds' one re-prompt\n" in reviewer_file.read_text()
    agent = service.client.get("/agents/reviewer").json()
    assert (agent["system_prompt"], agent["max_steps"]) == ("Review.", 5)


def test_patch_that_breaks_the_file_is_refused_and_the_file_kept(
    service: Service, reviewer_file: Path
) -> None:
    refused = service.client.patch(
        "/agents/reviewer", json={"output_schema": {"type": "objct"}, "tols": ["fs:read"]}
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "ConfigError"
    messages = "\n".join(d["message"] for d in refused.json()["details"])
    assert "objct" in messages and "tols" in messages
    assert reviewer_file.read_text() == REVIEWER_YAML
    renamed = service.client.patch("/agents/reviewer", json={"id": "critic"})
    assert (renamed.status_code, renamed.json()["error"]) == (422, "InvalidRequest")
    assert reviewer_file.read_text() == REVIEWER_YAML
    missing = service.client.patch("/agents/reviewr", json={"description": "x"})
    assert missing.status_code == 404
    assert missing.json()["error"] == "AgentNotFound"
    assert missing.json()["suggestion"] == "reviewer"


def test_delete_removes_the_agent_and_keeps_its_sessions(service: Service, tmp_path: Path) -> None:
    assert service.client.post("/agents", json=PR_REVIEWER).status_code == 201
    run = service.run({"agent_name": "pr-reviewer", "prompt": "go", "parameters": {"pr_url": "u"}})
    session_id = run.json()["session_id"]
    version = service.client.get("/agents/pr-reviewer/source").json()["version"]
    stale = service.client.delete("/agents/pr-reviewer", headers={"If-Match": '"sha256:0"'})
    assert (stale.status_code, stale.json()["error"]) == (409, "AgentFileChanged")
    deleted = service.client.delete("/agents/pr-reviewer", headers={"If-Match": version})
    assert deleted.status_code == 204, deleted.text
    assert not (tmp_path / "agents" / "pr-reviewer").exists()
    assert service.client.get("/agents/pr-reviewer").status_code == 404
    assert service.client.get(f"/sessions/{session_id}/result").status_code == 200
    gone = service.run({"agent_name": "pr-reviewer", "prompt": "again"})
    assert gone.json()["error"] == "AgentNotFound"
    assert service.client.delete("/agents/pr-reviewer").status_code == 404


def test_delete_is_409_while_a_run_of_the_agent_is_active(
    make_service: ServiceFactory, tmp_path: Path
) -> None:
    service = make_service(workers=0)  # nobody claims the run: it stays queued
    queued = service.client.post("/runs", json={"agent_name": "writer", "prompt": "hi"})
    assert queued.status_code == 202, queued.text
    busy = service.client.delete("/agents/writer")
    assert busy.status_code == 409
    assert busy.json()["error"] == "AgentBusy"
    assert queued.json()["run_id"] in busy.json()["message"]
    assert (tmp_path / "agents" / "writer" / "agent.yml").exists()
    cancelled = service.client.post(f"/runs/{queued.json()['run_id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert service.client.delete("/agents/writer").status_code == 204


def test_writing_agents_needs_the_token(make_service: ServiceFactory, tmp_path: Path) -> None:
    service = make_service(token="s3cret-token")
    with httpx.Client(base_url=service.url) as anonymous:
        for method, path in [
            ("POST", "/agents"),
            ("PATCH", "/agents/writer"),
            ("DELETE", "/agents/writer"),
        ]:
            body = None if method == "DELETE" else PR_REVIEWER
            refused = anonymous.request(method, path, json=body)
            assert refused.status_code == 401, (method, path)
            assert refused.json()["error"] == "Unauthorized"
    assert not (tmp_path / "agents" / "pr-reviewer").exists()
    assert (tmp_path / "agents" / "writer" / "agent.yml").exists()
    assert service.client.post("/agents", json=PR_REVIEWER).status_code == 201


def test_patch_that_would_give_the_agent_another_id_is_refused(
    service: Service, tmp_path: Path
) -> None:
    # seed 000's blueprint has only a name, which is then its id too
    assert service.client.post("/agents", json=PR_REVIEWER).status_code == 201
    path = tmp_path / "agents" / "pr-reviewer" / "agent.yml"
    before = path.read_text()
    renamed = service.client.patch("/agents/pr-reviewer", json={"name": "critic"})
    assert renamed.status_code == 422, renamed.text
    assert renamed.json()["error"] == "InvalidRequest"
    assert "another agent" in renamed.json()["message"]
    assert path.read_text() == before
    assert service.client.get("/agents/pr-reviewer").status_code == 200
    assert service.client.get("/agents/critic").status_code == 404
