"""``POST /runs`` through the lean path answers exactly as the FastAPI app does, over real HTTP.

Two services with the same fleet, token and limits get the same requests in the same order: the
app as served (:class:`LeanRunCreate` in front of FastAPI), and the FastAPI app alone (every
request then passes its host guard, body limit and error middleware and reaches the route). Their
answers are the same, status, headers and body, once each service's own run and session ids,
timestamps and folders are replaced by placeholders (ids numbered in order of appearance, so a
repeated ``Idempotency-Key`` must give back the same run on both). That holds for the rules the
lean path applies itself: the host guard's 421 and 403, the body limit's 413, the token's 401, the
route's 404, 409, 422 and 503, and a 500 for an unexpected error. The lean path does not touch the
store's code, so SQLite stands for both stores here. With OpenTelemetry configured, every
``POST /runs`` is FastAPI's to answer, so that it records the request's span.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_coordinator._api.app import create_app
from agent_coordinator._service.services import Limits
from agent_coordinator._store.records import RunInput
from tests.agent_coordinator import harness
from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import serve
from tests.agent_coordinator.webhook_receiver import Delivery, Receiver

TOKEN = "s3cret-token"
MAX_BODY = 4096
REVIEW = {"agent_name": "reviewer", "parameters": {"pr_url": "https://example.com/pr/1"}}
WRITE = {"agent_name": "writer", "prompt": "Say hi."}

_IDS = re.compile(r"\b(run|ses)_[0-9a-f]{28}\b")
_TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")


@dataclass
class Answers:
    """One service's answers, as a user sees them, ids and times replaced by placeholders."""

    service: harness.Service
    root: Path
    ids: dict[str, str] = field(default_factory=dict)
    first_session: str = ""

    def normalized(self, text: str) -> str:
        def placeholder(found: re.Match[str]) -> str:
            return self.ids.setdefault(found[0], f"<{found[1]} {len(self.ids)}>")

        text = text.replace(str(self.root), "<root>")
        return _TIMES.sub("<time>", _IDS.sub(placeholder, text))

    def send(self, request: Request) -> tuple[int, dict[str, str], str]:
        given = {"authorization": f"Bearer {TOKEN}", **request.headers}
        headers = {name: value for name, value in given.items() if value is not None}
        content = request.content(self.first_session)
        response = httpx.post(
            f"{self.service.url}/runs{request.query}",
            content=content,
            headers=headers,
            timeout=30,
        )
        if not self.first_session and response.status_code == 200:
            self.first_session = response.json()["session_id"]
        assert response.headers["content-length"] == str(len(response.content))
        shown = {
            name: value
            for name, value in response.headers.items()
            if name not in ("date", "content-length")
        }
        return response.status_code, shown, self.normalized(response.text)


def _json(body: object) -> Callable[[str], bytes]:
    return lambda _session: httpx.Request("POST", "/", json=body).content


@dataclass
class Request:
    """A ``POST /runs`` to send to both services."""

    name: str
    status: int
    error: str | None = None
    query: str = "?wait=20"
    content: Callable[[str], bytes | Iterator[bytes]] = field(default_factory=lambda: _json(WRITE))
    headers: dict[str, str | None] = field(
        default_factory=lambda: {"content-type": "application/json"}
    )


def _nested(depth: int) -> Callable[[str], bytes]:
    value = "[" * depth + "]" * depth
    body = f'{{"agent_name": "reviewer", "parameters": {{"pr_url": "u", "n": {value}}}}}'
    return lambda _session: body.encode()


def _resume(session_id: str) -> bytes:
    return httpx.Request(
        "POST", "/", json={"type": "resume_session", "session_id": session_id, "prompt": "More."}
    ).content


def _sized(size: int) -> Callable[[str], bytes]:
    """A valid start of ``size`` bytes exactly."""
    empty = len(httpx.Request("POST", "/", json={"agent_name": "writer", "prompt": ""}).content)
    return _json({"agent_name": "writer", "prompt": "x" * (size - empty)})


