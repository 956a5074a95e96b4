"""``POST /batches`` and ``GET /batches/{id}``: sessions run through a provider's batch API by the
runners, over real HTTP against real ``serve`` and ``runner`` processes (and, for the request
checks, the service in a thread), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_coordinator._service.services import Limits
from agent_coordinator._webhooks import WebhookSettings
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.agent_coordinator.webhook_receiver import Receiver
from tests.fake_batches import FakeBatches, ItemFault, submit_reply

VALID = {"summary": "looks fine", "approval": "approve"}


def _items(*names: str) -> list[dict[str, Any]]:
    return [
        {"id": name, "prompt": f"Review {name}", "parameters": {"pr_url": name}} for name in names
    ]


def _reviewer(api: str, body: Any) -> Any:
    """Answer every review valid, except: "bad" invalid until re-asked, "boom" a failed item."""
    conversation = json.dumps(body["messages"])
    answered = sum(message["role"] == "assistant" for message in body["messages"])
    if "boom" in conversation:
        return ItemFault("error", "overloaded")
    invalid = {"summary": "", "approval": "maybe"}
    arguments = invalid if "bad" in conversation and not answered else VALID
    return submit_reply(api, arguments, answered)


@pytest.fixture
def fake() -> Iterator[FakeBatches]:
    server = FakeBatches(_reviewer, polls_to_end=2)
    try:
        yield server
    finally:
        server.close()


def _env(fake: FakeBatches) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": f"{fake.url}/v1",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": fake.url,
    }


MODELS = {"openai": "openai:gpt-test", "anthropic": "anthropic:claude-test"}


def _until(check: Any, what: str, timeout: float = 120) -> Any:
    """Return ``check()`` once it is truthy, within a generous bound."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _ended(url: str, batch_id: str) -> dict[str, Any]:
    def read() -> dict[str, Any] | None:
        view: dict[str, Any] = httpx.get(f"{url}/batches/{batch_id}").json()
        return view if view["status"] == "ended" else None

    ended: dict[str, Any] = _until(read, f"batch {batch_id} to end")
    return ended


