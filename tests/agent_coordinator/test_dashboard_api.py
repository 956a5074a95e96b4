"""The endpoints the dashboard is built on, over real HTTP, on SQLite and PostgreSQL.

Pages versus API on the same paths, ``/fleet``, the editor's schema-text check and save (comments
kept, invalid refused, a file changed on disk refused with 409), and ``/reports``.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Service

HTML = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
PAGES = [
    "/",
    "/agents",
    "/agents/reviewer",
    "/sessions",
    "/sessions/ses_x",
    "/runs/new",
    "/schemas",
    "/analytics",
]
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


@pytest.mark.parametrize("path", PAGES)
def test_a_browser_gets_the_page_and_every_other_client_the_api(
    service: Service, path: str
) -> None:
    page = service.client.get(path, headers=HTML)
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert '<script type="module" src="/dashboard/assets/app.js">' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    api = service.client.get(path)
    assert api.headers["content-type"].startswith("application/json")


def test_the_api_answers_json_on_the_shared_paths_as_before(service: Service) -> None:
    agents = service.client.get("/agents")
    assert agents.status_code == 200
    assert {a["name"] for a in agents.json()} >= {"reviewer", "writer"}
    assert service.client.get("/sessions").json() == {"items": [], "next_cursor": None}
    assert service.client.get("/schemas").json() == []
    missing = service.client.get("/runs/new")
    assert missing.status_code == 404
    assert missing.json()["error"] == "RunNotFound"


def test_assets_ship_in_the_package_and_nothing_else_is_served(service: Service) -> None:
    script = service.client.get("/dashboard/assets/pages/session.js")
    assert script.status_code == 200
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert "Validation Failed" in script.text
    assert "innerHTML" not in script.text
    for name in ("app.css", "app.js", "editor.js", "pages/agent.js", "pages/analytics.js"):
        assert service.client.get(f"/dashboard/assets/{name}").status_code == 200
    for name in ("index.html", "../pages.py", "%2e%2e/pages.py", "nope.js"):
        assert service.client.get(f"/dashboard/assets/{name}").status_code == 404


def test_with_a_token_the_shell_is_public_and_the_data_is_not(
    make_service: ServiceFactory,
) -> None:
    service = make_service(token="t0ken")
    anonymous = httpx.Client(base_url=service.url)
    assert anonymous.get("/agents", headers=HTML).status_code == 200
    assert "reviewer" not in anonymous.get("/agents", headers=HTML).text
    assert anonymous.get("/agents").status_code == 401
    assert anonymous.get("/fleet").status_code == 401
    assert anonymous.get("/reports/sessions").status_code == 401
    assert service.client.get("/fleet").status_code == 200
    anonymous.close()


def test_fleet_reports_every_problem_on_disk_with_file_and_line(
    service: Service, tmp_path: Path
) -> None:
    state = service.client.get("/fleet").json()
    assert state["valid"] is True
    assert set(state["loaded"]) == {"reviewer", "writer", "orchestrator", "summariser"}
    assert state["files"]["reviewer"] == str(tmp_path / "agents" / "reviewer" / "agent.yml")
    assert state["contract_fields"]["reviewer"] == [
        {"name": "summary", "type": "string", "required": True},
        {"name": "approval", "type": None, "required": True},
    ]
    assert state["contract_fields"]["writer"] == []
    broken = tmp_path / "agents" / "writer" / "agent.yml"
    broken.write_text("id: writer\nsystem_prompt: x\nsystem_promt: y\n")
    state = service.client.get("/fleet").json()
    assert state["valid"] is False
    [problem] = state["problems"]
    assert problem["file"] == str(broken)
    assert problem["line"] == 3
    assert problem["severity"] == "error"
    assert "system_promt" in problem["text"]
    assert problem["text"].startswith(f"{broken}:3: ")


def _check(
    service: Service, text: str, fmt: str = "json", kind: str = "output"
) -> dict[str, object]:
    response = service.client.post(
        "/agents/check-schema-text", json={"text": text, "format": fmt, "kind": kind}
    )
    assert response.status_code == 200
    body: dict[str, object] = response.json()
    return body


def test_check_finds_each_fault_at_its_line(service: Service) -> None:
    syntax = _check(service, '{\n  "type": "object",\n  "properties": {\n}')
    assert syntax["valid"] is False
    assert syntax["findings"] == [
        {
            "path": "$",
            "severity": "error",
            "message": "not valid JSON: Expecting ',' delimiter",
            "keyword": None,
            "line": 4,
            "source": "syntax",
        }
    ]
    yaml_text = "type: object\nproperties:\n  n:\n    type: integer\n    minimun: 1\n"
    typo = _check(service, yaml_text, "yaml")
    assert typo["valid"] is True
    warnings = [f for f in typo["findings"] if f["severity"] == "warning"]  # type: ignore[union-attr,index]
    assert [(f["line"], f["keyword"]) for f in warnings] == [(5, "minimun")]
    assert "minimum" in warnings[0]["message"]
    meta = _check(service, json.dumps({"type": "object", "required": "a"}, indent=2))
    assert meta["valid"] is False
    errors = [f for f in meta["findings"] if f["severity"] == "error"]  # type: ignore[union-attr,index]
    assert [(f["line"], f["keyword"]) for f in errors] == [(3, "required")]
    assert "'a' is not of type 'array'" in errors[0]["message"]


def test_check_reports_what_each_providers_strict_mode_changes(service: Service) -> None:
    text = json.dumps(
        {
            "type": "object",
            "required": ["s"],
            "properties": {"s": {"type": "string", "minLength": 3}},
            "additionalProperties": False,
        },
        indent=2,
    )
    checked = _check(service, text)
    assert checked["valid"] is True
    assert set(checked["strict"]) == {"openai", "anthropic", "neutral"}  # type: ignore[arg-type]
    notes = [f for f in checked["findings"] if f["source"] == "openai"]  # type: ignore[union-attr,index]
    assert notes, checked["strict"]
    assert all(f["severity"] == "info" for f in notes)
    min_length = [f for f in notes if f["keyword"] == "minLength"]
    assert min_length and min_length[0]["line"] == 9  # the "minLength" key


@pytest.fixture
def yaml_agent(service: Service, tmp_path: Path) -> Path:
    path = tmp_path / "agents" / "reviewer" / "agent.yml"
    path.write_text(REVIEWER_YAML)
    return path


def test_save_writes_the_schema_back_keeping_comments_and_uses_it(
    service: Service, yaml_agent: Path
) -> None:
    source = service.client.get("/agents/reviewer/source").json()
    assert source["text"] == REVIEWER_YAML
    assert source["schemas"]["output_schema"]["required"] == ["summary", "approval"]
    schema = source["schemas"]["output_schema"]
    schema["required"].append("risk")
    schema["properties"]["risk"] = {"type": "integer", "minimum": 0}
    saved = service.client.put(
        "/agents/reviewer/schemas/output_schema",
        json={"text": json.dumps(schema), "format": "json", "version": source["version"]},
    )
    assert saved.status_code == 200, saved.text
    text = yaml_agent.read_text()
    assert saved.json()["text"] == text
    assert saved.json()["version"] != source["version"]
    assert saved.json()["reloaded"] is True
    assert text.startswith("# Reviewer: this comment stays.\nid: reviewer\n")
    assert "system_prompt: You review pull requests.  # so does this one\n" in text
    assert "summary: {type: string, minLength: 1}   # never empty\n" in text
    assert "required: [summary, approval, risk]\n" in text
    assert service.client.get("/agents/reviewer").json()["output_schema"] == schema
    run = service.run({**REVIEW, "model": "test"}).json()
    result = service.client.get(f"/sessions/{run['session_id']}/result").json()
    assert isinstance(result["result_data"]["risk"], int)


def test_save_refuses_an_invalid_schema_and_leaves_the_file(
    service: Service, yaml_agent: Path
) -> None:
    version = service.client.get("/agents/reviewer/source").json()["version"]
    refused = service.client.put(
        "/agents/reviewer/schemas/output_schema",
        json={"text": "type: objct\n", "format": "yaml", "version": version},
    )
    assert refused.status_code == 400
    body = refused.json()
    assert body["error"] == "InvalidSchema"
    assert (body["details"][0]["path"], body["details"][0]["keyword"]) == ("$", "type")
    assert "objct" in body["details"][0]["message"]
    assert yaml_agent.read_text() == REVIEWER_YAML


def test_save_never_overwrites_an_edit_made_on_disk(service: Service, yaml_agent: Path) -> None:
    version = service.client.get("/agents/reviewer/source").json()["version"]
    yaml_agent.write_text(REVIEWER_YAML + "# edited meanwhile\n")
    conflict = service.client.put(
        "/agents/reviewer/schemas/parameters_schema",
        json={"text": '{"type": "object"}', "version": version},
    )
    assert conflict.status_code == 409
    assert conflict.json()["error"] == "AgentFileChanged"
    assert "reload" in conflict.json()["message"]
    assert yaml_agent.read_text().endswith("# edited meanwhile\n")
    assert (
        service.client.put(
            "/agents/nobody/schemas/output_schema", json={"text": "{}", "version": version}
        ).json()["error"]
        == "AgentNotFound"
    )


def _runs(service: Service) -> dict[str, str]:
    ids = {}
    ids["ok"] = service.run({**REVIEW, "model": "test"}).json()["session_id"]
    failing = {**REVIEW, "model": "test:fail_first=invalid_arguments+invalid_arguments"}
    ids["failed"] = service.run(failing).json()["session_id"]
    rescued = {**REVIEW, "model": "test:fail_first=invalid_arguments"}
    ids["rescued"] = service.run(rescued).json()["session_id"]
    ids["text"] = service.run({"agent_name": "writer", "prompt": "hi"}).json()["session_id"]
    return ids


def test_session_rows_page_filter_and_count(service: Service) -> None:
    ids = _runs(service)
    page = service.client.get("/reports/sessions", params={"limit": 3}).json()
    assert page["total"] == 4
    assert [row["session_id"] for row in page["items"]] == [
        ids["text"],
        ids["rescued"],
        ids["failed"],
    ]
    rest = service.client.get(
        "/reports/sessions", params={"limit": 3, "cursor": page["next_cursor"]}
    ).json()
    assert [row["session_id"] for row in rest["items"]] == [ids["ok"]]
    assert rest["next_cursor"] is None
    assert page["error_types"] == ["output_schema_validation_failed"]
    failed = service.client.get(
        "/reports/sessions", params={"error_type": "output_schema_validation_failed"}
    ).json()
    assert failed["total"] == 1
    [row] = failed["items"]
    assert row["session_id"] == ids["failed"]
    assert (row["status"], row["attempts"], row["retries"], row["max_retries"]) == (
        "failed",
        2,
        1,
        1,
    )
    assert row["schema_valid"] is False or row["schema_valid"] is None
    assert row["model"] == "test"
    assert row["tokens"] > 0
    writer = service.client.get("/reports/sessions", params={"agent_name": "writer"}).json()
    assert [r["session_id"] for r in writer["items"]] == [ids["text"]]
    assert (
        service.client.get("/reports/sessions", params={"status": "completed"}).json()["total"] == 3
    )
    assert service.client.get("/reports/sessions", params={"since": "1h"}).json()["total"] == 4
    assert service.client.get("/reports/sessions", params={"until": "1h"}).json()["total"] == 0
    bad = service.client.get("/reports/sessions", params={"since": "yesterday-ish"})
    assert bad.status_code == 400


def test_session_row_gives_the_reprompt_after_each_failed_attempt(service: Service) -> None:
    ids = _runs(service)
    row = service.client.get(f"/reports/sessions/{ids['rescued']}").json()
    assert (row["retries"], row["max_retries"], row["schema_valid"]) == (1, 1, True)
    [reprompts] = row["reprompts"].values()
    assert len(reprompts) == 2
    assert "Validation Errors" in reprompts[0]
    assert reprompts[1] is None
    assert service.client.get("/reports/sessions/ses_nope").json()["error"] == "SessionNotFound"


def _session_events(stream: httpx.Response, until: str) -> list[tuple[str, dict[str, object]]]:
    """Read ``(id, row)`` of ``session`` events until one has status ``until``."""
    seen: list[tuple[str, dict[str, object]]] = []
    event_id, kind = "", ""
    for line in stream.iter_lines():
        if line.startswith("id: "):
            event_id = line.removeprefix("id: ")
        elif line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: ") and kind == "session":
            row = json.loads(line.removeprefix("data: "))
            seen.append((event_id, row))
            if row["status"] == until:
                break
    return seen


def test_session_events_stream_changed_sessions(service: Service) -> None:
    with service.client.stream("GET", "/reports/sessions/events") as stream:
        started = service.client.post("/runs", json={**REVIEW, "model": "test"}).json()
        seen = _session_events(stream, "completed")
    assert {row["session_id"] for _, row in seen} == {started["session_id"]}
    assert seen[-1][1]["status"] == "completed"
    assert seen[-1][1]["attempts"] == 1


def test_a_reconnect_from_the_last_id_misses_no_change(service: Service) -> None:
    first = service.run({**REVIEW, "model": "test"}).json()
    with service.client.stream("GET", "/reports/sessions/events", params={"after": 0}) as stream:
        [(last_id, row)] = _session_events(stream, "completed")
    assert row["session_id"] == first["session_id"]
    second = service.run({**REVIEW, "model": "test"}).json()  # while no stream is open
    with service.client.stream(
        "GET", "/reports/sessions/events", headers={"last-event-id": last_id}
    ) as stream:
        [(_, row)] = _session_events(stream, "completed")
    assert row["session_id"] == second["session_id"]


def test_analytics_is_the_clis_review_of_the_stored_events(service: Service) -> None:
    _runs(service)
    review = service.client.get("/reports/analytics").json()
    overall = review["overall"]
    assert (overall["runs"], overall["completed"], overall["failed"]) == (4, 3, 1)
    assert overall["rescued"] == 1
    assert overall["failures_by_type"] == {"output_schema_validation_failed": 1}
    assert {a["agent_id"] for a in review["agents"]} == {"reviewer", "writer"}
    writer = service.client.get("/reports/analytics", params={"agent": "writer"}).json()
    assert writer["overall"]["runs"] == 1
    assert (
        service.client.get("/reports/analytics", params={"since": "1h"}).json()["overall"]["runs"]
        == 4
    )


def fill_sessions(service: Service, count: int) -> None:
    """Store ``count`` finished sessions (each with one completed run) in one transaction."""
    store = service.store
    result = json.dumps({"status": "completed", "result_text": "ok", "usage": {"input_tokens": 5}})
    with store._tx() as cursor:
        for n in range(count):
            store._exec(
                cursor,
                "INSERT INTO sessions (id, agent_name, status, transcript, parent_session_id, "
                "depth, created_at, updated_at) VALUES (?, 'writer', 'completed', '[]', NULL, 0, "
                "?, ?)",
                (f"ses_bulk{n:06d}", 1000.0 + n, 1000.0 + n),
            )
            store._exec(
                cursor,
                "INSERT INTO runs (id, session_id, kind, agent_name, status, input, "
                "idempotency_key, request_hash, result, error, lease_owner, lease_expires_at, "
                "claims, cancel_requested, created_at, started_at, finished_at) VALUES (?, ?, "
                "'start_session', 'writer', 'completed', '{\"prompt\":\"p\"}', NULL, NULL, ?, "
                "NULL, NULL, NULL, 1, 0, ?, ?, ?)",
                (
                    f"run_bulk{n:06d}",
                    f"ses_bulk{n:06d}",
                    result,
                    1000.0 + n,
                    1000.0 + n,
                    1001.0 + n,
                ),
            )


def test_ten_thousand_sessions_are_paged_on_the_server(service: Service) -> None:
    fill_sessions(service, 10_000)
    first = service.client.get("/reports/sessions").json()
    assert (first["total"], first["total_exact"]) == (10_000, True)
    assert len(first["items"]) == 50
    assert first["items"][0]["session_id"] == "ses_bulk009999"
    assert first["items"][0]["tokens"] == 5
    second = service.client.get("/reports/sessions", params={"cursor": first["next_cursor"]}).json()
    assert second["items"][0]["session_id"] == "ses_bulk009949"
    last = service.client.get("/reports/sessions", params={"cursor": 51, "limit": 200}).json()
    assert [row["session_id"] for row in last["items"]][-1] == "ses_bulk000000"
    assert last["next_cursor"] is None


def test_a_total_past_ten_thousand_says_at_least(service: Service) -> None:
    fill_sessions(service, 10_001)
    page = service.client.get("/reports/sessions").json()
    assert (page["total"], page["total_exact"]) == (10_000, False)
    assert page["items"][0]["session_id"] == "ses_bulk010000"
    # created at 1000 + n seconds: since 10,000 s keeps n >= 9,000
    recent = service.client.get("/reports/sessions", params={"since": "1970-01-01T02:46:40Z"})
    assert (recent.json()["total"], recent.json()["total_exact"]) == (1_001, True)
    none = service.client.get("/reports/sessions", params={"status": "failed"}).json()
    assert (none["total"], none["total_exact"], none["items"]) == (0, True, [])


def test_the_error_type_choices_are_every_type_a_run_ended_with(
    make_service: ServiceFactory,
) -> None:
    service = make_service(workers=0)  # nobody claims the run: it stays queued
    assert service.client.get("/reports/sessions").json()["error_types"] == []
    run = service.client.post("/runs", json=REVIEW).json()
    assert service.client.post(f"/runs/{run['run_id']}/cancel").status_code == 200
    page = service.client.get("/reports/sessions").json()
    assert page["error_types"] == ["cancelled"]
    [row] = service.client.get("/reports/sessions", params={"error_type": "cancelled"}).json()[
        "items"
    ]
    assert row["session_id"] == run["session_id"]


def test_the_retry_limit_is_the_one_the_run_started_with(service: Service) -> None:
    model = "test:fail_first=invalid_arguments+invalid_arguments+invalid_arguments"
    body = {**REVIEW, "model": model, "output_schema_options": {"max_retries": 2}}
    run = service.run(body).json()
    assert run["status"] == "failed"
    row = service.client.get(f"/reports/sessions/{run['session_id']}").json()
    assert (row["attempts"], row["retries"], row["max_retries"]) == (3, 2, 2)
    assert row["error_type"] == "output_schema_validation_failed"
    [reprompts] = row["reprompts"].values()
    assert [text is not None for text in reprompts] == [True, True, False]


def test_a_save_while_another_file_is_broken_is_written_but_not_yet_used(
    service: Service, yaml_agent: Path, tmp_path: Path
) -> None:
    (tmp_path / "agents" / "writer" / "agent.yml").write_text("id: writer\n")
    source = service.client.get("/agents/reviewer/source").json()
    schema = {**source["schemas"]["output_schema"], "required": ["summary"]}
    saved = service.client.put(
        "/agents/reviewer/schemas/output_schema",
        json={"text": json.dumps(schema), "version": source["version"]},
    )
    assert saved.status_code == 200
    assert saved.json()["reloaded"] is False
    assert "required: [summary]\n" in yaml_agent.read_text()
    running = service.client.get("/agents/reviewer").json()["output_schema"]
    assert running["required"] == ["summary", "approval"]
