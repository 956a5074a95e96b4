"""An agent whose input tools come from real MCP servers started per run over stdio.

The servers: ``mcp-server-time`` (PyPI), ``@modelcontextprotocol/server-filesystem`` (npm, run
with ``node``; installed by ``.ci/run`` or into ``$AGENTSHAPE_NPM_CACHE``), and
``mcp_test_server.py`` (written with the mcp SDK's server API) that can crash and hang.
The model is a :class:`FunctionModel` that calls the MCP tools, then ``submit_result``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_contracts import AgentConfig, ConfigError, Message, ToolCall, ToolResult
from agent_executor import Agent, FunctionModel, MemoryAnalytics
from agent_executor._providers.base import ModelTurn, ModelTurnRequest

pytest.importorskip("mcp", reason="the mcp SDK is not installed (pip install 'agentshape[mcp]')")

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def server_entry(mode: str = "ok", **fields: Any) -> dict[str, Any]:
    """The entry of the test server, running in ``mode``."""
    return {"name": "t", "command": sys.executable, "args": [SERVER, mode], **fields}


def agent(servers: list[dict[str, Any]], model: FunctionModel, **options: Any) -> Agent:
    config = AgentConfig.model_validate(
        {
            "id": "mcp-user",
            "system_prompt": "Use the tools.",
            "output_schema": SCHEMA,
            "mcp_servers": servers,
            "options": options,
        }
    )
    return Agent(config, model=model, analytics=MemoryAnalytics(), env={})


class Script:
    """A model that makes the scripted calls one turn each, then submits the tool results."""

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.calls = list(calls)
        self.tools: list[list[str]] = []
        self.results: list[ToolResult] = []

    def model(self) -> FunctionModel:
        async def turn(messages: list[Message], request: ModelTurnRequest) -> Any:
            self.tools.append([tool.name for tool in request.tools])
            self.results.extend(messages[-1].tool_results)
            if len(self.tools) > len(self.calls):
                return {"answer": " | ".join(r.content for r in self.results)}
            name, arguments = self.calls[len(self.tools) - 1]
            call = ToolCall(id=f"c{len(self.tools)}", name=name, arguments=arguments)
            return ModelTurn(tool_calls=[call])

        return FunctionModel(turn)


async def test_tools_of_real_servers_reach_the_model_and_their_results_come_back() -> None:
    script = Script(
        ("mcp__time__get_current_time", {"timezone": "UTC"}),
        ("mcp__t__add", {"a": 2, "b": 3}),
        ("mcp__t__fail", {"reason": "no"}),
    )
    time_server = {
        "name": "time",
        "command": sys.executable,
        "args": ["-m", "mcp_server_time"],
        "tools": ["get_current_time"],
    }
    result = await agent([time_server, server_entry(tools=["add", "fail"])], script.model()).run(
        "go"
    )

    assert result.status == "completed", result.error
    assert script.tools[0] == [
        "mcp__time__get_current_time",
        "mcp__t__add",
        "mcp__t__fail",
        "submit_result",
    ]
    now, added, failed = script.results
    assert json.loads(now.content)["timezone"] == "UTC" and not now.is_error
    assert json.loads(added.content) == {"sum": 5} and not added.is_error
    assert failed.is_error and "refused: no" in failed.content
    assert "refused: no" in result.result_data["answer"]  # type: ignore[index]


async def test_only_allowed_tools_are_offered_and_submit_is_forced_on_the_last_step() -> None:
    script = Script(("mcp__t__add", {"a": 1, "b": 1}))
    result = await agent([server_entry(tools=["add"])], script.model(), max_retries=0).run("go")

    assert result.status == "completed", result.error
    assert script.tools[0] == ["mcp__t__add", "submit_result"]


def test_run_sync_starts_the_servers_and_calls_their_tools() -> None:
    # run_sync starts a run off the event loop; a run with MCP servers goes on in a task of the
    # kept loop, where the servers' sessions live until the run ends.
    script = Script(("mcp__t__add", {"a": 4, "b": 5}))
    result = agent([server_entry(tools=["add"])], script.model()).run_sync("go")

    assert result.ok, result.error
    assert [json.loads(r.content) for r in script.results] == [{"sum": 9}]


async def test_a_server_that_crashes_mid_call_fails_the_run_naming_it() -> None:
    script = Script(("mcp__t__crash", {}))
    result = await agent([server_entry(tools=["crash"])], script.model()).run("go")

    assert result.status == "failed" and result.error is not None
    assert result.error.type == "mcp_server_error"
    assert "MCP server 't'" in result.error.message
    assert "about to crash" in result.error.message  # the end of its stderr


def test_listing_servers_without_the_sdk_fails_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if the SDK were not installed
    with pytest.raises(ConfigError, match=r"agentshape\[mcp\]"):
        agent([server_entry(tools=["add"])], Script().model())


def test_two_servers_with_one_name_are_refused() -> None:
    with pytest.raises(ConfigError, match="lists MCP server 't' twice"):
        agent([server_entry(tools=["add"]), server_entry(tools=["fail"])], Script().model())


async def test_a_tool_call_that_hangs_fails_the_run_after_the_call_timeout() -> None:
    script = Script(("mcp__t__hang", {}))
    servers = [server_entry(tools=["hang"], call_timeout_s=1.0)]
    result = await agent(servers, script.model()).run("go")

    assert result.error is not None and result.error.type == "mcp_server_error"
    assert "MCP server 't'" in result.error.message and "within 1.0 s" in result.error.message


async def test_a_run_that_times_out_mid_call_still_shuts_its_server_down(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = Script(("mcp__t__hang", {}))
    servers = [server_entry(tools=["hang"], env={"MCP_TEST_PID_FILE": str(pid_file)})]
    # Time enough to start the server on a loaded machine: the run is cut in the hanging call.
    result = await agent(servers, script.model(), timeout_s=10.0).run("go")

    assert result.error is not None and result.error.type == "run_timeout"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def test_a_server_that_never_starts_fails_the_run_before_any_model_call() -> None:
    script = Script()
    servers = [server_entry("hang_start", tools=["add"], start_timeout_s=1.0)]
    result = await agent(servers, script.model()).run("go")

    assert result.error is not None and result.error.type == "mcp_server_error"
    assert "did not start within 1.0 s" in result.error.message
    assert script.tools == []


async def test_a_missing_command_url_or_tool_fails_the_run_naming_the_server() -> None:
    missing = {"name": "gone", "command": "/nonexistent/mcp-server", "tools": ["x"]}
    result = await agent([missing], Script().model()).run("go")
    assert result.error is not None and result.error.type == "mcp_server_error"
    assert "MCP server 'gone'" in result.error.message

    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"
    unreachable = {"name": "web", "url": closed, "tools": ["x"]}
    result = await agent([unreachable], Script().model()).run("go")
    assert result.error is not None and result.error.type == "mcp_server_error"
    assert "MCP server 'web': could not start: ConnectError" in result.error.message

    result = await agent([server_entry(tools=["nope"])], Script().model()).run("go")
    assert result.error is not None and "has no tool nope" in result.error.message
    assert "add" in result.error.message


@pytest.fixture
def http_server() -> Iterator[str]:
    """The test server over streamable HTTP on a loopback port of its own; yields its URL."""
    process = subprocess.Popen(
        [sys.executable, SERVER, "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = process.stdout.readline().strip()  # printed once bound (empty: the server died)
        assert port.isdigit(), f"the test server did not start (exit {process.poll()})"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


async def test_a_streamable_http_server_with_headers(http_server: str) -> None:
    script = Script(("mcp__web__add", {"a": 40, "b": 2}))
    server = {"name": "web", "url": http_server, "headers": {"X-Test": "1"}, "tools": ["add"]}
    result = await agent([server], script.model()).run("go")

    assert result.status == "completed", result.error
    assert json.loads(script.results[0].content) == {"sum": 42}


def _filesystem_server() -> Path | None:
    """The installed npm filesystem server's entry point, or ``None``."""
    cache = os.environ.get("AGENTSHAPE_NPM_CACHE", str(Path.home() / ".cache/agentshape-npm"))
    entry = Path(cache, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
    return entry if entry.is_file() else None


FS_SERVER = _filesystem_server()  # read before the tests' fixtures clear AGENTSHAPE_* variables


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(
    FS_SERVER is None,
    reason="@modelcontextprotocol/server-filesystem is not installed "
    "(npm install it into $AGENTSHAPE_NPM_CACHE or ~/.cache/agentshape-npm)",
)
async def test_the_npm_filesystem_server_reads_a_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello from the workspace\n", encoding="utf-8")
    script = Script(("mcp__fs__read_text_file", {"path": str(tmp_path / "notes.txt")}))
    server = {
        "name": "fs",
        "command": "node",
        "args": [str(FS_SERVER), str(tmp_path)],
        "tools": ["read_text_file", "list_directory"],
    }
    result = await agent([server], script.model()).run("go")

    assert result.status == "completed", result.error
    assert script.tools[0] == [
        "mcp__fs__read_text_file",
        "mcp__fs__list_directory",
        "submit_result",
    ]
    assert "hello from the workspace" in script.results[0].content
