from __future__ import annotations

import copy
import json
import os
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent_contracts import InvalidSchemaError
from agent_core import (
    CompileNote,
    CompileReport,
    ProviderSchema,
    compile_for_provider,
    needs_wrapping,
)
from agent_core._schema_documents import schema_draft
from agent_core._schema_walk import offline_validator, resolve_local_ref, subschemas
from agent_core._strict_mode import inferred_types

REPO = Path(__file__).parents[2]
CONFORMANCE = Path(
    os.environ.get("AGENTSHAPE_CONFORMANCE_DIR") or REPO / ".." / "shared" / "conformance"
)

# -- the exactness harness ---------------------------------------------------------------------
#
# A strict dialect is exact when (1) every value the designer's schema accepts, sent the way the
# provider sends it (to_arguments), passes the provider schema and unwraps back to itself, and
# (2) every value the provider schema accepts unwraps to a value the designer's schema accepts
# once the constraints the report lists as unenforced are removed ("relaxed"). With narrowing,
# (1) holds for the designer's schema with the reported narrowings applied.

_TOKEN = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')
_OPENAI_FORBIDDEN = {
    *("allOf", "oneOf", "not", "if", "then", "else", "default", "examples"),
    *("dependencies", "dependentRequired", "dependentSchemas", "prefixItems"),
    *("minLength", "maxLength", "uniqueItems", "contains", "unevaluatedProperties"),
    *("patternProperties", "propertyNames", "minProperties", "maxProperties"),
}
_ANTHROPIC_FORBIDDEN = _OPENAI_FORBIDDEN | {
    *("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "maxItems"),
}
_OPENAI_FORMATS = {
    *("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"),
}


def _parse_path(path: str) -> list[str | int]:
    assert path.startswith("$"), path
    parts: list[str | int] = []
    rest = path[1:]
    while rest:
        match = _TOKEN.match(rest)
        assert match, path
        name, index, quoted = match.groups()
        parts.append(name if name else int(index) if index else json.loads(quoted))
        rest = rest[match.end() :]
    return parts


def _locate(node: Any, parts: list[str | int]) -> list[Any]:
    """The nodes a note's path names; an ``anyOf[i]``/``oneOf[i]`` step may be skipped."""
    if not parts:
        return [node]
    head, found = parts[0], []
    in_dict = isinstance(node, dict) and isinstance(head, str) and head in node
    in_list = isinstance(node, list) and isinstance(head, int) and head < len(node)
    if in_dict or in_list:
        found += _locate(node[head], parts[1:])
    if head in ("anyOf", "oneOf", "allOf") and len(parts) > 1 and isinstance(parts[1], int):
        found += _locate(node, parts[2:])
    return found


def _edit(
    schema: Any, compiled: ProviderSchema, actions: set[str], edit: Callable[[Any, str], None]
) -> Any:
    edited = copy.deepcopy(schema)
    for note in compiled.report.notes:
        if note.action not in actions:
            continue
        nodes = [n for n in _locate(edited, _parse_path(note.path)) if isinstance(n, dict)]
        present = any(note.keyword in node for node in nodes)
        if not nodes or (note.action != "narrowed" and not present):
            # Merged content (allOf, a distributed anyOf): the keyword came from elsewhere.
            nodes = [node for _, node in subschemas(edited) if isinstance(node, dict)]
        for node in nodes:
            branches = node.get("allOf")
            extra = (
                [b for b in branches if isinstance(b, dict)] if isinstance(branches, list) else []
            )
            for target in [node, *extra]:
                edit(target, note.keyword)
    return edited


def _loosen(node: dict[str, Any], keyword: str) -> None:
    if keyword == "oneOf" and "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    elif keyword not in ("allOf", "oneOf"):
        node.pop(keyword, None)


def _tighten(node: dict[str, Any], keyword: str) -> None:
    if keyword == "additionalProperties":
        node["additionalProperties"] = False
    elif keyword == "patternProperties":
        node.pop("patternProperties", None)
        node["additionalProperties"] = False
    elif keyword == "type" and "type" not in node and inferred_types(node):
        node["type"] = inferred_types(node)


def relax(schema: Any, compiled: ProviderSchema) -> Any:
    """The designer's schema without what the report calls unenforced (dropped = no effect)."""
    return _edit(schema, compiled, {"moved to description", "changed"}, _loosen)


def narrow(schema: Any, compiled: ProviderSchema) -> Any:
    """The designer's schema with the report's narrowings applied."""
    return _edit(schema, compiled, {"narrowed"}, _tighten)


def check_exact(schema: Any, compiled: ProviderSchema, instances: list[Any], seed: int = 0) -> None:
    draft = schema_draft(schema)
    # The neutral schema is the designer's own; a strict one reads the same in every draft,
    # except that draft-04's boolean exclusiveMinimum became the later numeric form.
    provider_draft = 6 if compiled.strict and draft == 4 else draft
    designer = offline_validator(narrow(schema, compiled), draft)
    relaxed = offline_validator(relax(schema, compiled), draft)
    provider = offline_validator(compiled.parameters, provider_draft)
    absent_means_null = any(n.action == "null means absent" for n in compiled.report.notes)
    checked = 0
    for value in instances:
        arguments = compiled.to_arguments(value)
        back = compiled.unwrap(arguments)
        if designer.is_valid(value):
            checked += 1
            assert provider.is_valid(arguments), (value, arguments)
            if absent_means_null:
                assert designer.is_valid(back), (value, back)
            else:
                assert back == value, (value, arguments, back)
        if provider.is_valid(arguments):
            assert relaxed.is_valid(back), (value, arguments, back)
    rng = random.Random(seed)
    defs = compiled.parameters.get("$defs", {})
    for _ in range(120):
        sample = sample_value(compiled.parameters, defs, rng)
        if provider.is_valid(sample):
            assert relaxed.is_valid(compiled.unwrap(sample)), (sample, compiled.unwrap(sample))


def check_rules(compiled: ProviderSchema) -> None:
    """The strict schema follows its provider's rules from PROVIDERS.md."""
    parameters = compiled.parameters
    openai = compiled.dialect == "openai"
    assert parameters.get("type") == "object" and "anyOf" not in parameters
    forbidden = _OPENAI_FORBIDDEN if openai else _ANTHROPIC_FORBIDDEN
    formats = _OPENAI_FORMATS if openai else _OPENAI_FORMATS | {"uri"}
    for path, node in subschemas(parameters):
        if isinstance(node, bool):
            assert node is False and path.endswith(".additionalProperties"), path
            continue
        assert isinstance(node, dict), path
        keys = set(node) - {"$defs"}
        assert not keys & forbidden, (path, keys & forbidden)
        if "$ref" in node:
            assert keys == {"$ref"}, (path, node)
            assert resolve_local_ref(parameters, node["$ref"]) is not None
            continue
        assert keys & {"type", "anyOf", "enum", "const"}, (path, node)
        if "properties" in node:
            assert node["type"] in ("object", ["object", "null"]), path
            assert node["additionalProperties"] is False, path
            if openai:
                assert node["required"] == list(node["properties"]), path
            else:
                assert set(node["required"]) <= set(node["properties"]), path
        elif node.get("type") == "object":
            raise AssertionError(f"{path}: an object without properties")
        if "format" in node:
            assert node["format"] in formats, path
        if not openai and "minItems" in node:
            assert node["minItems"] in (0, 1), path


def sample_value(node: Any, defs: Any, rng: random.Random, depth: int = 0) -> Any:
    """A random value shaped like a schema of the strict subset; it may be invalid."""
    if not isinstance(node, dict) or depth > 30:
        return None
    if "$ref" in node:
        return sample_value(defs.get(node["$ref"].removeprefix("#/$defs/")), defs, rng, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in node:
            branches = node[key]
            if depth > 6:
                branches = [b for b in branches if b.get("type") == "null"] or branches
            return sample_value(rng.choice(branches), defs, rng, depth + 1)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return rng.choice(node["enum"])
    declared = node.get("type")
    kind = rng.choice(declared) if isinstance(declared, list) else declared
    if depth > 6 and isinstance(declared, list) and "null" in declared:
        kind = "null"
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "integer":
        low = node.get("minimum", node.get("exclusiveMinimum", -5))
        return int(low) + rng.randint(0, 12)
    if kind == "number":
        return rng.choice([0, 1.5, -2.25, 7, 1e3, 0.1])
    if kind == "string":
        samples = {"date": "2024-01-02", "email": "a@example.com", "uri": "https://example.com"}
        if node.get("format") in samples and rng.random() < 0.8:
            return samples[node["format"]]
        if node.get("format") == "uuid" and rng.random() < 0.8:
            return "123e4567-e89b-12d3-a456-426614174000"
        return rng.choice(["", "a", "abc", "hello world", "x" * 12, "A1", "2024-01-02"])
    if kind == "array":
        least = node.get("minItems", 0)
        count = least if depth > 5 else rng.randint(least, least + 2)
        return [sample_value(node.get("items"), defs, rng, depth + 1) for _ in range(count)]
    if kind == "object":
        required = node.get("required", [])
        return {
            key: sample_value(sub, defs, rng, depth + 1)
            for key, sub in node.get("properties", {}).items()
            if key in required or rng.random() < 0.5
        }
    return None


def mutations(value: Any, rng: random.Random, count: int = 10) -> Iterator[Any]:
    """Variants of ``value``: a key dropped or added, a value nulled or replaced."""
    for _ in range(count):
        copied = copy.deepcopy(value)
        containers = list(_containers(copied))
        if not containers:
            yield rng.choice([None, 0, "x", [], {}])
            continue
        container = rng.choice(containers)
        keys = list(container) if isinstance(container, dict) else list(range(len(container)))
        choice = rng.random()
        if isinstance(container, dict) and (choice < 0.2 or not keys):
            container[f"extra{rng.randint(0, 3)}"] = rng.choice([1, "x", None])
        elif keys and choice < 0.45:
            del container[rng.choice(keys)]
        elif keys and choice < 0.7:
            container[rng.choice(keys)] = None
        elif keys:
            container[rng.choice(keys)] = rng.choice([0, -1, 2.5, "", "zz", True, [], {}])
        yield copied


def _containers(value: Any) -> Iterator[Any]:
    if isinstance(value, dict | list):
        yield value
        for item in value.values() if isinstance(value, dict) else value:
            yield from _containers(item)


def assert_exact(schema: Any, dialect: str, instances: list[Any], **options: Any) -> ProviderSchema:
    compiled = compile_for_provider(schema, dialect, **options)  # type: ignore[arg-type]
    assert compiled.strict, compiled.report.format()
    check_rules(compiled)
    rng = random.Random(7)
    candidates = instances + [m for value in instances for m in mutations(value, rng)]
    check_exact(schema, compiled, candidates)
    return compiled


def blockers(compiled: ProviderSchema) -> list[tuple[str, str]]:
    return [(n.path, n.keyword) for n in compiled.report.notes if n.action == "blocks strict"]


# -- schemas that compile strict, exactly --------------------------------------------------------

REVIEW = {
    "type": "object",
    "required": ["summary", "approval", "comments"],
    "additionalProperties": False,
    "properties": {
        "summary": {"type": "string", "description": "Brief summary", "minLength": 5},
        "approval": {"type": "string", "enum": ["approve", "request_changes", "comment"]},
        "comments": {
            "type": "array",
            "minItems": 2,
            "items": {
                "type": "object",
                "required": ["file", "line", "severity"],
                "additionalProperties": False,
                "properties": {
                    "file": {"type": "string"},
                    "line": {"type": "integer", "minimum": 1},
                    "severity": {"enum": ["nitpick", "blocker"]},
                    "note": {"type": "string"},
                },
            },
        },
        "metrics": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"score": {"type": "number", "minimum": 0, "maximum": 10}},
        },
    },
}
REVIEW_VALUES: list[Any] = [
    {
        "summary": "looks fine",
        "approval": "approve",
        "comments": [
            {"file": "a.py", "line": 3, "severity": "nitpick"},
            {"file": "b.py", "line": 1, "severity": "blocker", "note": "x"},
        ],
        "metrics": {"score": 9.5},
    },
    {"summary": "short", "approval": "comment", "comments": [{}, {}], "metrics": {}},
    {"summary": "no", "approval": "maybe", "comments": []},
]