FAILING_PROMPT = "Fail unexpectedly."
"""A run request whose check raises an error the service does not expect (see ``services``)."""

REQUESTS = [
    Request("a good run, waited for", 200, content=_json(REVIEW)),
    Request("a good run, not waited for", 202, query=""),
    Request("wait=0", 202, query="?wait=0"),
    Request("wait as a decimal", 200, query="?wait=20.5"),
    Request("wait as FastAPI alone reads it", 200, query="?wait=2e1"),
    Request("a resumed session", 200, content=_resume),
    Request(
        "a key, first", 200, headers={"content-type": "application/json", "idempotency-key": "k1"}
    ),
    Request(
        "the key again", 200, headers={"content-type": "application/json", "idempotency-key": "k1"}
    ),
    Request(
        "the key with another body",
        409,
        "IdempotencyConflict",
        content=_json(REVIEW),
        headers={"content-type": "application/json", "idempotency-key": "k1"},
    ),
    Request(
        "a key too long",
        422,
        "InvalidRequest",
        headers={"content-type": "application/json", "idempotency-key": "k" * 201},
    ),
    Request(
        "a key of the longest length",
        200,
        headers={"content-type": "application/json", "idempotency-key": "k" * 200},
    ),
    Request(
        "no token",
        401,
        "Unauthorized",
        headers={"content-type": "application/json", "authorization": None},
    ),
    Request(
        "a wrong token",
        401,
        "Unauthorized",
        headers={"content-type": "application/json", "authorization": "Bearer s3cret-tokem"},
    ),
    Request(
        "a wrong token and an invalid body",
        401,
        "Unauthorized",
        content=_json({"agent_name": "writer", "prompt": ""}),
        headers={"content-type": "application/json", "authorization": "Bearer nope"},
    ),
    Request("a field unknown", 422, "InvalidRequest", content=_json({**WRITE, "colour": "red"})),
    Request(
        "an empty prompt",
        422,
        "InvalidRequest",
        content=_json({"agent_name": "writer", "prompt": ""}),
    ),
    Request("parameters nested 150 deep", 200, content=_nested(150)),
    Request("parameters nested 300 deep", 422, "InvalidRequest", content=_nested(300)),
    Request(
        "parameters nested deeper than Python parses", 400, "BadRequest", content=_nested(1100)
    ),
    Request("a body that is not JSON", 422, "InvalidRequest", content=lambda _s: b"{not json"),
    Request("no body", 422, "InvalidRequest", content=lambda _s: b""),
    Request("a body that is null", 422, "InvalidRequest", content=lambda _s: b"null"),
    Request(
        "start_session without an agent", 422, "InvalidRequest", content=_json({"prompt": "x"})
    ),
    Request("wait past the bound", 422, "InvalidRequest", query="?wait=121"),
    Request("wait negative", 422, "InvalidRequest", query="?wait=-1"),
    Request("wait not a number", 422, "InvalidRequest", query="?wait=soon"),
    Request("wait given twice", 200, query="?wait=1&wait=20"),
    Request("another query beside wait", 200, query="?wait=20&colour=red"),
    Request(
        "a body past the limit",
        413,
        "PayloadTooLarge",
        content=_json({"agent_name": "writer", "prompt": "x" * MAX_BODY}),
    ),
    Request("a body of exactly the limit", 200, content=_sized(MAX_BODY)),
    Request("a body one byte past the limit", 413, "PayloadTooLarge", content=_sized(MAX_BODY + 1)),
    Request(
        "a chunked body past the limit",
        413,
        "PayloadTooLarge",
        content=lambda _s: iter([b'{"agent_name": "writer", ', b'"prompt": "' + b"x" * MAX_BODY]),
    ),
    Request(
        "a chunked body",
        200,
        content=lambda _s: iter([b'{"agent_name": "writer", ', b'"prompt": "hi"}']),
    ),
    Request("an unknown agent", 404, content=_json({"agent_name": "nobody", "prompt": "x"})),
    Request(
        "an unknown session",
        404,
        "SessionNotFound",
        content=_json(
            {"type": "resume_session", "session_id": "ses_0000000000000000", "prompt": "x"}
        ),
    ),
    Request(
        "JSON with a charset", 200, headers={"content-type": "application/json; charset=utf-8"}
    ),
    Request("no content type", 422, "InvalidRequest", headers={}),
    Request("text/plain", 422, "InvalidRequest", headers={"content-type": "text/plain"}),
    Request(
        "a foreign Host",
        421,
        "HostNotAllowed",
        headers={"content-type": "application/json", "host": "evil.example"},
    ),
    Request(
        "a Host spelled otherwise",
        200,
        headers={"content-type": "application/json", "host": "LOCALHOST.:8600"},
    ),
    Request(
        "no Host", 421, "HostNotAllowed", headers={"content-type": "application/json", "host": ""}
    ),
    Request(
        "a same-origin browser POST",
        200,
        headers={
            "content-type": "application/json",
            "host": "localhost",
            "origin": "http://localhost",
            "sec-fetch-site": "same-origin",
        },
    ),
    Request(
        "a browser POST from another port",
        403,
        "CrossSiteRequest",
        headers={"content-type": "application/json", "origin": "http://127.0.0.1:9"},
    ),
    Request(
        "a same-site browser POST",
        403,
        "CrossSiteRequest",
        headers={"content-type": "application/json", "sec-fetch-site": "same-site"},
    ),
    Request(
        "an Origin of null",
        403,
        "CrossSiteRequest",
        headers={"content-type": "application/json", "origin": "null"},
    ),
    Request(
        "a cross-site browser POST",
        403,
        "CrossSiteRequest",
        headers={
            "content-type": "application/json",
            "origin": "https://evil.example",
            "sec-fetch-site": "cross-site",
        },
    ),
    Request(
        "an unexpected error",
        500,
        "InternalError",
        content=_json({"agent_name": "writer", "prompt": FAILING_PROMPT}),
    ),
    Request(
        "an unexpected error with a wrong token",
        401,
        "Unauthorized",
        content=_json({"agent_name": "writer", "prompt": FAILING_PROMPT}),
        headers={"content-type": "application/json", "authorization": "Bearer nope"},
    ),
]


