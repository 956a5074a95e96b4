"""Bounds on a model-given regular expression, checked before it is compiled.

Compiling cannot be interrupted, and the ``regex`` package expands counted repeats when it
compiles: ``a{1000000000}`` asks for gigabytes, and nested counts multiply (``(?:a{1000}){1000}``
takes a quarter of a gigabyte). :func:`pattern_problem` estimates the compiled size of a pattern
(each atom counts one, a counted repeat multiplies what it repeats) without compiling it, and
refuses one that is too long or would expand too far. The estimate reads escapes, character
classes, groups and ``{n}``, ``{n,}``, ``{,m}``, ``{n,m}`` counts; anything else counts as one
character, so it can only overestimate.
"""

from __future__ import annotations

import re

__all__ = ["pattern_problem"]

_COUNT = re.compile(r"\{\s*(\d*)\s*(?:(,)\s*(\d*)\s*)?\}")
_BRACED_ESCAPES = frozenset("pPNxuUgkL")


def pattern_problem(pattern: str, *, max_chars: int, max_size: int) -> str | None:
    """Say why a regular expression is too large to compile safely, or return ``None``.

    Args:
        pattern: The pattern, in ``regex`` package syntax.
        max_chars: The longest pattern accepted.
        max_size: The largest estimated compiled size (atoms, counted repeats multiplied).
    """
    if len(pattern) > max_chars:
        return f"the pattern is {len(pattern)} characters long; at most {max_chars} are allowed"
    size = _estimated_size(pattern, max_size)
    if size > max_size:
        return (
            f"the pattern's counted repeats expand to more than {max_size:,} steps "
            "(counts multiply when nested); use smaller counts, '+' or '*', or literal=true"
        )
    return None


def _estimated_size(pattern: str, limit: int) -> int:
    """Estimate the compiled size of ``pattern``, stopping early once it passes ``limit``."""
    frames: list[list[int]] = [[0, 0]]  # per open group: [size so far, size of the last atom]
    index = 0
    while index < len(pattern):
        character = pattern[index]
        frame = frames[-1]
        if character == "\\":
            index = _skip_escape(pattern, index)
            frame[0], frame[1] = frame[0] + 1, 1
            continue
        if character == "[":
            index = _skip_class(pattern, index)
            frame[0], frame[1] = frame[0] + 1, 1
            continue
        if character == "(":
            frames.append([0, 0])
        elif character == ")" and len(frames) > 1:
            inner = frames.pop()[0]
            parent = frames[-1]
            parent[0], parent[1] = parent[0] + inner, inner
        elif character == "{" and (count := _COUNT.match(pattern, index)):
            low, comma, high = count.group(1), count.group(2), count.group(3)
            times = int(high) if comma and high else int(low) if low else 1
            frame[0] += frame[1] * (max(times, 1) - 1)
            frame[1] *= max(times, 1)
            index = count.end()
            if frame[0] > limit:
                return frame[0]
            continue
        else:
            frame[0], frame[1] = frame[0] + 1, 1
        index += 1
    while len(frames) > 1:  # an unclosed group: regex refuses it anyway
        inner = frames.pop()[0]
        frames[-1][0] += inner
    return frames[0][0]


def _skip_escape(pattern: str, index: int) -> int:
    """Return the index after the escape starting at ``pattern[index]`` (a backslash)."""
    following = pattern[index + 1 : index + 2]
    end = index + 2
    if following in _BRACED_ESCAPES and pattern[end : end + 1] in ("{", "<"):
        closer = "}" if pattern[end] == "{" else ">"
        found = pattern.find(closer, end)
        return len(pattern) if found < 0 else found + 1
    return end


def _skip_class(pattern: str, index: int) -> int:
    """Return the index after the character class starting at ``pattern[index]`` (a ``[``)."""
    index += 1
    if pattern[index : index + 1] == "^":
        index += 1
    if pattern[index : index + 1] == "]":  # a leading ']' is a literal
        index += 1
    # The first unescaped ']' ends it. (A nested set of the V1 syntax then ends early and its
    # rest counts as literal characters: an overestimate, never an underestimate.)
    while index < len(pattern):
        character = pattern[index]
        if character == "\\":
            index += 2
            continue
        index += 1
        if character == "]":
            break
    return index