class Color(BaseModel):
    model_config = ConfigDict(extra="forbid")
    r: int = Field(ge=0, le=255)
    name: str | None = None


class Report(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="the title", min_length=2)
    color: Color | None = None
    tags: list[str] = []
    kind: str = "plain"


class Node(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    children: list[Node] = []


STRICT_CASES: list[tuple[str, Any, list[Any]]] = [
    ("review", REVIEW, REVIEW_VALUES),
    (
        "pydantic optional fields",
        Report.model_json_schema(),
        [
            {"title": "ab"},
            {"title": "ab", "color": {"r": 3}, "tags": ["x"], "kind": "fancy"},
            {"title": "ab", "color": None},
            {"title": "ab", "color": {"r": 3, "name": None}},
            {"title": 3},
        ],
    ),
    ("array root", {"type": "array", "items": {"type": "integer"}}, [[1, 2], [], ["x"], 3]),
    (
        "string root with pattern",
        {"type": "string", "pattern": "^[a-z]+$"},
        ["abc", "ABC", "", 5],
    ),
    ("enum root", {"enum": ["a", "b", None]}, ["a", None, "c"]),
    (
        "anyOf root of objects",
        {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
                    "required": ["kind"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"kind": {"const": "b"}, "y": {"type": "string"}},
                    "required": ["kind", "y"],
                    "additionalProperties": False,
                },
            ]
        },
        [{"kind": "a"}, {"kind": "a", "x": 1}, {"kind": "b", "y": "s"}, {"kind": "b"}],
    ),
    (
        "optional fields of every shape",
        {
            "type": "object",
            "additionalProperties": False,
            "$defs": {
                "Point": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}},
                    "required": ["x"],
                    "additionalProperties": False,
                }
            },
            "properties": {
                "ref": {"$ref": "#/$defs/Point"},
                "enum": {"type": "string", "enum": ["a", "b"]},
                "const": {"const": 3},
                "union": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "types": {"type": ["string", "integer"], "minLength": 2, "minimum": 0},
                "never": False,
                "nullable": {"type": ["string", "null"], "default": None},
            },
        },
        [
            {},
            {"ref": {"x": 1}, "enum": "a", "const": 3, "union": 2, "types": "ab"},
            {"types": -1},
            {"types": 5, "nullable": None},
            {"nullable": "x"},
            {"never": 1},
            {"union": None},
        ],
    ),
    (
        "disjoint oneOf",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["v"],
            "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        },
        [{"v": "a"}, {"v": 1}, {"v": 1.5}],
    ),
    (
        "allOf of open parts closed at the end",
        {
            "type": "object",
            "allOf": [
                {"properties": {"a": {"type": "string"}}, "required": ["a"]},
                {
                    "properties": {"a": {}, "b": {"type": "integer"}},
                    "required": ["b"],
                    "additionalProperties": False,
                },
            ],
        },
        [{"a": "x", "b": 1}, {"a": 1, "b": 1}, {"a": "x"}, {"a": "x", "b": 1, "c": 2}],
    ),
    (
        "draft-04 exclusive bounds",
        {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "additionalProperties": False,
            "required": ["n"],
            "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
        },
        [{"n": 0}, {"n": 0.5}, {"n": -1}],
    ),
    (
        "enum filtered by its type",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["e"],
            "properties": {"e": {"type": "string", "enum": ["a", 1, "b"], "minLength": 1}},
        },
        [{"e": "a"}, {"e": 1}, {"e": "b"}],
    ),
]


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("name", "schema", "values"), STRICT_CASES, ids=[c[0] for c in STRICT_CASES]
)
def test_strict_dialect_accepts_exactly_what_the_schema_accepts(
    dialect: str, name: str, schema: Any, values: list[Any]
) -> None:
    assert_exact(schema, dialect, values)


