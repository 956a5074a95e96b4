"""``agentshape schemas add | list | show | rm``: the named schema registry from the shell.

The registry is a SQLite file (``--registry PATH``, default ``.agentshape/schemas.db``); a schema
is checked against its draft before it is stored. ``run --schema NAME`` uses one.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from agent_core._json_text import dump_json
from agent_core._registry import DEFAULT_REGISTRY_PATH, SchemaRegistry
from agent_executor._cli.commands import EXIT_OK, Subcommands
from agent_executor._cli.inputs import read_schema_file
from agent_executor._cli.table import format_table

__all__ = ["register"]


def register(commands: Subcommands) -> None:
    """Add ``schemas`` and its subcommands to the command line."""
    schemas = commands.add_parser("schemas", help="manage the named output schema registry")
    actions = schemas.add_subparsers(dest="schemas_command", required=True, metavar="ACTION")
    registry = argparse.ArgumentParser(add_help=False)
    registry.add_argument(
        "--registry",
        type=Path,
        default=DEFAULT_REGISTRY_PATH,
        metavar="PATH",
        help=f"the registry file (default {DEFAULT_REGISTRY_PATH})",
    )

    add = actions.add_parser("add", parents=[registry], help="register a schema under a name")
    add.add_argument("name", help="letters, digits, '.', '_' or '-'")
    add.add_argument("file", type=Path, help="the schema, as a JSON or YAML file")
    add.add_argument("--description", help="what the schema is for")
    add.add_argument("--replace", action="store_true", help="overwrite a schema of that name")
    add.set_defaults(handler=_add)

    listing = actions.add_parser("list", parents=[registry], help="list the registered schemas")
    listing.add_argument("--json", action="store_true", help="print the entries as JSON")
    listing.set_defaults(handler=_list)

    show = actions.add_parser("show", parents=[registry], help="print a registered schema")
    show.add_argument("name")
    show.set_defaults(handler=_show)

    remove = actions.add_parser("rm", parents=[registry], help="remove a registered schema")
    remove.add_argument("name")
    remove.set_defaults(handler=_remove)


def _add(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    registry = SchemaRegistry(args.registry)
    schema = read_schema_file(args.file)
    entry = registry.add(args.name, schema, description=args.description, replace=args.replace)
    verb = "replaced" if entry.created_at != entry.modified_at else "added"
    print(f"{verb} schema {entry.name} (hash {entry.hash[:12]}) in {registry.path}", file=out)
    return EXIT_OK


def _list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    registry = SchemaRegistry(args.registry)
    entries = registry.list()
    if args.json:
        dumped = [entry.model_dump(mode="json") for entry in entries]
        out.write(dump_json(dumped, indent=2) + "\n")
        return EXIT_OK
    if not entries:
        print(f"no schemas registered in {registry.path}", file=out)
        return EXIT_OK
    rows = [
        [
            entry.name,
            entry.hash[:12],
            entry.modified_at.strftime("%Y-%m-%d %H:%M"),
            entry.description or "",
        ]
        for entry in entries
    ]
    print(format_table(("name", "hash", "modified (UTC)", "description"), rows), file=out)
    return EXIT_OK


def _show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    schema = SchemaRegistry(args.registry).get(args.name)
    out.write(dump_json(schema, indent=2) + "\n")
    return EXIT_OK


def _remove(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    registry = SchemaRegistry(args.registry)
    registry.remove(args.name)
    print(f"removed schema {args.name} from {registry.path}", file=out)
    return EXIT_OK
