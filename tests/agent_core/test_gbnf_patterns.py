"""A pattern in the safe subset becomes GBNF that matches exactly; others stay with validation."""

from __future__ import annotations

import json
import re

import pytest

from agent_core._gbnf_patterns import pattern_to_gbnf
from tests.gbnf_recognizer import accepts

_CHAR = 'char ::= [^"\\\\\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})\n'


def _matches(pattern: str, text: str) -> bool:
    expr = pattern_to_gbnf(pattern)
    assert expr is not None, pattern
    return accepts(f'root ::= "\\"" {expr} "\\""\n{_CHAR}', json.dumps(text))


@pytest.mark.parametrize(
    "pattern",
    [
        r"^[a-z][a-z0-9_-]{0,9}$",
        r"^\d{4}-\d{2}$",
        r"^(https?|ftp)://[^ /]+(/.*)?$",
        r"v\d+",
        r"^[^\\\"]*$",
        r"^(?:a|b|)c+?$",
        r'^["\\]$',
        r"^a\.b\/c$",
        r"^[^ -/]+$",
        r"^[!-#]$",
        r"a|[|]|(b|c)",
    ],
)
def test_the_grammar_matches_what_the_pattern_matches(pattern: str) -> None:
    texts = ["", "a", "ab-1_", "2026-11", "http://x.io/a b", "ftp://h", "v12", 'x"y', "\\", "c"]
    texts += ["bc", "acc", "ccc", "a.b/c", "a-b/c", "a" * 11, "https:// x", "ab\\c", '"']
    for text in texts:
        assert _matches(pattern, text) == bool(re.search(pattern, text)), (pattern, text)


@pytest.mark.parametrize(
    "pattern",
    [
        r"^(?=a)b$",
        r"^(a)\1$",
        r"\bword\b",
        r"^\s+$",
        r"^\p{L}$",
        r"^a{2}{3}$",
        r"^(?<n>a)$",
        "a$b",
        "^a|b$",
    ],
)
def test_what_is_outside_the_subset_is_none(pattern: str) -> None:
    assert pattern_to_gbnf(pattern) is None
