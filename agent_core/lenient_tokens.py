"""The lenient parser's vocabulary: repair notes, token patterns, escapes, literals, errors."""

from __future__ import annotations

import json
import re
from typing import Final, NoReturn

from pydantic import JsonValue

__all__ = ["STRICT_DECODER", "HopelessInput", "ParseFailure"]


_TRAILING_COMMA = "removed a trailing comma"


_SINGLE_QUOTES = "read a single-quoted string"


_TYPOGRAPHIC = "read a typographic-quoted string"


_PY_LITERAL = "read a Python literal"


_COMMENT = "skipped a comment"


_UNQUOTED_KEY = "read an unquoted key"


_RAW_CONTROL = "kept a raw control character in a string"


_BAD_ESCAPE = "kept an unknown escape literally"


_CLOSED = "added missing closing brackets at the end"


_WS_RE: Final = re.compile(r"[\s\ufeff]*+")


_NUMBER_RE: Final = re.compile(r"-?(?:0|[1-9][0-9]*+)(\.[0-9]++)?([eE][+-]?[0-9]++)?")


_IDENT_RE: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*+")


_CONTROL_RE: Final = re.compile(r"[\x00-\x1f]")


_SURROGATE_RE: Final = re.compile(r"[\ud800-\udfff]")


_STRICT_STRING_RE: Final = re.compile(
    r'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4})[^"\\\x00-\x1f]*+)*+"'
)


_QUOTES: Final = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019"}


_CHUNK_RE: Final = {c: re.compile(f"[^\\\\{c}]*+") for c in set(_QUOTES.values())}


_ESCAPES: Final = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


_LITERALS: Final[dict[str, JsonValue]] = {"true": True, "false": False, "null": None}


_PY_LITERALS: Final[dict[str, JsonValue]] = {"True": True, "False": False, "None": None}


class HopelessInput(Exception):
    """Input too pathological to scan (nesting deeper than :data:`MAX_DEPTH`, say).

    Raised instead of a :class:`ParseFailure` when trying elsewhere in the text would only repeat
    the same expensive failure; the caller refuses the whole text.
    """


class ParseFailure(Exception):
    """Why a lenient parse stopped.

    Attributes:
        pos: Offset in the parsed text where the problem is (the text's end when it ran out).
        reason: What is wrong, for a person to read.
        truncated: The text ran out before the value was complete (cut inside a string, after a
            comma, ...), as opposed to holding something that is not JSON.
        trailing: A complete value was read but more text follows it (``document`` only).
        depth: How many objects and arrays were open when the parse stopped.
        committed: The parse had read a double-quoted key, a ``key:`` or a whole member or item,
            so the text looked like JSON (``{"a": oops}``) rather than prose in braces
            (``{name}``, ``[see below]``).
        scan_from: Where the broken value can be scanned from with :func:`skip_balanced` at
            ``depth`` (the start of a string the parse stopped inside, else ``pos``).
    """

    def __init__(
        self,
        pos: int,
        reason: str,
        *,
        truncated: bool = False,
        trailing: bool = False,
        scan_from: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.pos = pos
        self.reason = reason
        self.truncated = truncated
        self.trailing = trailing
        self.depth = 0
        self.committed = False
        self.scan_from = pos if scan_from is None else scan_from


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


STRICT_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)
"""A strict RFC 8259 decoder: ``NaN`` and ``Infinity`` are errors, not floats."""
