"""A lenient JSON parser: strict JSON plus the slips models make that have exactly one reading.

:class:`LenientParser` reads one value in a single pass with an explicit stack (bounded by
:data:`MAX_DEPTH`) and names each repair it needed; anything else stops it with a
:class:`ParseFailure` saying where, why, and whether the text ran out. It is the scanner behind
:mod:`agent_core._extract` and knows nothing about prose, fences or tags.
"""

from __future__ import annotations

import json
import math
import re
from typing import Final, NoReturn

from pydantic import JsonValue

from agent_core._json_blocks import (
    MAX_DEPTH,
    depth_ok,
    skip_balanced,
)

__all__ = [
    "MAX_DEPTH",
    "STRICT_DECODER",
    "HopelessInput",
    "LenientParser",
    "ParseFailure",
    "decode_inner",
    "depth_ok",
    "parse_block",
    "skip_balanced",
]

# Repair names, as reported in ExtractionResult.repairs.
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


_HEX4_RE: Final = re.compile(r"[0-9A-Fa-f]{4}")


_VALUE_START, _KEY, _COLON, _AFTER = range(4)


class LenientParser:
    """A single-pass, iterative parser for JSON plus the one-reading slips models make.

    One parser reads one text; ``repairs`` collects the names of the repairs its parses needed.

    Attributes:
        text: The text being parsed.
        end: Its length: the parser never reads past it.
        repairs: Names of the repairs applied so far, such as ``removed a trailing comma``.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.end = len(text)
        self.repairs: set[str] = set()
        self._looks_json = False

    def skip(self, pos: int) -> int:
        """Return the first offset at or after ``pos`` that is not whitespace or a comment.

        Raises:
            ParseFailure: The text ends inside a ``/*`` comment.
        """
        text, end = self.text, self.end
        if pos < end:
            c = text[pos]
            if c not in "#/\ufeff" and not c.isspace():
                return pos
        while True:
            pos = _WS_RE.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= end:
                return pos
            c = text[pos]
            if c == "#" or text.startswith("//", pos):
                newline = text.find("\n", pos)
                pos = end if newline < 0 else newline
            elif text.startswith("/*", pos):
                close = text.find("*/", pos + 2)
                if close < 0:
                    raise ParseFailure(end, "the text ends inside a /* comment", truncated=True)
                pos = close + 2
            else:
                return pos
            self.repairs.add(_COMMENT)

    def document(self) -> tuple[JsonValue, int, int]:
        """Parse the whole text as one value, comments and whitespace around it allowed.

        Returns:
            The value, the offset where its text starts, and the offset just past it.

        Raises:
            ParseFailure: The text is not one value (``trailing`` when text follows a value).
            HopelessInput: The value nests deeper than :data:`MAX_DEPTH`.
        """
        start = self.skip(0)
        if start >= self.end:
            raise ParseFailure(start, "there is no text", truncated=True)
        value, stop = self.value(start)
        if self.skip(stop) < self.end:
            raise ParseFailure(stop, "text follows the value", trailing=True)
        return value, start, stop

    def value(self, pos: int) -> tuple[JsonValue, int]:
        """Parse one value starting at ``pos``; return it and the offset just past it.

        Raises:
            ParseFailure: No complete value starts at ``pos``.
            HopelessInput: The value nests deeper than :data:`MAX_DEPTH`.
        """
        stack: list[dict[str, JsonValue] | list[JsonValue]] = []
        self._looks_json = False
        try:
            return self._value(pos, stack)
        except ParseFailure as failure:
            failure.depth = len(stack)
            failure.committed = self._looks_json or any(stack)
            raise

    def _value(
        self, pos: int, stack: list[dict[str, JsonValue] | list[JsonValue]]
    ) -> tuple[JsonValue, int]:
        text, end = self.text, self.end
        root: JsonValue = None
        key = ""
        state = _VALUE_START
        comma = False
        number_end = -1
        while True:
            pos = self.skip(pos)
            if pos >= end:
                return self._at_end(root, stack, state, number_end)
            c = text[pos]
            if state == _AFTER:
                top = stack[-1]
                closer = "}" if isinstance(top, dict) else "]"
                if c == ",":
                    state, comma, pos = (_KEY if closer == "}" else _VALUE_START), True, pos + 1
                    continue
                if c != closer:
                    raise ParseFailure(pos, f"expected ',' or '{closer}' but found {c!r}")
                stack.pop()
                pos += 1
                if not stack:
                    return root, pos
                continue
            if state == _COLON:
                if c != ":":
                    raise ParseFailure(pos, f"expected ':' after the key {key!r}, found {c!r}")
                state, pos, self._looks_json = _VALUE_START, pos + 1, True
                continue
            closes_empty = (state == _KEY and c == "}") or (
                state == _VALUE_START and c == "]" and stack and isinstance(stack[-1], list)
            )
            if closes_empty:
                if comma:
                    self.repairs.add(_TRAILING_COMMA)
                stack.pop()
                pos, state, comma = pos + 1, _AFTER, False
                if not stack:
                    return root, pos
                continue
            if state == _KEY:
                self._looks_json = self._looks_json or c == '"'
                key, pos = self._key(pos, c)
                state, comma = _COLON, False
                continue
            item: JsonValue
            if c in "{[":
                if len(stack) >= MAX_DEPTH:
                    raise HopelessInput(
                        f"the reply nests objects and arrays deeper than {MAX_DEPTH}"
                    )
                item = {} if c == "{" else []
                pos += 1
            else:
                item, pos, is_number = self._scalar(pos, c)
                number_end = pos if is_number else -1
            comma = False
            if not stack:
                if not isinstance(item, (dict, list)):
                    return item, pos
                root = item
            elif isinstance(stack[-1], dict):
                stack[-1][key] = item
            else:
                stack[-1].append(item)
            if isinstance(item, dict):
                stack.append(item)
                state = _KEY
            elif isinstance(item, list):
                stack.append(item)
                state = _VALUE_START
            else:
                state = _AFTER

    def _at_end(
        self,
        root: JsonValue,
        stack: list[dict[str, JsonValue] | list[JsonValue]],
        state: int,
        number_end: int,
    ) -> tuple[JsonValue, int]:
        end = self.end
        if state != _AFTER:
            where = {_KEY: "where a key was expected", _COLON: "right after a key"}
            reason = where.get(state, "where a value was expected")
            if state == _VALUE_START and stack and isinstance(stack[-1], dict):
                reason = "right after ':'"
            raise ParseFailure(end, f"the text ends {reason}", truncated=True)
        if number_end == end:
            raise ParseFailure(end, "the text ends inside a number", truncated=True)
        self.repairs.add(_CLOSED)
        del stack[:]
        return root, end

    def _key(self, pos: int, c: str) -> tuple[str, int]:
        if c in _QUOTES:
            return self._string(pos, what="key")
        match = _IDENT_RE.match(self.text, pos)
        if match is None:
            raise ParseFailure(pos, f"expected a key but found {c!r}")
        if match.end() >= self.end:
            raise ParseFailure(self.end, "the text ends inside a key", truncated=True)
        self.repairs.add(_UNQUOTED_KEY)
        return match.group(), match.end()

    def _scalar(self, pos: int, c: str) -> tuple[JsonValue, int, bool]:
        text, end = self.text, self.end
        if c in _QUOTES:
            string, pos = self._string(pos, what="string")
            return string, pos, False
        if c == "-" or "0" <= c <= "9":
            match = _NUMBER_RE.match(text, pos)
            if match is None:
                if pos + 1 >= end:
                    raise ParseFailure(end, "the text ends inside a number", truncated=True)
                raise ParseFailure(pos, "this is not a JSON number")
            stop = match.end()
            if stop < end and (text[stop].isalnum() or text[stop] in "_$."):
                raise ParseFailure(stop, "this is not a JSON number")
            literal = match.group()
            number: int | float
            if match.lastindex:
                number = float(literal)
                if not math.isfinite(number):
                    raise ParseFailure(pos, "the number is too large for a float")
            else:
                try:
                    number = int(literal)
                except ValueError:
                    raise ParseFailure(pos, "the number has too many digits") from None
            return number, stop, True
        match = _IDENT_RE.match(text, pos)
        if match is None:
            raise ParseFailure(pos, f"expected a JSON value but found {c!r}")
        word = match.group()
        if word in _LITERALS:
            return _LITERALS[word], match.end(), False
        if word in _PY_LITERALS:
            self.repairs.add(_PY_LITERAL)
            return _PY_LITERALS[word], match.end(), False
        if match.end() >= end and any(lit.startswith(word) for lit in (*_LITERALS, *_PY_LITERALS)):
            raise ParseFailure(end, f"the text ends inside the literal {word!r}", truncated=True)
        raise ParseFailure(pos, f"{word!r} is not a JSON value")

    def _string(self, pos: int, *, what: str) -> tuple[str, int]:
        text, end = self.text, self.end
        opener = text[pos]
        closer = _QUOTES[opener]
        if opener == '"':
            strict = _STRICT_STRING_RE.match(text, pos)
            if strict is not None:
                literal = strict.group()
                return (
                    literal[1:-1] if "\\" not in literal else STRICT_DECODER.decode(literal)
                ), strict.end()
        else:
            self.repairs.add(_SINGLE_QUOTES if opener == "'" else _TYPOGRAPHIC)
        chunk_re = _CHUNK_RE[closer]
        parts: list[str] = []
        i = pos + 1
        cut = f"the text ends inside a {what} that starts at offset {pos}"
        while True:
            segment = chunk_re.match(text, i).group()  # type: ignore[union-attr]
            i += len(segment)
            if segment:
                parts.append(segment)
                if _CONTROL_RE.search(segment):
                    self.repairs.add(_RAW_CONTROL)
            if i >= end or (text[i] == "\\" and i + 1 >= end):
                raise ParseFailure(end, cut, truncated=True)
            if text[i] == closer:
                i += 1
                break
            escape = text[i + 1]
            if escape in _ESCAPES or escape == closer:
                parts.append(_ESCAPES.get(escape, closer))
                i += 2
            elif escape == "u":
                digits = text[i + 2 : i + 6]
                if _HEX4_RE.fullmatch(digits):
                    parts.append(chr(int(digits, 16)))
                    i += 6
                elif i + 2 + len(digits) >= end and re.fullmatch(r"[0-9A-Fa-f]*", digits):
                    raise ParseFailure(end, cut, truncated=True)
                else:
                    raise ParseFailure(i, "a \\u escape needs four hex digits", scan_from=pos)
            else:
                parts.append("\\" + escape)
                self.repairs.add(_BAD_ESCAPE)
                i += 2
        string = "".join(parts)
        if _SURROGATE_RE.search(string):
            string = string.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
        return string, i


