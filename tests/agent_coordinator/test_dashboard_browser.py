"""The dashboard in a real browser: Playwright driving Debian's chromium against the real service.

Screenshots of every page at 1280 and 420 px wide go to ``artifacts/dashboard/`` (gitignored;
``AGENTSHAPE_ARTIFACTS`` moves it), to be looked at.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_coordinator import open_store
from bench.service_scale import build
from tests.agent_coordinator.harness import Service
from tests.agent_coordinator.test_dashboard_api import fill_sessions
from tests.agent_coordinator.test_eval_reports import write_eval
from tests.fake_llm import FakeLLM, openai_tool_call

pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install 'agentshape[dev]')"
)
from playwright.sync_api import Browser, Dialog, Page, expect, sync_playwright
from playwright.sync_api import Error as PlaywrightError

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(
    os.environ.get(
        "AGENTSHAPE_ARTIFACTS", Path(__file__).resolve().parents[2] / "artifacts" / "dashboard"
    )
)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCRIPT = "<script>window.__owned = 1</script><img src=x onerror='window.__owned = 2'>"
INVALID = {"summary": SCRIPT, "approval": "maybe"}
VALID = {"summary": "Subtracts instead of adding.", "approval": "request_changes"}
# Answers the pages ask for and show (a wrong token, an invalid schema, a file changed on disk,
# a new agent's name that cannot be a folder).
EXPECTED_ANSWER = re.compile(r"status of (400|401|409|422) ")
REVIEWER_YAML = """\
# The reviewer agent: a comment the editor must keep.
id: reviewer
description: Reviews pull requests.
system_prompt: You review pull requests.   # kept too
parameters_schema:
  type: object
  required: [pr_url]
  properties:
    pr_url: {type: string}
    focus: {type: array, items: {type: string}}
output_schema:
  type: object
  required: [summary, approval]
  properties:
    summary: {type: string, minLength: 1}   # never empty
    approval:
      enum: [approve, request_changes, comment]
  additionalProperties: false