def test_a_batch_runs_each_item_into_its_own_session_with_the_test_model(
    tmp_path: Path, database: str
) -> None:
    write_fleet(tmp_path / "agents")
    server, url = serve(tmp_path, database, {}, "--model", "test", "--batch-poll", "0.1")
    try:
        created = httpx.post(
            f"{url}/batches", json={"agent_name": "reviewer", "items": _items("a", "b", "c")}
        )
        assert created.status_code == 202, created.text
        batch = created.json()
        assert batch["status"] == "queued" and batch["pending"] == 3
        assert [item["id"] for item in batch["items"]] == ["a", "b", "c"]
        assert len({item["session_id"] for item in batch["items"]}) == 3

        ended = _ended(url, batch["batch_id"])
        assert (ended["completed"], ended["failed"], ended["pending"]) == (3, 0, 0)
        assert ended["finished_at"] is not None
        for item in ended["items"]:
            assert item["status"] == "completed"
            result = httpx.get(f"{url}/sessions/{item['session_id']}/result").json()
            assert result["status"] == "completed"
            assert set(result["result_data"]) == {"summary", "approval"}
            run = httpx.get(f"{url}/runs/{item['run_id']}").json()
            assert run["claims"] == 1 and run["session_id"] == item["session_id"]
        second = httpx.post(
            f"{url}/batches", json={"agent_name": "reviewer", "items": _items("e")}
        ).json()
        page = httpx.get(f"{url}/batches", params={"limit": 1}).json()
        assert [b["batch_id"] for b in page["items"]] == [second["batch_id"]]
        rest = httpx.get(f"{url}/batches", params={"cursor": page["next_cursor"]}).json()
        assert [b["batch_id"] for b in rest["items"]] == [batch["batch_id"]]
        assert rest["next_cursor"] is None
        gone = ended["items"][0]
        assert httpx.delete(f"{url}/sessions/{gone['session_id']}").status_code in (200, 204)
        after = httpx.get(f"{url}/batches/{batch['batch_id']}").json()
        assert [item["status"] for item in after["items"]] == ["deleted", "completed", "completed"]
        assert (after["completed"], after["deleted"]) == (2, 1)
        for item in after["items"][1:]:
            httpx.delete(f"{url}/sessions/{item['session_id']}")
        gone_batch = httpx.get(f"{url}/batches/{batch['batch_id']}")  # its last item went
        assert (gone_batch.status_code, gone_batch.json()["error"]) == (404, "BatchNotFound")
        # a batch's runs are not claimed one by one: the single claim was the batch's
        plain = httpx.post(
            f"{url}/runs",
            params={"wait": 60},
            json={"agent_name": "reviewer", "prompt": "Review d", "parameters": {"pr_url": "d"}},
            timeout=90,
        ).json()
        assert plain["status"] == "completed"
    finally:
        server.stop()
    assert "Traceback" not in server.rest


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_items_failing_the_contract_are_re_asked_and_provider_failures_are_typed(
    tmp_path: Path, database: str, fake: FakeBatches, api: str
) -> None:
    """Through the real SDK against the batch double: the first round holds every item, the
    follow-up batch only the reply that failed the contract."""
    write_fleet(tmp_path / "agents")
    server, url = serve(
        tmp_path, database, _env(fake), "--model", MODELS[api], "--batch-poll", "0.05"
    )
    try:
        body = {"agent_name": "reviewer", "items": _items("good", "bad", "boom")}
        batch = httpx.post(f"{url}/batches", json=body).json()
        ended = _ended(url, batch["batch_id"])
    finally:
        server.stop()
    assert [len(sent.items) for sent in fake.batches] == [3, 1]
    assert fake.live_bodies == []  # every call went through the batch API
    assert any(b"output-validation-error" in item for item in fake.item_bodies())
    assert (ended["completed"], ended["failed"]) == (2, 1)
    assert [b["provider_batch_id"] for b in ended["provider_batches"]] == [
        sent.id for sent in fake.batches
    ]
    assert [b["items"] for b in ended["provider_batches"]] == [3, 1]
    assert ended["provider_batches"][0]["counts"]["ended"] is True

    good, bad, boom = ({i["id"]: i for i in ended["items"]}[n] for n in ("good", "bad", "boom"))
    # read the results back from a fresh service on the same database
    server, url = serve(tmp_path, database, _env(fake), "--workers", "0")
    try:
        bad_result = httpx.get(f"{url}/sessions/{bad['session_id']}/result").json()
        assert bad_result["status"] == "completed" and bad_result["result_data"] == VALID
        assert bad_result["schema_validation"]["retry_count"] == 1
        good_result = httpx.get(f"{url}/sessions/{good['session_id']}/result").json()
        assert good_result["result_data"] == VALID
        assert good_result["schema_validation"]["retry_count"] == 0
        boom_run = httpx.get(f"{url}/runs/{boom['run_id']}").json()
        assert boom_run["status"] == "failed"
        assert boom_run["error"]["type"] == "provider_batch_item_failed"
        assert "overloaded" in boom_run["error"]["message"]
        analytics = httpx.get(f"{url}/reports/analytics", params={"agent": "reviewer"}).json()
        assert analytics["overall"]["batched"] == 2  # the two answered through the batch
    finally:
        server.stop()


def test_an_item_cancelled_while_its_batch_is_in_flight_ends_cancelled_alone(
    tmp_path: Path, database: str, fake: FakeBatches
) -> None:
    write_fleet(tmp_path / "agents")
    fake.polls_to_end = 10**9
    server, url = serve(
        tmp_path, database, _env(fake), "--model", "openai:gpt-test", "--batch-poll", "0.05"
    )
    try:
        batch = httpx.post(
            f"{url}/batches", json={"agent_name": "reviewer", "items": _items("drop", "keep")}
        ).json()
        _until(lambda: fake.batches and fake.batches[0].polls >= 1, "the batch to be polled")
        drop = batch["items"][0]
        cancelled = httpx.post(f"{url}/runs/{drop['run_id']}/cancel")
        assert cancelled.status_code in (200, 202), cancelled.text
        _until(
            lambda: httpx.get(f"{url}/runs/{drop['run_id']}").json()["status"] == "cancelled",
            "the cancelled item's run to end",
        )
        fake.polls_to_end = 1
        ended = _ended(url, batch["batch_id"])
    finally:
        server.stop()
    assert [item["status"] for item in ended["items"]] == ["cancelled", "completed"]
    assert (ended["completed"], ended["failed"], ended["pending"]) == (1, 1, 0)
    assert len(fake.batches) == 1
    assert "Traceback" not in server.rest


