"""Finding JSON blocks inside text: balanced brackets, nesting depth, string bodies."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from pydantic import JsonValue

__all__ = ["MAX_DEPTH", "depth_ok", "skip_balanced"]


MAX_DEPTH: Final = 256
"""Deepest nesting of objects and arrays that is read; deeper input raises HopelessInput."""


_BRACKET_OR_QUOTE_RE: Final = re.compile(r'[\[\]{}"]')


_STRING_REST_RE: Final = re.compile(r'(?:[^"\\]|\\.)*+"', re.S)


def skip_balanced(text: str, pos: int, depth: int) -> int:
    """Return the offset just past where ``depth`` open brackets close, scanning from ``pos``.

    Brackets of either kind count; double-quoted strings are skipped whole. Used to step over
    the rest of a broken value so that nothing nested in it is taken for a value of its own.

    Returns:
        The offset after the closing bracket that balances them, or the text's end if none does.
    """
    end = len(text)
    while depth > 0:
        match = _BRACKET_OR_QUOTE_RE.search(text, pos)
        if match is None:
            return end
        char, pos = match.group(), match.end()
        if char == '"':
            rest = _STRING_REST_RE.match(text, pos)
            if rest is None:
                return end
            pos = rest.end()
        else:
            depth += 1 if char in "[{" else -1
    return pos


def depth_ok(value: JsonValue) -> bool:
    """Return whether ``value`` nests objects and arrays no deeper than :data:`MAX_DEPTH`."""
    pending: list[tuple[JsonValue, int]] = [(value, 0)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict):
            children: Iterator[JsonValue] = iter(node.values())
        elif isinstance(node, list):
            children = iter(node)
        else:
            continue
        if depth >= MAX_DEPTH:
            return False
        pending.extend((child, depth + 1) for child in children)
    return True
