"""Property: a strict dialect changes nothing accepted, over generated schemas.

Hypothesis builds small schemas from the shapes that make strict mode hard (optional fields that
become required and nullable, ``anyOf``/``oneOf`` branches that overlap, ``allOf`` merges of
numeric bounds, draft-04's boolean ``exclusiveMinimum``); hypothesis-jsonschema draws values the
designer's schema accepts; the harness of ``test_dialects`` checks that each one is sent and
mapped back unchanged and that whatever the provider may produce maps back to an accepted value.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis_jsonschema import from_schema

from agent_core import compile_for_provider, compile_schema
from tests.agent_core.test_dialects import check_exact, mutations

DRAFT4 = "http://json-schema.org/draft-04/schema#"
NAMES = ("a", "b", "c")


def _bounds(draft4: bool) -> st.SearchStrategy[dict[str, Any]]:
    def build(low: int | None, high: int | None, flags: tuple[bool, bool]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if low is not None:
            out["minimum"] = low
            if draft4 and flags[0]:
                out["exclusiveMinimum"] = True
        if high is not None:
            out["maximum"] = high
            if draft4 and flags[1]:
                out["exclusiveMaximum"] = True
        return out

    edge = st.none() | st.integers(-3, 8)
    return st.builds(build, edge, edge, st.tuples(st.booleans(), st.booleans()))


def _leaves(draft4: bool) -> st.SearchStrategy[dict[str, Any]]:
    numbers = st.builds(
        lambda kind, bounds: {"type": kind, **bounds},
        # Draft-04's integer excludes 1.0, which JSON Schema's later drafts (and so a strict
        # provider's grammar) count as an integer: draft-04 numbers are generated as integers.
        st.sampled_from(["integer"] if draft4 else ["integer", "number"]),
        _bounds(draft4),
    )
    bounded = st.builds(
        lambda parts: {"allOf": [{"type": "integer"}, *parts]},
        st.lists(_bounds(draft4), min_size=1, max_size=2),
    )
    strings = st.builds(
        lambda nullable, short: {
            "type": ["string", "null"] if nullable else "string",
            **({"maxLength": 2} if short else {}),
        },
        st.booleans(),
        st.booleans(),
    )
    literals = st.sampled_from(
        [{"const": "x"}, {"enum": ["x", "y"]}, {"enum": ["y", None]}, {"type": "boolean"}]
    )
    return numbers | bounded | strings | literals | st.just({"type": "null"})


def _object(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    listed = [name for name in required if name in props]
    out = {"type": "object", "properties": props, "additionalProperties": False}
    return {**out, "required": listed} if listed else out


def _same_keys(key: str, names: list[str], parts: list[list[tuple[Any, bool]]]) -> dict[str, Any]:
    """A choice between objects over the same keys, each key typed and required per branch."""
    branches = []
    for part in parts:
        chosen = list(zip(names, part, strict=False))
        props = {name: leaf for name, (leaf, _) in chosen}
        branches.append(_object(props, [name for name, (_, needed) in chosen if needed]))
    return {key: branches}


def _objects(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        _object,
        st.dictionaries(st.sampled_from(NAMES), children, min_size=1, max_size=3),
        st.lists(st.sampled_from(NAMES), unique=True),
    )


def _schemas(draft4: bool) -> st.SearchStrategy[dict[str, Any]]:
    def extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        objects = _objects(children)
        choices = st.builds(
            lambda key, branches: {key: branches},
            st.sampled_from(["anyOf", "oneOf"]),
            st.lists(objects | children, min_size=2, max_size=3),
        )
        arrays = st.builds(lambda items: {"type": "array", "items": items}, children)
        return objects | choices | arrays

    tree = st.recursive(_leaves(draft4), extend, max_leaves=6)
    # Branches over the same few properties, differing in which may be absent or null: where
    # strict mode's forced nulls make an answer ambiguous.
    simple = st.sampled_from(
        [{"type": "string"}, {"type": ["string", "null"]}, {"type": "integer"}, {"enum": ["x"]}]
    )
    overlapping = st.builds(
        _same_keys,
        st.sampled_from(["anyOf", "oneOf"]),
        st.lists(st.sampled_from(NAMES), min_size=1, max_size=2, unique=True),
        st.lists(
            st.lists(st.tuples(simple, st.booleans()), min_size=2, max_size=2),
            min_size=2,
            max_size=3,
        ),
    )
    root = (
        overlapping
        | _objects(overlapping | tree)
        | st.builds(
            lambda branches: {"anyOf": branches}, st.lists(_objects(tree), min_size=2, max_size=3)
        )
    )
    if draft4:
        return st.builds(lambda schema: {"$schema": DRAFT4, **schema}, root)
    return root


def _values(schema: dict[str, Any], draft4: bool) -> st.SearchStrategy[Any]:
    """Values shaped like ``schema`` (valid ones among them), leaves drawn by hypothesis-jsonschema.

    hypothesis-jsonschema 0.23.1 draws objects with a Hypothesis internal (``many.more``) that
    Hypothesis 6.170 no longer has, so objects, arrays and choices are built here and only the
    other subschemas go to ``from_schema``.
    """
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([_values(branch, draft4) for branch in schema[key]])
    if schema.get("type") == "object":
        props = schema["properties"]
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {name: _values(sub, draft4) for name, sub in props.items() if name in required},
            optional={
                name: _values(sub, draft4) for name, sub in props.items() if name not in required
            },
        )
    if schema.get("type") == "array":
        return st.lists(_values(schema["items"], draft4), max_size=3)
    return from_schema({"$schema": DRAFT4, **schema} if draft4 else schema)


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("draft4", [False, True], ids=["draft7", "draft4"])
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_strict_mode_changes_nothing_accepted(
    data: st.DataObject, dialect: str, draft4: bool
) -> None:
    schema = data.draw(_schemas(draft4), label="schema")
    compiled = compile_for_provider(schema, dialect)  # type: ignore[arg-type]
    assume(compiled.strict)
    designer = compile_schema(schema)
    shaped = _values({k: v for k, v in schema.items() if k != "$schema"}, draft4)
    try:
        drawn = data.draw(st.lists(shaped, max_size=4), label="values")
    except InvalidArgument:  # an unsatisfiable leaf has no value to draw
        drawn = []
    values = [value for value in drawn if designer.is_valid(value)]
    rng = random.Random(len(values))
    instances = values + [mutated for value in values for mutated in mutations(value, rng, 3)]
    check_exact(schema, compiled, instances)


# -- the three corners found by hand, kept as examples ------------------------------------------

OPTIONAL_OR_NULL: dict[str, Any] = {
    "anyOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
        {
            "type": "object",
            "properties": {"a": {"type": ["string", "null"]}},
            "required": ["a"],
            "additionalProperties": False,
        },
    ]
}


@pytest.mark.parametrize("key", ["anyOf", "oneOf"])
def test_branches_differing_only_in_absence_refuse_openai_strict(key: str) -> None:
    schema = {key: [dict(branch) for branch in OPTIONAL_OR_NULL["anyOf"]]}
    if key == "oneOf":  # the first branch's minLength goes to the description under strict
        schema[key][0]["properties"] = {"a": {"type": "string", "minLength": 3}}
    compiled = compile_for_provider(schema, "openai")
    assert not compiled.strict
    assert "a null could not be told from an absent field" in str(compiled.report)
    assert compiled.unwrap(compiled.to_arguments({"a": None})) == {"a": None}
    # Anthropic forces no nulls, so the same schema stays strict there, and exact.
    anthropic = compile_for_provider(schema, "anthropic")
    assert anthropic.strict
    check_exact(schema, anthropic, [{"a": None}, {}, {"a": "abcd"}])


def test_discriminated_branches_stay_strict() -> None:
    def branch(kind: str) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"kind": {"const": kind}, "note": {"type": "string"}},
            "required": ["kind"],
            "additionalProperties": False,
        }

    schema = {"anyOf": [branch("a"), branch("b")]}
    compiled = compile_for_provider(schema, "openai")
    assert compiled.strict, compiled.report
    check_exact(schema, compiled, [{"kind": "a"}, {"kind": "b", "note": "x"}])


def test_draft4_allof_bounds_keep_their_own_exclusiveness() -> None:
    schema = {
        "$schema": DRAFT4,
        "type": "object",
        "properties": {
            "n": {
                "allOf": [
                    {"type": "number", "minimum": 5},
                    {"minimum": 3, "exclusiveMinimum": True},
                ]
            },
            "m": {
                "allOf": [
                    {"type": "number", "minimum": 5, "exclusiveMinimum": True},
                    {"minimum": 7},
                ]
            },
        },
        "required": ["n", "m"],
        "additionalProperties": False,
    }
    compiled = compile_for_provider(schema, "openai")
    assert compiled.strict
    props = compiled.parameters["properties"]
    assert props["n"] == {"type": "number", "minimum": 5, "exclusiveMinimum": 3}
    assert props["m"] == {"type": "number", "minimum": 7, "exclusiveMinimum": 5}
    check_exact(schema, compiled, [{"n": 5, "m": 7}, {"n": 4, "m": 7}, {"n": 5, "m": 6}])
    anthropic = compile_for_provider(schema, "anthropic")
    moved = {
        (n.path, n.keyword) for n in anthropic.report.notes if n.action == "moved to description"
    }
    assert ("$.properties.m", "minimum") in moved


def test_a_draft6_keyword_means_nothing_in_draft4_strict() -> None:
    schema = {
        "$schema": DRAFT4,
        "type": "object",
        "properties": {"a": {"type": "string", "const": "x"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    compiled = compile_for_provider(schema, "openai")
    assert compiled.strict
    assert compiled.parameters["properties"]["a"] == {"type": "string"}
    assert any(n.keyword == "const" and n.action == "dropped" for n in compiled.report.notes)
    check_exact(schema, compiled, [{"a": "x"}, {"a": "y"}])