def _without_lean_path(*args: object, **kwargs: object) -> object:
    return create_app(*args, **kwargs).app  # type: ignore[arg-type]


def _failing_on_cue(service: harness.Service, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the service's run check fail unexpectedly for :data:`FAILING_PROMPT`."""
    check = service.execution.check

    def checked(agent_name: str, wanted: RunInput) -> RunInput:
        if wanted.prompt == FAILING_PROMPT:
            raise RuntimeError("a fault the test injected")
        return check(agent_name, wanted)

    monkeypatch.setattr(service.execution, "check", checked)


@pytest.fixture
def services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Answers, Answers]]:
    settings = {"token": TOKEN, "limits": Limits(max_body_bytes=MAX_BODY)}
    lean_root, route_root = tmp_path / "lean", tmp_path / "route"
    lean_root.mkdir()
    route_root.mkdir()
    lean = harness.Service(lean_root, str(lean_root / "coordinator.db"), **settings)  # type: ignore[arg-type]
    try:
        monkeypatch.setattr(harness, "create_app", _without_lean_path)
        route = harness.Service(route_root, str(route_root / "coordinator.db"), **settings)  # type: ignore[arg-type]
        try:
            for service in (lean, route):
                _failing_on_cue(service, monkeypatch)
            yield Answers(lean, lean_root), Answers(route, route_root)
        finally:
            route.close()
    finally:
        lean.close()


