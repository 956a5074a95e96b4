"""What a user gives the ``agentshape`` command line, read and checked before anything runs.

Agent names and paths, ``key=value`` parameters, JSON and YAML files (a bad one is reported with
its line and column), and the output schema a caller picks with
``--schema NAME`` (from the registry) or ``--schema-file FILE`` (inline). Every mistake raises
:class:`UsageError` (or another ``AgentshapeError``) with one clear line; the command line turns
it into exit code 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pydantic import JsonValue

from agent_contracts._config import AgentConfig, suggest_key
from agent_contracts._errors import ConfigFileError
from agent_contracts._runs import JsonSchema
from agent_core._compiled_schema import compile_schema
from agent_core._json_text import parse_json, unencodable
from agent_core._loading import load_agent_config
from agent_core._loading import read_schema_file as read_yaml_value
from agent_core._registry import SchemaRegistry
from agent_core._schema_checks import META_SCHEMA_FAULT, check_output_schema
from agent_core._user_files import read_user_file
from agent_executor._cli.commands import UsageError

__all__ = [
    "CallerSchema",
    "caller_schema",
    "find_agent_file",
    "load_agent",
    "parse_param",
    "read_json_file",
    "read_schema_file",
]


def parse_param(text: str) -> tuple[str, JsonValue]:
    """Parse ``key=value``; the value is read as JSON when it parses, else kept as a string.

    Args:
        text: One ``--param`` value.

    Returns:
        The key and the value.

    Raises:
        UsageError: No ``=``, an empty key, bytes that are not UTF-8, or unusable JSON (NaN...).
    """
    if problem := unencodable(text):  # Python hands such bytes over as surrogates
        raise UsageError(f"--param is not UTF-8 text ({problem})")
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--param expects key=value, got {text!r}")
    try:
        value = parse_json(raw, source=f"--param {key.strip()}")
    except ConfigFileError as exc:
        if exc.message.startswith("not valid JSON"):
            return key.strip(), raw
        raise UsageError(exc.format_message()) from None  # too deep, a number too large, NaN
    return key.strip(), value


def find_agent_file(agent: str, agents_dir: Path) -> Path:
    """Return the ``agent.yml`` for an agent id in ``agents_dir`` or a path to a file.

    Args:
        agent: An agent id, a path to an ``agent.yml``, or a directory holding one.
        agents_dir: The fleet's directory.

    Raises:
        UsageError: Neither exists; the message lists the ids that do.
    """
    path = Path(agent)
    if path.is_file():
        return path
    if path.is_dir() and (path / "agent.yml").is_file():
        return path / "agent.yml"
    candidate = agents_dir / agent / "agent.yml"
    if candidate.is_file():
        return candidate
    known = sorted(p.parent.name for p in agents_dir.glob("*/agent.yml"))
    if not known:
        raise UsageError(
            f"no agent {agent!r}: not a file, and no fleet in {agents_dir} (no */agent.yml); "
            "run 'agentshape init' to write a starter agent there, or pass --agents-dir"
        )
    hint = suggest_key(agent, known)
    more = f"did you mean {hint!r}? " if hint else ""
    raise UsageError(
        f"no agent {agent!r}: not a file, and no {candidate} ({more}agents in {agents_dir}: "
        f"{', '.join(known)})"
    )


def load_agent(agent: str, agents_dir: Path) -> tuple[Path, AgentConfig]:
    """Find and load an agent's config.

    Args:
        agent: An agent id in ``agents_dir``, or a path to its ``agent.yml`` (or its directory).
        agents_dir: The fleet directory.

    Returns:
        The file and the config.

    Raises:
        UsageError: No such agent.
        ConfigFileError: The file cannot be read or is not a valid config (every problem).
    """
    path = find_agent_file(agent, agents_dir)
    return path, load_agent_config(path)


def _read_text(path: Path, what: str) -> str:
    """Return a file's text, or raise one clear line saying why it cannot be read."""
    try:
        return read_user_file(path).decode("utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path} is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path} is not UTF-8 text (at byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def _parse_json_file(path: Path, text: str) -> JsonValue:
    """Parse a JSON file's text with the bounded reader; one line saying what is wrong."""
    try:
        return parse_json(text, source=str(path))
    except ConfigFileError as exc:
        problem = exc.message.replace(" (line ", " at line ").removesuffix(")")
        raise UsageError(f"{path} is {problem}") from None


def read_json_file(path: Path, *, what: str = "file") -> JsonValue:
    """Read a JSON file.

    Args:
        path: The file.
        what: What the file is, for the error message (``output file``...).

    Returns:
        The JSON value.

    Raises:
        UsageError: The file is missing or unreadable, or is not valid JSON (with the line and
            column of the fault).
    """
    return _parse_json_file(path, _read_text(path, what))


def read_schema_file(path: Path) -> JsonSchema:
    """Read a JSON Schema from a JSON or YAML file and check it against its draft.

    A ``.json`` file is read as JSON; anything else as YAML (which also reads JSON).

    Returns:
        The schema (an object or a boolean).

    Raises:
        UsageError: The file cannot be read, does not parse (line and column given), or holds
            neither an object nor a boolean.
        InvalidSchemaError: The schema breaks its draft's meta-schema (names the file).
        SchemaReferenceError: The schema has a ``$ref`` that does not resolve offline.
    """
    text = _read_text(path, "schema file")
    value: object
    if path.suffix.lower() == ".json":
        value = _parse_json_file(path, text)
    else:
        try:
            value = read_yaml_value(path)
        except ConfigFileError as exc:
            if not exc.message.startswith("invalid YAML: "):
                raise
            where = f" at line {exc.line}" if exc.line else ""
            problem = exc.message.removeprefix("invalid YAML: ")
            raise UsageError(f"{path} is not valid YAML: {problem}{where}") from None
    if not isinstance(value, dict | bool):
        kind = "nothing" if value is None else type(value).__name__
        raise UsageError(f"{path}: a JSON Schema is an object or a boolean, not {kind}")
    try:
        schema: JsonSchema = json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{path}: the schema is not JSON data: {exc}") from None
    # The checks `agentshape list` runs on a schema in agent.yml, so a mistyped type or keyword
    # gets the same words (and did-you-mean) here.
    errors = [
        f
        for f in check_output_schema(schema, source=str(path))
        if f.severity == "error" and not f.message.endswith(META_SCHEMA_FAULT)
    ]
    if errors:
        spots = [f"{f.path}.{f.keyword}" if f.keyword else f.path for f in errors]
        problems = (f"{path}: {at}: {f.message}" for f, at in zip(errors, spots, strict=True))
        raise UsageError("; ".join(problems))
    compile_schema(schema, source=str(path))
    return schema


class CallerSchema:
    """The output schema a caller picked on the command line, as ``Agent.run`` arguments.

    Attributes:
        inline: The schema read from ``--schema-file``.
        name: The registered name given with ``--schema``.
        named: That name's schema, read from the registry.
    """

    def __init__(
        self,
        *,
        inline: JsonSchema | None = None,
        name: str | None = None,
        named: JsonSchema | None = None,
    ) -> None:
        self.inline = inline
        self.name = name
        self.named = named

    def run_arguments(self) -> dict[str, object]:
        """Return the keyword arguments for :meth:`Agent.run`."""
        if self.inline is not None:
            return {"output_schema": self.inline}
        if self.named is not None:
            return {"schema_name": self.name}
        return {}


def caller_schema(args: argparse.Namespace, config: AgentConfig) -> CallerSchema:
    """Resolve ``--schema`` / ``--schema-file`` for an agent.

    Inline first, then named, then the agent's default; an agent's own ``output_schema`` is its
    contract and is never replaced, so giving either flag for such an agent is an error (checked
    before the registry is read).

    Args:
        args: The parsed command line.
        config: The agent.

    Returns:
        The schema the caller picked, if any, as ``Agent.run`` arguments.

    Raises:
        ConfigError: The agent has its own output contract and a flag tried to replace it.
        UsageError: The schema file cannot be read or parsed.
        InvalidSchemaError: The schema file's schema is invalid.
        SchemaNotFoundError: No registered schema has that name (with a did-you-mean).
        SchemaRegistryError: The registry file cannot be read.
    """
    name: str | None = getattr(args, "schema", None)
    file: Path | None = getattr(args, "schema_file", None)
    if name is None and file is None:
        return CallerSchema()
    registry = SchemaRegistry(args.registry)
    if config.output_schema is not None:
        registry.resolve_output_schema(  # raises the "cannot override" error
            inline=True if file is not None else None,
            name=name,
            agent_own=config.output_schema,
            agent_id=config.id,
        )
    if file is not None:
        return CallerSchema(inline=read_schema_file(file))
    assert name is not None
    return CallerSchema(name=name, named=registry.get(name))