def test_recursive_pydantic_model_is_strict_for_openai_only() -> None:
    schema = Node.model_json_schema()
    value = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    compiled = assert_exact(schema, "openai", [value, {"name": "a", "children": [{}]}])
    assert compiled.parameters["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    anthropic = compile_for_provider(schema, "anthropic")
    assert not anthropic.strict
    assert blockers(anthropic) == [("$", "$ref")]
    assert "recursive" in anthropic.report.notes[-1].detail


# -- what blocks strict, and what the report says -------------------------------------------------

OPEN = {"type": "object", "properties": {"a": {"type": "string"}}}
BLOCKED_CASES: list[tuple[str, Any, tuple[str, str]]] = [
    ("open object", OPEN, ("$", "additionalProperties")),
    ("free-form object", {"type": "object"}, ("$", "additionalProperties")),
    (
        "schema-valued additionalProperties",
        {"type": "object", "additionalProperties": {"type": "string"}},
        ("$", "additionalProperties"),
    ),
    (
        "not",
        {"type": "object", "properties": {}, "additionalProperties": False, "not": {}},
        ("$", "not"),
    ),
    (
        "if/then",
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": False,
            "if": {"required": ["a"]},
            "then": {"required": ["b"]},
        },
        ("$", "if"),
    ),
    (
        "patternProperties",
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": False,
            "patternProperties": {"^x": {"type": "string"}},
        },
        ("$", "patternProperties"),
    ),
    ("tuple items", {"type": "array", "items": [{"type": "string"}]}, ("$", "items")),
    ("array of anything", {"type": "array"}, ("$", "items")),
    (
        "any-value property",
        {
            "type": "object",
            "properties": {"a": {}},
            "required": ["a"],
            "additionalProperties": False,
        },
        ("$.properties.a", "type"),
    ),
    (
        "required name not declared",
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["b"],
            "additionalProperties": False,
        },
        ("$", "required"),
    ),
    (
        "remote reference",
        {
            "type": "object",
            "properties": {"a": {"$ref": "https://example.com/a.json"}},
            "required": ["a"],
            "additionalProperties": False,
        },
        ("$.properties.a", "$ref"),
    ),
    (
        "untyped object",
        {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
        ("$", "type"),
    ),
    (
        "embedded $id",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["a"],
            "properties": {"a": {"$id": "https://example.com/a", "type": "string"}},
        },
        ("$.properties.a", "$id"),
    ),
    (
        "dependencies",
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": False,
            "dependencies": {"a": ["b"]},
        },
        ("$", "dependencies"),
    ),
]


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("name", "schema", "where"), BLOCKED_CASES, ids=[c[0] for c in BLOCKED_CASES]
)
def test_what_cannot_be_strict_falls_back_to_the_neutral_schema(
    dialect: str, name: str, schema: Any, where: tuple[str, str]
) -> None:
    compiled = compile_for_provider(schema, dialect)  # type: ignore[arg-type]
    neutral = compile_for_provider(schema, "neutral")
    assert not compiled.strict
    assert where in blockers(compiled)
    assert compiled.parameters == neutral.parameters
    assert all(note.action in ("blocks strict", "wrapped") for note in compiled.report.notes)


