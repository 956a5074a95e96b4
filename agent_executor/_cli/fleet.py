"""``agentshape list``: every agent of a fleet, each config validated first.

A fleet is a directory with one folder per agent (``agents/<id>/agent.yml``). When every config
is valid the command prints one row per agent (id, name, model, tools, and the top-level fields
of its output contract); when any is not, it prints every problem in every file
(``file:line: field: message``) and exits 1.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from pydantic import JsonValue

from agent_contracts._config import AgentConfig
from agent_contracts._errors import FleetProblems
from agent_core._fleet import load_fleet
from agent_core._json_text import dump_json
from agent_executor._child_sessions import TOOL_NAME
from agent_executor._cli.commands import EXIT_OK, EXIT_RUN_FAILED, Subcommands
from agent_executor._cli.table import format_table
from agent_executor._providers.resolve import KNOWN_PREFIXES
from agent_executor._tools import KNOWN_TOOLS

__all__ = ["output_fields", "register"]


def register(commands: Subcommands) -> None:
    """Add ``list`` to the command line."""
    listing = commands.add_parser(
        "list", help="list a fleet's agents, validating every config (exit 1 on any problem)"
    )
    listing.add_argument(
        "dir", nargs="?", type=Path, default=Path("agents"), help="the fleet (default ./agents)"
    )
    listing.add_argument("--json", action="store_true", help="print the agents as JSON")
    listing.set_defaults(handler=list_command)


def output_fields(config: AgentConfig) -> list[str]:
    """Return the top-level property names of an agent's output contract.

    Optional properties end with ``?``. The agent's ``output_schema`` is used, else its
    ``default_output_schema``; a schema without top-level ``properties`` gives an empty list.
    """
    schema = config.output_schema
    if schema is None:
        schema = config.default_output_schema
    if not isinstance(schema, dict):
        return []
    properties = schema.get("properties")
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    if not isinstance(properties, dict):
        return []
    return [name if name in needed else f"{name}?" for name in properties]


def _contract_cell(config: AgentConfig) -> str:
    if config.output_schema is None and config.default_output_schema is None:
        return "(free text)"
    fields = ", ".join(output_fields(config)) or "(no top-level properties)"
    return f"{fields} (default)" if config.output_schema is None else fields


def _schema_kind(config: AgentConfig) -> str | None:
    if config.output_schema is not None:
        return "agent"
    return "default" if config.default_output_schema is not None else None


def _model_cell(config: AgentConfig) -> str:
    return " > ".join([config.model or "(run time)", *config.model_tiers])


def list_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``agentshape list``: exit 0 when every config is valid, 1 when any is not.

    Raises:
        ConfigFileError: The directory does not exist or is not a directory.
    """
    try:
        # agents:start_session is run by `agentshape run` and the service alike
        known = [*KNOWN_TOOLS, TOOL_NAME]
        fleet = load_fleet(args.dir, known_tools=known, known_model_prefixes=KNOWN_PREFIXES)
    except FleetProblems as found:
        print(f"{found.directory}: {found.message}:", file=err)
        for problem in found.problems:
            print(problem.format_message(), file=err)
        return EXIT_RUN_FAILED
    for warning in fleet.warnings:
        print(f"warning: {warning.format_message()}", file=err)
    if args.json:
        agents: list[JsonValue] = [
            {
                "id": config.id,
                "name": config.name,
                "file": str(fleet.source(config.id)),
                "model": config.model,
                "model_tiers": list(config.model_tiers),
                "tools": list(config.tools),
                "output_fields": [name.rstrip("?") for name in output_fields(config)],
                "schema": _schema_kind(config),
            }
            for config in fleet.configs
        ]
        out.write(dump_json(agents, indent=2) + "\n")
        return EXIT_OK
    if not fleet:
        print(f"no agents in {args.dir} (expected {args.dir}/<id>/agent.yml)", file=out)
        return EXIT_OK
    rows = [
        [
            config.id,
            config.name,
            _model_cell(config),
            ", ".join(config.tools) or "-",
            _contract_cell(config),
        ]
        for config in fleet.configs
    ]
    print(format_table(("id", "name", "model", "tools", "output fields"), rows), file=out)
    count = len(fleet)
    print(f"\n{count} agent{'s' if count != 1 else ''}, every config valid", file=out)
    return EXIT_OK