"""

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on PATH (apt-get install chromium; .ci/run does): browser tests skipped",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as driver:
        try:
            launched = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        except PlaywrightError as error:
            pytest.skip(f"chromium could not be started by playwright: {error}")
        yield launched
        launched.close()


@pytest.fixture
def dash(tmp_path: Path, database: str, fake_llm: FakeLLM) -> Iterator[Service]:
    """The dashboard's service on each store (SQLite, PostgreSQL)."""
    env = {"OPENAI_API_KEY": "sk-test-000000000000", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    service = Service(tmp_path, database, model="openai:gpt-test", env=env)
    (tmp_path / "agents" / "reviewer" / "agent.yml").write_text(REVIEWER_YAML)
    yield service
    service.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    opened.on(
        "console",
        lambda message: (
            problems.append(f"console: {message.text}")
            if message.type == "error" and not EXPECTED_ANSWER.search(message.text)
            else None
        ),
    )
    yield opened
    context.close()
    assert problems == [], f"{request.node.name}: the page reported errors: {problems}"


def shoot(page: Page, name: str) -> None:
    """Screenshot the page at 1280 and 420 px wide (full page)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 420):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(150)
        page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}


def test_agents_page_shows_the_fleet_and_its_config_state(dash: Service, page: Page) -> None:
    page.goto(f"{dash.url}/agents")
    expect(page.get_by_role("heading", name="Agents")).to_be_visible()
    expect(page.get_by_test_id("fleet-state")).to_have_text("valid")
    row = page.locator("tr", has=page.get_by_role("link", name="reviewer", exact=True))
    expect(row).to_contain_text("output_schema")
    expect(row).to_contain_text("summary: string*, approval*")
    expect(page.locator("tr", has_text="summariser")).to_contain_text("default_output_schema")
    shoot(page, "agents")
    page.goto(dash.url + "/")
    expect(page.get_by_role("link", name="Sessions").first).to_be_visible()
    shoot(page, "home")


def test_editor_marks_a_fault_at_its_line_and_saves_keeping_comments(
    dash: Service, page: Page, tmp_path: Path
) -> None:
    page.goto(f"{dash.url}/agents/reviewer")
    for tab in ("General", "Input Schema", "MCP Servers"):
        page.get_by_role("tab", name=tab).click()
        expect(page.get_by_role("tabpanel")).to_be_visible()
    page.get_by_role("tab", name="Output Schema").click()
    editor = page.locator("#editor-output")
    broken = {
        "type": "object",
        "required": ["summary", "approval"],
        "properties": {
            "summary": {"type": "strng", "minLength": 1},
            "approval": {"enum": ["approve", "request_changes", "comment"]},
        },
        "additionalProperties": False,
    }
    text = json.dumps(broken, indent=2)
    fault_line = next(i for i, line in enumerate(text.splitlines(), 1) if "strng" in line)
    editor.fill(text)
    page.get_by_role("button", name="Validate Schema").click()
    findings = page.get_by_test_id("findings-output")
    expect(findings).to_contain_text(f"line {fault_line}")
    expect(findings).to_contain_text("strng")
    marked = page.locator(f"#panel-output .gutter div[data-line='{fault_line}']")
    expect(marked).to_have_class("fault")
    expect(page.get_by_test_id("status-output")).to_contain_text("invalid")
    shoot(page, "agent-editor-fault")

    page.get_by_role("button", name="Save").click()
    expect(page.get_by_test_id("status-output")).to_contain_text("InvalidSchema")
    assert "strng" not in (tmp_path / "agents" / "reviewer" / "agent.yml").read_text()

    fixed = {**broken, "properties": {**broken["properties"], "risk": {"type": "integer"}}}
    fixed["properties"]["summary"] = {"type": "string", "minLength": 1}
    editor.fill(json.dumps(fixed, indent=2))
    page.get_by_role("button", name="Validate Schema").click()
    expect(page.get_by_test_id("status-output")).to_contain_text("Schema valid")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_test_id("status-output")).to_contain_text("Saved to")
    on_disk = (tmp_path / "agents" / "reviewer" / "agent.yml").read_text()
    assert on_disk.startswith("# The reviewer agent: a comment the editor must keep.\n")
    assert "system_prompt: You review pull requests.   # kept too" in on_disk
    assert "summary: {type: string, minLength: 1}   # never empty" in on_disk
    assert "risk:" in on_disk
    agent = dash.client.get("/agents/reviewer").json()
    assert agent["output_schema"]["properties"]["risk"] == {"type": "integer"}

    page.get_by_role("tabpanel", name="Output Schema").get_by_label("Format").select_option("yaml")
    expect(editor).to_have_value(  # the YAML view of the same schema
        re.compile(r"risk:\n\s+type: integer")
    )
    shoot(page, "agent-editor-saved")


def test_editor_refuses_to_overwrite_an_edit_made_on_disk(
    dash: Service, page: Page, tmp_path: Path
) -> None:
    page.goto(f"{dash.url}/agents/reviewer#output")
    expect(page.locator("#editor-output")).to_be_visible()
    agent_file = tmp_path / "agents" / "reviewer" / "agent.yml"
    agent_file.write_text(agent_file.read_text() + "# someone else's edit\n")
    page.get_by_role("button", name="Save").click()
    status = page.get_by_test_id("status-output")
    expect(status).to_contain_text("changed on disk")
    expect(page.get_by_role("button", name="Reload from disk")).to_be_visible()
    assert agent_file.read_text().endswith("# someone else's edit\n")


def test_a_run_failing_validation_twice_shows_why_and_escapes_the_output(
    dash: Service, page: Page, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", INVALID))
    page.goto(f"{dash.url}/runs/new?agent=reviewer")
    page.get_by_label("Prompt", exact=True).fill("Review PR 1")
    page.locator("#param-pr_url").fill("https://example.com/pr/1")
    shoot(page, "run-new")
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url("**/sessions/ses_*")
    expect(page.get_by_test_id("schema-verdict")).to_have_text("Validation Failed", timeout=20000)
    errors = page.get_by_test_id("validation-errors")
    expect(errors).to_contain_text(
        "$.approval: 'maybe' is not one of ['approve', 'request_changes', 'comment']"
    )
    expect(page.get_by_test_id("retries")).to_have_text("Retry attempts: 1/1 exhausted")
    raw = page.locator("pre.raw-output").first
    expect(raw).to_contain_text("<script>window.__owned = 1</script>")
    expect(page.locator("pre.reprompt").first).to_contain_text("Validation Errors")
    assert page.evaluate("window.__owned") is None
    assert page.locator("main script, main img").count() == 0
    shoot(page, "session-failed")
    assert len(fake_llm.requests) == 2


def test_a_run_rescued_by_the_retry_shows_valid_and_one_retry(
    dash: Service, page: Page, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(
        openai_tool_call("submit_result", INVALID), openai_tool_call("submit_result", VALID)
    )
    run = dash.run(REVIEW).json()
    assert run["status"] == "completed"
    page.goto(f"{dash.url}/sessions/{run['session_id']}")
    expect(page.get_by_test_id("schema-verdict")).to_have_text("Valid")
    expect(page.get_by_test_id("retries")).to_have_text("Retry attempts: 1/1")
    expect(page.get_by_test_id("result")).to_contain_text("Subtracts instead of adding.")
    expect(page.locator(".attempt")).to_have_count(2)
    shoot(page, "session-valid")


def test_a_session_page_shows_who_claimed_each_run_and_how_the_claim_ended(
    dash: Service, page: Page, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", VALID))
    run = dash.run(REVIEW).json()
    assert run["status"] == "completed"
    runner = dash.client.get(f"/runs/{run['run_id']}").json()["claim_history"][0]["runner"]
    page.goto(f"{dash.url}/sessions/{run['session_id']}")
    claims = page.get_by_test_id("claims")
    expect(claims).to_contain_text("Claims: 1")
    claims.locator("summary").click()
    expect(claims.locator("li")).to_have_text(
        re.compile(rf"#1 by {re.escape(runner)} at .*: completed at ")
    )


def test_sessions_list_filters_pages_and_updates_live(
    dash: Service, page: Page, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", VALID))
    for _ in range(3):
        assert dash.run(REVIEW).json()["status"] == "completed"
    page.goto(f"{dash.url}/sessions?limit=2")
    expect(page.get_by_test_id("total")).to_have_text("3 sessions")
    expect(page.locator("tbody tr")).to_have_count(2)
    page.get_by_role("link", name="Older →").click()
    expect(page.locator("tbody tr")).to_have_count(1)
    page.goto(f"{dash.url}/sessions")
    expect(page.locator("tbody tr")).to_have_count(3)
    started = dash.client.post("/runs", json={**REVIEW, "model": "test"}).json()
    live = page.locator(f"tr[data-session='{started['session_id']}']")
    expect(live).to_contain_text("completed", timeout=15000)
    shoot(page, "sessions")
    page.get_by_label("Status").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_test_id("total")).to_have_text("0 sessions")


def test_schemas_and_analytics_pages(dash: Service, page: Page, fake_llm: FakeLLM) -> None:
    fake_llm.respond(
        openai_tool_call("submit_result", INVALID), openai_tool_call("submit_result", VALID)
    )
    dash.run(REVIEW)
    page.goto(f"{dash.url}/schemas")
    page.get_by_label("Name", exact=True).fill("code-count")
    page.locator("#schema-text").fill('{"type": "object", "properties": {"n": {"type": "nmber"}}}')
    page.get_by_role("button", name="Add").click()
    expect(page.locator(".findings")).to_contain_text("nmber")
    assert dash.client.get("/schemas").json() == []
    page.locator("#schema-text").fill('{"properties": {"n": {"type": "integer"}}}')
    page.get_by_role("button", name="Add").click()
    expect(page.get_by_role("cell", name="code-count")).to_be_visible()
    page.get_by_role("button", name="View").click()
    expect(page.get_by_test_id("schema-view")).to_contain_text('"integer"')
    shoot(page, "schemas")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_text("No schemas are registered yet.")).to_be_visible()

    page.goto(f"{dash.url}/analytics")
    expect(page.locator(".stat", has_text="rescued by the retry")).to_contain_text("1")
    expect(page.locator("svg.chart").first).to_be_visible()
    # the default window, 7d, counts whole UTC days: the page says from which midnight
    start = (datetime.now(UTC) - timedelta(days=7)).date().isoformat()
    expect(page.get_by_test_id("since")).to_have_text(f"from {start} 00:00 UTC")
    shoot(page, "analytics")


def test_the_batches_page_lists_batches_with_their_items_sessions(
    tmp_path: Path, page: Page
) -> None:
    service = Service(tmp_path, str(tmp_path / "coordinator.db"))  # the offline test model
    try:
        items = [{"id": f"pr-{n}", "parameters": {"pr_url": f"u{n}"}} for n in (1, 2)]
        batch = service.client.post("/batches", json={"agent_name": "reviewer", "items": items})
        batch_id = batch.json()["batch_id"]
        deadline = time.monotonic() + 120
        while service.client.get(f"/batches/{batch_id}").json()["status"] != "ended":
            assert time.monotonic() < deadline, "the batch did not end"
            time.sleep(0.05)
        page.goto(f"{service.url}/batches")
        row = page.locator(f'tr[data-batch="{batch_id}"]')
        expect(row.get_by_test_id("batch-counts")).to_have_text("2 / 0 / 0")
        expect(row.locator("td").nth(1)).to_have_text("ended")
        shoot(page, "batches")
        row.get_by_text("2 items").click()
        first = service.client.get(f"/batches/{batch_id}").json()["items"][0]["session_id"]
        row.get_by_role("link", name=first).click()
        expect(page).to_have_url(f"{service.url}/sessions/{first}")
        expect(page.get_by_role("heading", level=1)).to_contain_text(first)
        page.goto("about:blank")  # the session page follows the service, which stops next
    finally:
        service.close()


def test_the_analytics_page_shows_batch_and_live_runs(tmp_path: Path, page: Page) -> None:
    database = tmp_path / "coordinator.db"
    store = open_store(database)
    try:
        built = build(store, 60, seed=5, batched_share=0.4)
    finally:
        store.close()
    service = Service(tmp_path, str(database), workers=0)
    try:
        page.goto(f"{service.url}/analytics?since=")
        batch_live = page.locator(".stat", has_text="batch / live")
        expect(batch_live).to_contain_text(f"{built.batched} / {built.runs - built.batched}")
        reviewer = service.client.get("/reports/analytics", params={"agent": "pr-reviewer"})
        row = page.get_by_role("row", name=re.compile(r"^pr-reviewer "))
        expect(row.get_by_role("cell").nth(7)).to_have_text(
            str(reviewer.json()["overall"]["batched"])
        )
    finally:
        service.close()


def test_the_home_page_counts_its_agents_and_sessions_in_words(
    dash: Service, page: Page, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", VALID))
    page.goto(f"{dash.url}/")
    expect(page.get_by_text("4 agents; config valid", exact=True)).to_be_visible()
    expect(page.get_by_text("0 sessions, 0 failed", exact=True)).to_be_visible()
    assert dash.run(REVIEW).json()["status"] == "completed"
    page.reload()
    expect(page.get_by_text("1 session, 0 failed", exact=True)).to_be_visible()


def test_with_a_token_the_dashboard_asks_once_and_shows_nothing_without_it(
    tmp_path: Path, page: Page
) -> None:
    service = Service(tmp_path, str(tmp_path / "coordinator.db"), token="s3cret-token")
    try:
        page.goto(f"{service.url}/agents")
        expect(page.get_by_role("heading", name="This service needs a token")).to_be_visible()
        assert page.locator("table").count() == 0
        shoot(page, "token")
        page.get_by_label("Token", exact=True).fill("wrong-token")
        page.keyboard.press("Enter")
        expect(page.get_by_role("alert")).to_have_text("The service refused that token; try again.")
        page.get_by_label("Token", exact=True).fill("s3cret-token")
        page.keyboard.press("Enter")
        expect(page.get_by_role("link", name="reviewer", exact=True)).to_be_visible()
        page.goto(f"{service.url}/sessions")
        expect(page.get_by_test_id("total")).to_have_text("0 sessions")
    finally:
        page.goto("about:blank")  # end the page's event stream before the server stops
        service.close()


def test_the_sessions_page_pages_ten_thousand_sessions(dash: Service, page: Page) -> None:
    fill_sessions(dash, 10_000)
    page.goto(f"{dash.url}/sessions")
    expect(page.get_by_test_id("total")).to_have_text("10,000 sessions")
    expect(page.locator("tbody tr")).to_have_count(50)
    expect(page.locator("tbody tr").first).to_contain_text("ses_bulk009999")
    page.get_by_role("link", name="Older →").click()
    expect(page.locator("tbody tr").first).to_contain_text("ses_bulk009949")
    expect(page.locator("tbody tr")).to_have_count(50)


def test_past_ten_thousand_sessions_the_total_says_at_least(dash: Service, page: Page) -> None:
    fill_sessions(dash, 10_001)
    page.goto(f"{dash.url}/sessions")
    expect(page.get_by_test_id("total")).to_have_text("10,000+ sessions")
    page.goto(f"{dash.url}/")
    expect(page.get_by_text("10,000+ sessions, 0 failed")).to_be_visible()
    page.goto("about:blank")  # end the page's event stream before the server stops


@contextlib.contextmanager
def _held_model_call(fake_llm: FakeLLM, number: int) -> Iterator[threading.Event]:
    """Hold the ``number``-th model call from now until the event is set (at the latest on exit).

    A page is looked at while its run is going on: the run waits for the test, not for a delay
    that a loaded machine could outlast.
    """
    release = threading.Event()
    calls: list[object] = []

    def hold(_: object) -> None:
        calls.append(_)
        if len(calls) == number:
            release.wait(120)

    fake_llm.refuse_when(hold)
    try:
        yield release
    finally:
        release.set()


def test_a_session_page_follows_its_run_and_resumes_it(
    dash: Service, page: Page, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(
        openai_tool_call("submit_result", VALID),
        openai_tool_call("submit_result", {**VALID, "approval": "approve"}),
    )
    with _held_model_call(fake_llm, 1) as release:
        started = dash.client.post("/runs", json=REVIEW).json()
        page.goto(f"{dash.url}/sessions/{started['session_id']}")
        expect(page.get_by_text("this page updates when it ends")).to_be_visible()
        release.set()
    expect(page.get_by_test_id("schema-verdict")).to_have_text("Valid", timeout=60000)
    page.get_by_role("textbox", name=re.compile("^Prompt")).fill("Approve it now")
    page.get_by_role("button", name="Resume").click()
    expect(page.get_by_role("heading", name=re.compile("Run 2: resume_session"))).to_be_visible(
        timeout=15000
    )
    expect(page.get_by_test_id("result")).to_contain_text('"approve"', timeout=15000)


def test_a_session_page_shows_the_output_so_far_while_its_run_goes_on(
    dash: Service, page: Page, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(
        openai_tool_call("submit_result", {"summary": "A first <b>draft</b>"}),  # no approval
        openai_tool_call("submit_result", VALID),
    )
    with _held_model_call(fake_llm, 2) as release:
        started = dash.client.post("/runs", json={**REVIEW, "stream": True}).json()
        page.goto(f"{dash.url}/sessions/{started['session_id']}")
        expect(page.get_by_test_id("partial-output")).to_contain_text(
            '"summary": "A first <b>draft</b>"'
        )
        expect(page.get_by_test_id("partial-note")).to_have_text(
            "Attempt 1 failed (output_schema_validation_failed); the model is asked again"
        )
        assert page.locator("main b").count() == 0  # shown as text, never as markup
        shoot(page, "session-running")
        release.set()
    expect(page.get_by_test_id("schema-verdict")).to_have_text("Valid", timeout=60000)
    expect(page.get_by_test_id("result")).to_contain_text("Subtracts instead of adding.")
    expect(page.get_by_test_id("partial-output")).to_have_count(0)


def test_the_editor_tabs_work_from_the_keyboard(dash: Service, page: Page) -> None:
    page.goto(f"{dash.url}/agents/reviewer")
    general = page.get_by_role("tab", name="General")
    general.focus()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("tab", name="Input Schema")).to_be_focused()
    expect(page.get_by_role("tab", name="Input Schema")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#editor-parameters")).to_be_visible()
    page.keyboard.press("ArrowLeft")
    expect(page.get_by_role("tabpanel", name="General")).to_contain_text(
        "You review pull requests."
    )
    shoot(page, "agent-general")
    page.keyboard.press("ArrowLeft")
    expect(page.get_by_role("tab", name="MCP Servers")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("tabpanel", name="MCP Servers")).to_contain_text("no MCP servers")


def test_the_agents_page_shows_each_config_problem_at_its_file_and_line(
    dash: Service, page: Page, tmp_path: Path
) -> None:
    broken = tmp_path / "agents" / "writer" / "agent.yml"
    broken.write_text("id: writer\nsystem_prompt: x\nsystem_promt: y\n")
    page.goto(f"{dash.url}/agents")
    expect(page.get_by_test_id("fleet-state")).to_have_text("1 problem")
    problems = page.get_by_role("list", name="Config problems")
    expect(problems).to_contain_text(f"{broken}:3")
    expect(problems).to_contain_text("system_promt")
    writer = page.locator("tr", has=page.get_by_role("link", name="writer", exact=True))
    expect(writer).to_contain_text("problems")
    shoot(page, "agents-problems")


def test_the_run_form_sends_the_contract_options_and_may_leave_out_the_prompt(
    dash: Service, page: Page, fake_llm: FakeLLM
) -> None:
    dated = {"type": "object", "required": ["due"], "properties": {"due": {"format": "date"}}}
    fake_llm.respond_always(openai_tool_call("submit_result", {"due": "next Tuesday"}))
    page.goto(f"{dash.url}/runs/new?agent=writer")
    page.get_by_label("Prompt", exact=True).fill("When is it due?")
    page.locator('input[name="schema-kind"][value="inline"]').check()
    page.locator("#run-schema-inline").fill(json.dumps(dated))
    page.locator("#run-retries").fill("0")
    page.get_by_label("Extract JSON").select_option("false")
    page.get_by_label("Strict JSON only").select_option("true")
    page.get_by_label("Validation mode").select_option("lenient")
    shoot(page, "run-new-options")
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url("**/sessions/ses_*")
    expect(page.get_by_test_id("schema-verdict")).to_have_text("Valid", timeout=20000)
    session_id = page.url.rsplit("/", 1)[1]
    result = dash.client.get(f"/sessions/{session_id}/result").json()
    assert result["result_data"] == {"due": "next Tuesday"}  # lenient: 'format' not asserted

    fake_llm.respond_always(openai_tool_call("submit_result", VALID))
    page.goto(f"{dash.url}/runs/new?agent=reviewer")
    page.locator("#param-pr_url").fill("https://example.com/pr/1")
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url("**/sessions/ses_*")
    expect(page.get_by_test_id("schema-verdict")).to_have_text("Valid", timeout=20000)
    user = [m["content"] for m in fake_llm.requests[-1].body["messages"] if m["role"] == "user"]
    assert user == ['Parameters:\n{\n  "pr_url": "https://example.com/pr/1"\n}']


def test_new_agent_writes_its_file_shows_every_problem_and_escapes_them(
    dash: Service, page: Page, tmp_path: Path
) -> None:
    page.goto(f"{dash.url}/agents")
    form = page.locator("form", has=page.get_by_role("heading", name="New agent"))
    form.get_by_label("Name").fill(SCRIPT)
    form.get_by_label("System prompt").fill("You review pull requests.")
    page.get_by_role("button", name="Create agent").click()
    expect(form.get_by_role("alert")).to_contain_text("cannot name an agent's folder")
    expect(form.get_by_role("alert")).to_contain_text("<script>window.__owned = 1</script>")
    assert page.evaluate("window.__owned") is None
    assert page.locator("main script, main img").count() == 0

    form.get_by_label("Name").fill("pr-reviewer")
    form.get_by_label("Output schema").fill('{"type": "objct"}')
    page.get_by_role("button", name="Create agent").click()
    expect(form.get_by_role("alert")).to_contain_text("ConfigError")
    expect(form.get_by_role("alert")).to_contain_text("objct")
    assert not (tmp_path / "agents" / "pr-reviewer").exists()
    shoot(page, "agents-new-refused")

    form.get_by_label("Description").fill("Reviews pull requests.")
    schema = {
        "type": "object",
        "required": ["summary"],
        "properties": {"summary": {"type": "string"}},
    }
    form.get_by_label("Output schema").fill(json.dumps(schema))
    page.get_by_role("button", name="Create agent").click()
    page.wait_for_url("**/agents/pr-reviewer")
    expect(page.get_by_role("heading", name="pr-reviewer")).to_be_visible()
    written = (tmp_path / "agents" / "pr-reviewer" / "agent.yml").read_text()
    assert "name: pr-reviewer\n" in written and "summary" in written
    assert dash.client.get("/agents/pr-reviewer").json()["output_schema"] == schema
    shoot(page, "agents-new-created")


def test_a_session_page_deletes_the_session_once_its_run_has_ended(
    dash: Service, page: Page, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", VALID))
    kept = dash.run(REVIEW).json()
    assert kept["status"] == "completed"
    going_on = threading.Event()

    def hold(_: object) -> None:
        """Hold the next model call until the page has shown its run going on."""
        going_on.wait(120)

    fake_llm.refuse_when(hold)
    try:
        started = dash.client.post("/runs", json=REVIEW).json()
        page.goto(f"{dash.url}/sessions/{started['session_id']}")
        delete = page.get_by_role("button", name="Delete")
        notice = page.get_by_text("A run is going on: delete the session after it ends.")
        expect(notice).to_be_visible()
        expect(delete).to_be_disabled()
    finally:
        going_on.set()
    expect(page.get_by_test_id("schema-verdict")).to_have_text("Valid", timeout=60000)
    expect(delete).to_be_enabled()
    shoot(page, "session-delete")
    asked: list[str] = []

    def accept(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    delete.click()
    expect(page).to_have_url(f"{dash.url}/sessions")
    expect(page.get_by_test_id("total")).to_have_text("1 session")
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.locator("tbody tr").first).to_contain_text(kept["session_id"])
    assert asked == [f"Delete the session {started['session_id']}?"]
    assert dash.client.get(f"/sessions/{started['session_id']}").status_code == 404
    assert dash.client.get(f"/runs/{started['run_id']}").status_code == 404


def test_the_evals_page_shows_each_models_figures_and_escapes_them(
    dash: Service, page: Page, tmp_path: Path
) -> None:
    page.goto(f"{dash.url}/evals")
    expect(page.get_by_role("heading", name="Evals")).to_be_visible()
    expect(page.locator("main")).to_contain_text("start it with --evals-dir DIR")

    write_eval(tmp_path, "grader-local")
    hostile = json.loads((tmp_path / "evals" / "grader-local" / "eval.json").read_text())
    hostile["models"][0]["model"] = SCRIPT
    hostile["finished_at"] = "2026-01-01T00:00:00+00:00"
    (tmp_path / "evals" / "hostile").mkdir()
    (tmp_path / "evals" / "hostile" / "eval.json").write_text(json.dumps(hostile))
    (tmp_path / "evals" / "broken").mkdir()
    (tmp_path / "evals" / "broken" / "eval.json").write_text("{not json")
    dash.services.evals_dir = tmp_path / "evals"

    page.goto(f"{dash.url}/evals")
    evals = page.get_by_test_id("eval")
    expect(evals).to_have_count(3)
    newest = evals.nth(0)
    expect(newest).to_contain_text("grader: 2 tasks")
    expect(newest).to_contain_text("grader-local/eval.json")
    rescued = newest.locator("tr", has_text="test:fail_first=invalid_arguments")
    # Contract met, first try, rescued by the re-ask, mean attempts.
    cells = rescued.locator("td")
    expect(cells.nth(1)).to_have_text("2/2 (100%)")
    expect(cells.nth(2)).to_have_text("50%")
    expect(cells.nth(3)).to_have_text("1")
    expect(cells.nth(4)).to_have_text("1.50")
    expect(evals.nth(1).locator("td").first).to_have_text(SCRIPT)
    expect(evals.nth(2).get_by_role("alert")).to_contain_text("broken/eval.json: not an eval")
    assert page.evaluate("window.__owned") is None
    page.get_by_role("link", name="Evals").click()
    expect(page.get_by_role("link", name="Evals")).to_have_attribute("aria-current", "page")
    shoot(page, "evals")
