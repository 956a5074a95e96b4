"""A schema as a person types it: JSON or YAML text, parsed, and each JSON path found at its line.

The dashboard's editor sends the text it shows; :func:`parse_schema_text` turns it into a value
(or a syntax problem at its line) and :func:`line_of_path` finds the line of a finding's
``$.a.b[0]`` path in that same text, so a fault is marked where the designer wrote it.

Text from a request is held to a :class:`TextBudget` before any value is built: YAML aliases let
a few hundred bytes stand for billions of values, and deep nesting exhausts the parser's stack, so
the nesting depth is counted on the parser's events and the size after alias expansion on the
node tree (each shared node counted once per use, in time linear in the text), and text over
either limit raises :class:`TextOverBudget` naming the limit.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

import yaml
from pydantic import JsonValue

__all__ = [
    "SchemaText",
    "TextBudget",
    "TextFormat",
    "TextOverBudget",
    "TextProblem",
    "line_of_path",
    "parse_schema_text",
]

TextFormat = Literal["json", "yaml"]
"""How the schema text is written."""

_PATH_PART = re.compile(r'\.([^.\[\]]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


@dataclass(frozen=True)
class TextProblem:
    """Text that is not JSON (or YAML): what is wrong and on which line (1-based)."""

    message: str
    line: int | None


@dataclass(frozen=True)
class TextBudget:
    """How much structure schema text may hold before it is refused."""

    max_depth: int = 64
    """The deepest nesting of mappings and sequences (a JSON Schema needs far less)."""
    max_values: int = 100_000
    """The most values (mappings, sequences, scalars and keys) the text stands for once every
    alias is expanded."""


class TextOverBudget(Exception):
    """Schema text past a :class:`TextBudget` limit; nothing was built from it.

    Attributes:
        limit: Which limit: ``max_depth`` or ``max_values``.
        value: The limit's value.
    """

    def __init__(self, limit: Literal["max_depth", "max_values"], value: int, message: str):
        super().__init__(message)
        self.limit = limit
        self.value = value
        self.message = message


@dataclass(frozen=True)
class SchemaText:
    """Parsed schema text: the value, or the syntax problem, and the node tree for lines."""

    value: JsonValue
    problem: TextProblem | None
    tree: yaml.Node | None


def parse_schema_text(text: str, fmt: TextFormat, budget: TextBudget | None = None) -> SchemaText:
    """Parse ``text`` as JSON or YAML, keeping its node tree to point at lines.

    Args:
        text: What the editor holds.
        fmt: ``json`` or ``yaml``.
        budget: The depth and expanded size allowed (:class:`TextBudget`'s defaults if not given).

    Returns:
        The parsed value, or ``problem`` (with its line) when the text does not parse.

    Raises:
        TextOverBudget: The text nests deeper, or expands to more values, than ``budget``
            allows; it is raised before anything is built from the text.
    """
    budget = budget or TextBudget()
    tree: yaml.Node | None = None
    try:
        _check_depth(text, budget)
        tree = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        if fmt == "yaml":
            mark = getattr(error, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            reason = getattr(error, "problem", None) or str(error)
            return SchemaText(None, TextProblem(f"not valid YAML: {reason}", line), None)
    if tree is not None:
        _check_size(tree, budget)
    if fmt == "json":
        try:
            value: JsonValue = json.loads(text)
        except json.JSONDecodeError as error:
            return SchemaText(None, TextProblem(f"not valid JSON: {error.msg}", error.lineno), tree)
        except RecursionError:  # JSON that is not YAML (tabs, say) was not counted above
            raise _too_deep(budget) from None
        if tree is None:
            _check_value(value, budget)
        return SchemaText(value, None, tree)
    try:
        loaded = yaml.SafeLoader(text).construct_document(tree) if tree is not None else None
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


def _too_deep(budget: TextBudget) -> TextOverBudget:
    return TextOverBudget(
        "max_depth",
        budget.max_depth,
        f"the schema text nests deeper than {budget.max_depth} levels",
    )


def _too_big(budget: TextBudget) -> TextOverBudget:
    return TextOverBudget(
        "max_values",
        budget.max_values,
        f"the schema text stands for more than {budget.max_values} values "
        "(with its aliases expanded)",
    )


def _check_depth(text: str, budget: TextBudget) -> None:
    """Count nesting on the parser's events, which (unlike composing) need no stack per level."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > budget.max_depth:
                raise _too_deep(budget)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _check_size(tree: yaml.Node, budget: TextBudget) -> None:
    """Count the values ``tree`` stands for, a node shared through aliases once per use."""
    counted: dict[int, int] = {}

    def count(node: yaml.Node) -> int:
        known = counted.get(id(node))
        if known is not None:
            return known
        total = 1
        if isinstance(node, yaml.MappingNode):
            total += sum(count(key) + count(value) for key, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(count(item) for item in node.value)
        if total > budget.max_values:
            raise _too_big(budget)
        counted[id(node)] = total
        return total

    count(tree)


def _check_value(value: JsonValue, budget: TextBudget) -> None:
    """Bound a value parsed from JSON (no aliases: its size is its text's) to the depth."""
    level: list[JsonValue] = [value]
    for _ in range(budget.max_depth + 1):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return
    raise _too_deep(budget)


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
