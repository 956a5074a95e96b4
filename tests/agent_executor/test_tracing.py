"""OpenTelemetry spans of runs: names, parents and attributes, in memory and over OTLP/HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra (opentelemetry-sdk)")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode

from agent_executor import Agent, MemoryAnalytics
from agent_executor._tracing import CAPTURE_CONTENT_ENV, tracer_for
from tests.fake_llm import FakeLLM, openai_tool_call

SCHEMA = {
    "type": "object",
    "required": ["summary", "score"],
    "properties": {"summary": {"type": "string", "minLength": 1}, "score": {"type": "integer"}},
    "additionalProperties": False,
}
VALID = {"summary": "Adds a retry.", "score": 3}
INVALID = {"summary": "", "score": "three", "token": "sk-live-0123456789abcdefghijklmnop"}


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _agent(fake_llm: FakeLLM, provider: TracerProvider, tmp_path: Path, **env: str) -> Agent:
    return Agent(
        output_schema=SCHEMA,
        system_prompt="Review the change in notes.txt.",
        tools=["fs:read"],
        model="openai:gpt-test",
        workspace=tmp_path,
        env={"OPENAI_API_KEY": "sk-test-key", "OPENAI_BASE_URL": fake_llm.openai_base_url, **env},
        analytics=MemoryAnalytics(),
        tracer_provider=provider,
    )


def _by_name(finished: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in finished:
        named.setdefault(span.name, []).append(span)
    return named


async def test_a_rescued_run_with_an_input_tool(
    fake_llm: FakeLLM, spans: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
) -> None:
    provider, exporter = spans
    (tmp_path / "notes.txt").write_text("retry added\n")
    fake_llm.respond(
        openai_tool_call("fs_read", {"path": "notes.txt"}, call_id="c1"),
        openai_tool_call("submit_result", INVALID, call_id="c2"),
        openai_tool_call("submit_result", VALID, call_id="c3"),
    )

    result = await _agent(fake_llm, provider, tmp_path).run("Review it.")

    assert result.ok and result.retries == 1
    named = _by_name(exporter.get_finished_spans())
    (run,) = named["invoke_agent agent"]
    chats = named["chat gpt-test"]
    (tool,) = named["execute_tool fs:read"]
    assert len(chats) == 3
    assert run.parent is None and run.context is not None
    for child in [*chats, tool]:
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert run.start_time is not None and child.start_time is not None
        assert child.start_time >= run.start_time
    attributes = dict(run.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "agent"
    assert attributes["gen_ai.request.model"] == "gpt-test"
    assert attributes["agentshape.status"] == "completed"
    assert attributes["agentshape.retry_count"] == 1
    assert len(str(attributes["agentshape.contract.hash"])) >= 16
    assert attributes["gen_ai.usage.input_tokens"] == result.result.usage.input_tokens
    assert [event.name for event in run.events] == [
        "agentshape.attempt",
        "agentshape.retry",
        "agentshape.attempt",
    ]
    assert dict(tool.attributes or {})["gen_ai.tool.name"] == "fs:read"
    assert dict(chats[0].attributes or {})["gen_ai.response.finish_reasons"] == ("tool_calls",)
    everything = json.dumps([dict(s.attributes or {}) for s in named["invoke_agent agent"]])
    everything += json.dumps([dict(e.attributes or {}) for e in run.events])
    assert "Adds a retry" not in everything and "sk-live" not in everything  # no content


async def test_a_failed_run_is_an_error_span(
    fake_llm: FakeLLM, spans: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
) -> None:
    provider, exporter = spans
    fake_llm.respond_always(openai_tool_call("submit_result", INVALID))

    result = await _agent(fake_llm, provider, tmp_path).run("Review it.")

    assert not result.ok
    (run,) = _by_name(exporter.get_finished_spans())["invoke_agent agent"]
    assert run.status.status_code is StatusCode.ERROR
    attributes = dict(run.attributes or {})
    assert attributes["error.type"] == "output_schema_validation_failed"
    assert attributes["agentshape.status"] == "failed"
    assert attributes["agentshape.retry_count"] == 1


async def test_content_is_captured_only_when_asked_and_redacted(
    fake_llm: FakeLLM, spans: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
) -> None:
    provider, exporter = spans
    fake_llm.respond(
        openai_tool_call("submit_result", INVALID), openai_tool_call("submit_result", VALID)
    )
    agent = _agent(fake_llm, provider, tmp_path, **{CAPTURE_CONTENT_ENV: "true"})

    await agent.run("Review it.")

    (run,) = _by_name(exporter.get_finished_spans())["invoke_agent agent"]
    first = dict(run.events[0].attributes or {})
    raw = str(first["agentshape.attempt.raw_output"])
    assert '"summary": ""' in raw and "sk-live-0123456789" not in raw
    assert any("$.summary" in error for error in first["agentshape.attempt.errors"])  # type: ignore[union-attr]


def test_no_tracer_without_a_configured_provider() -> None:
    assert tracer_for(None) is None  # the API's default proxy provider is no provider


class _Collector(BaseHTTPRequestHandler):
    bodies: list[bytes]

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.bodies.append(self.rfile.read(length))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_spans_reach_an_otlp_http_collector(fake_llm: FakeLLM, tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    handler = type("Collector", (_Collector,), {"bodies": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    provider = TracerProvider()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    fake_llm.respond(openai_tool_call("submit_result", VALID))
    try:
        result = await _agent(fake_llm, provider, tmp_path).run("Review it.")
        provider.force_flush()
    finally:
        provider.shutdown()
        server.shutdown()
        server.server_close()

    assert result.ok
    names = []
    for body in handler.bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                assert scope.scope.name == "agentshape"
                names += [span.name for span in scope.spans]
    assert sorted(names) == ["chat gpt-test", "invoke_agent agent"]


LATE_PROVIDER = """
import asyncio, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from agent_executor._agent import Agent

schema = {"type": "object", "required": ["score"], "properties": {"score": {"type": "integer"}}}
env = {"OPENAI_API_KEY": "sk-test-key", "OPENAI_BASE_URL": sys.argv[1]}
# As in an app whose agents are module globals: the agent is built before the provider is set.
agent = Agent(output_schema=schema, model="openai:gpt-test", env=env, name="early")
untraced = asyncio.run(agent.run("Score it."))
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
traced = asyncio.run(agent.run("Score it."))
print(untraced.ok, traced.ok, sorted(span.name for span in exporter.get_finished_spans()))
"""


def test_a_provider_set_after_the_agent_was_built_is_used(fake_llm: FakeLLM) -> None:
    # A process of its own: the global provider can be set only once a process.
    fake_llm.respond_always(openai_tool_call("submit_result", {"score": 3}))

    done = subprocess.run(
        [sys.executable, "-c", LATE_PROVIDER, fake_llm.openai_base_url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    # The run before the provider was set made no spans; the one after made them all.
    assert done.stdout.strip() == "True True ['chat gpt-test', 'invoke_agent early']"
