"""The one "did you mean" of agentshape: agent ids, config keys, schema keywords, tool names.

A name that differs only in case, ``_`` or ``-`` from a known one matches first (``maxSteps`` for
``max_steps``); otherwise ``difflib`` picks the closest spelling above a cutoff. The default
cutoff (0.6) suits names a person picks from a short list; schema keyword typos, which are only
warnings and must not fire on a custom keyword, use a stricter one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean", "suggest"]


def _squash(text: str) -> str:
    return text.lower().replace("_", "").replace("-", "")


def suggest(word: str, known: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """Return the known name nearest to a mistyped one, or ``None`` when none is close.

    Args:
        word: What was written.
        known: The names accepted there.
        cutoff: How close (0 to 1) a spelling must be to be suggested.
    """
    options = sorted(set(known))
    for candidate in options:
        if candidate != word and _squash(candidate) == _squash(word):
            return candidate
    close = difflib.get_close_matches(word, options, n=1, cutoff=cutoff)
    return close[0] if close and close[0] != word else None


def did_you_mean(word: str, known: Iterable[str], *, cutoff: float = 0.6) -> str:
    """Return `` (did you mean 'x'?)`` for a message, or ``""`` when nothing is close.

    Args:
        word: What was written.
        known: The names accepted there.
        cutoff: As for :func:`suggest`.
    """
    hint = suggest(word, known, cutoff=cutoff)
    return f" (did you mean {hint!r}?)" if hint else ""