def test_the_lean_path_answers_as_the_route_does(services: tuple[Answers, Answers]) -> None:
    lean, route = services
    for request in REQUESTS:
        status, headers, text = lean.send(request)
        assert (status, headers, text) == route.send(request), request.name
        assert status == request.status, (request.name, text)
        if request.error is not None:
            assert json.loads(text)["error"] == request.error, (request.name, text)
    # Last, as it leaves both services without a store: the database file removed under them.
    for answers in services:
        (answers.root / "coordinator.db").unlink()
    request = Request("a store that is gone", 503, "StoreUnavailable")
    status, headers, text = lean.send(request)
    assert (status, headers, text) == route.send(request)
    assert status == 503 and json.loads(text)["error"] == "StoreUnavailable", text


def _spans(deliveries: list[Delivery]) -> list[Span]:
    spans = []
    for delivery in deliveries:
        export = ExportTraceServiceRequest.FromString(delivery.raw)
        for resource in export.resource_spans:
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    return spans


def test_with_opentelemetry_configured_fastapi_records_every_run_request(tmp_path: Path) -> None:
    pytest.importorskip("fastapi.telemetry", reason="this FastAPI records no spans itself")
    write_fleet(tmp_path / "agents")
    collector = Receiver("unused")  # an OTLP/HTTP endpoint: it keeps what it is sent
    env = {
        "FASTAPI_OTEL_AUTO_CONFIGURE": "true",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.url,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
    }
    process, url = serve(tmp_path, str(tmp_path / "coordinator.db"), env, "--model", "test")
    try:
        answer = httpx.post(f"{url}/runs", params={"wait": 20}, json=WRITE, timeout=30)
        assert answer.status_code == 200, answer.text
        deadline = time.monotonic() + 60
        while not (found := [s for s in _spans(collector.deliveries) if s.name == "POST /runs"]):
            assert time.monotonic() < deadline, [s.name for s in _spans(collector.deliveries)]
            time.sleep(0.05)
    finally:
        assert process.stop() == 0
        collector.close()
    attributes = {a.key: a.value for a in found[0].attributes}
    assert attributes["http.route"].string_value == "/runs"
    assert attributes["http.response.status_code"].int_value == 200


class _Stamp:
    """A middleware an embedding app adds: it stamps every answer with a header."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-stamp", b"1")]
            await send(message)

        await self.app(scope, receive, stamped)


def _run_through(
    create: Callable[..., object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> httpx.Response:
    """``POST /runs?wait=`` to a service whose app ``create`` builds; return the answer."""
    monkeypatch.setattr(harness, "create_app", create)
    service = harness.Service(tmp_path, str(tmp_path / "coordinator.db"))
    try:
        return service.client.post("/runs", params={"wait": 20}, json=WRITE)
    finally:
        service.close()


def _stamped(*args: object, **kwargs: object) -> object:
    app = create_app(*args, **kwargs)  # type: ignore[arg-type]
    app.app.add_middleware(_Stamp)
    return app


def test_a_middleware_added_to_the_app_sees_every_run_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = _run_through(_stamped, tmp_path, monkeypatch)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-stamp"] == "1"


def _instrumented(provider: TracerProvider) -> Callable[..., object]:
    """A ``create_app`` whose FastAPI app OpenTelemetry instruments with ``provider`` (not set)."""

    def create(*args: object, **kwargs: object) -> object:
        app = create_app(*args, **kwargs)  # type: ignore[arg-type]
        FastAPIInstrumentor.instrument_app(app.app, tracer_provider=provider)
        return app

    return create


def test_an_app_instrumented_with_its_own_tracer_provider_records_every_run_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The provider is handed to the instrumentation, as an embedding app does, not set globally.
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    answer = _run_through(_instrumented(provider), tmp_path, monkeypatch)
    assert answer.status_code == 200, answer.text
    deadline = time.monotonic() + 30  # the span ends once the answer is sent
    while not (served := [s for s in spans.get_finished_spans() if s.kind is SpanKind.SERVER]):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert [(span.name, (span.attributes or {}).get("http.route")) for span in served] == [
        ("POST /runs", "/runs")
    ]
