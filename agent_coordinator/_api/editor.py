"""The fleet's state and the agent editor: a file's source, schema text checks, and saving.

``GET /fleet`` checks the fleet's files on disk now, as ``agentshape list`` does, and gives every
problem with its file and line. ``POST /agents/check-schema-text`` runs the CLI's schema checks on
the editor's JSON or YAML text and places each finding at its line, with what each provider's
strict mode would change; text nested too deep or whose YAML aliases expand past the budget is
refused (413 ``SchemaTextTooLarge``) before anything is built from it.
``PUT /agents/{name}/schemas/{field}`` writes a checked schema back into the agent's YAML
(comments and key order kept), refuses an invalid one (400 ``InvalidSchema``), and refuses to
overwrite a file edited on disk meanwhile (409 ``AgentFileChanged``); after a save the service
runs the agent with the new schema, and no other field changes with it, even one that shared the
saved field's YAML node.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from fastapi import APIRouter
from pydantic import JsonValue

from agent_contracts._config import AgentConfig
from agent_contracts._errors import AgentshapeError, ConfigFileError, FleetProblems
from agent_coordinator._agent_files import (
    SCHEMA_FIELDS,
    FileChanged,
    SchemaField,
    read_agent_file,
    write_schema,
)
from agent_coordinator._api.deps import ServicesDep
from agent_coordinator._api.editor_bodies import (
    AgentSource,
    ContractField,
    FleetState,
    SchemaSave,
    SchemaText,
    SchemaTextCheck,
    TextFindingView,
)
from agent_coordinator._api.fleet_checks import load_checked, problem_view
from agent_coordinator._errors import BadRequest, Conflict, ErrorDetail, PayloadTooLarge
from agent_coordinator._schema_text import TextOverBudget, line_of_path, parse_schema_text
from agent_coordinator._service.bodies import ValidateSchemaRequest
from agent_coordinator._service.schema_checks import check_schema
from agent_coordinator._service.services import Services
from agent_core._dialects import DIALECTS
from agent_core._output_tool import build_output_tool

__all__ = ["check_text", "router"]

router = APIRouter(tags=["agents"])


def _contract_fields(config: AgentConfig) -> list[ContractField]:
    schema = config.output_schema or config.default_output_schema
    properties: JsonValue = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(schema, dict) or not isinstance(properties, dict):
        return []
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    fields = []
    for name, sub in properties.items():
        kind = sub.get("type") if isinstance(sub, dict) else None
        shown = "|".join(map(str, kind)) if isinstance(kind, list) else kind
        fields.append(
            ContractField(
                name=name, type=shown if isinstance(shown, str) else None, required=name in needed
            )
        )
    return fields


def _fleet_state(services: Services) -> FleetState:
    running = services.execution.fleet
    directory = running.directory
    loaded = list(running.ids)
    try:
        fleet = load_checked(directory)
    except FleetProblems as error:
        return FleetState(
            directory=os.fspath(directory),
            valid=False,
            files={name: os.fspath(running.source(name)) for name in running.ids},
            problems=[problem_view(p, "error") for p in error.problems],
            loaded=loaded,
            contract_fields={c.id: _contract_fields(c) for c in running.configs},
        )
    except ConfigFileError as error:
        return FleetState(
            directory=os.fspath(directory), valid=False, problems=[problem_view(error, "error")]
        )
    return FleetState(
        directory=os.fspath(directory),
        valid=True,
        files={name: os.fspath(fleet.source(name)) for name in fleet.ids},
        problems=[problem_view(w, "warning") for w in fleet.warnings],
        loaded=loaded,
        contract_fields={config.id: _contract_fields(config) for config in fleet.configs},
    )


@router.get("/fleet")
async def fleet_state(services: ServicesDep) -> FleetState:
    """Check the fleet's files on disk now, as ``agentshape list`` does.

    ``valid`` is false when any file has an error; every error and warning names its file, line
    and field. ``loaded`` lists the agents the running service uses.
    """
    return await asyncio.to_thread(_fleet_state, services)


def check_text(body: SchemaText) -> SchemaTextCheck:
    """Check schema text as ``agentshape list`` checks a config's schema, finding each line.

    Returns:
        A syntax problem at its line, or the schema checks' findings at theirs, and (for an
        output schema without errors) each provider dialect's strict-mode report, its notes as
        ``info`` findings.

    Raises:
        PayloadTooLarge: ``SchemaTextTooLarge``: the text nests too deep or its aliases expand
            past the budget (the limit is named); nothing was built from it.
    """
    try:
        parsed = parse_schema_text(body.text, body.format)
    except TextOverBudget as error:
        raise PayloadTooLarge(
            "SchemaTextTooLarge",
            f"the schema text was not checked: {error.message}",
            details=[ErrorDetail(path="$.text", message=error.message, keyword=error.limit)],
        ) from error
    if parsed.problem is not None:
        finding = TextFindingView(
            path="$",
            severity="error",
            message=parsed.problem.message,
            line=parsed.problem.line,
            source="syntax",
        )
        return SchemaTextCheck(valid=False, findings=[finding])
    request = ValidateSchemaRequest.model_validate({"schema": parsed.value, "kind": body.kind})
    checked = check_schema(request)
    findings = [
        TextFindingView(
            path=f.path,
            severity=f.severity,
            message=f.message,
            keyword=f.keyword,
            line=line_of_path(parsed.tree, f.path, f.keyword),
        )
        for f in checked.findings
    ]
    strict: dict[str, object] = {}
    if checked.valid and body.kind == "output" and isinstance(parsed.value, dict | bool):
        try:
            tool = build_output_tool(parsed.value)
        except AgentshapeError as error:
            findings.append(TextFindingView(path="$", severity="error", message=str(error)))
            return SchemaTextCheck(valid=False, findings=findings, schema=parsed.value)
        for dialect in DIALECTS:
            report = tool.report(dialect)
            strict[dialect] = report.model_dump(mode="json")
            findings += [
                TextFindingView(
                    path=note.path,
                    severity="info",
                    message=f"{dialect}: {note.keyword} {note.action} ({note.detail})",
                    keyword=note.keyword,
                    line=line_of_path(parsed.tree, note.path, note.keyword),
                    source=dialect,
                )
                for note in report.notes
            ]
    findings.sort(key=lambda f: (f.line or 0, f.severity != "error"))
    return SchemaTextCheck.model_validate(
        {"valid": checked.valid, "findings": findings, "strict": strict, "schema": parsed.value}
    )


@router.post("/agents/check-schema-text")
async def check_schema_text(body: SchemaText) -> SchemaTextCheck:
    """Check JSON or YAML schema text with the CLI's checks, each finding at its line.

    Syntax errors, meta-schema errors, unsupported keywords and likely typos are findings with
    their path and line; for an output schema, what each provider's strict mode would change
    comes as ``info`` findings and as the per-dialect reports in ``strict``. Text that nests too
    deep or expands (through YAML aliases) past the budget is 413 ``SchemaTextTooLarge``.
    """
    # In a worker thread: checking a large schema takes a while, and /health, lease renewals
    # and every other request must not wait behind it on the event loop.
    return await asyncio.to_thread(check_text, body)


def _mcp_servers(services: Services, name: str) -> list[dict[str, object]]:
    servers: list[dict[str, object]] = []
    for server in services.execution.config(name).mcp_servers:
        shown: dict[str, object] = server.model_dump(mode="json")
        for secret in ("env", "headers"):
            shown[secret] = dict.fromkeys(getattr(server, secret), "***")
        servers.append(shown)
    return servers


def _source(services: Services, name: str, *, reloaded: bool = True) -> AgentSource:
    mcp_servers = _mcp_servers(services, name)  # 404 AgentNotFound
    path = services.execution.fleet.source(name)
    try:
        text, version = read_agent_file(path)
    except (OSError, UnicodeDecodeError) as error:
        raise BadRequest("ConfigError", f"{path}: cannot read the file: {error}") from error
    schemas: dict[str, object] = {}
    try:
        parsed = parse_schema_text(text, "yaml")
    except TextOverBudget as error:
        raise BadRequest("ConfigError", f"{path}: {error.message}") from error
    root = parsed.value if isinstance(parsed.value, dict) else {}
    for field, spellings in SCHEMA_FIELDS.items():
        for spelling in spellings:
            node: object = root
            for key in spelling:
                node = node.get(key) if isinstance(node, dict) else None
            if node is not None:
                schemas[field] = node
                break
    return AgentSource.model_validate(
        {
            "name": name,
            "file": os.fspath(path),
            "text": text,
            "version": version,
            "schemas": schemas,
            "mcp_servers": mcp_servers,
            "reloaded": reloaded,
        }
    )


@router.get("/agents/{name}/source")
async def agent_source(name: str, services: ServicesDep) -> AgentSource:
    """Return an agent's file as it is on disk now, with its version and schema fields."""
    return await asyncio.to_thread(_source, services, name)


