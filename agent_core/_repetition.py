"""Loops in a reply: the piece a model wrote over and over until its token limit cut it off.

A small model decoding at temperature 0 can fall into writing one piece again and again
(``"summary: summary: summary: ..."``). :func:`find_loop` finds such a run at the end of a cut-off
reply, so that the re-ask can name what happened and quote the reply without the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Loop", "find_loop"]

_LONGEST_PIECE = 64
"""Longest repeated piece looked for, in characters."""
_LEAST_REPEATS = 4
"""A piece must be written at least this many times in a row to count as a loop."""
_LEAST_LOOP = 24
"""A loop must also span at least this many characters (``"aaaa"`` is not one)."""
_TAIL = 8000
"""Only this many characters at the end of a reply are searched."""


@dataclass(frozen=True)
class Loop:
    """A piece written over and over up to the end of a reply.

    Attributes:
        piece: The repeated piece, as first written in the loop.
        start: Where the loop begins in the reply.
    """

    piece: str
    start: int


def find_loop(text: str) -> Loop | None:
    """Return the loop the reply ends in, the one of the shortest piece, or ``None``.

    Args:
        text: The reply (typically one the token limit cut off, so it may end mid-piece).

    Returns:
        The loop, or ``None`` when the reply does not end in one.
    """
    offset = max(0, len(text) - _TAIL)
    tail = text[offset:]
    end = len(tail)
    for period in range(1, min(_LONGEST_PIECE, end // _LEAST_REPEATS) + 1):
        start = end - period
        # Walk back while the text repeats itself ``period`` characters later.
        while start > 0 and tail[start - 1] == tail[start - 1 + period]:
            start -= 1
        length = end - start
        if length >= period * _LEAST_REPEATS and length >= _LEAST_LOOP:
            return Loop(piece=tail[start : start + period], start=offset + start)
    return None