def test_optional_field_that_accepts_null_blocks_openai_strict_but_not_anthropic() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"maybe": {"type": ["string", "null"]}},
    }
    openai = compile_for_provider(schema, "openai")
    assert blockers(openai) == [("$.properties.maybe", "required")]
    assert "default: null" in openai.report.notes[0].detail
    assert_exact(schema, "anthropic", [{}, {"maybe": None}, {"maybe": "x"}])


def test_optional_field_with_default_null_reads_a_null_as_absent() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"maybe": {"type": ["string", "null"], "default": None}},
    }
    compiled = compile_for_provider(schema, "openai")
    assert compiled.strict
    assert compiled.parameters["required"] == ["maybe"]
    assert compiled.unwrap({"maybe": None}) == {}
    assert compiled.unwrap({"maybe": "x"}) == {"maybe": "x"}
    note = CompileNote(
        path="$.properties.maybe",
        keyword="default",
        action="null means absent",
        detail="optional, default null",
    )
    assert note in compiled.report.notes


def test_forced_nulls_are_removed_and_other_nulls_kept() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["must"],
        "properties": {
            "must": {"type": ["integer", "null"]},
            "opt": {"type": "integer"},
            "nested": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"deep": {"type": "string"}},
                    "additionalProperties": False,
                },
            },
        },
    }
    compiled = compile_for_provider(schema, "openai")
    assert compiled.parameters["properties"]["opt"] == {"type": ["integer", "null"]}
    arguments = {"must": None, "opt": None, "nested": [{"deep": None}, {"deep": "x"}]}
    original = copy.deepcopy(arguments)
    assert compiled.unwrap(arguments) == {"must": None, "nested": [{}, {"deep": "x"}]}
    assert arguments == original
    assert compiled.to_arguments({"must": 1}) == {"must": 1, "nested": None, "opt": None}
    # An answer with nothing to undo is taken as it is, however large: no copy of any of it.
    clean = {"must": 1, "nested": [{"deep": "x"}] * 500}
    assert compiled.unwrap(clean) is clean
    one_null = {"must": 1, "nested": [{"deep": "x"}, {"deep": None}]}
    stripped = compiled.unwrap(one_null)
    assert stripped == {"must": 1, "nested": [{"deep": "x"}, {}]}
    assert isinstance(stripped, dict) and stripped["nested"][0] is one_null["nested"][0]
    assert one_null["nested"][1] == {"deep": None}


