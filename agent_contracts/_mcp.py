"""MCP servers an agent uses as input tools: the ``mcpServers:`` (``mcp_servers:``) config entries.

A server is started over stdio (``command``, ``args``, ``env``, ``cwd``) or reached over
streamable HTTP (``url``, ``headers``): exactly one of ``command`` and ``url``. ``tools`` is a
required allow-list; each listed tool is offered to the model as ``mcp__<server>__<tool>``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["MCP_TOOL_PREFIX", "McpServer", "mcp_tool_name"]

MCP_TOOL_PREFIX = "mcp__"
"""The prefix of every MCP tool's name as the model sees it."""

_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,32}$"


def mcp_tool_name(server: str, tool: str) -> str:
    """Return the provider-safe name under which a server's tool is offered to the model.

    Characters outside ``[a-zA-Z0-9_-]`` become ``_`` and the name is cut to 64 characters,
    so it satisfies every provider's ``^[a-zA-Z0-9_-]{1,64}$``.

    Args:
        server: The server's configured ``name``.
        tool: The tool's name on the server.
    """
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in tool)
    return f"{MCP_TOOL_PREFIX}{server}__{safe}"[:64]


class McpServer(BaseModel):
    """One MCP server whose allowed tools join the agent's input tools.

    Raises:
        pydantic.ValidationError: On validation: unknown keys, neither or both of ``command``
            and ``url``, stdio keys with a ``url`` (or ``headers`` with a ``command``), a URL
            that is not ``http(s)://host...``, or an empty or repeated tool name.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = Field(pattern=_NAME_PATTERN)
    """The server's name: letters, digits, ``_`` and ``-``; it prefixes its tools' names."""
    tools: list[str] = Field(min_length=1)
    """The server's tools the model may call (required; a tool not listed is never offered)."""
    command: str | None = Field(default=None, min_length=1)
    """The program that starts a stdio server, such as ``uvx`` or ``npx``."""
    args: list[str] = Field(default_factory=list)
    """The stdio server's command-line arguments."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for the stdio server, over a minimal safe environment."""
    cwd: str | None = None
    """The stdio server's working directory (default: the current directory)."""
    url: str | None = None
    """The endpoint of a streamable-HTTP server, such as ``http://127.0.0.1:8000/mcp``."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent to a streamable-HTTP server, such as ``Authorization``."""
    start_timeout_s: float = Field(default=30.0, gt=0)
    """Most seconds to start the server and list its tools before the run fails."""
    call_timeout_s: float = Field(default=60.0, gt=0)
    """Most seconds one tool call may take before the run fails."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        """Require exactly one transport, with only its own keys, and distinct tool names."""
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r} needs exactly one of command and url")
        if self.url is not None:
            if self.args or self.env or self.cwd is not None:
                raise ValueError(
                    f"MCP server {self.name!r} has a url; args, env and cwd are for a command"
                )
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(
                    f"MCP server {self.name!r}: url {self.url!r} is not an http(s) URL"
                )
        elif self.headers:
            raise ValueError(f"MCP server {self.name!r} has a command; headers are for a url")
        if any(not tool for tool in self.tools) or len(set(self.tools)) != len(self.tools):
            raise ValueError(f"MCP server {self.name!r}: tool names must be non-empty and distinct")
        return self
