"""MCP server entries in agent configs: both forms, the transports and the tool names."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agent_contracts import AgentConfig
from agent_contracts._mcp import McpServer, mcp_tool_name

STDIO = {"name": "time", "command": "uvx", "args": ["mcp-server-time"], "tools": ["now"]}
HTTP = {"name": "docs", "url": "http://127.0.0.1:8000/mcp", "headers": {"X": "1"}, "tools": ["a"]}


def errors(entry: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        McpServer.model_validate(entry)
    return [str(error["msg"]) for error in caught.value.errors()]


def test_both_config_forms_list_servers_and_dump_back() -> None:
    blueprint = AgentConfig.model_validate({"id": "a", "mcp_servers": [STDIO, HTTP]})
    file_form = AgentConfig.model_validate(
        {"schema": "kb.agent/1", "id": "a", "mcpServers": [STDIO, HTTP]}
    )
    assert blueprint == file_form
    assert [s.name for s in blueprint.mcp_servers] == ["time", "docs"]
    assert blueprint.mcp_servers[1].headers == {"X": "1"}
    assert AgentConfig.model_validate(blueprint.model_dump()) == blueprint
    assert AgentConfig.model_validate({"id": "a"}).mcp_servers == []


def test_exactly_one_transport_with_its_own_keys() -> None:
    assert "needs exactly one of command and url" in errors({"name": "x", "tools": ["a"]})[0]
    assert "needs exactly one" in errors({**STDIO, "url": "http://h/mcp"})[0]
    assert "headers are for a url" in errors({**STDIO, "headers": {"A": "b"}})[0]
    assert "args, env and cwd are for a command" in errors({**HTTP, "args": ["x"]})[0]
    assert "not an http(s) URL" in errors({**HTTP, "url": "localhost:8000"})[0]


def test_tools_is_a_required_explicit_list() -> None:
    assert errors({"name": "x", "command": "c"})[0] == "Field required"
    assert "at least 1 item" in errors({**STDIO, "tools": []})[0]
    assert "distinct" in errors({**STDIO, "tools": ["a", "a"]})[0]


def test_server_names_and_timeouts_are_checked() -> None:
    assert "should match pattern" in errors({**STDIO, "name": "my server"})[0]
    assert "greater than 0" in errors({**STDIO, "call_timeout_s": 0})[0]


def test_unknown_keys_in_an_entry_are_reported_at_the_key_with_a_suggestion() -> None:
    entry = {**STDIO, "tool": ["x"]}
    with pytest.raises(ValidationError) as caught:
        AgentConfig.model_validate({"schema": "kb.agent/1", "id": "a", "mcpServers": [entry]})
    (error,) = caught.value.errors()
    assert error["loc"] == ("mcpServers", 0, "tool")
    assert error["msg"] == "unknown key 'tool' at $.mcpServers[0] (did you mean 'tools'?)"


def test_tool_names_are_provider_safe() -> None:
    assert mcp_tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert mcp_tool_name("fs", "read.file/v2") == "mcp__fs__read_file_v2"
    assert len(mcp_tool_name("s" * 32, "t" * 100)) == 64