def test_union_branches_unwrap_by_the_branch_that_matches() -> None:
    branch_a = {
        "type": "object",
        "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
        "required": ["kind"],
        "additionalProperties": False,
    }
    branch_b = {
        "type": "object",
        "properties": {"kind": {"const": "b"}, "x": {"type": ["integer", "null"]}},
        "required": ["kind", "x"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["v"],
        "properties": {"v": {"anyOf": [branch_a, branch_b]}},
    }
    compiled = compile_for_provider(schema, "openai")
    assert compiled.unwrap({"v": {"kind": "a", "x": None}}) == {"v": {"kind": "a"}}
    assert compiled.unwrap({"v": {"kind": "b", "x": None}}) == {"v": {"kind": "b", "x": None}}
    # No branch matches: the first one of the value's kind is used, nulls still removed.
    assert compiled.unwrap({"v": {"kind": "c", "x": None}}) == {"v": {"kind": "c"}}


def test_unwrap_returns_malformed_answers_as_they_are() -> None:
    compiled = compile_for_provider({"type": "array", "items": {"type": "string"}}, "openai")
    assert compiled.unwrap({"result": ["a"]}) == ["a"]
    assert compiled.unwrap(["a"]) == ["a"]
    assert compiled.unwrap({"result": ["a"], "extra": 1}) == {"result": ["a"], "extra": 1}
    assert compiled.unwrap("text") == "text"
    assert compiled.to_arguments(["a"]) == {"result": ["a"]}


def test_report_lists_what_the_provider_does_not_enforce() -> None:
    openai = compile_for_provider(REVIEW, "openai").report
    anthropic = compile_for_provider(REVIEW, "anthropic").report
    assert openai.format() == "\n".join(
        [
            "openai: strict; the provider enforces the schema, except as noted",
            "  - $.properties.summary: minLength moved to description "
            "(not supported by OpenAI strict mode)",
        ]
    )
    assert [(n.path, n.keyword, n.action) for n in anthropic.unenforced()] == [
        ("$.properties.summary", "minLength", "moved to description"),
        ("$.properties.comments", "minItems", "changed"),
        ("$.properties.comments.items.properties.line", "minimum", "moved to description"),
        ("$.properties.metrics.properties.score", "minimum", "moved to description"),
        ("$.properties.metrics.properties.score", "maximum", "moved to description"),
    ]
    assert str(anthropic.notes[1]) == (
        "$.properties.comments: minItems changed (sent as minItems 1; Anthropic strict mode "
        "allows only 0 or 1)"
    )


def test_moved_constraints_are_written_into_the_description() -> None:
    compiled = compile_for_provider(REVIEW, "anthropic")
    summary = compiled.parameters["properties"]["summary"]
    assert summary == {
        "type": "string",
        "description": 'Brief summary\nConstraints: {"minLength": 5}.',
    }
    comments = compiled.parameters["properties"]["comments"]
    assert comments["minItems"] == 1
    assert comments["description"] == 'Constraints: {"minItems": 2}.'


def test_defaults_move_to_the_description() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"kind": {"type": "string", "default": "plain"}},
    }
    compiled = compile_for_provider(schema, "openai")
    assert compiled.parameters["properties"]["kind"] == {
        "type": ["string", "null"],
        "description": 'Default: "plain".',
    }


