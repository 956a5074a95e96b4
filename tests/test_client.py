"""The Python client (``agentshape.Client``, ``AsyncClient``) against a real ``agentshape serve``.

Each test drives the service process over real HTTP and asserts what the caller sees: the
returned results and typed outputs, the typed errors, the events, and the state read back.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar, Literal

import httpx
import pytest
from pydantic import BaseModel

import agentshape._client_calls as calls_module
from agentshape import (
    APIConnectionError,
    APIError,
    AsyncClient,
    Client,
    ConfigError,
    InputValidationError,
    InvalidSchemaError,
    OutputValidationError,
    PartialOutput,
    RunEnded,
    RunEvent,
    RunFailedError,
    RunResultEvent,
    SchemaNotFoundError,
    SchemaRegistryError,
    ServiceEvent,
    TextDelta,
)
from tests.agent_coordinator.harness import free_port, write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.agent_coordinator.webhook_receiver import Receiver
from tests.fake_llm import FakeLLM, delayed, openai_tool_call
from tests.strict_mypy import CLIENT_PROGRAMS, StrictMypy

pytest.importorskip("fastapi", reason="the service needs the server extra")

REVIEW_ARGS = {"pr_url": "https://example.com/pr/1"}
VALID = {"summary": "ok", "approval": "approve"}


class Review(BaseModel):
    summary: str
    approval: Literal["approve", "request_changes", "comment"]


class Scored(BaseModel):
    summary: str
    score: int


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``agentshape serve`` on the offline test model, for the whole module."""
    root = tmp_path_factory.mktemp("served")
    write_fleet(root / "agents")
    process, address = serve(root, str(root / "coordinator.db"), {}, "--model", "test")
    yield address
    process.stop()


@pytest.fixture
def client(url: str) -> Iterator[Client]:
    with Client(url) as opened:
        yield opened


@pytest.fixture
def slow(tmp_path: Path, fake_llm: FakeLLM) -> Iterator[tuple[Process, str]]:
    """A service with a token whose model (the fake OpenAI server) answers as scripted."""
    write_fleet(tmp_path / "agents")
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    process, address = serve(
        tmp_path,
        str(tmp_path / "coordinator.db"),
        env,
        "--model",
        "openai:gpt-test",
        "--token",
        "s3cret",
    )
    yield process, address
    process.stop()


# Sessions and results ---------------------------------------------------------------------------


def test_a_session_started_with_an_output_type_returns_an_instance_of_it(
    client: Client,
) -> None:
    result = client.start_session("writer", "Review PR 1", output_type=Review)
    assert result.status == "completed"
    assert result.session_id.startswith("ses_") and result.run_id.startswith("run_")
    assert isinstance(result.output, Review)
    assert result.result_data == result.output.model_dump()
    assert result.result_text is None and result.error is None
    assert result.schema_validation is not None and result.schema_validation.valid
    # the class was the run's contract: the service validated it and kept it
    again = client.get_result(result.session_id, Review)
    assert again.output == result.output and again.run_id == result.run_id


def test_an_agents_own_contract_and_parameters_give_json_data(client: Client) -> None:
    result = client.start_session("reviewer", "Review PR 1", parameters=REVIEW_ARGS)
    assert result.status == "completed"
    assert isinstance(result.output, dict) and result.output == result.result_data
    assert set(result.output) == {"summary", "approval"}
    assert result.raw_output is not None and json.loads(result.raw_output) == result.output


def test_an_output_type_reads_an_agents_own_contract_without_replacing_it(
    client: Client,
) -> None:
    result = client.start_session(
        "reviewer", "Review PR 1", parameters=REVIEW_ARGS, output_type=Review
    )
    assert isinstance(result.output, Review) and result.output.model_dump() == result.result_data
    with pytest.raises(APIError) as unknown:  # the agent is read first: its error, as a start's
        client.start_session("reveiwer", "x", output_type=Review)
    assert unknown.value.code == "AgentNotFound"


def test_a_run_without_a_schema_returns_its_text(client: Client) -> None:
    result = client.start_session("writer", "Say hello")
    assert result.status == "completed"
    assert result.result_text and result.result_data is None


