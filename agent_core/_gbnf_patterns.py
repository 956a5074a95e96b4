r"""A ``pattern`` as GBNF, for the safe subset of regular expressions: :func:`pattern_to_gbnf`.

The subset: literals, ``.``, ``\d``, ``\w``, classes, groups, alternation, the quantifiers and
``^``/``$`` at the ends (without them any text may come before or after). Anything else
(lookaround, back references, ``\b``, ``\s``...) stays with validation. ``.`` and negated classes
leave out control characters, which JSON must escape: the grammar is stricter, never wider.
"""

from __future__ import annotations

__all__ = ["pattern_to_gbnf"]

# One character of a JSON string, spelled as JSON writes it, other than a control character.
_ANY = '([^"\\\\\\x00-\\x1F] | "\\\\\\\\" | "\\\\\\"")'
_CLASSES = {"d": "[0-9]", "w": "[a-zA-Z0-9_]"}
_MAX_REPEAT = 1_000


class _Outside(Exception):
    """The pattern uses something outside the subset."""


def pattern_to_gbnf(pattern: str) -> str | None:
    """Return a GBNF expression for the text of JSON strings ``pattern`` matches.

    Args:
        pattern: An ECMA-262 regular expression, as in JSON Schema's ``pattern``.

    Returns:
        The expression (to put between the string's quotes), or ``None`` when the pattern is
        outside the subset.
    """
    try:
        return _Reader(pattern).whole()
    except (_Outside, IndexError):
        return None


def _spelled(char: str) -> str:
    """Return ``char`` as a GBNF literal of its JSON spelling inside a string."""
    if char == '"':
        return '"\\\\\\""'
    if char == "\\":
        return '"\\\\\\\\"'
    if ord(char) < 0x20:
        raise _Outside  # JSON writes it as an escape; not worth spelling
    return '"' + char + '"'


def _class_char(char: str) -> str:
    if char in "]\\[":
        return "\\" + char
    if char in "-^":
        return f"\\x{ord(char):02X}"
    return char