def test_neutral_report_and_non_strict_reports_say_nothing_is_enforced() -> None:
    neutral = compile_for_provider(OPEN, "neutral").report
    assert neutral == CompileReport(dialect="neutral", strict=False, wrapped=False)
    assert neutral.format() == (
        "neutral: not strict; only agentshape's validation enforces the schema"
    )
    blocked = compile_for_provider(OPEN, "openai").report
    assert blocked.format().splitlines()[1] == (
        "  - $: additionalProperties blocks strict (undeclared properties are allowed; set "
        "additionalProperties: false)"
    )
    assert blocked.unenforced() == ()


# -- narrowing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_narrowing_closes_open_objects_and_reports_it(dialect: str) -> None:
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": "string"},
            "inner": {"properties": {"b": {"type": "integer"}}},
        },
    }
    compiled = assert_exact(
        schema,
        dialect,
        [{"a": "x"}, {"a": "x", "inner": {"b": 1}}, {"a": "x", "zzz": 1}],
        allow_narrowing=True,
    )
    narrowed = [(n.path, n.keyword) for n in compiled.report.notes if n.action == "narrowed"]
    assert narrowed == [
        ("$", "additionalProperties"),
        ("$.properties.inner", "type"),
        ("$.properties.inner", "additionalProperties"),
    ]
    assert compiled.report.format().splitlines()[0] == (
        f"{dialect}: strict; the provider enforces the schema; it produces only part of what "
        "the schema accepts"
    )
    # An undeclared property is valid for the designer, but the provider cannot produce it.
    provider = offline_validator(compiled.parameters, 7)
    assert not provider.is_valid(compiled.to_arguments({"a": "x", "zzz": 1}))
    assert provider.is_valid(compiled.to_arguments({"a": "x"}))


