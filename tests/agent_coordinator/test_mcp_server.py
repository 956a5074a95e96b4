"""agentshape as an MCP server, driven by the ``mcp`` SDK's own client over stdio and HTTP.

Over stdio the test starts ``python -m agentshape mcp`` as a desktop client would; over
streamable HTTP it talks to ``/mcp`` of the real service (uvicorn on a loopback port), whose
sessions the HTTP API then shows.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from agent_core import SchemaRegistry
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import REVIEW_SCHEMA, write_fleet
from tests.fake_llm import FakeLLM, delayed, openai_tool_call

pytest.importorskip("mcp", reason="the mcp SDK is not installed (pip install 'agentshape[mcp]')")

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent, Tool

ROOT = Path(__file__).resolve().parents[2]
COUNT = {
    "type": "object",
    "required": ["files", "lines"],
    "properties": {"files": {"type": "integer"}, "lines": {"type": "integer"}},
    "additionalProperties": False,
}
INVALID = {"summary": "", "approval": "maybe"}
VALID = {"summary": "Subtracts instead of adding.", "approval": "request_changes"}
REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}


def _env(fake_llm: FakeLLM) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "sk-test-key-0000000000000000",
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
    }


@asynccontextmanager
async def stdio_session(
    tmp_path: Path, *, model: str = "test", env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """Start ``python -m agentshape mcp`` over stdio as a desktop client does, and connect."""
    fleet = write_fleet(tmp_path / "agents")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "agentshape",
            "mcp",
            "--agents-dir",
            str(fleet),
            "--database",
            str(tmp_path / "coordinator.db"),
            "--registry",
            str(tmp_path / "schemas.db"),
            "--model",
            model,
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        cwd=str(tmp_path),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    """Connect to a streamable-HTTP MCP endpoint with the SDK's client."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _conforms(tool: Tool, result: CallToolResult) -> dict[str, Any]:
    """Check a result's structured content against the tool's declared ``outputSchema``."""
    assert tool.output_schema is not None and result.structured_content is not None
    jsonschema.Draft202012Validator(tool.output_schema).validate(result.structured_content)
    return result.structured_content


def _error(result: CallToolResult) -> dict[str, Any]:
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent)
    body: dict[str, Any] = json.loads(block.text)
    return body


async def test_stdio_tools_declare_output_schemas_and_runs_are_validated(
    tmp_path: Path,
) -> None:
    SchemaRegistry(tmp_path / "schemas.db").add("code-count", COUNT)
    async with stdio_session(tmp_path) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == {
            "start_agent_session",
            "resume_agent_session",
            "get_session_result",
            "list_agents",
            "list_schemas",
        }
        assert all(tool.output_schema for tool in tools.values())
        started = tools["start_agent_session"].input_schema
        assert started["required"] == ["agent_name"]

        inline = await session.call_tool(
            "start_agent_session",
            {"agent_name": "writer", "prompt": "Count the files.", "output_schema": COUNT},
        )
        assert not inline.is_error
        body = _conforms(tools["start_agent_session"], inline)
        assert body["status"] == "completed"
        assert set(body["result_data"]) == {"files", "lines"}
        assert body["validated_output"] == body["result_data"]
        assert body["schema_validation"]["valid"] is True

        named = await session.call_tool(
            "start_agent_session",
            {"agent_name": "writer", "prompt": "Count again.", "output_schema_name": "code-count"},
        )
        named_body = _conforms(tools["start_agent_session"], named)
        assert named_body["schema_validation"]["schema_name"] == "code-count"

        resumed = await session.call_tool(
            "resume_agent_session",
            {"session_id": body["session_id"], "prompt": "And the tests?"},
        )
        _conforms(tools["resume_agent_session"], resumed)
        assert resumed.structured_content is not None
        assert resumed.structured_content["session_id"] == body["session_id"]
        assert resumed.structured_content["run_id"] != body["run_id"]
        assert set(resumed.structured_content["result_data"]) == {"files", "lines"}

        again = await session.call_tool("get_session_result", {"session_id": body["session_id"]})
        assert _conforms(tools["get_session_result"], again) == resumed.structured_content

        agents = await session.call_tool("list_agents", {})
        names = [agent["name"] for agent in _conforms(tools["list_agents"], agents)["agents"]]
        assert names == sorted(["reviewer", "writer", "orchestrator", "summariser"])
        schemas = await session.call_tool("list_schemas", {})
        listed = _conforms(tools["list_schemas"], schemas)["schemas"]
        assert [s["name"] for s in listed] == ["code-count"]


