"""Read an agent config from YAML, pointing at the file, line and field of every problem.

The YAML document is read by :mod:`agent_core._yaml_reading` (safe, bounded, node tree kept), so
an error found in the data maps back to the line of the key that caused it.

JSON Schemas inside the config are kept as given; checking them is the schema engine's job.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import yaml
from pydantic import JsonValue, ValidationError
from pydantic_core import ErrorDetails

from agent_contracts._config import AgentConfig
from agent_contracts._errors import ConfigFileError, ConfigProblems
from agent_core._user_files import read_user_file
from agent_core._yaml_reading import read_yaml_node

__all__ = [
    "AgentDocument",
    "dotted_field",
    "line_of",
    "load_agent_config",
    "parse_agent_config",
    "read_agent_document",
    "read_schema_file",
]

_Loc = tuple[str | int, ...]
_MERGE = "tag:yaml.org,2002:merge"


def load_agent_config(path: str | os.PathLike[str]) -> AgentConfig:
    """Load one agent config file (either config form; see ``agent_contracts._config``).

    Args:
        path: The YAML file.

    Returns:
        The normalised config.

    Raises:
        ConfigFileError: The file is missing, unreadable, not UTF-8, not valid YAML, empty, or
            not a mapping.
        ConfigProblems: The YAML is read but its content is wrong; ``problems`` lists every
            unknown key, duplicate key, conflicting spelling and wrong value, each with its line.
    """
    document = read_agent_document(path)
    if document.problems or document.config is None:
        raise ConfigProblems(document.problems)
    return document.config


def _read_text(path: str | os.PathLike[str], what: str = "config file") -> tuple[str, str]:
    """Return ``(source, text)`` of a UTF-8 file."""
    source = os.fspath(path)
    try:
        raw = read_user_file(source)
    except FileNotFoundError as exc:
        raise ConfigFileError("file not found", source=source) from exc
    except IsADirectoryError as exc:
        raise ConfigFileError(f"is a directory, not a {what}", source=source) from exc
    except OSError as exc:
        raise ConfigFileError(
            f"cannot read the file: {exc.strerror or exc}", source=source
        ) from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigFileError(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} cannot be decoded)",
            source=source,
            line=line,
        ) from exc
    return source, text


@dataclass(frozen=True)
class AgentDocument:
    """One agent file, read once: its YAML node tree, its data, and the config or its problems.

    Attributes:
        source: The file.
        root: The YAML node tree, for pointing at lines (:meth:`line_of`).
        data: The document as plain data.
        config: The normalised config, or ``None`` when it has problems.
        problems: Every problem of the config (unknown keys, wrong values...), each at its line.
    """

    source: str
    root: yaml.MappingNode
    data: object
    config: AgentConfig | None
    problems: list[ConfigFileError]

    def line_of(self, loc: _Loc) -> int:
        """Return the line of the key at ``loc`` (or of its nearest parent in the file)."""
        return line_of(self.root, loc)


def read_agent_document(path: str | os.PathLike[str]) -> AgentDocument:
    """Read one agent file once, keeping its node tree, data and config problems.

    Args:
        path: The YAML file.

    Returns:
        The document; its ``problems`` are the config's (the file itself was readable).

    Raises:
        ConfigFileError: The file is missing, unreadable, not UTF-8, not valid YAML, empty, not
            a mapping, or its aliases expand too far.
    """
    source, text = _read_text(path)
    return _document(text, source)


def _document(text: str, source: str) -> AgentDocument:
    root, data = _read_yaml(text, source)
    problems = [
        ConfigFileError(message, source=source, line=line, field=dotted_field(loc))
        for loc, line, message in _duplicate_keys(root, ())
    ]
    config: AgentConfig | None = None
    try:
        config = AgentConfig.model_validate(data)
    except ValidationError as exc:
        problems += [_config_problem(error, root, source) for error in exc.errors()]
    problems.sort(key=lambda problem: problem.line or 0)
    return AgentDocument(source, root, data, None if problems else config, problems)


def read_schema_file(path: str | os.PathLike[str]) -> JsonValue:
    """Read a JSON Schema document from a JSON or YAML file, with an agent file's guards.

    Aliases that expand too far or refer to themselves are refused exactly as in an
    ``agent.yml``; dates stay strings, so the value is JSON data.

    Args:
        path: The file.

    Returns:
        The document's value (``None`` for an empty file; the caller checks it is an object
        or a boolean).

    Raises:
        ConfigFileError: The file cannot be read, is empty, is not valid YAML (``invalid
            YAML: ...`` with its line), or expands too far.
    """
    source, text = _read_text(path, "schema file")
    _, data = read_yaml_node(
        text, source, what="a JSON Schema is an object or a boolean", mapping=False
    )
    value: JsonValue = data  # type: ignore[assignment]
    return value


def parse_agent_config(text: str, *, source: str) -> AgentConfig:
    """Parse one agent config from YAML text.

    Args:
        text: The YAML document.
        source: Where the text came from, used in every error (a path, ``<stdin>``...).

    Returns:
        The normalised config.

    Raises:
        ConfigFileError: The text is not valid YAML, holds no document, or its top level is not
            a mapping.
        ConfigProblems: The YAML is read but its content is wrong; ``problems`` lists every
            unknown key, duplicate key, conflicting spelling and wrong value, each with its line.
    """
    document = _document(text, source)
    if document.problems or document.config is None:
        raise ConfigProblems(document.problems)
    return document.config


def _read_yaml(
    text: str, source: str, *, what: str = "an agent config is a YAML mapping of keys"
) -> tuple[yaml.MappingNode, object]:
    node, data = read_yaml_node(text, source, what=what, mapping=True)
    assert isinstance(node, yaml.MappingNode)
    return node, data


def _pairs(node: yaml.MappingNode) -> Iterator[tuple[yaml.Node, yaml.Node]]:
    """Yield the key and value nodes of a mapping, skipping ``<<`` merge keys."""
    for key, value in node.value:
        if key.tag != _MERGE:
            yield key, value


def _duplicate_keys(node: yaml.Node, loc: _Loc) -> Iterator[tuple[_Loc, int, str]]:
    """Yield ``(location, line, message)`` for each key given twice in the same mapping."""
    if isinstance(node, yaml.MappingNode):
        first_lines: dict[str, int] = {}
        for key, value in _pairs(node):
            if isinstance(key, yaml.ScalarNode):
                line = key.start_mark.line + 1
                if key.value in first_lines:
                    yield (
                        (*loc, key.value),
                        line,
                        f"duplicate key {key.value!r} (first given at line "
                        f"{first_lines[key.value]}); YAML would keep only the last",
                    )
                else:
                    first_lines[key.value] = line
                yield from _duplicate_keys(value, (*loc, key.value))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicate_keys(item, (*loc, index))


def line_of(root: yaml.Node, loc: _Loc) -> int:
    """Return the 1-based line of the key (or list item) at ``loc``, or of its nearest parent.

    Args:
        root: A document's YAML node tree.
        loc: The path of keys and list indexes.
    """
    node = root
    line = root.start_mark.line + 1
    for part in loc:
        child: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            for key, value in _pairs(node):
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    child, line = value, key.start_mark.line + 1
        elif (
            isinstance(node, yaml.SequenceNode)
            and isinstance(part, int)
            and 0 <= part < len(node.value)
        ):
            child = node.value[part]
            line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


def dotted_field(loc: tuple[str | int, ...]) -> str | None:
    """Render a location as a dotted field (``limits.maxSteps``, ``tools[1]``), or ``None``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or None


def _config_problem(error: ErrorDetails, root: yaml.Node, source: str) -> ConfigFileError:
    """Turn one validation error into a ``ConfigFileError`` at the line of its key."""
    loc = tuple(error["loc"])
    message = error["msg"]
    value = error.get("input")
    # Pydantic's own errors (they carry a docs url) say what was expected but not what was given.
    if "url" in error and isinstance(value, str | int | float | bool) and value is not None:
        shown = repr(value)
        message += f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
    line = line_of(root, loc)
    return ConfigFileError(message, source=source, line=line, field=dotted_field(loc))
