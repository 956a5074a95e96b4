r"""ECMA-262 patterns the engine refuses, respelled so that it accepts them with the same meaning.

Annex B lets a pattern use ``]``, ``{`` and ``}`` as plain characters (``\[\*]``, ``a}``), ``\c``
without a letter, ``[]`` and ``[^]``; the engine's meta-schema check refuses them.
:func:`rewrite_schema_patterns` returns a copy of a schema with such patterns spelled the strict
way (``\]``, ``(?!)``, ``[\s\S]``...), and a ``renamed`` map back to the designer's spelling so
messages show what the designer wrote (:func:`designer_parts`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from pydantic import JsonValue

from agent_core._pattern_classes import explicit_classes

__all__ = [
    "PatternRewrite",
    "annex_b_escaped",
    "designer_parts",
    "needs_engine_spelling",
    "rewrite_schema_patterns",
]

_QUANTIFIER = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_ASCII_LETTER = re.compile(r"[A-Za-z]")

# Keywords whose value is one subschema, a list of subschemas, or a map of names to subschemas,
# in any supported draft (a keyword a draft does not know holds no pattern the engine checks, and
# the rewrite never changes what a pattern means, so visiting it does no harm).
_ONE = (
    "additionalItems",
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_MANY = ("allOf", "anyOf", "items", "oneOf", "prefixItems")
_MAPS = (
    "$defs",
    "definitions",
    "dependencies",
    "dependentSchemas",
    "patternProperties",
    "properties",
)


def annex_b_escaped(pattern: str) -> str:
    r"""Return ``pattern`` with its Annex B literal syntax spelled the strict ECMA-262 way.

    A ``]`` or ``}`` outside a class, and a ``{`` that does not start a ``{n}``, ``{n,}`` or
    ``{n,m}`` quantifier, become ``\]``, ``\}`` and ``\{``; ``\c`` not followed by an ASCII
    letter becomes ``\\c``; the empty class ``[]`` becomes ``(?!)`` and ``[^]`` becomes
    ``[\s\S]``. Everything else, escapes and class contents included, is kept as written. A
    pattern that is not valid even under Annex B (an unterminated class, a lone ``(``) comes
    back with only those changes, so the engine still refuses it.

    Args:
        pattern: An ECMA-262 regular expression (no flags).

    Returns:
        A pattern that matches exactly the same strings; ``pattern`` itself when nothing needed
        a new spelling.
    """
    out: list[str] = []
    index, size = 0, len(pattern)
    while index < size:
        char = pattern[index]
        if char == "\\":
            following = pattern[index + 1 : index + 2]
            if following == "c" and not _ASCII_LETTER.match(pattern, index + 2):
                out.append("\\\\c")
            else:
                out.append(char + following)
            index += 2
        elif char == "[":
            end = _class_end(pattern, index)
            if end is None:
                out.append(pattern[index:])
                break
            body = pattern[index:end]
            if body == "[":
                out.append("(?!)")
            elif body == "[^":
                out.append("[\\s\\S]")
            else:
                out.append(pattern[index : end + 1])
            index = end + 1
        elif char == "{":
            quantifier = _QUANTIFIER.match(pattern, index)
            if quantifier is None:
                out.append("\\{")
                index += 1
            else:
                out.append(quantifier.group())
                index = quantifier.end()
        elif char in "]}":
            out.append("\\" + char)
            index += 1
        else:
            out.append(char)
            index += 1
    escaped = "".join(out)
    return pattern if escaped == pattern else escaped


_FANCY = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<")
_CLASS_ESCAPE = re.compile(r"\\[dDwWsS]")


def _ascii_misread(pattern: str) -> bool:
    r"""Whether the engine would read the pattern's ``\d``/``\w``/``\s`` as Unicode classes.

    It hands a lookaround or backreference to a backtracking library that reads them as Unicode.
    """
    return _FANCY.search(pattern) is not None and _CLASS_ESCAPE.search(pattern) is not None


def _engine_spelling(pattern: str) -> str:
    """Return the spelling the engine reads with ECMA-262's meaning."""
    spelling = annex_b_escaped(pattern)
    return explicit_classes(spelling).pattern if _ascii_misread(spelling) else spelling


def needs_engine_spelling(schema: Mapping[str, JsonValue] | bool) -> bool:
    r"""Return whether a pattern of ``schema`` must be respelled for the engine to read it right.

    True when a pattern has a lookaround or backreference and a ``\d``, ``\w`` or ``\s`` escape
    (:func:`rewrite_schema_patterns` then spells those escapes as ECMA-262's ASCII classes).

    Args:
        schema: A JSON Schema.

    Returns:
        Whether :func:`rewrite_schema_patterns` should be applied before compiling.
    """
    found: set[str] = set()
    _patterns_in(dict(schema) if isinstance(schema, Mapping) else schema, found)
    return any(_ascii_misread(pattern) for pattern in found)


def _class_end(pattern: str, start: int) -> int | None:
    """Return the index of the ``]`` closing the class opened at ``start``, or None."""
    index = start + 1
    if pattern.startswith("^", index):
        index += 1
    while index < len(pattern):
        char = pattern[index]
        if char == "]":
            return index
        index += 2 if char == "\\" else 1
    return None


class PatternRewrite(NamedTuple):
    """A schema with its patterns respelled for the engine, and the way back to the designer's."""

    schema: JsonValue
    """The rewritten copy of the schema; parts without patterns are shared, not copied."""
    renamed: dict[str, str]
    """Each new spelling (of a ``pattern`` value or ``patternProperties`` key) -> the
    designer's. New spellings are unique in the document, so the map is never ambiguous."""


class _Rewriter:
    """Walks a schema's subschemas and respells the patterns that need it."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.renamed: dict[str, str] = {}
        self.spelled: dict[str, str] = {}

    def spell(self, pattern: str) -> str:
        """Return the engine's spelling of ``pattern``, unique among the document's patterns."""
        known = self.spelled.get(pattern)
        if known is not None:
            return known
        spelling = _engine_spelling(pattern)
        if spelling != pattern:
            while spelling in self.taken or spelling in self.renamed:
                spelling += "(?:)"
            self.renamed[spelling] = pattern
        self.spelled[pattern] = spelling
        return spelling

    def schema(self, node: JsonValue) -> JsonValue:
        """Return ``node`` (a subschema) with its patterns respelled; ``node`` if none changed."""
        if not isinstance(node, dict):
            return node
        changed: dict[str, JsonValue] = {}
        pattern = node.get("pattern")
        if isinstance(pattern, str) and self.spell(pattern) != pattern:
            changed["pattern"] = self.spell(pattern)
        for key in _ONE:
            child = node.get(key)
            if isinstance(child, dict) and (new := self.schema(child)) is not child:
                changed[key] = new
        for key in _MANY:
            items = node.get(key)
            if isinstance(items, list):
                new_items = [self.schema(item) for item in items]
                if any(new is not old for new, old in zip(new_items, items, strict=True)):
                    changed[key] = list(new_items)
        for key in _MAPS:
            members = node.get(key)
            if isinstance(members, dict):
                renames = key == "patternProperties"
                new_members = {
                    (self.spell(name) if renames else name): self.schema(value)
                    for name, value in members.items()
                }
                if list(new_members) != list(members) or any(
                    new is not old
                    for new, old in zip(new_members.values(), members.values(), strict=True)
                ):
                    changed[key] = dict(new_members)
        return {**node, **changed} if changed else node


def _patterns_in(node: JsonValue, found: set[str]) -> None:
    """Add every string that is a ``pattern`` value or ``patternProperties`` key to ``found``."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            pattern = current.get("pattern")
            if isinstance(pattern, str):
                found.add(pattern)
            members = current.get("patternProperties")
            if isinstance(members, dict):
                found.update(members)
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)


def rewrite_schema_patterns(schema: Mapping[str, JsonValue] | bool) -> PatternRewrite | None:
    """Respell the schema's ``pattern`` values and ``patternProperties`` keys for the engine.

    Only subschemas are visited (``properties``, ``items``, ``allOf``, ``definitions``...): a
    ``pattern`` inside ``enum``, ``const``, ``default`` or ``examples`` is data and is kept.

    Args:
        schema: A JSON Schema; it is not modified.

    Returns:
        The rewritten copy and the map back to the designer's spellings, or None when no
        pattern needed a new spelling.
    """
    if not isinstance(schema, Mapping):
        return None
    taken: set[str] = set()
    _patterns_in(dict(schema), taken)
    rewriter = _Rewriter(taken)
    rewritten = rewriter.schema(dict(schema))
    if not rewriter.renamed:
        return None
    return PatternRewrite(rewritten, rewriter.renamed)


def designer_parts(parts: Sequence[str | int], renamed: Mapping[str, str]) -> list[str | int]:
    """Return a schema path with each respelled ``patternProperties`` key as the designer wrote it.

    Args:
        parts: Keys and indices of a location in the rewritten schema.
        renamed: :attr:`PatternRewrite.renamed`.

    Returns:
        The same location in the designer's schema.
    """
    out = list(parts)
    if not renamed:
        return out
    for index in range(1, len(out)):
        part = out[index]
        if out[index - 1] == "patternProperties" and isinstance(part, str):
            out[index] = renamed.get(part, part)
    return out
