"""``agentshape list`` (load_fleet) checks MCP server entries like any other key, at their line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_contracts import FleetProblems
from agent_core import load_fleet


def test_mcp_entries_are_loaded_and_their_problems_reported_at_their_lines(tmp_path: Path) -> None:
    good = tmp_path / "timekeeper"
    good.mkdir()
    (good / "agent.yml").write_text(
        "schema: kb.agent/1\n"
        "id: timekeeper\n"
        "context: {static: {system: Tell the time.}}\n"
        "mcpServers:\n"
        "  - name: time\n"
        "    command: uvx\n"
        "    args: [mcp-server-time]\n"
        "    tools: [get_current_time]\n"
    )
    fleet = load_fleet(tmp_path, known_tools=None)
    assert fleet["timekeeper"].mcp_servers[0].command == "uvx"

    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / "agent.yml").write_text(
        "schema: kb.agent/1\n"
        "id: broken\n"
        "mcpServers:\n"
        "  - name: time\n"
        "    comand: uvx\n"
        "    tools: [get_current_time]\n"
        "  - name: docs\n"
        "    url: ftp://example.invalid/mcp\n"
        "    tools: [search]\n"
        "  - name: bare\n"
        "    tools: [x]\n"
    )
    with pytest.raises(FleetProblems) as caught:
        load_fleet(tmp_path, known_tools=None)
    lines = [str(problem) for problem in caught.value.problems]
    assert any(":5:" in line and "did you mean 'command'?" in line for line in lines), lines
    assert any(":7:" in line and "not an http(s) URL" in line for line in lines), lines
    assert any(
        ":10:" in line and "'bare' needs exactly one of command and url" in line for line in lines
    ), lines