async def test_stdio_resources_are_blueprints_and_registered_schemas(tmp_path: Path) -> None:
    SchemaRegistry(tmp_path / "schemas.db").add("code-count", COUNT)
    async with stdio_session(tmp_path) as session:
        uris = {str(resource.uri) for resource in (await session.list_resources()).resources}
        assert {"agent://reviewer", "agent://writer", "schema://code-count"} <= uris
        blueprint = (await session.read_resource("agent://reviewer")).contents[0]
        assert json.loads(getattr(blueprint, "text", ""))["output_schema"] == REVIEW_SCHEMA
        schema = (await session.read_resource("schema://code-count")).contents[0]
        assert json.loads(getattr(schema, "text", "")) == COUNT


async def test_stdio_bad_requests_are_tool_errors_with_the_api_codes(tmp_path: Path) -> None:
    async with stdio_session(tmp_path) as session:
        unknown = _error(
            await session.call_tool("start_agent_session", {"agent_name": "writr", "prompt": "x"})
        )
        assert unknown["error"] == "AgentNotFound" and unknown["status_code"] == 404
        assert unknown["suggestion"] == "writer"

        no_schema = _error(
            await session.call_tool(
                "start_agent_session",
                {"agent_name": "writer", "prompt": "x", "output_schema_name": "missing"},
            )
        )
        assert no_schema["error"] == "SchemaNotFound"

        invalid = _error(
            await session.call_tool(
                "start_agent_session",
                {"agent_name": "writer", "prompt": "x", "output_schema": {"type": "nope"}},
            )
        )
        assert invalid["error"] == "InvalidSchema" and invalid["status_code"] == 400

        parameters = _error(
            await session.call_tool(
                "start_agent_session",
                {"agent_name": "reviewer", "prompt": "x", "parameters": {"focus": "all"}},
            )
        )
        assert parameters["error"] == "InputValidationFailed"
        assert {d["path"] for d in parameters["details"]} == {"$", "$.focus"}

        own = _error(
            await session.call_tool(
                "start_agent_session",
                {**REVIEW, "output_schema": COUNT},
            )
        )
        assert own["error"] == "ConfigError"

        session_missing = _error(
            await session.call_tool(
                "resume_agent_session", {"session_id": "ses_missing", "prompt": "x"}
            )
        )
        assert session_missing["error"] == "SessionNotFound"


