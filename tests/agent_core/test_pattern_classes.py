from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core import compile_for_provider, compile_schema
from agent_core._pattern_classes import explicit_classes

PATTERNS = [
    r"^\w+$",
    r"^\d{3}-\d{4}$",
    r"^[\w.-]+@[\w-]+$",
    r"^[^\w\s]*$",
    r"^\S+\s\S+$",
    r"^\D*$",
    r"^\W?x$",
    r"^(\w)\1$",
    r"^[a\d]+$",
    r"^\\w$",
    r"^[\d_-]$",
    r"^\u00e9\w$",
]
TRICKY = ["a_9", "é", "٣", "x y", "x\u00a0y", "x\u2003y", "x\ufeffy", "ab", "a-b", "\\w", "", "_"]


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("aZ_9-. \t\n\u00a0\u2003\ufeff٣éx\\w"), max_size=6))
def test_explicit_classes_change_nothing_under_ecma_262(pattern: str, text: str) -> None:
    original = compile_schema({"pattern": pattern})
    respelled = compile_schema({"pattern": explicit_classes(pattern).pattern})
    for value in [text, *TRICKY]:
        assert original.is_valid(value) == respelled.is_valid(value), (pattern, value)


def test_what_is_respelled_and_what_is_kept() -> None:
    assert explicit_classes(r"^\w+$") == (r"^[A-Za-z0-9_]+$", (r"\w",), ())
    assert explicit_classes(r"[\w.-]+").pattern == r"[A-Za-z0-9_.-]+"
    assert explicit_classes(r"\D").pattern == "[^0-9]"
    assert explicit_classes(r"\\d").pattern == r"\\d"  # an escaped backslash, then "d"
    assert explicit_classes(r"\bword\b") == (r"\bword\b", (), (r"\b",))
    assert explicit_classes(r"[\W]").kept == (r"\W",)
    assert explicit_classes(r"[\d-x]").kept == (r"\d",)  # inlined, "-x" would become a range
    assert explicit_classes("plain") == ("plain", (), ())


def test_strict_mode_sends_ascii_explicit_patterns_and_says_so() -> None:
    schema = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": r"^\d{4}$"},
            "word": {"type": "string", "pattern": r"\bok\b"},
            "name": {"type": "string", "pattern": "^[a-z]+$"},
        },
        "required": ["code", "word", "name"],
        "additionalProperties": False,
    }
    compiled = compile_for_provider(schema, "openai")
    assert compiled.strict
    props = compiled.parameters["properties"]
    assert props["code"]["pattern"] == "^[0-9]{4}$"
    assert props["word"]["pattern"] == r"\bok\b"
    assert props["name"]["pattern"] == "^[a-z]+$"
    report = str(compiled.report)
    assert r"$.properties.code: pattern changed (\d sent as explicit classes" in report
    assert r"$.properties.word: pattern changed (\b sent as written" in report
    assert "$.properties.name: pattern" not in report