def test_narrowing_lets_an_untyped_object_root_go_unwrapped() -> None:
    schema = {"properties": {"a": {"type": "string"}}, "additionalProperties": False}
    assert needs_wrapping(schema)
    assert not needs_wrapping(schema, allow_narrowing=True)
    compiled = compile_for_provider(schema, "openai", allow_narrowing=True)
    assert compiled.strict and not compiled.wrapped


# -- limits of each provider -----------------------------------------------------------------


def _closed(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


def test_openai_limits_block_strict() -> None:
    many = _closed({"e": {"enum": [f"v{i}" for i in range(1001)]}})
    assert blockers(compile_for_provider(many, "openai")) == [("$", "enum")]
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(10):
        deep = _closed({"x": deep})
    assert compile_for_provider(deep, "openai").strict
    compiled = compile_for_provider(_closed({"x": deep}), "openai")
    assert blockers(compiled) == [("$", "properties")]
    assert "11 levels of object nesting; OpenAI strict mode allows 10" in str(compiled.report)


def test_anthropic_limits_block_strict() -> None:
    optional = _closed({f"p{i}": {"type": "string"} for i in range(25)}, required=[])
    assert blockers(compile_for_provider(optional, "anthropic")) == [("$", "required")]
    assert compile_for_provider(optional, "openai").strict
    unions = _closed({f"p{i}": {"type": ["string", "integer"]} for i in range(17)})
    assert blockers(compile_for_provider(unions, "anthropic")) == [("$", "anyOf")]


def test_compile_rejects_what_is_not_a_schema() -> None:
    with pytest.raises(InvalidSchemaError, match="not list"):
        compile_for_provider([1], "openai")
    with pytest.raises(InvalidSchemaError, match="unknown dialect 'gemini'"):
        compile_for_provider({}, "gemini")  # type: ignore[arg-type]


def test_a_schema_that_explodes_when_merged_stops_with_a_reason() -> None:
    branches = [
        {
            "anyOf": [
                {"type": "object", "required": [f"a{i}"]},
                {"type": "object", "required": [f"b{i}"]},
            ]
        }
        for i in range(16)
    ]
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {f"{p}{i}": {"type": "string"} for i in range(16) for p in "ab"},
        "allOf": branches,
    }
    compiled = compile_for_provider(schema, "openai")
    assert not compiled.strict
    assert "more than 20000 steps" in compiled.report.format()


# -- wrapping ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "wrapped"),
    [
        ({"type": "object"}, False),
        ({"$ref": "#/$defs/A", "$defs": {"A": {"type": "object"}}}, False),
        ({"type": ["object", "null"]}, True),
        ({"type": "object", "oneOf": [{}]}, True),
        ({"type": "array"}, True),
        (True, True),
        ({"$ref": "#/$defs/A"}, True),
    ],
)
def test_needs_wrapping(schema: Any, wrapped: bool) -> None:
    assert needs_wrapping(schema) is wrapped


def test_neutral_wrapping_keeps_references_working() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "array",
        "items": {"anyOf": [{"$ref": "#/$defs/leaf"}, {"$ref": "#"}]},
        "$defs": {"leaf": {"type": "integer"}},
    }
    compiled = compile_for_provider(schema, "neutral")
    assert compiled.parameters == {
        "type": "object",
        "properties": {
            "result": {
                "type": "array",
                "items": {"anyOf": [{"$ref": "#/$defs/leaf"}, {"$ref": "#/properties/result"}]},
            }
        },
        "required": ["result"],
        "additionalProperties": False,
        "$defs": {"leaf": {"type": "integer"}},
    }
    check_exact(schema, compiled, [[1, [2, [3]]], [1, ["x"]], "x", []])


# -- random schemas -----------------------------------------------------------------------------


