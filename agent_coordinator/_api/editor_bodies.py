"""Bodies of the fleet and agent-editor endpoints (``/fleet``, ``/agents/{name}/source``...).

Also the bodies of ``POST /agents`` and ``PATCH /agents/{name}`` (``AgentCreate`` and
``AgentUpdate``) and what both answer (:class:`AgentWritten`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, RootModel

from agent_coordinator._schema_text import TextFormat
from agent_coordinator._service.bodies import AgentDetail

__all__ = [
    "AgentCreate",
    "AgentSource",
    "AgentUpdate",
    "AgentWritten",
    "ConfigProblemView",
    "ContractField",
    "FleetState",
    "SchemaSave",
    "SchemaText",
    "SchemaTextCheck",
    "TextFindingView",
]

MAX_SCHEMA_TEXT = 512 * 1024
"""The longest schema text the editor may send."""


class ConfigProblemView(BaseModel):
    """One problem of a config file, as ``agentshape list`` reports it."""

    file: str
    line: int | None = None
    field: str | None = None
    severity: Literal["error", "warning"]
    message: str
    text: str
    """``file:line: field: message``, the CLI's line."""


class ContractField(BaseModel):
    """One top-level field of an agent's output contract."""

    name: str
    type: str | None = None
    """The declared ``type`` (types joined with ``|``), when the schema states one."""
    required: bool = False


class FleetState(BaseModel):
    """The fleet's files checked now, from disk, as ``agentshape list`` checks them."""

    directory: str
    valid: bool
    """No file has an error (warnings allowed)."""
    files: dict[str, str] = Field(default_factory=dict)
    """Each loaded agent's file, by agent name."""
    problems: list[ConfigProblemView] = Field(default_factory=list)
    """Every error and warning, by file and line."""
    loaded: list[str] = Field(default_factory=list)
    """The agents the running service uses (loaded at start or at the last save)."""
    contract_fields: dict[str, list[ContractField]] = Field(default_factory=dict)
    """Each agent's contract's top-level fields (``output_schema``, else its default)."""


class AgentSource(BaseModel):
    """An agent's file as it is on disk, with the version a save must send back."""

    name: str
    file: str
    text: str
    version: str
    """``sha256:<hex>`` of the file's bytes."""
    schemas: dict[str, JsonValue] = Field(default_factory=dict)
    """The file's schema fields as they are on disk (``output_schema``...), absent when unset."""
    mcp_servers: list[dict[str, JsonValue]] = Field(default_factory=list)
    """The agent's MCP servers; ``env`` and ``headers`` values are shown as ``***``."""
    reloaded: bool = True
    """Whether the running service now uses this file's content (after a save)."""


class SchemaText(BaseModel):
    """A schema as the editor holds it."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=MAX_SCHEMA_TEXT)
    format: TextFormat = "json"
    kind: Literal["output", "parameters"] = "output"
    """``output`` gets the output-contract checks; ``parameters`` the meta-schema check."""


class SchemaSave(BaseModel):
    """``PUT /agents/{name}/schemas/{field}``: the new schema and the file version it edits."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=MAX_SCHEMA_TEXT)
    format: TextFormat = "json"
    version: str = Field(max_length=100)
    """The ``version`` from ``GET /agents/{name}/source`` the edit started from."""


class TextFindingView(BaseModel):
    """One finding in schema text, at its line."""

    path: str
    severity: Literal["error", "warning", "info"]
    message: str
    keyword: str | None = None
    line: int | None = None
    """1-based line in the text sent, when known."""
    source: str = "check"
    """``syntax``, ``check`` (the CLI's schema checks) or a provider dialect (strict mode)."""


class SchemaTextCheck(BaseModel):
    """What the checks found in schema text, and what each provider's strict mode changes."""

    valid: bool
    findings: list[TextFindingView] = Field(default_factory=list)
    strict: dict[str, JsonValue] = Field(default_factory=dict)
    """Per dialect (``openai``, ``anthropic``, ``neutral``): the compile report (output only)."""
    schema_: JsonValue = Field(default=None, alias="schema")
    """The parsed schema (``null`` when the text does not parse)."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)


_PR_REVIEWER: dict[str, JsonValue] = {
    "name": "pr-reviewer",
    "description": "Reviews pull requests and provides structured feedback",
    "type": "autonomous",
    "parameters_schema": {
        "type": "object",
        "required": ["pr_url"],
        "properties": {"pr_url": {"type": "string", "description": "GitHub PR URL to review"}},
    },
    "output_schema": {
        "type": "object",
        "required": ["summary", "approval"],
        "properties": {
            "summary": {"type": "string"},
            "approval": {"type": "string", "enum": ["approve", "request_changes", "comment"]},
        },
    },
    "system_prompt": "You are a thorough code reviewer...",
}


class AgentCreate(RootModel[dict[str, JsonValue]]):
    """``POST /agents``: a whole agent config, in the blueprint or the ``kb.agent/1`` form.

    Its ``id`` (else its ``name``) names the folder, ``agents/<id>/agent.yml``. The config gets
    the checks ``agentshape list`` makes; every problem is answered at once.
    """

    model_config = ConfigDict(json_schema_extra={"examples": [_PR_REVIEWER]})


class AgentUpdate(RootModel[dict[str, JsonValue]]):
    """``PATCH /agents/{name}``: the blueprint-form fields to set; ``null`` removes one.

    Fields not named are left as they are in the file, with their comments and order.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"description": "Reviews pull requests", "output_schema": {"type": "object"}}
            ]
        }
    )


class AgentWritten(AgentDetail):
    """An agent as its file now is, after ``POST /agents`` or ``PATCH /agents/{name}``."""

    file: str
    """The agent's ``agent.yml``."""
    version: str
    """``sha256:<hex>`` of the file's bytes; send it as ``If-Match`` with the next change."""
    reloaded: bool = True
    """Whether the running service now uses the file (false while another file of the fleet has
    an error that stops the reload)."""
    warnings: list[ConfigProblemView] = Field(default_factory=list)
    """What ``agentshape list`` warns about in this file (likely typos...)."""