def test_a_runner_killed_mid_batch_is_replaced_without_paying_twice(
    tmp_path: Path, database: str, fake: FakeBatches
) -> None:
    """The provider batch is recorded when created: the next runner re-attaches to it."""
    write_fleet(tmp_path / "agents")
    env = _env(fake)
    common = ["--model", "openai:gpt-test", "--lease", "2", "--batch-poll", "0.05"]
    fake.polls_to_end = 10**9  # held in progress until the first runner is dead
    server, url = serve(tmp_path, database, env, "--workers", "0", *common)
    runners: list[Process] = []
    try:
        batch = httpx.post(
            f"{url}/batches", json={"agent_name": "reviewer", "items": _items("x", "y")}
        ).json()
        first = Process(["runner", "--database", database, *common], cwd=tmp_path, env=env)
        runners.append(first)
        first.read_until("workers")

        def polled() -> bool:
            view = httpx.get(f"{url}/batches/{batch['batch_id']}").json()
            return (
                bool(fake.batches) and fake.batches[0].polls >= 1 and bool(view["provider_batches"])
            )

        _until(polled, "the first runner to create and poll the provider batch")
        first.kill()
        fake.polls_to_end = 1
        second = Process(["runner", "--database", database, *common], cwd=tmp_path, env=env)
        runners.append(second)
        ended = _ended(url, batch["batch_id"])
        assert len(fake.batches) == 1  # re-attached, not sent again
        assert (ended["completed"], ended["failed"]) == (2, 0)
        for item in ended["items"]:
            run = httpx.get(f"{url}/runs/{item['run_id']}").json()
            assert run["claims"] == 2
            assert [claim["ended"] for claim in run["claim_history"]] == ["expired", "completed"]
    finally:
        for runner in runners:
            if runner.popen.poll() is None:
                runner.stop()
        server.stop()


def test_a_runner_stopped_mid_batch_hands_it_over_at_once(
    tmp_path: Path, database: str, fake: FakeBatches
) -> None:
    """SIGTERM: the runner puts the batch and its runs back; the next runner re-attaches."""
    write_fleet(tmp_path / "agents")
    env = _env(fake)
    # A long lease: the second runner can only get the batch because the first put it back.
    common = ["--model", "openai:gpt-test", "--lease", "600", "--batch-poll", "0.05"]
    fake.polls_to_end = 10**9
    server, url = serve(tmp_path, database, env, "--workers", "0", *common)
    runners: list[Process] = []
    try:
        batch = httpx.post(
            f"{url}/batches", json={"agent_name": "reviewer", "items": _items("x", "y")}
        ).json()
        first = Process(["runner", "--database", database, *common], cwd=tmp_path, env=env)
        runners.append(first)
        first.read_until("workers")
        _until(lambda: fake.batches and fake.batches[0].polls >= 1, "the batch to be polled")
        assert first.stop(timeout=60) == 0
        queued = httpx.get(f"{url}/batches/{batch['batch_id']}").json()
        assert queued["status"] == "queued" and queued["pending"] == 2
        fake.polls_to_end = 1
        second = Process(["runner", "--database", database, *common], cwd=tmp_path, env=env)
        runners.append(second)
        ended = _ended(url, batch["batch_id"])
        assert len(fake.batches) == 1 and ended["completed"] == 2
        run = httpx.get(f"{url}/runs/{ended['items'][0]['run_id']}").json()
        assert [claim["ended"] for claim in run["claim_history"]] == ["shutdown", "completed"]
    finally:
        for runner in runners:
            if runner.popen.poll() is None:
                runner.stop()
        server.stop()


def test_a_batch_whose_lease_keeps_running_out_fails_its_runs_lease_exhausted(
    make_service: ServiceFactory,
) -> None:
    service = make_service(workers=0)
    batch = service.client.post(
        "/batches", json={"agent_name": "reviewer", "items": _items("a", "b")}
    ).json()
    for runner in ("lost-1", "lost-2"):  # each claim's lease runs out at once
        claim = service.store.claim_batch(runner, -1.0, max_claims=2)
        assert claim is not None and len(claim.runs) == 2
    assert service.store.claim_batch("lost-3", 30.0, max_claims=2) is None
    view = service.client.get(f"/batches/{batch['batch_id']}").json()
    assert (view["status"], view["failed"], view["pending"]) == ("ended", 2, 0)
    run = service.client.get(f"/runs/{view['items'][0]['run_id']}").json()
    assert run["error"]["type"] == "lease_exhausted"
    assert [claim["runner"] for claim in run["claim_history"]] == ["lost-1", "lost-2"]