def _random_schema(rng: random.Random, depth: int, defs: dict[str, Any], flags: set[str]) -> Any:
    kinds = ["string", "integer", "number", "boolean", "enum", "const", "nullable", "multi"]
    if depth < 3:
        kinds += ["object", "object", "array", "anyOf", "oneOf", "ref"]
    kind = rng.choice(kinds)
    if kind == "string":
        schema: dict[str, Any] = {"type": "string"}
        if rng.random() < 0.3:
            schema["minLength"] = rng.randint(0, 3)
        if rng.random() < 0.2:
            schema["pattern"] = "^[a-z]*$"
        if rng.random() < 0.2:
            schema["format"] = rng.choice(["date", "email", "uuid", "uri"])
        return schema
    if kind in ("integer", "number"):
        schema = {"type": kind}
        if rng.random() < 0.4:
            schema["minimum"] = rng.randint(-2, 3)
        if rng.random() < 0.3:
            schema["maximum"] = rng.randint(4, 9)
        return schema
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "enum":
        return {"enum": rng.sample(["a", "b", 1, 2.5, True, None], rng.randint(1, 4))}
    if kind == "const":
        return {"const": rng.choice(["x", 3, False])}
    if kind == "nullable":
        return {"type": [rng.choice(["string", "integer"]), "null"]}
    if kind == "multi":
        return {"type": ["string", "integer"], "minLength": 1, "maximum": 5}
    if kind == "object":
        properties = {
            f"p{i}": _random_schema(rng, depth + 1, defs, flags) for i in range(rng.randint(1, 4))
        }
        required = [name for name in properties if rng.random() < 0.5]
        for name, sub in properties.items():
            if name in required:
                continue
            if offline_validator({**sub, "$defs": dict(defs)}, 7).is_valid(None):
                if rng.random() < 0.5:
                    sub["default"] = None
                else:
                    flags.add("ambiguous")
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
    if kind == "array":
        schema = {"type": "array", "items": _random_schema(rng, depth + 1, defs, flags)}
        if rng.random() < 0.4:
            schema["minItems"] = rng.randint(0, 2)
        if rng.random() < 0.2:
            schema["uniqueItems"] = True
        return schema
    if kind == "anyOf":
        return {"anyOf": [_random_schema(rng, depth + 1, defs, flags) for _ in range(2)]}
    if kind == "oneOf":
        return {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    name = f"D{len(defs)}"
    defs[name] = {}
    defs[name] = _random_schema(rng, depth + 1, defs, flags)
    return {"$ref": f"#/$defs/{name}"}


@pytest.mark.parametrize("seed", range(120))
def test_random_schemas_compile_exactly(seed: int) -> None:
    rng = random.Random(seed)
    defs: dict[str, Any] = {}
    flags: set[str] = set()
    schema = _random_schema(rng, 0, defs, flags)
    if defs:
        schema = {**schema, "$defs": defs}
    values = [sample_value(schema, defs, rng) for _ in range(30)]
    values += [m for value in values[:10] for m in mutations(value, rng, 4)]
    for dialect in ("openai", "anthropic"):
        compiled = compile_for_provider(schema, dialect)  # type: ignore[arg-type]
        if compiled.strict:
            check_rules(compiled)
            check_exact(schema, compiled, values, seed=seed)
        elif dialect == "openai":
            assert "ambiguous" in flags, compiled.report.format()
            assert {keyword for _, keyword in blockers(compiled)} == {"required"}
        else:
            assert {keyword for _, keyword in blockers(compiled)} <= {"required", "anyOf"}
    neutral = compile_for_provider(schema, "neutral")
    check_exact(schema, neutral, values, seed=seed)


# -- real-world schemas --------------------------------------------------------------------------


def _bench_records() -> Iterator[dict[str, Any]]:
    for path in sorted((CONFORMANCE / "jsonschemabench").glob("*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            for index, line in enumerate(lines):
                if index % 4 == 0:
                    yield json.loads(line)


@pytest.mark.skipif(
    not (CONFORMANCE / "jsonschemabench").is_dir(),
    reason=f"conformance data not found at {CONFORMANCE} (set AGENTSHAPE_CONFORMANCE_DIR)",
)
def test_jsonschemabench_schemas_compile_exactly_in_every_dialect() -> None:
    checked = strict = 0
    for record in _bench_records():
        schema = record["schema"]
        try:
            offline_validator(schema)
        except ValueError:
            continue  # a broken schema or a remote reference: nothing to compare against
        values = [test["data"] for test in record["tests"]]
        if schema_draft(schema) == 4:
            values = [v for v in values if not _has_whole_float(v)]  # draft-04 reads 1.0 apart
        rng = random.Random(3)
        values += [m for value in values for m in mutations(value, rng, 4)]
        for dialect in ("neutral", "openai", "anthropic"):
            for narrowing in (False, True):
                compiled = compile_for_provider(schema, dialect, allow_narrowing=narrowing)  # type: ignore[arg-type]
                if compiled.strict:
                    check_rules(compiled)
                    strict += 1
                if compiled.strict or dialect == "neutral":
                    check_exact(schema, compiled, values)
                    checked += 1
    assert checked > 1000 and strict > 300


def _has_whole_float(value: JsonValue) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(_has_whole_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_whole_float(v) for v in value)
    return False