def test_a_resumed_session_keeps_its_contract(client: Client) -> None:
    started = client.start_session("writer", "Review PR 1", output_type=Review)
    resumed = client.resume_session(started.session_id, "Once more", output_type=Review)
    assert resumed.session_id == started.session_id and resumed.run_id != started.run_id
    assert isinstance(resumed.output, Review)  # the session's inline schema, kept on resume


def test_the_client_validates_the_output_into_its_class_too(client: Client) -> None:
    started = client.start_session("reviewer", "Review PR 1", parameters=REVIEW_ARGS)
    with pytest.raises(OutputValidationError) as raised:
        client.get_result(started.session_id, Scored)
    assert [str(issue) for issue in raised.value.errors] == ["$: 'score' is a required property"]
    assert raised.value.last_output == started.result_data


def test_a_failed_run_is_a_result_whose_output_raises(client: Client) -> None:
    result = client.start_session(
        "reviewer",
        "Review PR 1",
        parameters=REVIEW_ARGS,
        model="test:fail_first=invalid_arguments",
        output_schema_options={"max_retries": 0},
    )
    assert result.status == "failed" and result.result_data is None
    assert result.error is not None and result.error.type == "output_schema_validation_failed"
    with pytest.raises(RunFailedError) as raised:
        _ = result.output
    assert raised.value.type == "output_schema_validation_failed" and raised.value.errors


def test_a_run_not_waited_for_is_read_when_it_has_ended(client: Client) -> None:
    started = client.start_session("writer", "Review PR 1", output_type=Review, wait=False)
    assert started.status == "queued" and started.result_data is None
    with pytest.raises(ConfigError, match="get_result"):
        _ = started.output
    ended = [e for e in client.events(started.run_id) if isinstance(e, RunEnded)]
    assert ended == [RunEnded(status="completed")]
    assert isinstance(client.get_result(started.session_id, Review).output, Review)


# Events -----------------------------------------------------------------------------------------


def test_a_streamed_runs_events_are_typed_with_its_partial_outputs(client: Client) -> None:
    started = client.start_session(
        "reviewer", "Review PR 1", parameters=REVIEW_ARGS, stream=True, wait=False
    )
    events = list(client.events(started.run_id))
    assert events[-1] == RunEnded(status="completed")
    partials = [event for event in events if isinstance(event, PartialOutput)]
    result = client.get_result(started.session_id)
    assert partials and partials[-1].data == result.result_data and partials[-1].attempt == 1
    kinds = [event.type for event in events if isinstance(event, RunEvent)]
    assert kinds[0] == "run_claimed" and "run_completed" in kinds
    claimed = next(event for event in events if isinstance(event, RunEvent))
    later = list(client.events(started.run_id, after=claimed.id or 0))
    assert later == events[1:]  # the cursor skips what was read


def test_a_streamed_text_reply_comes_as_text_deltas(client: Client) -> None:
    started = client.start_session("writer", "Say hello", stream=True, wait=False)
    deltas = [e.text for e in client.events(started.run_id) if isinstance(e, TextDelta)]
    assert "".join(deltas) == client.get_result(started.session_id).result_text


# Errors -----------------------------------------------------------------------------------------


def test_error_answers_become_the_librarys_typed_errors(client: Client) -> None:
    with pytest.raises(InputValidationError) as bad_parameters:
        client.start_session("reviewer", "Review PR 1", parameters={"focus": "x"})
    assert {str(issue) for issue in bad_parameters.value.errors} == {
        "$: 'pr_url' is a required property",
        "$.focus: 'x' is not of type 'array'",
    }
    with pytest.raises(InvalidSchemaError) as bad_schema:
        client.start_session("writer", "x", output_schema={"type": "objekt"})
    assert bad_schema.value.path == "$.type"
    with pytest.raises(ConfigError, match="output_schema"):  # the agent has its own contract
        client.start_session("reviewer", "x", parameters=REVIEW_ARGS, output_schema=Review)
    with pytest.raises(APIError) as unknown_agent:
        client.start_session("reveiwer", "x")
    assert (unknown_agent.value.status, unknown_agent.value.code) == (404, "AgentNotFound")
    assert unknown_agent.value.suggestion == "reviewer"
    assert "did you mean 'reviewer'?" in str(unknown_agent.value)
    with pytest.raises(APIError) as unknown_session:
        client.get_result("ses_0000000000000000")
    assert (unknown_session.value.status, unknown_session.value.code) == (404, "SessionNotFound")
    with pytest.raises(APIError) as ended:
        client.cancel(client.start_session("writer", "x").run_id)
    assert (ended.value.status, ended.value.code) == (409, "RunNotCancellable")
    with pytest.raises(APIError) as no_run:
        list(client.events("run_0000000000000000"))
    assert (no_run.value.status, no_run.value.code) == (404, "RunNotFound")


