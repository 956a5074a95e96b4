"""A schema as a person types it: JSON or YAML text, parsed, and each JSON path found at its line.

The dashboard's editor sends the text it shows; :func:`parse_schema_text` turns it into a value
(or a syntax problem at its line) and :func:`line_of_path` finds the line of a finding's
``$.a.b[0]`` path in that same text, so a fault is marked where the designer wrote it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

import yaml
from pydantic import JsonValue

__all__ = ["SchemaText", "TextFormat", "TextProblem", "line_of_path", "parse_schema_text"]

TextFormat = Literal["json", "yaml"]
"""How the schema text is written."""

_PATH_PART = re.compile(r'\.([^.\[\]]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


@dataclass(frozen=True)
class TextProblem:
    """Text that is not JSON (or YAML): what is wrong and on which line (1-based)."""

    message: str
    line: int | None


@dataclass(frozen=True)
class SchemaText:
    """Parsed schema text: the value, or the syntax problem, and the node tree for lines."""

    value: JsonValue
    problem: TextProblem | None
    tree: yaml.Node | None


def parse_schema_text(text: str, fmt: TextFormat) -> SchemaText:
    """Parse ``text`` as JSON or YAML, keeping its node tree to point at lines.

    Args:
        text: What the editor holds.
        fmt: ``json`` or ``yaml``.

    Returns:
        The parsed value, or ``problem`` (with its line) when the text does not parse; never
        raises for bad text.
    """
    tree: yaml.Node | None = None
    try:
        tree = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        if fmt == "yaml":
            mark = getattr(error, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            reason = getattr(error, "problem", None) or str(error)
            return SchemaText(None, TextProblem(f"not valid YAML: {reason}", line), None)
    if fmt == "json":
        try:
            value: JsonValue = json.loads(text)
        except json.JSONDecodeError as error:
            return SchemaText(None, TextProblem(f"not valid JSON: {error.msg}", error.lineno), tree)
        return SchemaText(value, None, tree)
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as error:  # composes but does not construct (a bad tag, say)
        return SchemaText(None, TextProblem(f"not valid YAML: {error}", None), tree)
    try:
        value = json.loads(json.dumps(loaded))
    except (TypeError, ValueError):
        return SchemaText(
            None,
            TextProblem("the YAML holds values JSON cannot (dates, sets, non-string keys)", None),
            tree,
        )
    return SchemaText(value, None, tree)


def _parts(path: str) -> list[str | int]:
    parts: list[str | int] = []
    for match in _PATH_PART.finditer(path.removeprefix("$")):
        name, index, quoted = match.groups()
        if name is not None:
            parts.append(name)
        elif index is not None:
            parts.append(int(index))
        else:
            parts.append(str(json.loads(quoted)))
    return parts


def line_of_path(tree: yaml.Node | None, path: str, keyword: str | None = None) -> int | None:
    """Return the 1-based line of the node at a finding's JSON path (or its nearest parent).

    Args:
        tree: The node tree of the parsed text.
        path: ``$``, ``$.properties.a``, ``$.required[0]``, ``$["odd key"]``.
        keyword: The keyword the finding is about; when the node at ``path`` has it, its line.

    Returns:
        The line of the key (for an object member) or of the item; ``None`` without a tree.
    """
    if tree is None:
        return None
    node: yaml.Node = tree
    line = node.start_mark.line + 1
    parts = _parts(path)
    if keyword is not None:
        parts.append(keyword)
    for part in parts:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            found = next((pair for pair in node.value if pair[0].value == part), None)
            if found is None:
                break
            line = found[0].start_mark.line + 1
            node = found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line
