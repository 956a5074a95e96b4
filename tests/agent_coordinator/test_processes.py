"""The commands as a user runs them: ``serve`` and ``runner`` in their own processes."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx

from agent_coordinator import open_store
from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.fake_llm import FakeLLM, delayed, openai_tool_call

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
VALID = {"summary": "ok", "approval": "approve"}


def test_serve_prints_where_it_listens_and_answers(tmp_path: Path, database: str) -> None:
    write_fleet(tmp_path / "agents")
    process, url = serve(tmp_path, database, {}, "--model", "test")
    try:
        process.read_until("auth:")
        text = "".join(process.lines)
        assert url.startswith("http://127.0.0.1:")
        assert "fleet:    agents (4 agents)" in text
        assert "database:" in text and "model:    test" in text
        run = httpx.post(f"{url}/runs", params={"wait": 20}, json=REVIEW).json()
        assert run["status"] == "completed"
    finally:
        assert process.stop() == 0
    assert "agentshape serve: stopped" in process.rest


def test_serve_refuses_a_fleet_with_problems(tmp_path: Path) -> None:
    bad = tmp_path / "agents" / "broken"
    bad.mkdir(parents=True)
    (bad / "agent.yml").write_text("id: broken\nsytem_prompt: hi\n")
    process = Process(["serve", "--port", "0"], cwd=tmp_path, env={})
    assert process.popen.wait(60) == 2
    process.stop()
    assert process.rest.startswith("agentshape: ") and "system_prompt" in process.rest


def test_a_runner_killed_mid_run_loses_it_and_another_finishes_it_once(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    write_fleet(tmp_path / "agents")
    fake_llm.respond(
        delayed(openai_tool_call("submit_result", VALID), 60),
        openai_tool_call("submit_result", VALID),
    )
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    common = ["--database", database, "--model", "openai:gpt-test", "--lease", "1.5"]
    server, url = serve(tmp_path, database, env, "--workers", "0", *common[2:])
    first = Process(["runner", "--workers", "1", *common], cwd=tmp_path, env=env)
    second: Process | None = None
    try:
        first.read_until("workers")
        run = httpx.post(f"{url}/runs", json=REVIEW).json()
        deadline = time.monotonic() + 30
        while not fake_llm.requests:  # the first runner is inside the model call
            assert time.monotonic() < deadline, "the first runner never called the model"
            time.sleep(0.05)
        first.kill()
        assert httpx.get(f"{url}/runs/{run['run_id']}").json()["status"] == "running"
        second = Process(["runner", "--workers", "1", *common], cwd=tmp_path, env=env)
        ended = httpx.post(
            f"{url}/runs",
            json={"type": "resume_session", "session_id": run["session_id"], "prompt": "x"},
        )
        assert ended.status_code == 409  # still the first run's, until it is finished
        deadline = time.monotonic() + 60
        while (view := httpx.get(f"{url}/runs/{run['run_id']}").json())["status"] == "running":
            assert time.monotonic() < deadline, "no runner took the run over"
            time.sleep(0.1)
        assert view["status"] == "completed"
        assert view["claims"] == 2
        assert second.popen.poll() is None
    finally:
        for process in (second, first):
            if process is not None and process.popen.poll() is None:
                assert process.stop() == 0
        server.stop()
    store = open_store(database)
    try:
        events = [event.type for event in store.events_after(run["run_id"])]
        assert events.count("run_claimed") == 2
        assert events.count("run_completed") == 1
        assert len(store.attempts(run["run_id"])) == 1
        assert store.count_runs() == 1
    finally:
        store.close()
    assert len(fake_llm.requests) == 2


def test_a_waited_run_handed_over_in_memory_outlives_a_killed_serve(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """A ``?wait=`` run ``serve`` runs itself is stored claimed: killed, another runner ends it."""
    write_fleet(tmp_path / "agents")
    fake_llm.respond(
        delayed(openai_tool_call("submit_result", VALID), 60),
        openai_tool_call("submit_result", VALID),
    )
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    common = ["--model", "openai:gpt-test", "--lease", "1.5"]
    # Two workers: one is free even while the runner's claimer looks for queued runs with the other.
    server, url = serve(tmp_path, database, env, "--workers", "2", *common)
    runner: Process | None = None
    try:
        answer = httpx.post(f"{url}/runs", params={"wait": 0.5}, json=REVIEW, timeout=30)
        run = answer.json()
        # Stored already claimed by serve's runner: started when it was stored, no queue between.
        assert (answer.status_code, run["status"], run["claims"]) == (202, "running", 1)
        assert run["started_at"] == run["created_at"]
        deadline = time.monotonic() + 30
        while not fake_llm.requests:  # serve's runner is inside the model call
            assert time.monotonic() < deadline, "serve's runner never called the model"
            time.sleep(0.05)
        server.kill()
        runner = Process(
            ["runner", "--workers", "1", "--database", database, *common], cwd=tmp_path, env=env
        )
        store = open_store(database)
        try:
            deadline = time.monotonic() + 60
            while (stored := store.get_run(run["run_id"])) is None or stored.status == "running":
                assert time.monotonic() < deadline, "no runner took the run over"
                time.sleep(0.1)
            events = [event.type for event in store.events_after(run["run_id"])]
            attempts = store.attempts(run["run_id"])
            runs = store.count_runs()
        finally:
            store.close()
    finally:
        if runner is not None:
            assert runner.stop() == 0
        server.stop()
    assert (stored.status, stored.claims) == ("completed", 2)
    assert events.count("run_claimed") == 2 and events.count("claim_expired") == 1
    assert events.count("run_completed") == 1
    assert (len(attempts), runs, len(fake_llm.requests)) == (1, 1, 2)


def test_a_runner_in_its_own_process_stores_the_runs_stream_events(
    tmp_path: Path, database: str
) -> None:
    """The stream events go through the store, so the server's clients see another's runs."""
    write_fleet(tmp_path / "agents")
    server, url = serve(tmp_path, database, {}, "--workers", "0")
    runner = Process(["runner", "--workers", "1", "--database", database], cwd=tmp_path, env={})
    try:
        runner.read_until("workers")
        body = {**REVIEW, "model": "test:fail_first=invalid_arguments", "stream": True}
        run = httpx.post(f"{url}/runs", json=body).json()
        with httpx.stream("GET", f"{url}/runs/{run['run_id']}/events", timeout=60) as response:
            blocks = "".join(response.iter_text()).strip().split("\n\n")
        kinds = [dict(line.split(": ", 1) for line in b.splitlines())["event"] for b in blocks]
        result = httpx.get(f"{url}/sessions/{run['session_id']}/result").json()
    finally:
        assert runner.stop() == 0
        server.stop()
    assert kinds[-1] == "end" and "retry_started" in kinds
    last = [b for b in blocks if "event: partial_output" in b][-1]
    assert json.loads(last.split("data: ", 1)[1])["data"] == result["result_data"]


def test_serve_refuses_a_file_form_output_schema_that_is_not_an_object(tmp_path: Path) -> None:
    bad = tmp_path / "agents" / "researcher"
    bad.mkdir(parents=True)
    (bad / "agent.yml").write_text(
        "schema: 'kb.agent/1'\nid: researcher\noutput:\n  schema:\n    type: array\n"
        "    items: { type: string }\n"
    )
    process = Process(["serve", "--port", "0"], cwd=tmp_path, env={})
    assert process.popen.wait(60) == 2
    process.stop()
    assert 'agents/researcher/agent.yml:5: output.schema.type: must be "object"' in process.rest
    assert "agents/researcher/agent.yml:4: output.schema: must have properties" in process.rest


def test_serve_takes_the_database_from_the_environment_without_database(tmp_path: Path) -> None:
    """``AGENTSHAPE_DATABASE`` keeps a PostgreSQL URL's password off the command line."""
    write_fleet(tmp_path / "agents")
    chosen = tmp_path / "from-env.db"
    process = Process(
        ["serve", "--port", "0", "--model", "test"],
        cwd=tmp_path,
        env={"AGENTSHAPE_DATABASE": str(chosen)},
    )
    try:
        line = process.read_until("database:")
        url = process.lines[0].split("listening on ", 1)[1].split()[0]
        process.read_until("hosts:")
        deadline = time.monotonic() + 30
        while True:
            try:
                run = httpx.post(f"{url}/runs", params={"wait": 20}, json=REVIEW).json()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "serve did not answer"
                time.sleep(0.05)
    finally:
        assert process.stop() == 0
    assert line.strip() == f"database: {chosen}"
    assert run["status"] == "completed"
    store = open_store(chosen)
    try:
        assert store.get_run(run["run_id"]) is not None
    finally:
        store.close()
    assert not (tmp_path / ".agentshape" / "coordinator.db").exists()


def test_a_request_waiting_for_its_run_is_answered_with_it_when_serve_is_stopped(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """SIGTERM during a ``?wait=``: the caller gets the run's id (202), not the grace period's
    500; the run is left for a runner to take over, not lost."""
    write_fleet(tmp_path / "agents")
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 60))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    server, url = serve(tmp_path, database, env, "--model", "openai:gpt-test")
    answers: list[httpx.Response] = []
    waiting = threading.Thread(
        target=lambda: answers.append(
            httpx.post(f"{url}/runs", params={"wait": 60}, json=REVIEW, timeout=90)
        )
    )
    waiting.start()
    try:
        deadline = time.monotonic() + 30
        while not fake_llm.requests:  # the run is inside its model call
            assert time.monotonic() < deadline, "serve's runner never called the model"
            time.sleep(0.05)
    finally:
        code = server.stop()
        waiting.join(60)
    assert code == 0
    [answer] = answers
    run = answer.json()
    assert (answer.status_code, run["status"]) == (202, "running"), answer.text
    assert "Exception in ASGI application" not in server.rest
    store = open_store(database)
    try:
        stored = store.get_run(run["run_id"])
    finally:
        store.close()
    assert stored is not None and stored.status in ("queued", "running")