def test_a_batch_from_the_client_gives_each_items_typed_result(client: Client, url: str) -> None:
    items = [
        {"id": f"pr-{n}", "prompt": f"Review PR {n}", "parameters": REVIEW_ARGS} for n in (1, 2)
    ]
    batch = client.create_batch("reviewer", items)
    assert batch.status == "queued" and [item.id for item in batch.items] == ["pr-1", "pr-2"]
    deadline = time.monotonic() + 120
    while (batch := client.get_batch(batch.batch_id)).status != "ended":
        assert time.monotonic() < deadline, batch
        time.sleep(0.05)
    assert (batch.completed, batch.failed, batch.pending) == (2, 0, 0)
    assert [b.provider for b in batch.provider_batches] == []  # the test model keeps none
    for item in batch.items:
        assert item.status == "completed"
        assert isinstance(client.get_result(item.session_id, Review).output, Review)
    with pytest.raises(InputValidationError, match=r"items\[0\] \(id 'a'\)"):
        client.create_batch("reviewer", [{"id": "a", "prompt": "x", "parameters": {}}])
    with pytest.raises(APIError) as unknown:
        client.get_batch("bat_0000000000000000")
    assert (unknown.value.status, unknown.value.code) == (404, "BatchNotFound")

    async def read() -> int:
        async with AsyncClient(url) as async_client:
            again = await async_client.create_batch(
                "reviewer", [{"id": "one", "parameters": REVIEW_ARGS}]
            )
            return len((await async_client.get_batch(again.batch_id)).items)

    assert asyncio.run(read()) == 1


def test_an_unregistered_schema_name_lists_the_registered_ones(client: Client) -> None:
    client.schemas.create("code-count", {"type": "object"}, replace=True)
    with pytest.raises(SchemaNotFoundError) as raised:
        client.start_session("writer", "x", output_schema_name="code-cont")
    error = raised.value
    assert (error.name, error.suggestion) == ("code-cont", "code-count")
    assert "code-count" in error.known
    assert str(error).startswith("Output schema 'code-cont' not found; did you mean 'code-count'?")
    cause = error.__cause__
    assert isinstance(cause, APIError) and (cause.status, cause.code) == (404, "SchemaNotFound")


def test_an_unreachable_service_is_a_connection_error_naming_its_url() -> None:
    address = f"http://127.0.0.1:{free_port()}"
    with Client(address, timeout=5) as client, pytest.raises(APIConnectionError) as raised:
        client.agents.list()
    assert raised.value.url == f"{address}/agents"
    assert str(raised.value).startswith(f"{address}/agents: the service could not be reached")


# Schemas and agents -----------------------------------------------------------------------------


def test_the_schema_registry_from_the_client(client: Client) -> None:
    created = client.schemas.create("review", Review, description="a review", replace=True)
    assert created.name == "review" and created.schema_ == Review.model_json_schema()
    assert "review" in [entry.name for entry in client.schemas.list()]
    assert client.schemas.get("review").schema_ == Review.model_json_schema()
    assert client.schemas.create("review", Review).hash == created.hash  # the same: no error
    with pytest.raises(SchemaRegistryError, match="a different schema") as taken:
        client.schemas.create("review", Scored)
    assert taken.value.name == "review"
    result = client.start_session("writer", "x", output_schema_name="review", output_type=Review)
    assert isinstance(result.output, Review)
    assert result.schema_validation is not None
    assert result.schema_validation.schema_name == "review"
    client.schemas.delete("review")
    with pytest.raises(SchemaNotFoundError):
        client.schemas.get("review")
    with pytest.raises(SchemaNotFoundError):
        client.schemas.delete("review")


