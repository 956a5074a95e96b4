"""Signed webhooks over real HTTP: a run's end POSTed to a loopback receiver, on both stores."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_coordinator._webhooks import WebhookSettings, retry_delay, sign
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import serve
from tests.agent_coordinator.webhook_receiver import Receiver

SECRET = "whsec-test-secret"
REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    opened = Receiver(SECRET)
    yield opened
    opened.close()


def _settings(**extra: Any) -> WebhookSettings:
    return WebhookSettings(secret=SECRET, first_retry_s=0.2, poll_s=0.05, **extra)


def _until(read: Callable[[], dict[str, Any]], done: Callable[[dict[str, Any]], bool]) -> Any:
    """Read until ``done`` holds (generous bound: the machine may be busy)."""
    deadline = time.monotonic() + 60
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still {value}")
        time.sleep(0.05)


def _delivery(client: httpx.Client, run_id: str) -> dict[str, Any]:
    delivery: dict[str, Any] = client.get(f"/runs/{run_id}").json()["webhook_delivery"] or {}
    return delivery


def test_a_completed_run_is_posted_signed_to_its_webhook(
    make_service: ServiceFactory, receiver: Receiver
) -> None:
    service = make_service(webhooks=_settings())
    run = service.run({**REVIEW, "webhook": receiver.url}).json()
    assert run["status"] == "completed" and run["webhook"] == receiver.url
    [got] = receiver.wait_for(1)
    assert got.signed and got.headers["x-agentshape-signature"] == sign(SECRET, got.raw)
    assert got.path == "/hooks/agentshape" and got.headers["content-type"] == "application/json"
    body = got.body
    assert body["event"] == "run.completed" and body["status"] == "completed"
    assert body["run_id"] == run["run_id"] and body["session_id"] == run["session_id"]
    assert set(body["result_data"]) == {"summary", "approval"}
    assert "error" not in body and "result_text" not in body
    assert body["timestamp"].endswith("+00:00")
    event_id = got.headers["x-agentshape-event-id"]
    shown = _until(
        lambda: _delivery(service.client, run["run_id"]), lambda d: d.get("status") == "delivered"
    )
    assert shown["event_id"] == event_id and shown["event"] == "run.completed"
    assert shown["attempts"] == 1 and shown["last_status_code"] == 200
    assert shown["delivered_at"] is not None and shown["next_attempt_at"] is None


def test_a_receiver_answering_500_twice_gets_the_same_event_until_it_takes_it(
    make_service: ServiceFactory, receiver: Receiver
) -> None:
    receiver.statuses.extend([500, 500])
    service = make_service(webhooks=_settings())
    run = service.run({**REVIEW, "webhook": receiver.url}).json()
    got = receiver.wait_for(3)
    assert [d.status for d in got] == [500, 500, 200]
    assert len({d.headers["x-agentshape-event-id"] for d in got}) == 1
    assert len({d.raw for d in got}) == 1 and all(d.signed for d in got)
    assert list(receiver.events.values()) == [got[0].body]  # deduped: one event kept
    shown = _until(
        lambda: _delivery(service.client, run["run_id"]), lambda d: d.get("status") == "delivered"
    )
    assert shown["attempts"] == 3 and shown["last_status_code"] == 200


def test_an_attempt_past_its_timeout_is_sent_again_with_the_same_event_id(
    make_service: ServiceFactory, receiver: Receiver
) -> None:
    receiver.delays.append(3.0)  # the first answer comes after the deliverer stopped waiting
    service = make_service(webhooks=_settings(timeout_s=0.5))
    run = service.run({**REVIEW, "webhook": receiver.url}).json()
    shown = _until(
        lambda: _delivery(service.client, run["run_id"]), lambda d: d.get("status") == "delivered"
    )
    assert shown["attempts"] >= 2
    got = receiver.wait_for(2)
    assert len({d.headers["x-agentshape-event-id"] for d in got}) == 1
    assert list(receiver.events) == [shown["event_id"]]  # the receiver keeps it once


def test_get_run_shows_a_pending_delivery_with_the_receivers_answer(
    make_service: ServiceFactory, receiver: Receiver
) -> None:
    receiver.always = 503
    service = make_service(webhooks=_settings())
    run = service.run({**REVIEW, "webhook": receiver.url}).json()
    shown = _until(
        lambda: _delivery(service.client, run["run_id"]), lambda d: d.get("attempts", 0) >= 2
    )
    assert shown["status"] == "pending" and shown["last_status_code"] == 503
    assert shown["last_error"] == "the receiver answered 503"
    assert shown["next_attempt_at"] is not None and shown["delivered_at"] is None
    receiver.always = 200
    _until(
        lambda: _delivery(service.client, run["run_id"]), lambda d: d.get("status") == "delivered"
    )


def test_a_failed_run_is_posted_with_its_error(
    make_service: ServiceFactory, receiver: Receiver
) -> None:
    service = make_service(webhooks=_settings())
    failed = service.run(
        {
            **REVIEW,
            "model": "test:fail_first=invalid_arguments+invalid_arguments",
            "webhook": receiver.url,
        }
    ).json()
    assert failed["status"] == "failed"
    [got] = receiver.wait_for(1)
    assert got.body["event"] == "run.failed" and got.body["run_id"] == failed["run_id"]
    assert got.body["error"]["type"] == "output_schema_validation_failed"
    assert "result_data" not in got.body


def test_a_queued_run_cancelled_is_posted_with_its_error(
    make_service: ServiceFactory, receiver: Receiver
) -> None:
    # No runner on this database: the run stays queued until the cancel.
    idle = make_service(webhooks=_settings(), workers=0)
    queued = idle.client.post("/runs", json={**REVIEW, "webhook": receiver.url}).json()
    assert idle.client.post(f"/runs/{queued['run_id']}/cancel").status_code == 200
    [got] = receiver.wait_for(1)
    cancelled = got.body
    assert cancelled["event"] == "run.cancelled" and cancelled["run_id"] == queued["run_id"]
    assert cancelled["status"] == "cancelled" and cancelled["error"]["type"] == "cancelled"


def _hooked_agent(directory: Path, webhook: str) -> None:
    """Write an agent whose file names a webhook, beside the test fleet."""
    folder = directory / "agents" / "hooked"
    folder.mkdir(parents=True)
    (folder / "agent.yml").write_text(
        f"id: hooked\nsystem_prompt: You write short answers.\nwebhook: {webhook}\n"
    )


def test_an_agent_files_webhook_gets_its_runs_unless_a_run_names_its_own(
    tmp_path: Path, make_service: ServiceFactory, receiver: Receiver
) -> None:
    _hooked_agent(tmp_path, receiver.url)
    service = make_service(webhooks=_settings())
    run = service.run({"agent_name": "hooked", "prompt": "Say hi"}).json()
    assert run["status"] == "completed" and run["webhook"] == receiver.url
    [got] = receiver.wait_for(1)
    assert got.signed and got.body["run_id"] == run["run_id"]
    assert isinstance(got.body["result_text"], str) and "result_data" not in got.body
    other = Receiver(SECRET)
    try:
        own = service.run({"agent_name": "hooked", "prompt": "Again", "webhook": other.url})
        assert other.wait_for(1)[0].body["run_id"] == own.json()["run_id"]
        assert len(receiver.deliveries) == 1
    finally:
        other.close()


def test_an_agent_files_webhook_on_a_service_without_a_secret_is_refused_400(
    tmp_path: Path, make_service: ServiceFactory, receiver: Receiver
) -> None:
    _hooked_agent(tmp_path, receiver.url)
    service = make_service()
    response = service.client.post("/runs", json={"agent_name": "hooked", "prompt": "Say hi"})
    assert response.status_code == 400 and response.json()["error"] == "WebhooksNotConfigured"
    assert "the webhook of agent 'hooked'" in response.json()["message"]
    assert service.run({**REVIEW}).json()["status"] == "completed"  # other agents still run


def test_a_run_without_a_webhook_has_no_delivery(make_service: ServiceFactory) -> None:
    service = make_service(webhooks=_settings())
    run = service.run(REVIEW).json()
    shown = service.client.get(f"/runs/{run['run_id']}").json()
    assert shown["webhook"] is None and shown["webhook_delivery"] is None


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1/x", "file:///etc/passwd", "http://", "127.0.0.1:8000/hook", "http://h:x/"],
)
def test_a_webhook_that_is_not_an_http_url_is_refused_400(
    make_service: ServiceFactory, url: str
) -> None:
    service = make_service(webhooks=_settings())
    response = service.client.post("/runs", json={**REVIEW, "webhook": url})
    assert response.status_code == 400
    assert response.json()["error"] == "InvalidWebhook" and url in response.json()["message"]
    assert service.client.get("/runs").json()["items"] == []


def test_webhook_allow_refuses_other_hosts_400(
    make_service: ServiceFactory, receiver: Receiver
) -> None:
    service = make_service(webhooks=_settings(allow=frozenset({"127.0.0.1"})))
    refused = service.client.post(
        "/runs", json={**REVIEW, "webhook": "http://169.254.169.254/latest/meta-data"}
    )
    assert refused.status_code == 400 and refused.json()["error"] == "InvalidWebhook"
    assert "host '169.254.169.254' is not allowed" in refused.json()["message"]
    assert service.run({**REVIEW, "webhook": receiver.url}).json()["status"] == "completed"
    assert receiver.wait_for(1)[0].signed


def test_a_webhook_on_a_service_without_a_secret_is_refused_400(
    make_service: ServiceFactory, receiver: Receiver
) -> None:
    service = make_service()
    response = service.client.post("/runs", json={**REVIEW, "webhook": receiver.url})
    assert response.status_code == 400
    assert response.json()["error"] == "WebhooksNotConfigured"
    assert "--webhook-secret" in response.json()["message"]


def test_two_services_on_one_database_deliver_each_event_once(
    tmp_path: Path, database: str, receiver: Receiver
) -> None:
    write_fleet(tmp_path / "agents")
    env = {"AGENTSHAPE_WEBHOOK_SECRET": SECRET}
    first, url = serve(tmp_path, database, env, "--model", "test")
    second, _ = serve(tmp_path, database, env, "--model", "test", "--workers", "0")
    try:
        runs = [
            httpx.post(f"{url}/runs", json={**REVIEW, "webhook": receiver.url}).json()["run_id"]
            for _ in range(12)
        ]
        for run_id in runs:
            _until(
                lambda run_id=run_id: httpx.get(f"{url}/runs/{run_id}").json(),
                lambda run: (run["webhook_delivery"] or {}).get("status") == "delivered",
            )
    finally:
        assert first.stop() == 0
        assert second.stop() == 0
    ids = [d.headers["x-agentshape-event-id"] for d in receiver.deliveries]
    assert len(ids) == len(set(ids)) == 12 and all(d.signed for d in receiver.deliveries)
    assert sorted(d.body["run_id"] for d in receiver.deliveries) == sorted(runs)


def test_retries_back_off_doubling_up_to_an_hour() -> None:
    assert [retry_delay(n, 1.0) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert retry_delay(40, 1.0) == 3600.0


def test_a_delivery_pending_when_serve_stops_is_delivered_after_a_restart(
    tmp_path: Path, database: str, receiver: Receiver
) -> None:
    write_fleet(tmp_path / "agents")
    receiver.always = 503
    env = {"AGENTSHAPE_WEBHOOK_SECRET": SECRET}
    first, url = serve(tmp_path, database, env, "--model", "test")
    try:
        first.read_until("webhooks:")
        assert "webhooks: signed, to any host" in first.lines[-1]
        run = httpx.post(
            f"{url}/runs", params={"wait": 30}, json={**REVIEW, "webhook": receiver.url}
        ).json()
        assert run["status"] == "completed"
        receiver.wait_for(1)
    finally:
        assert first.stop() == 0
    receiver.always = 200
    second, url = serve(tmp_path, database, env, "--model", "test")
    try:
        shown = _until(
            lambda: httpx.get(f"{url}/runs/{run['run_id']}").json()["webhook_delivery"],
            lambda d: d["status"] == "delivered",
        )
    finally:
        assert second.stop() == 0
    taken = [d for d in receiver.deliveries if d.status == 200]
    assert len(taken) == 1 and taken[0].signed and taken[0].body["run_id"] == run["run_id"]
    assert taken[0].headers["x-agentshape-event-id"] == shown["event_id"]
    assert shown["attempts"] >= 2 and list(receiver.events) == [shown["event_id"]]


def test_serve_webhook_allow_refuses_other_hosts_400(
    tmp_path: Path, database: str, receiver: Receiver
) -> None:
    write_fleet(tmp_path / "agents")
    process, url = serve(
        tmp_path,
        database,
        {},
        "--model",
        "test",
        "--webhook-secret",
        SECRET,
        "--webhook-allow",
        "hooks.example.com",
        "--webhook-allow",
        "127.0.0.1",
    )
    try:
        process.read_until("webhooks:")
        assert "signed, to 127.0.0.1, hooks.example.com" in process.lines[-1]
        refused = httpx.post(f"{url}/runs", json={**REVIEW, "webhook": "http://localhost:9/hook"})
        assert refused.status_code == 400 and refused.json()["error"] == "InvalidWebhook"
        run = httpx.post(
            f"{url}/runs", params={"wait": 30}, json={**REVIEW, "webhook": receiver.url}
        ).json()
        assert receiver.wait_for(1)[0].body["run_id"] == run["run_id"]
        assert receiver.deliveries[0].signed
    finally:
        assert process.stop() == 0
