"""Strings that match a regex pattern, sampled from the pattern's own syntax (for test values)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Final, TypeAlias

_Maker: TypeAlias = Callable[[], str]

_REGEX_CLASSES: Final = {
    "d": "0123456789",
    "w": "abcxyz_019",
    "s": " ",
    "D": "ab",
    "W": "-.",
    "S": "a",
}


class _Unsupported(Exception):
    """A regex feature the sampler does not generate for."""


_MAX_REPEAT: Final = 1_000
_MAX_SAMPLE: Final = 10_000


class _RegexSampler:
    """Builds a short string matching a simple regex (``None`` when the regex is too fancy)."""

    def __init__(self, pattern: str, rng: random.Random, stretch: int) -> None:
        self.pattern = pattern
        self.rng = rng
        self.stretch = stretch  # later attempts repeat more and take other alternatives
        self.pos = 0

    def sample(self) -> str | None:
        try:
            text = self._alternation()
            if self.pos != len(self.pattern):
                raise _Unsupported(self.pattern)
            return text
        except (_Unsupported, IndexError, ValueError):
            return None

    def _peek(self) -> str:
        return self.pattern[self.pos] if self.pos < len(self.pattern) else ""

    def _alternation(self) -> str:
        options = [self._sequence()]
        while self._peek() == "|":
            self.pos += 1
            options.append(self._sequence())
        return options[self.stretch % len(options)]

    def _sequence(self) -> str:
        out = []
        while self._peek() not in ("", "|", ")"):
            atom = self._atom()
            low, high = self._quantifier()
            count = low + self.stretch if high is None else min(max(low, 1) + self.stretch, high)
            if count > _MAX_REPEAT:  # a{1000000000} would take gigabytes: not sampled
                raise _Unsupported("a repeat count too large to sample")
            out.append("".join(atom() for _ in range(count)))
            if sum(len(part) for part in out) > _MAX_SAMPLE:
                raise _Unsupported("a sample too long")
        return "".join(out)

    def _quantifier(self) -> tuple[int, int | None]:
        char = self._peek()
        if char in ("?", "*", "+"):
            self.pos += 1
            low, high = {"?": (0, 1), "*": (0, None), "+": (1, None)}[char]
        elif char == "{" and self.pattern.find("}", self.pos) > self.pos:
            end = self.pattern.index("}", self.pos)
            body = self.pattern[self.pos + 1 : end]
            first, comma, second = body.partition(",")
            low = int(first)
            high = low if not comma else (int(second) if second else None)
            self.pos = end + 1
        else:
            return 1, 1
        if self._peek() in ("?", "+"):
            self.pos += 1
        return low, high if high is not None else None

    def _atom(self) -> _Maker:
        char = self._peek()
        self.pos += 1
        if char == "(":
            if self._peek() == "?":
                if self.pattern.startswith("?:", self.pos):
                    self.pos += 2
                elif self.pattern.startswith(
                    ("?<", "?P<"), self.pos
                ) and not self.pattern.startswith(("?<=", "?<!"), self.pos):
                    self.pos = self.pattern.index(">", self.pos) + 1
                else:
                    raise _Unsupported("lookaround")
            text = self._alternation()
            if self._peek() != ")":
                raise _Unsupported("unbalanced group")
            self.pos += 1
            return lambda: text
        if char == "[":
            return self._class()
        if char == ".":
            return lambda: self.rng.choice("abc")
        if char in ("^", "$"):
            return lambda: ""
        if char == "\\":
            return self._escape()
        return lambda: char

    def _escape(self) -> _Maker:
        char = self._peek()
        self.pos += 1
        if char in _REGEX_CLASSES:
            chars = _REGEX_CLASSES[char]
            return lambda: self.rng.choice(chars)
        if char in ("b", "B"):
            return lambda: ""
        if char.isdigit():
            raise _Unsupported("back-reference")
        if char == "u":
            code = self.pattern[self.pos : self.pos + 4]
            self.pos += 4
            return lambda: chr(int(code, 16))
        literal = {"n": "\n", "t": "\t", "r": "\r"}.get(char, char)
        return lambda: literal

    def _class(self) -> _Maker:
        negated = self._peek() == "^"
        self.pos += negated
        chars: list[str] = []
        first = True
        while self._peek() != "]" or first:
            first = False
            char = self._peek()
            self.pos += 1
            if not char:
                raise _Unsupported("unterminated class")
            if char == "\\":
                code = self._peek()
                self.pos += 1
                chars.extend(_REGEX_CLASSES.get(code, {"n": "\n", "t": "\t"}.get(code, code)))
            elif self._peek() == "-" and self.pattern[self.pos + 1] != "]":
                end = self.pattern[self.pos + 1]
                self.pos += 2
                chars.extend(chr(c) for c in range(ord(char), ord(end) + 1))
            else:
                chars.append(char)
        self.pos += 1
        if negated:
            chars = [c for c in "abcxyzABC019_-" if c not in chars]
        if not chars:
            raise _Unsupported("empty class")
        pool = "".join(chars)
        return lambda: self.rng.choice(pool)
