from __future__ import annotations

import re

import pytest
from pydantic import JsonValue

from agent_core import compile_schema, model_from_schema
from agent_core._ecma_patterns import annex_b_escaped, designer_parts, rewrite_schema_patterns


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("a]", "a\\]"),
        ("\\[\\*]", "\\[\\*\\]"),
        ("a}", "a\\}"),
        ("a{", "a\\{"),
        ("{a}", "\\{a\\}"),
        ("a{,5}", "a\\{,5\\}"),
        ("x{2}}", "x{2}\\}"),
        ("a{1,}b{2,3}", "a{1,}b{2,3}"),
        ("[]]", "(?!)\\]"),
        ("[^]", "[\\s\\S]"),
        ("[a]]", "[a]\\]"),
        ("[\\]]", "[\\]]"),
        ("\\c]", "\\\\c\\]"),
        ("\\cJ", "\\cJ"),
        ("^[a-z]+$", "^[a-z]+$"),
        ("(?<year>[0-9]{4})", "(?<year>[0-9]{4})"),
        ("[a", "[a"),
    ],
)
def test_annex_b_literals_get_their_strict_spelling(pattern: str, expected: str) -> None:
    assert annex_b_escaped(pattern) == expected


@pytest.mark.parametrize("pattern", ["a]", "a}b", "x{2}}", "{", "a{2", "[a]]", "(a|])+"])
def test_the_new_spelling_matches_what_python_re_matches(pattern: str) -> None:
    # Python re reads these like ECMA-262 Annex B does ("a{,5}" is where they differ).
    ours, theirs = re.compile(annex_b_escaped(pattern)), re.compile(pattern)
    for text in ["", "a", "a]", "]", "a}b", "xx}", "{", "a{2", "a]]", "a]a]", "x{2}}"]:
        assert (ours.search(text) is None) == (theirs.search(text) is None), text


def test_rewrite_visits_subschemas_only_and_leaves_the_schema_alone() -> None:
    schema: dict[str, JsonValue] = {
        "properties": {"pattern": {"pattern": "p]"}, "q": {"enum": [{"pattern": "e]"}]}},
        "items": [{"pattern": "i]"}],
        "definitions": {"d": {"not": {"pattern": "n}"}}},
        "patternProperties": {"k]": {"pattern": "^ok$"}},
        "const": {"pattern": "c]"},
    }
    before = repr(schema)
    rewrite = rewrite_schema_patterns(schema)
    assert repr(schema) == before
    assert rewrite is not None
    assert rewrite.schema == {
        "properties": {"pattern": {"pattern": "p\\]"}, "q": {"enum": [{"pattern": "e]"}]}},
        "items": [{"pattern": "i\\]"}],
        "definitions": {"d": {"not": {"pattern": "n\\}"}}},
        "patternProperties": {"k\\]": {"pattern": "^ok$"}},
        "const": {"pattern": "c]"},
    }
    assert rewrite.renamed == {"p\\]": "p]", "i\\]": "i]", "n\\}": "n}", "k\\]": "k]"}


def test_rewrite_returns_none_when_nothing_needs_it() -> None:
    assert rewrite_schema_patterns({"pattern": "^[a-z]{2}$", "enum": ["a]"]}) is None
    assert rewrite_schema_patterns(True) is None


def test_new_spellings_are_unique_in_the_document() -> None:
    rewrite = rewrite_schema_patterns(
        {"patternProperties": {"a]": {}, "a\\]": {}}, "properties": {"x": {"pattern": "a]"}}}
    )
    assert rewrite is not None
    assert rewrite.schema == {
        "patternProperties": {"a\\](?:)": {}, "a\\]": {}},
        "properties": {"x": {"pattern": "a\\](?:)"}},
    }
    assert rewrite.renamed == {"a\\](?:)": "a]"}


def test_designer_parts_spells_pattern_property_keys_back() -> None:
    renamed = {"k\\]": "k]"}
    assert designer_parts(["patternProperties", "k\\]", "type"], renamed) == [
        "patternProperties",
        "k]",
        "type",
    ]
    assert designer_parts(["properties", "k\\]"], renamed) == ["properties", "k\\]"]
    assert designer_parts([0, "patternProperties", "k\\]"], {}) == [0, "patternProperties", "k\\]"]


@pytest.mark.parametrize(
    ("pattern", "ascii_only", "unicode"),
    [
        (r"^(\w)\1$", "aa", "éé"),
        (r"^(?=\w)\w$", "a", "é"),
        (r"^(?=.)\d$", "3", "٣"),
        (r"^(?!x)\s$", " ", "\u0085"),  # NEL is not ECMA-262 whitespace
    ],
)
def test_class_escapes_beside_lookarounds_and_backreferences_stay_ascii(
    pattern: str, ascii_only: str, unicode: str
) -> None:
    compiled = compile_schema({"pattern": pattern})
    assert compiled.is_valid(ascii_only)
    assert not compiled.is_valid(unicode)
    assert [str(issue) for issue in compiled.issues(unicode)] == [
        f"$: {unicode!r} does not match {pattern!r}"
    ]
    assert (
        model_from_schema({"pattern": pattern}).model_validate(ascii_only).to_data() == ascii_only
    )
