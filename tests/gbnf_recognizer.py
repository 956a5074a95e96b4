"""A small GBNF recognizer, to judge grammars the way llama.cpp's grammar parser reads them.

It reads the GBNF syntax llama.cpp documents in ``grammars/README.md``: ``name ::= ...`` rules,
``"..."`` literals with ``\\x``/``\\u``/``\\n``-style escapes, ``[...]`` and ``[^...]`` classes
with ranges, grouping, alternatives (an empty one included), ``*``, ``+``, ``?`` and ``{m}``,
``{m,}``, ``{m,n}`` repetition, and ``#`` comments. :func:`accepts` says whether the ``root``
rule matches a whole text. Matching works on sets of end positions, so it needs no left
recursion (llama.cpp refuses that too).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["Grammar", "accepts", "first_text", "parse_grammar"]

Node = tuple  # ("lit", str) | ("cls", negated, ranges) | ("ref", name) | ("seq", [..]) ...


@dataclass(frozen=True)
class Grammar:
    """The rules of a parsed grammar, by name."""

    rules: dict[str, Node]


# The escapes llama.cpp's ``parse_char`` knows (with ``x``, ``u`` and ``U``); any other is an
# error there, so it is one here.
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]"}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def blank(self, newlines: bool = True) -> None:
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "#":
                while self.pos < len(self.text) and self.text[self.pos] != "\n":
                    self.pos += 1
            elif char in " \t" or (newlines and char in "\r\n"):
                self.pos += 1
            else:
                break

    def char(self) -> str:
        char = self.text[self.pos]
        if char != "\\":
            self.pos += 1
            return char
        kind = self.text[self.pos + 1]
        widths = {"x": 2, "u": 4, "U": 8}
        if kind in widths:
            width = widths[kind]
            code = self.text[self.pos + 2 : self.pos + 2 + width]
            self.pos += 2 + width
            return chr(int(code, 16))
        self.pos += 2
        if kind not in _ESCAPES:
            raise ValueError(f"unknown escape \\{kind} at {self.pos}")
        return _ESCAPES.get(kind, kind)

    def grammar(self) -> Grammar:
        rules: dict[str, Node] = {}
        self.blank()
        while self.pos < len(self.text):
            match = re.compile(r"[a-zA-Z0-9-]+").match(self.text, self.pos)
            if not match:
                raise ValueError(
                    f"rule name expected at {self.pos}: {self.text[self.pos :][:30]!r}"
                )
            self.pos = match.end()
            self.blank(newlines=False)
            if not self.text.startswith("::=", self.pos):
                raise ValueError(f"::= expected at {self.pos}")
            self.pos += 3
            if match.group() in rules:
                raise ValueError(f"rule {match.group()} defined twice")
            rules[match.group()] = self.alternatives()
            self.blank()
        for name, node in rules.items():
            for ref in _refs(node):
                if ref not in rules:
                    raise ValueError(f"rule {name} uses undefined rule {ref}")
        return Grammar(rules)

    def alternatives(self) -> Node:
        options = [self.sequence()]
        while self.pos < len(self.text) and self.text[self.pos] == "|":
            self.pos += 1
            options.append(self.sequence())
        return ("alt", options)

    def sequence(self) -> Node:
        items: list[Node] = []
        while True:
            # A rule ends at a newline unless the line ends inside a group.
            self.blank(newlines=self.depth > 0)
            if self.pos >= len(self.text) or self.text[self.pos] in "|)\n\r":
                return ("seq", items)
            items.append(self.repeated(self.atom()))

    depth = 0

    def atom(self) -> Node:
        char = self.text[self.pos]
        if char == '"':
            self.pos += 1
            out = []
            while self.text[self.pos] != '"':
                out.append(self.char())
            self.pos += 1
            return ("lit", "".join(out))
        if char == "[":
            self.pos += 1
            negated = self.text[self.pos] == "^"
            if negated:
                self.pos += 1
            ranges = []
            while self.text[self.pos] != "]":
                low = self.char()
                high = low
                if self.text[self.pos] == "-" and self.text[self.pos + 1] != "]":
                    self.pos += 1
                    high = self.char()
                ranges.append((low, high))
            self.pos += 1
            return ("cls", negated, tuple(ranges))
        if char == "(":
            self.pos += 1
            self.depth += 1
            inner = self.alternatives()
            self.depth -= 1
            self.blank()
            if self.text[self.pos] != ")":
                raise ValueError(f") expected at {self.pos}")
            self.pos += 1
            return inner
        match = re.compile(r"[a-zA-Z0-9-]+").match(self.text, self.pos)
        if not match:
            raise ValueError(f"unexpected {char!r} at {self.pos}")
        self.pos = match.end()
        return ("ref", match.group())

    def repeated(self, node: Node) -> Node:
        if self.pos >= len(self.text):
            return node
        char = self.text[self.pos]
        bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}
        if char in bounds:
            self.pos += 1
            return ("rep", node, *bounds[char])
        match = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.text, self.pos)
        if match:
            self.pos = match.end()
            low = int(match.group(1))
            if match.group(2) is None:
                high: int | None = low
            else:
                high = int(match.group(3)) if match.group(3) else None
            return ("rep", node, low, high)
        return node


def _refs(node: Node) -> list[str]:
    kind = node[0]
    if kind == "ref":
        return [node[1]]
    if kind in ("alt", "seq"):
        return [ref for child in node[1] for ref in _refs(child)]
    if kind == "rep":
        return _refs(node[1])
    return []


def parse_grammar(text: str) -> Grammar:
    """Parse GBNF ``text``; raise ``ValueError`` where it is not GBNF."""
    return _Parser(text).grammar()


def accepts(grammar: Grammar | str, text: str) -> bool:
    """Return whether ``grammar``'s ``root`` rule matches all of ``text``."""
    rules = parse_grammar(grammar).rules if isinstance(grammar, str) else grammar.rules

    @functools.cache
    def rule_ends(name: str, start: int) -> frozenset[int]:
        return ends(rules[name], start)

    def ends(node: Node, start: int) -> frozenset[int]:
        kind = node[0]
        if kind == "lit":
            return frozenset({start + len(node[1])}) if text.startswith(node[1], start) else _NONE
        if kind == "cls":
            if start >= len(text):
                return _NONE
            inside = any(low <= text[start] <= high for low, high in node[2])
            return frozenset({start + 1}) if inside != node[1] else _NONE
        if kind == "ref":
            return rule_ends(node[1], start)
        if kind == "alt":
            return frozenset().union(*(ends(option, start) for option in node[1]))
        if kind == "seq":
            current = frozenset({start})
            for item in node[1]:
                current = frozenset().union(*(ends(item, at) for at in current))
                if not current:
                    break
            return current
        _, inner, low, high = node
        result = frozenset({start}) if low == 0 else _NONE
        current = frozenset({start})
        count = 0
        seen: set[int] = set(current)
        while current and (high is None or count < high):
            current = frozenset().union(*(ends(inner, at) for at in current))
            count += 1
            if high is None:
                current = current - seen  # an unbounded loop stops once nothing new is reached
                seen |= current
            if count >= low:
                result |= current
        return result

    return len(text) in rule_ends("root", 0)


_NONE: frozenset[int] = frozenset()


def first_text(grammar: Grammar | str) -> str:
    """Return the text ``grammar`` derives taking every first option and fewest repetitions.

    What a fake model decoding under the grammar writes: for a grammar of one value (a
    ``const``) it is that value. A negated class yields the first printable character outside
    it. Recursive rules whose first option recurses are not supported.
    """
    rules = parse_grammar(grammar).rules if isinstance(grammar, str) else grammar.rules

    def text_of(node: Node) -> str:
        kind = node[0]
        if kind == "lit":
            return str(node[1])
        if kind == "cls":
            if not node[1]:
                return str(node[2][0][0])
            printable = (chr(code) for code in range(32, 127))
            return next(c for c in printable if not any(lo <= c <= hi for lo, hi in node[2]))
        if kind == "ref":
            return text_of(rules[node[1]])
        if kind == "alt":
            return text_of(node[1][0])
        if kind == "seq":
            return "".join(text_of(item) for item in node[1])
        _, inner, low, _high = node
        return text_of(inner) * low

    return text_of(rules["root"])