def test_the_fleet_from_the_client(client: Client) -> None:
    assert [agent.name for agent in client.agents.list()] == [
        "orchestrator",
        "reviewer",
        "summariser",
        "writer",
    ]
    reviewer = client.agents.get("reviewer")
    assert reviewer.contract == "agent" and reviewer.has_parameters
    assert reviewer.output_schema is not None and reviewer.output_schema["required"] == [
        "summary",
        "approval",
    ]
    check = client.agents.check_schema({"type": "object", "properties": {"a": {"type": "nope"}}})
    assert not check.valid and check.findings[0]["path"] == "$.properties.a"
    with pytest.raises(APIError) as missing:
        client.agents.get("nobody")
    assert missing.value.code == "AgentNotFound"


def test_agents_are_created_changed_and_deleted_from_the_client(tmp_path: Path) -> None:
    write_fleet(tmp_path / "agents")
    process, address = serve(tmp_path, str(tmp_path / "coordinator.db"), {}, "--model", "test")
    blueprint = {
        "name": "pr-reviewer",
        "description": "Reviews pull requests and provides structured feedback",
        "system_prompt": "You are a thorough code reviewer...",
        "output_schema": Review.model_json_schema(),
    }
    try:
        with Client(address) as client:
            created = client.agents.create(blueprint)
            assert created.name == "pr-reviewer" and created.contract == "agent"
            assert created.version is not None and created.file is not None
            assert client.start_session("pr-reviewer", "Review PR 1", output_type=Review).output
            with pytest.raises(APIError) as taken:
                client.agents.create(blueprint)
            assert (taken.value.status, taken.value.code) == (409, "AgentExists")
            with pytest.raises(ConfigError, match="temprature"):
                client.agents.create({"id": "broken", "system_prompt": "x", "temprature": 0})
            changed = client.agents.update(
                "pr-reviewer", {"description": "Reviews PRs."}, version=created.version
            )
            assert changed.description == "Reviews PRs." and changed.version != created.version
            assert client.agents.get("pr-reviewer").description == "Reviews PRs."
            with pytest.raises(APIError) as stale:
                client.agents.update("pr-reviewer", {"description": "x"}, version=created.version)
            assert (stale.value.status, stale.value.code) == (409, "AgentFileChanged")
            client.agents.delete("pr-reviewer", version=changed.version)
            with pytest.raises(APIError) as gone:
                client.agents.get("pr-reviewer")
            assert gone.value.code == "AgentNotFound"

        async def main() -> None:
            async with AsyncClient(address) as client:
                created = await client.agents.create({**blueprint, "name": "async-reviewer"})
                changed = await client.agents.update(
                    "async-reviewer", {"output_schema": None}, version=created.version
                )
                assert changed.contract is None
                await client.agents.delete("async-reviewer")
                names = [agent.name for agent in await client.agents.list()]
                assert names == ["orchestrator", "reviewer", "summariser", "writer"]

        asyncio.run(main())
    finally:
        process.stop()


def test_a_webhook_gets_the_runs_end_and_get_run_shows_its_delivery(tmp_path: Path) -> None:
    receiver = Receiver("whsec-client")
    write_fleet(tmp_path / "agents")
    env = {"AGENTSHAPE_WEBHOOK_SECRET": "whsec-client"}
    process, address = serve(tmp_path, str(tmp_path / "coordinator.db"), env, "--model", "test")
    try:
        with Client(address) as client:
            result = client.start_session(
                "reviewer", "Review PR 1", parameters=REVIEW_ARGS, webhook=receiver.url
            )
            [got] = receiver.wait_for(1)
            assert got.signed and got.body["run_id"] == result.run_id
            assert got.body["event"] == "run.completed"
            assert got.body["result_data"] == result.result_data
            deadline = time.monotonic() + 60
            while (run := client.get_run(result.run_id)).webhook_delivery is None or (
                run.webhook_delivery.status != "delivered"
            ):
                assert time.monotonic() < deadline, run
                time.sleep(0.05)
            assert run.webhook == receiver.url
            assert run.webhook_delivery.event_id == got.headers["x-agentshape-event-id"]
            with pytest.raises(APIError) as refused:
                client.start_session("reviewer", "x", parameters=REVIEW_ARGS, webhook="ftp://h/")
            assert refused.value.status == 400 and refused.value.code == "InvalidWebhook"
    finally:
        process.stop()
        receiver.close()