async def test_stdio_failed_run_is_an_error_result_with_the_failure_body(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", INVALID))
    async with stdio_session(tmp_path, model="openai:gpt-test", env=_env(fake_llm)) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        result = await session.call_tool("start_agent_session", REVIEW)
    assert result.is_error
    body = _conforms(tools["start_agent_session"], result)
    assert body["status"] == "failed"
    error = body["error"]
    assert error["type"] == "output_schema_validation_failed"
    assert "$.summary: '' should be non-empty" in error["validation_errors"]
    assert error["last_output"] == INVALID
    assert body["schema_validation"]["valid"] is False
    assert body["schema_validation"]["retry_count"] == 1


async def test_http_sessions_are_the_services_sessions(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(
        openai_tool_call("submit_result", INVALID), openai_tool_call("submit_result", VALID)
    )
    service = make_service(env=_env(fake_llm), model="openai:gpt-test", mcp=True)
    async with http_session(f"{service.url}/mcp") as session:
        result = await session.call_tool("start_agent_session", REVIEW)
    body = result.structured_content
    assert not result.is_error and body is not None
    assert body["result_data"] == VALID
    assert body["schema_validation"] == {
        "valid": True,
        "schema_name": None,
        "retry_count": 1,
        "errors": [],
        "schema_source": "agent",
        "unused_schema_name": None,
    }
    over_http = service.client.get(f"/sessions/{body['session_id']}/result").json()
    assert over_http == body
    assert service.client.get(f"/sessions/{body['session_id']}").json()["agent_name"] == "reviewer"


async def test_http_failure_reports_progress_first(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", INVALID), 0.8))
    service = make_service(env=_env(fake_llm), model="openai:gpt-test", mcp=True)
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    async with http_session(f"{service.url}/mcp") as session:
        result = await session.call_tool(
            "start_agent_session", REVIEW, progress_callback=on_progress
        )
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"]["type"] == "output_schema_validation_failed"
    assert progress and progress[0][1] is not None and "run_" in progress[0][1]
    assert any("last event: " in (message or "") for _, message in progress[1:]), progress
    assert [done for done, _ in progress] == sorted({done for done, _ in progress})


async def test_http_cancelling_the_call_cancels_the_run(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 30))
    service = make_service(env=_env(fake_llm), model="openai:gpt-test", mcp=True)
    async with http_session(f"{service.url}/mcp") as session:
        with pytest.raises(Exception, match=r"(?i)time"):
            await session.call_tool("start_agent_session", REVIEW, read_timeout_seconds=1.5)
    deadline = time.monotonic() + 15
    status = None
    while time.monotonic() < deadline:
        runs = service.client.get("/runs").json()["items"]
        status = runs[0]["status"] if runs else None
        if status == "cancelled":
            break
        time.sleep(0.2)
    assert status == "cancelled"


def test_http_endpoint_needs_the_services_token(make_service: ServiceFactory) -> None:
    service = make_service(token="s3cret-token", mcp=True)
    refused = httpx.post(f"{service.url}/mcp", json={}, timeout=10)
    assert refused.status_code == 401
    assert refused.json()["error"] == "Unauthorized"
    wrong = httpx.post(
        f"{service.url}/mcp", json={}, headers={"authorization": "Bearer nope"}, timeout=10
    )
    assert wrong.status_code == 401


async def test_http_with_the_token_lists_the_fleet(make_service: ServiceFactory) -> None:
    service = make_service(token="s3cret-token", mcp=True)
    async with http_session(f"{service.url}/mcp", token="s3cret-token") as session:
        agents = await session.call_tool("list_agents", {})
    assert agents.structured_content is not None
    assert len(agents.structured_content["agents"]) == 4


@pytest.fixture
def mcp_http_process(tmp_path: Path) -> Iterator[str]:
    """``agentshape mcp --http`` in its own process; yields its /mcp URL.

    It binds a free port itself (``--port 0``) and says which: a port found free here could be
    taken by another test before the process binds it.
    """
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentshape",
            "mcp",
            "--http",
            "--port",
            "0",
            "--agents-dir",
            str(write_fleet(tmp_path / "agents")),
            "--model",
            "test",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    banner = process.stdout.readline()
    try:
        found = re.search(r"http://127\.0\.0\.1:\d+/mcp", banner)
        assert found is not None, banner
        yield found.group(0)
    finally:
        process.terminate()
        process.wait(timeout=20)
        process.stdout.close()


async def test_mcp_http_command_serves_the_tools(mcp_http_process: str) -> None:
    async with http_session(mcp_http_process) as session:
        result = await session.call_tool(
            "start_agent_session",
            {"agent_name": "summariser", "prompt": "Summarise: the build is green."},
        )
    assert not result.is_error and result.structured_content is not None
    assert set(result.structured_content["result_data"]) == {"summary"}


def test_mcp_http_command_answers_ready_until_its_database_file_is_removed(
    mcp_http_process: str, tmp_path: Path
) -> None:
    root = mcp_http_process.removesuffix("/mcp")
    assert httpx.get(f"{root}/ready").json() == {"status": "ready"}
    database = tmp_path / ".agentshape" / "coordinator.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    ready = httpx.get(f"{root}/ready")
    assert ready.status_code == 503
    assert ready.json()["error"] == "StoreUnavailable"
    assert f"the database file {database} was removed" in ready.json()["message"]
    assert httpx.get(f"{root}/health").json() == {"status": "ok"}


def test_stdio_without_the_models_key_says_so_at_start(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path / "agents")
    keys = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENTSHAPE_MODEL")
    env = {name: value for name, value in os.environ.items() if name not in keys}
    command = [
        *(sys.executable, "-m", "agentshape", "mcp", "--agents-dir", str(fleet)),
        *("--database", str(tmp_path / "coordinator.db")),
        *("--registry", str(tmp_path / "schemas.db"), "--model", "openai:gpt-test"),
    ]

    # Standard input closed at once: the client went away, so the server stops after its banner.
    done = subprocess.run(
        command,
        input="",
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )

    assert done.stdout == ""  # the protocol's, untouched
    assert "agentshape mcp: serving MCP over stdio" in done.stderr
    warning = next(line for line in done.stderr.splitlines() if "warning:" in line)
    assert "model 'openai:gpt-test' needs OPENAI_API_KEY to be set" in warning
    assert "reviewer" in warning


def test_stdio_with_the_models_key_starts_without_a_warning(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path / "agents")
    command = [
        *(sys.executable, "-m", "agentshape", "mcp", "--agents-dir", str(fleet)),
        *("--database", str(tmp_path / "coordinator.db")),
        *("--registry", str(tmp_path / "schemas.db"), "--model", "openai:gpt-test"),
    ]

    done = subprocess.run(
        command,
        input="",
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-test-key"},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )

    assert "agentshape mcp: serving MCP over stdio" in done.stderr
    assert "warning" not in done.stderr