class _Reader:
    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.pos = 0

    def whole(self) -> str:
        if _top_level_bar(self.text) and (self.text.startswith("^") or self.text.endswith("$")):
            raise _Outside  # ^a|b$ anchors only its first and last branch
        start = self.text.startswith("^")
        if start:
            self.pos = 1
        body = self.alternation()
        end = False
        if (
            self.pos < len(self.text)
            and self.text[self.pos] == "$"
            and self.pos == len(self.text) - 1
        ):
            end = True
            self.pos += 1
        if self.pos != len(self.text):
            raise _Outside
        parts = ([] if start else [f"{_ANY}*"]) + [f"({body})"] + ([] if end else [f"{_ANY}*"])
        return " ".join(parts)

    def alternation(self) -> str:
        options = [self.sequence()]
        while self.pos < len(self.text) and self.text[self.pos] == "|":
            self.pos += 1
            options.append(self.sequence())
        return " | ".join(option or '""' for option in options)

    def sequence(self) -> str:
        items: list[str] = []
        while self.pos < len(self.text) and self.text[self.pos] not in "|)":
            if self.text[self.pos] == "$":
                if self.pos == len(self.text) - 1:
                    break
                raise _Outside
            items.append(self.quantified(self.atom()))
        return " ".join(items)

    def atom(self) -> str:
        char = self.text[self.pos]
        self.pos += 1
        if char == "(":
            if self.text.startswith("?:", self.pos):
                self.pos += 2
            elif self.text[self.pos] == "?":
                raise _Outside  # lookaround or a named group
            inner = self.alternation()
            if self.text[self.pos] != ")":
                raise _Outside
            self.pos += 1
            return f"({inner})"
        if char == "[":
            return self.char_class()
        if char == ".":
            return _ANY
        if char == "\\":
            return self.escape()
        if char in "^$*+?{}|)]":
            raise _Outside
        return _spelled(char)

    def escape(self) -> str:
        char = self.text[self.pos]
        self.pos += 1
        if char in _CLASSES:
            return _CLASSES[char]
        if not char.isalnum() and char != "_":  # an identity escape: the character itself
            return _spelled(char)
        raise _Outside

    def char_class(self) -> str:
        negated = self.text[self.pos] == "^"
        if negated:
            self.pos += 1
        chars: list[tuple[str, str]] = []
        classes: list[str] = []
        first = True
        while first or self.text[self.pos] != "]":
            first = False
            low = self.class_member()
            if low is None:
                classes.append(self.text[self.pos - 1])
                continue
            if self.text[self.pos] == "-" and self.text[self.pos + 1] != "]":
                self.pos += 1
                high = self.class_member()
                if high is None or high < low:
                    raise _Outside
                chars.append((low, high))
            else:
                chars.append((low, low))
        self.pos += 1
        if any(ord(low) < 0x20 for low, _ in chars):
            raise _Outside
        # The set without the two characters JSON escapes (those are spelled apart).
        pieces = [piece for low, high in chars for piece in _without(low, high, '"\\')]
        ranges = "".join(
            _class_char(low) if low == high else f"{_class_char(low)}-{_class_char(high)}"
            for low, high in pieces
        )
        ranges += "".join({"d": "0-9", "w": "a-zA-Z0-9_"}[name] for name in classes)
        if negated:  # of the two characters JSON escapes, those the set allows, spelled escaped
            allowed = [c for c in '"\\' if not any(low <= c <= high for low, high in chars)]
            spelled = "".join(f" | {_spelled(c)}" for c in allowed)
            return f'([^"\\\\\\x00-\\x1F{ranges}]{spelled})'
        options = [f"[{ranges}]"] if ranges else []
        options += [_spelled(c) for c in '"\\' if any(low <= c <= high for low, high in chars)]
        if not options:
            raise _Outside
        return "(" + " | ".join(options) + ")"

    def class_member(self) -> str | None:
        r"""Return a class member's character, or ``None`` for ``\d``/``\w`` (just read)."""
        char = self.text[self.pos]
        self.pos += 1
        if char != "\\":
            return char
        char = self.text[self.pos]
        self.pos += 1
        if char in _CLASSES:
            return None
        if not char.isalnum() and char != "_":
            return char
        raise _Outside

    def quantified(self, atom: str) -> str:
        if self.pos >= len(self.text):
            return atom
        char = self.text[self.pos]
        low: int
        high: int | None
        if char in "?*+":
            self.pos += 1
            low, high = {"?": (0, 1), "*": (0, None), "+": (1, None)}[char]
        elif char == "{":
            close = self.text.index("}", self.pos)
            numbers = self.text[self.pos + 1 : close].split(",")
            if len(numbers) > 2 or not numbers[0].isdigit():
                raise _Outside
            low = int(numbers[0])
            if len(numbers) == 1:
                high = low
            elif numbers[1] == "":
                high = None
            elif numbers[1].isdigit():
                high = int(numbers[1])
            else:
                raise _Outside
            if max(low, high or 0) > _MAX_REPEAT or (high is not None and high < low):
                raise _Outside
            self.pos = close + 1
        else:
            return atom
        if self.pos < len(self.text) and self.text[self.pos] == "?":
            self.pos += 1  # lazy: the same strings match the whole pattern
        if self.pos < len(self.text) and self.text[self.pos] in "?*+{":
            raise _Outside
        if high is None:
            return f"({atom}){{{low},}}" if low > 1 else f"({atom}){'*' if low == 0 else '+'}"
        return f"({atom}){{{low},{high}}}" if low != high else f"({atom}){{{low}}}"


def _without(low: str, high: str, gaps: str) -> list[tuple[str, str]]:
    """Return the range ``low``-``high`` split around the characters in ``gaps``."""
    pieces = [(low, high)]
    for gap in gaps:
        split: list[tuple[str, str]] = []
        for a, b in pieces:
            if a <= gap <= b:
                if a < gap:
                    split.append((a, chr(ord(gap) - 1)))
                if gap < b:
                    split.append((chr(ord(gap) + 1), b))
            else:
                split.append((a, b))
        pieces = split
    return pieces


def _top_level_bar(pattern: str) -> bool:
    """Return whether ``pattern`` has a ``|`` outside every group and class."""
    depth, index, in_class = 0, 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
        index += 1
    return False