# Waiting, cancelling, the token ----------------------------------------------------------------


def test_a_long_wait_asks_again_for_the_same_run(
    slow: tuple[Process, str], fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, address = slow
    monkeypatch.setattr(calls_module, "WAIT_PER_REQUEST_S", 0.3)  # so that a wait takes several
    answer = delayed(openai_tool_call("submit_result", VALID), 3)
    fake_llm.respond(answer, answer)
    with Client(address, token="s3cret") as client:
        result = client.start_session("writer", "Review PR 1", output_type=Review)
        assert result.status == "completed" and result.output == Review(**VALID)
        resumed = client.resume_session(result.session_id, "Again", output_type=Review)
        assert resumed.status == "completed" and resumed.output == Review(**VALID)
        runs = [client.get_run(result.run_id), client.get_run(resumed.run_id)]
    assert [(run.status, run.claims) for run in runs] == [("completed", 1)] * 2
    for run in runs:  # who held each run, and how the claim ended
        assert run.claim_history is not None
        assert [(claim.number, claim.ended) for claim in run.claim_history] == [(1, "completed")]
        assert run.claim_history[0].runner and run.claim_history[0].ended_at is not None
    session = httpx.get(
        f"{address}/sessions/{result.session_id}", headers={"authorization": "Bearer s3cret"}
    ).json()
    # asked again and again, each run once
    assert [r["run_id"] for r in session["runs"]] == [result.run_id, resumed.run_id]
    assert len(fake_llm.requests) == 2


def test_a_bounded_wait_returns_the_run_still_going_and_cancel_ends_it(
    slow: tuple[Process, str], fake_llm: FakeLLM
) -> None:
    _, address = slow
    fake_llm.respond(delayed(openai_tool_call("submit_result", VALID), 30))
    with Client(address, token="s3cret") as client:
        started = client.start_session("writer", "Review PR 1", wait=0.2)
        assert started.status in {"queued", "running"}
        asked = client.cancel(started.run_id)
        assert asked.cancel_requested or asked.status == "cancelled"
        assert [e for e in client.events(started.run_id) if isinstance(e, RunEnded)] == [
            RunEnded(status="cancelled")
        ]
        ended = client.get_result(started.session_id)
    assert ended.status == "cancelled" and ended.error is not None
    with pytest.raises(RunFailedError) as raised:
        _ = ended.output
    assert raised.value.type == "cancelled"


def test_events_go_on_across_a_restart_of_the_service(tmp_path: Path, fake_llm: FakeLLM) -> None:
    write_fleet(tmp_path / "agents")
    fake_llm.respond(
        delayed(openai_tool_call("submit_result", VALID), 120),  # cut short by the restart
        openai_tool_call("submit_result", VALID),
    )
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    database = str(tmp_path / "coordinator.db")
    options = ("--port", str(free_port()), "--model", "openai:gpt-test")
    first, address = serve(tmp_path, database, env, *options)
    second: Process | None = None
    try:
        with Client(address, timeout=120) as client:
            started = client.start_session("writer", "Review PR 1", output_type=Review, wait=False)
            events = client.events(started.run_id)
            seen = [next(events)]
            assert isinstance(seen[0], RunEvent) and seen[0].type == "run_claimed"
            first.stop(timeout=120)  # the run goes back to the queue, the stream breaks
            second, _ = serve(tmp_path, database, env, *options)
            seen += list(events)
            result = client.get_result(started.session_id, Review)
    finally:
        first.stop(timeout=120)
        if second is not None:
            second.stop(timeout=120)
    assert seen[-1] == RunEnded(status="completed") and result.output == Review(**VALID)
    kinds = [event.type for event in seen if isinstance(event, RunEvent)]
    assert kinds.count("run_claimed") == 2 and kinds.count("run_completed") == 1
    ids = [event.id for event in seen if isinstance(event, RunEvent) and event.id is not None]
    assert ids == sorted(set(ids))  # none lost to the break, none read twice


def test_the_token_is_sent_and_a_wrong_one_is_refused(slow: tuple[Process, str]) -> None:
    _, address = slow
    with Client(address, token="s3cret") as client:
        assert "writer" in [agent.name for agent in client.agents.list()]
    with Client(address, token="wrong") as client, pytest.raises(APIError) as raised:
        client.agents.list()
    assert (raised.value.status, raised.value.code) == (401, "Unauthorized")


# The async client --------------------------------------------------------------------------------


def test_the_async_client_makes_the_same_calls(url: str) -> None:
    async def main() -> None:
        async with AsyncClient(url) as client:
            result = await client.start_session("writer", "Review PR 1", output_type=Review)
            assert isinstance(result.output, Review)
            resumed = await client.resume_session(result.session_id, "Again", output_type=Review)
            assert isinstance(resumed.output, Review)
            streamed = await client.start_session(
                "reviewer", "Review PR 1", parameters=REVIEW_ARGS, stream=True, wait=False
            )
            events = [event async for event in client.events(streamed.run_id)]
            assert events[-1] == RunEnded(status="completed")
            assert any(isinstance(event, PartialOutput) for event in events)
            assert (await client.get_result(streamed.session_id)).status == "completed"
            assert (await client.get_run(streamed.run_id)).status == "completed"
            await client.schemas.create("async-review", Review, replace=True)
            assert (await client.schemas.get("async-review")).name == "async-review"
            assert "writer" in [agent.name for agent in await client.agents.list()]
            with pytest.raises(SchemaNotFoundError):
                await client.start_session("writer", "x", output_schema_name="async-reveiw")

    asyncio.run(main())


# A service that puts the result in a waited answer (row 11) and in a `result` event (row 4) ----

RESULT_EVENT = {
    "event_type": "result",
    "session_id": "ses_1",
    "run_id": "run_1",
    "timestamp": "2026-11-26T12:00:00Z",
    "result_text": None,
    "result_data": VALID,
}


class _Stub(BaseHTTPRequestHandler):
    """Answers as the service does once rows 4 and 11 of issue 33 are in; records each request."""

    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.seen.append(f"POST {self.path.split('?')[0]}")
        run = {"run_id": "run_1", "session_id": "ses_1", "type": "start_session"}
        result = {**run, "status": "completed", "result_data": VALID, "schema_source": "inline"}
        self._send(
            "application/json",
            {**run, "agent_name": "writer", "status": "completed", "result": result},
        )

    def do_GET(self) -> None:
        self.seen.append(f"GET {self.path.split('?')[0]}")
        if self.path == "/agents/writer":
            self._send("application/json", {"name": "writer", "contract": None})
        elif self.path == "/runs/run_1/events":
            text = (
                f"id: 1\nevent: result\ndata: {json.dumps(RESULT_EVENT)}\n\n"
                'event: end\ndata: {"status": "completed"}\n\n'
            )
            self._send("text/event-stream", text)
        elif self.path == "/schemas":
            self._send("application/json", [{"name": "x"}])  # no hash, no times
        elif self.path == "/agents":
            self._send("text/html", "<html>a proxy's page</html>")
        else:
            self._send(
                "application/json", {"error": "NotFound", "message": "no", "status_code": 404}, 404
            )

    def _send(self, kind: str, body: object, status: int = 200) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free loopback port; yield its URL, then stop it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def stub() -> Iterator[str]:
    _Stub.seen.clear()
    yield from _serving(_Stub)


def test_a_result_in_the_waited_answer_is_used_without_a_second_request(stub: str) -> None:
    with Client(stub) as client:
        result = client.start_session("writer", "x", output_type=Review)
    assert result.output == Review(**VALID)
    assert _Stub.seen == ["GET /agents/writer", "POST /runs"]  # no GET of the result


def test_an_answer_of_another_shape_is_an_api_error(stub: str) -> None:
    with Client(stub) as client:
        with pytest.raises(APIError) as other_shape:
            client.schemas.list()
        with pytest.raises(APIError) as not_json:
            client.agents.list()
    assert (other_shape.value.code, other_shape.value.status) == ("UnexpectedAnswer", 200)
    assert "0.hash" in str(other_shape.value) and other_shape.value.body == [{"name": "x"}]
    assert (not_json.value.code, not_json.value.body) == ("NotJSON", "<html>a proxy's page</html>")


def test_a_result_event_is_typed(stub: str) -> None:
    with Client(stub) as client:
        events = list(client.events("run_1"))
    assert events == [
        RunResultEvent(
            session_id="ses_1",
            run_id="run_1",
            result_text=None,
            result_data=VALID,
            timestamp="2026-11-26T12:00:00Z",
        ),
        RunEnded(status="completed"),
    ]


# Types ------------------------------------------------------------------------------------------


def test_a_user_program_and_the_docs_client_example_pass_mypy_strict(
    strict_mypy: StrictMypy,
) -> None:
    programs = [p for p in strict_mypy.programs if p.name in CLIENT_PROGRAMS]
    assert sorted(p.name for p in programs) == sorted(CLIENT_PROGRAMS)
    said = strict_mypy.problems(programs)
    problems = [line for line in said.splitlines() if ": error:" in line]
    assert len(problems) == 1, strict_mypy.output  # the wrong program's only
    assert Path(problems[0].split(":", 1)[0]).name == "wrong_program.py"
    assert 'got "Review", expected "int"' in problems[0]


def test_the_client_needs_neither_the_server_nor_a_provider_sdk() -> None:
    code = (
        "import sys\n"
        "for name in ('fastapi', 'uvicorn', 'agent_coordinator', 'openai', 'anthropic'):\n"
        "    sys.modules[name] = None  # as if not installed\n"
        "from agentshape import AsyncClient, Client\n"
        "with Client('http://127.0.0.1:9') as client:\n"
        "    print(client.base_url)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "http://127.0.0.1:9\n"


# A stream reopened while the service's database is away ------------------------------------------


class _Outage(_Stub):
    """A run's events: the first stream breaks off after one event, the service answers 503
    to the next ``away`` openings, then the stream goes on to the end."""

    away: ClassVar[int] = 1
    opened: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.opened.append(self.path)
        if len(self.opened) == 1:
            self._send("text/event-stream", "id: 1\nevent: run_claimed\ndata: {}\n\n")
        elif len(self.opened) <= 1 + self.away:
            error = {"error": "StoreUnavailable", "message": "the database is away"}
            self._send("application/json", {**error, "status_code": 503}, 503)
        else:
            end = 'event: end\ndata: {"status": "completed"}\n\n'
            self._send("text/event-stream", f"id: 2\nevent: run_completed\ndata: {{}}\n\n{end}")


@pytest.fixture
def outage() -> Iterator[str]:
    _Outage.opened.clear()
    _Outage.away = 1
    yield from _serving(_Outage)


def test_a_stream_reopened_while_the_database_is_away_goes_on_from_where_it_was(
    outage: str,
) -> None:
    with Client(outage, timeout=30) as client:
        events = list(client.events("run_1"))
    assert [event.type for event in events if isinstance(event, RunEvent)] == [
        "run_claimed",
        "run_completed",
    ]
    assert events[-1] == RunEnded(status="completed")
    assert _Outage.opened == ["/runs/run_1/events", *["/runs/run_1/events?after=1"] * 2]

    async def followed() -> list[ServiceEvent]:
        async with AsyncClient(outage, timeout=30) as client:
            return [event async for event in client.events("run_1")]

    _Outage.opened.clear()
    assert asyncio.run(followed()) == events


def test_a_stream_that_stays_unavailable_gives_up_with_the_503_after_the_timeout(
    outage: str,
) -> None:
    _Outage.away = 10**6
    with Client(outage, timeout=1) as client, pytest.raises(APIError) as raised:
        list(client.events("run_1"))
    assert (raised.value.status, raised.value.code) == (503, "StoreUnavailable")
    assert len(_Outage.opened) > 2  # tried again before giving up