def parse_block(text: str, offset: int) -> tuple[JsonValue, int, int, tuple[str, ...]]:
    """Parse ``text`` as exactly one value: strict JSON first, then leniently.

    Args:
        text: The text of a reply or of a block in it.
        offset: Where ``text`` starts in the reply; the returned offsets are the reply's.

    Returns:
        The value, its start and end offsets in the reply, and the sorted repair names (empty
        when the text was strict JSON).

    Raises:
        ParseFailure: The text is not exactly one value.
        HopelessInput: The value nests deeper than :data:`MAX_DEPTH`.
    """
    stripped = text.strip()
    try:
        value = STRICT_DECODER.decode(stripped)
    except (ValueError, RecursionError):
        pass
    else:
        if depth_ok(value):
            start = offset + len(text) - len(text.lstrip())
            return value, start, start + len(stripped), ()
    parser = LenientParser(text)
    value, start, stop = parser.document()
    return value, start + offset, stop + offset, tuple(sorted(parser.repairs))


def decode_inner(value: str) -> JsonValue:
    r"""Return the object or array that the string ``value`` holds as strict JSON, else ``None``.

    This reads a double-encoded reply such as ``"{\"a\": 1}"``; only objects and arrays count,
    and only strict JSON (one repair on top of another would be a guess).

    Args:
        value: A decoded JSON string.

    Returns:
        The object or array it holds, or ``None``.
    """
    inner = value.strip()
    if inner[:1] not in ("{", "["):
        return None
    try:
        decoded = STRICT_DECODER.decode(inner)
    except (ValueError, RecursionError):
        return None
    return decoded if depth_ok(decoded) else None