def _save(services: Services, name: str, field: SchemaField, body: SchemaSave) -> AgentSource:
    services.execution.config(name)  # 404 AgentNotFound
    path = services.execution.fleet.source(name)
    kind = "parameters" if field == "parameters_schema" else "output"
    checked = check_text(SchemaText(text=body.text, format=body.format, kind=kind))
    errors = [f for f in checked.findings if f.severity == "error"]
    if errors:
        raise BadRequest(
            "InvalidSchema",
            f"the schema was not saved: {len(errors)} error(s) in it; fix them and save again",
            details=[
                ErrorDetail(path=f.path, message=f.message, keyword=f.keyword) for f in errors
            ],
        )
    try:
        before = path.read_bytes()
        write_schema(path, field, checked.schema_, body.version)
    except FileChanged as error:
        raise Conflict(
            "AgentFileChanged",
            f"{path} was changed on disk after you opened it; reload it to see that change "
            "(your edit is not saved)",
        ) from error
    except (OSError, ValueError) as error:
        raise BadRequest("ConfigError", f"{path}: the schema was not saved: {error}") from error
    try:
        services.execution.fleet = load_checked(services.execution.fleet.directory)
    except FleetProblems as error:
        mine = [p for p in error.problems if Path(p.source) == path]
        if mine:
            path.write_bytes(before)
            raise BadRequest(
                "ConfigError",
                f"the schema was not saved: {path} would not load with it",
                details=[ErrorDetail(message=p.format_message()) for p in mine],
            ) from error
        return _source(services, name, reloaded=False)
    except ConfigFileError:
        return _source(services, name, reloaded=False)
    return _source(services, name)


@router.put("/agents/{name}/schemas/{field}")
async def save_schema(
    name: str, field: SchemaField, body: SchemaSave, services: ServicesDep
) -> AgentSource:
    """Save a schema into the agent's YAML file, keeping its comments and key order.

    The text is checked first (400 ``InvalidSchema`` with every error, nothing written); the file
    must still be the ``version`` the edit started from (409 ``AgentFileChanged`` otherwise, so an
    edit made on disk meanwhile is never lost). The running service then uses the new schema
    (``reloaded``; false when another file of the fleet has a problem that stops the reload).
    """
    return await asyncio.to_thread(_save, services, name, field, body)