def test_each_items_end_is_posted_signed_to_the_batches_webhook(
    make_service: ServiceFactory,
) -> None:
    receiver = Receiver("whsec-test")
    try:
        settings = WebhookSettings(secret="whsec-test", first_retry_s=0.2, poll_s=0.05)
        service = make_service(webhooks=settings)
        body = {"agent_name": "reviewer", "items": _items("a", "b"), "webhook": receiver.url}
        batch = service.client.post("/batches", json=body).json()
        got = receiver.wait_for(2)
    finally:
        receiver.close()
    assert sorted(hook.body["session_id"] for hook in got) == sorted(
        item["session_id"] for item in batch["items"]
    )
    assert all(hook.signed and hook.body["event"] == "run.completed" for hook in got)


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_bad_batch_requests_get_typed_errors_and_store_nothing(
    make_service: ServiceFactory,
) -> None:
    service = make_service(limits=Limits(max_batch_items=3), workers=0)
    client = service.client

    def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        answer = client.post("/batches", json=body)
        return answer.status_code, answer.json()

    status, body = post({"agent_name": "reviwer", "items": _items("a")})
    assert (status, body["error"], body["suggestion"]) == (404, "AgentNotFound", "reviewer")
    status, body = post({"agent_name": "reviewer", "items": []})
    assert (status, body["error"]) == (422, "InvalidRequest") and "empty" in body["message"]
    status, body = post({"agent_name": "reviewer", "items": _items("a", "b", "c", "d")})
    assert (status, body["error"]) == (422, "InvalidRequest") and "at most 3" in body["message"]
    status, body = post({"agent_name": "reviewer", "items": _items("a", "b", "a")})
    assert (status, body["error"]) == (422, "InvalidRequest")
    assert body["details"][0]["path"] == "$.items[2].id"
    schema = {"type": "object"}
    both = {"agent_name": "writer", "items": _items("a"), "output_schema": schema}
    status, body = post({**both, "output_schema_name": "x"})
    assert (status, body["error"]) == (422, "InvalidRequest") and "not both" in body["message"]
    status, body = post(
        {"agent_name": "writer", "items": _items("a"), "output_schema_name": "missing"}
    )
    assert (status, body["error"]) == (404, "SchemaNotFound")
    bad_parameters = _items("a", "b")
    bad_parameters[1]["parameters"] = {"pr_url": 7}
    status, body = post({"agent_name": "reviewer", "items": bad_parameters})
    assert (status, body["error"]) == (422, "InputValidationFailed")
    assert body["message"].startswith("items[1] (id 'b'): ")
    status, body = post({"agent_name": "orchestrator", "items": _items("a")})
    assert (status, body["error"]) == (400, "BatchNotSupported")
    status, body = post({"agent_name": "reviewer", "items": [{"id": "a"}]})
    assert (status, body["error"]) == (422, "InvalidRequest")
    assert body["details"][0]["path"] == "$.items[0]"
    status, body = post({"agent_name": "reviewer", "items": _items("a"), "extra": 1})
    assert status == 422
    hooked = {"agent_name": "reviewer", "items": _items("a"), "webhook": "http://127.0.0.1:9/"}
    status, body = post(hooked)
    assert (status, body["error"]) == (400, "WebhooksNotConfigured")
    missing = client.get("/batches/bat_nope")
    assert (missing.status_code, missing.json()["error"]) == (404, "BatchNotFound")
    assert client.get("/sessions").json()["items"] == []  # nothing was stored


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_batches_need_the_token_like_every_route(make_service: ServiceFactory) -> None:
    service = make_service(token="s3cret", workers=0)
    anonymous = httpx.post(
        f"{service.url}/batches", json={"agent_name": "reviewer", "items": _items("a")}
    )
    assert anonymous.status_code == 401
    assert httpx.get(f"{service.url}/batches/bat_x").status_code == 401
    created = service.client.post("/batches", json={"agent_name": "reviewer", "items": _items("a")})
    assert created.status_code == 202
