"""JSON paths for people: $.issues[0].severity, and the order problems are listed in."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from agent_core._surrogates import escape_surrogates

__all__ = ["IssueSortKey", "format_path"]


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def format_path(parts: Sequence[str | int]) -> str:
    """Render a path as JSONPath-like text.

    ``("issues", 0, "severity")`` becomes ``$.issues[0].severity``; a key that is not a plain
    identifier is quoted, as in ``$["a-b"]`` (a lone surrogate in it spelled as its escape).

    Args:
        parts: Object keys (strings) and array indices (integers), outermost first.

    Returns:
        The path, ``$`` for the root.
    """
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.match(part):
            out.append(f".{part}")
        else:
            out.append(f"[{escape_surrogates(json.dumps(part, ensure_ascii=False))}]")
    return "".join(out)


_SortKey = tuple[tuple[int, int | str], ...]


IssueSortKey = tuple[_SortKey, _SortKey]
"""How issues are ordered: by the offending value's path, then by the failing keyword's path
in the schema (object keys alphabetically, array indices numerically)."""


def _path_key(parts: Sequence[str | int]) -> _SortKey:
    """Return a sort key for a path: indices numerically, keys alphabetically."""
    return tuple((0, part) if isinstance(part, int) else (1, part) for part in parts)
