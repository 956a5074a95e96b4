"""``if``/``then``/``else`` in the grammar: it takes exactly the schema's instances where carried.

Each schema is tried on every combination of a few values a property (absent included), spelled
as the grammar spells JSON (properties in the schema's order, compact), and each verdict of
:mod:`tests.gbnf_recognizer` is checked against the project's validator. The grammar never
rejects a valid instance; where it notes nothing, it rejects every invalid one too.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core import compile_schema, schema_to_gbnf
from tests.gbnf_recognizer import Grammar, accepts, parse_grammar

ABSENT = object()
NON_OBJECTS: list[Any] = [1, "s", None, [], True]

# (name, schema, candidate values a property in the order the grammar writes them, notes)
CASES: list[tuple[str, Any, dict[str, list[Any]], tuple[str, ...]]] = [
    (
        "boolean discriminator, if requires it (the DoD contract's shape)",
        {
            "type": "object",
            "properties": {
                "done": {"type": "boolean"},
                "left": {"type": "array", "items": {"type": "string"}},
            },
            "if": {"required": ["done"], "properties": {"done": {"const": True}}},
            "then": {"properties": {"left": {"maxItems": 0}}},
        },
        {"done": [True, False, ABSENT], "left": [[], ["a"], ["a", "b"], ABSENT]},
        (),
    ),
    (
        "enum discriminator, absent makes the if hold",
        {
            "type": "object",
            "properties": {
                "kind": {"enum": ["a", "b", "c"]},
                "x": {"type": ["integer", "null"]},
            },
            "if": {"properties": {"kind": {"const": "a"}}},
            "then": {"required": ["x"]},
            "else": {"properties": {"x": {"type": "null"}}},
        },
        {"kind": ["a", "b", "c", ABSENT], "x": [1, None, ABSENT]},
        (),
    ),
    (
        "enum discriminator, required in the if: absent takes the else",
        {
            "type": "object",
            "properties": {"kind": {"type": "string", "enum": ["a", "b", "c"]}, "x": {}},
            "if": {"properties": {"kind": {"enum": ["a", "b"]}}, "required": ["kind"]},
            "then": {"required": ["x"], "properties": {"x": {"type": "integer", "minimum": 2}}},
            "else": {"properties": {"x": {"type": "string", "maxLength": 1}}},
        },
        {"kind": ["a", "b", "c", ABSENT], "x": [1, 2, "s", "st", None, ABSENT]},
        (),
    ),
    (
        "two properties in the if: it fails one way per property",
        {
            "type": "object",
            "properties": {
                "a": {"type": "boolean"},
                "b": {"enum": [1, 2, 3]},
                "c": {"type": ["string", "integer", "null"]},
            },
            "required": ["b"],
            "if": {
                "properties": {"a": {"const": True}, "b": {"enum": [1, 2]}},
                "required": ["a"],
            },
            "then": {"properties": {"c": {"type": "string"}}},
            "else": {"properties": {"c": {"type": "integer"}}},
        },
        {"a": [True, False, ABSENT], "b": [1, 2, 3, ABSENT], "c": ["s", 1, None, ABSENT]},
        (),
    ),
    (
        "a type in the if's property, of a free value",
        {
            "type": "object",
            "properties": {"v": {}, "w": {"enum": [1, 2, 3]}},
            "if": {"properties": {"v": {"type": "string"}}},
            "then": {"properties": {"w": {"const": 1}}},
            "else": {"properties": {"w": {"const": 2}}},
        },
        {"v": ["s", 1, 1.5, None, ABSENT], "w": [1, 2, 3, ABSENT]},
        (),
    ),
    (
        "a type in the if, no type beside it",
        {
            "if": {"type": "object", "required": ["a"]},
            "then": {"properties": {"a": {"type": "integer"}}},
            "else": {"type": "string"},
        },
        {"a": [1, "s", ABSENT]},
        (),
    ),
    (
        "else only",
        {
            "type": "object",
            "properties": {"mode": {"enum": ["fast", "slow"]}, "reason": {"type": "string"}},
            "if": {"properties": {"mode": {"const": "fast"}}, "required": ["mode"]},
            "else": {"required": ["reason"]},
        },
        {"mode": ["fast", "slow", ABSENT], "reason": ["r", ABSENT]},
        (),
    ),
    (
        "then names a property additionalProperties false forbids",
        {
            "type": "object",
            "properties": {"k": {"type": "boolean"}},
            "additionalProperties": False,
            "if": {"properties": {"k": {"const": True}}},
            "then": {"properties": {"z": {"type": "integer"}}},
            "else": {"required": ["z"]},
        },
        {"k": [True, False, ABSENT], "z": [1, "s", ABSENT]},
        (),
    ),
    (
        "then constrains a property the object does not declare",
        {
            "type": "object",
            "properties": {"k": {"type": "boolean"}},
            "if": {"properties": {"k": {"const": False}}, "required": ["k"]},
            "then": {"properties": {"q": {"type": "integer", "maximum": 3}}},
        },
        {"k": [True, False, ABSENT], "q": [1, 4, "s", ABSENT]},
        (),
    ),
    (
        "allOf of conditionals and nothing else",
        {
            "type": "object",
            "properties": {
                "a": {"type": "boolean"},
                "b": {"type": "boolean"},
                "x": {"type": "integer"},
                "y": {"type": "integer"},
            },
            "allOf": [
                {"if": {"properties": {"a": {"const": True}}}, "then": {"required": ["x"]}},
                {
                    "if": {"properties": {"b": {"const": True}}, "required": ["b"]},
                    "then": {"required": ["y"]},
                    "else": {"properties": {"y": {"maximum": 0}}},
                },
                {"if": {"required": ["x"]}},
            ],
        },
        {
            "a": [True, False, ABSENT],
            "b": [True, False, ABSENT],
            "x": [1, ABSENT],
            "y": [0, 1, ABSENT],
        },
        (),
    ),
    (
        "a conditional behind a $ref, in an array's items",
        {
            "$defs": {
                "step": {
                    "type": "object",
                    "properties": {"ok": {"type": "boolean"}, "why": {"type": "string"}},
                    "required": ["ok"],
                    "if": {"properties": {"ok": {"const": False}}},
                    "then": {"required": ["why"]},
                    "else": {"properties": {"why": False}},
                }
            },
            "type": "object",
            "properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/step"}}},
        },
        {
            "steps": [
                [],
                [{"ok": True}],
                [{"ok": False}],
                [{"ok": False, "why": "w"}],
                [{"ok": True, "why": "w"}],
                [{"ok": True}, {"ok": False, "why": "w"}],
                [{"ok": True}, {"ok": False}],
                ABSENT,
            ]
        },
        (),
    ),
    (
        "two thens with a not each: the conditionals are carried, the nots noted",
        {
            "type": "object",
            "properties": {"apply": {"type": "string"}, "external": {"type": "boolean"}},
            "additionalProperties": False,
            "allOf": [
                {"if": {"required": ["apply"]}, "then": {"not": {"required": ["external"]}}},
                {
                    "if": {"required": ["external"]},
                    "then": {"properties": {"external": {"const": True}}},
                    "else": {"not": {"required": ["apply"]}},
                },
            ],
        },
        {"apply": ["a", ABSENT], "external": [True, False, ABSENT]},
        ("$: not is not in the grammar",),
    ),
    (
        "conditionals inside a property and an anyOf branch",
        {
            "type": "object",
            "properties": {
                "inner": {
                    "type": "object",
                    "properties": {"on": {"type": "boolean"}, "level": {"enum": [1, 2]}},
                    "if": {"properties": {"on": {"const": False}}, "required": ["on"]},
                    "then": {"properties": {"level": False}},
                    "else": {"required": ["level"]},
                },
                "v": {
                    "anyOf": [
                        {"type": "integer"},
                        {
                            "type": "array",
                            "items": {"type": "boolean"},
                            "if": {"minItems": 0},
                            "then": {"maxItems": 1},
                        },
                        {"type": "string", "if": {"const": "no"}, "then": False},
                    ]
                },
            },
        },
        {
            "inner": [
                {},
                {"on": False},
                {"on": True},
                {"on": False, "level": 1},
                {"on": True, "level": 2},
            ],
            "v": [1, [], [True], [True, False], "no", "yes", ABSENT],
        },
        (
            "$.properties.v.anyOf[1]: if is not in the grammar",
            "$.properties.v.anyOf[1]: then is not in the grammar",
        ),
    ),
    (
        "a free string's const: it fails as any other string, escapes included",
        {
            "type": "object",
            "properties": {"kind": {"type": "string"}, "x": {"type": "integer"}},
            "if": {"properties": {"kind": {"const": "a/b"}}},
            "then": {"required": ["x"]},
        },
        {"kind": ["a/b", "a", "a/bc", "", "é", ABSENT], "x": [1, ABSENT]},
        (),
    ),
    (
        "string discriminators in an allOf of conditionals, the object in the allOf too",
        {
            "allOf": [
                {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "n": {}, "s": {}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
                {
                    "if": {"properties": {"name": {"const": "int"}}},
                    "then": {"properties": {"n": {"type": "integer"}}, "required": ["n"]},
                },
                {
                    "if": {"properties": {"name": {"const": "str"}}},
                    "then": {"properties": {"n": False}, "required": ["s"]},
                },
            ]
        },
        {"name": ["int", "str", "x", 1, ABSENT], "n": [1, "1", ABSENT], "s": ["s", ABSENT]},
        (),
    ),
    (
        "a then of false forbids the if",
        {
            "type": "object",
            "properties": {"mode": {"enum": ["a", "b"]}, "x": {}},
            "if": {"properties": {"mode": {"const": "a"}}, "required": ["mode"]},
            "then": False,
            "else": {"required": ["x"]},
        },
        {"mode": ["a", "b", ABSENT], "x": [1, ABSENT]},
        (),
    ),
    (
        "a string's length in the if: no schema says the strings it rejects",
        {
            "type": "object",
            "properties": {"kind": {"type": "string"}, "x": {"type": "integer"}},
            "if": {"properties": {"kind": {"maxLength": 1}}},
            "then": {"required": ["x"]},
        },
        {"kind": ["a", "bc", ABSENT], "x": [1, ABSENT]},
        ("$: if is not in the grammar", "$: then is not in the grammar"),
    ),
    (
        "an integer type in the if: the numbers it rejects have no type",
        {
            "type": "object",
            "properties": {"n": {}, "m": {"type": "integer"}},
            "if": {"properties": {"n": {"type": "integer"}}},
            "then": {"properties": {"m": {"minimum": 1}}},
            "else": {"properties": {"m": {"maximum": 0}}},
        },
        {"n": [1, 1.5, "s", ABSENT], "m": [0, 1, ABSENT]},
        (
            "$: if is not in the grammar",
            "$: then is not in the grammar",
            "$: else is not in the grammar",
        ),
    ),
    (
        "one conditional left out, the other carried",
        {
            "type": "object",
            "properties": {"k": {"type": "boolean"}, "s": {"type": "string"}, "x": {}},
            "allOf": [
                {"if": {"properties": {"s": {"minLength": 2}}}, "then": {"required": ["x"]}},
                {"if": {"properties": {"k": {"const": True}}}, "then": {"required": ["s"]}},
            ],
        },
        {"k": [True, False, ABSENT], "s": ["a", "bc", ABSENT], "x": [1, ABSENT]},
        ("$.allOf[0]: if is not in the grammar", "$.allOf[0]: then is not in the grammar"),
    ),
]


def instances(candidates: dict[str, list[Any]], with_non_objects: bool) -> list[Any]:
    """Return every object the candidates make, in their order, and a few non-objects."""
    made: list[Any] = list(NON_OBJECTS) if with_non_objects else []
    for values in itertools.product(*candidates.values()):
        made.append(
            {
                name: value
                for name, value in zip(candidates, values, strict=True)
                if value is not ABSENT
            }
        )
    return made


@pytest.mark.parametrize(
    ("schema", "candidates", "notes"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_grammar_takes_exactly_the_valid_instances_where_it_carries_the_conditional(
    schema: Any, candidates: dict[str, list[Any]], notes: tuple[str, ...]
) -> None:
    grammar = schema_to_gbnf(schema)
    assert grammar.notes == notes
    parsed = parse_grammar(grammar.text)
    validator = compile_schema(schema)
    seen = set()
    for value in instances(candidates, with_non_objects=True):
        text = json.dumps(value, separators=(",", ":"))
        valid = validator.is_valid(value)
        seen.add(valid)
        if valid:
            assert accepts(parsed, text), f"a valid instance is refused: {text}"
        elif not notes:
            assert not accepts(parsed, text), f"an invalid instance passes: {text}"
    assert seen == {True, False}  # each case has both kinds of instance


@pytest.mark.parametrize(
    ("schema", "candidates"),
    [c[1:3] for c in CASES if not c[3]],
    ids=[c[0] for c in CASES if not c[3]],
)
def test_declared_only_and_compact_still_pass_no_invalid_instance(
    schema: Any, candidates: dict[str, list[Any]]
) -> None:
    # As the llamacpp: provider sends it: undeclared keys are left out, so a property only
    # a then declares is written where its case declares it.
    grammar = schema_to_gbnf(schema, declared_only=True, compact=True)
    assert grammar.notes == ()
    parsed = parse_grammar(grammar.text)
    validator = compile_schema(schema)
    for value in instances(candidates, with_non_objects=False):
        text = json.dumps(value, separators=(",", ":"))
        if not validator.is_valid(value):
            assert not accepts(parsed, text), text


DOD = yaml.safe_load(
    (Path(__file__).parents[2] / "bench/integration_agents/execution-dod.yml").read_text()
)["output"]["schema"]
DONE: dict[str, Any] = {
    "task_complete": True,
    "confidence": "high",
    "summary": {
        "user_stories_total": 3,
        "user_stories_done": 3,
        "phases_total": 2,
        "phases_done": 2,
    },
}


@pytest.mark.parametrize("provider", [False, True], ids=["show", "sent to llama.cpp"])
def test_the_definition_of_done_grammar_refuses_remaining_items_on_a_complete_task(
    provider: bool,
) -> None:
    grammar = schema_to_gbnf(DOD, declared_only=provider, compact=provider)
    assert grammar.notes == ()

    def answer(**changes: Any) -> str:
        value = {**DONE, **changes, "recommendation": "Ship it."}
        return json.dumps({k: v for k, v in value.items() if v is not ABSENT})

    assert not accepts(grammar.text, answer(remaining_items=["all"]))
    assert accepts(grammar.text, answer(remaining_items=[]))
    assert accepts(grammar.text, answer(remaining_items=ABSENT))
    assert accepts(grammar.text, answer(task_complete=False, remaining_items=["all", "tests"]))
    assert accepts(grammar.text, answer(task_complete=False, remaining_items=[]))
    assert not accepts(grammar.text, answer(task_complete=ABSENT, remaining_items=[]))


def test_if_without_then_or_else_constrains_nothing_and_is_not_noted() -> None:
    alone = {"type": "object", "if": {"required": ["a"]}, "properties": {"a": {"type": "null"}}}
    stray = {"type": "object", "then": {"required": ["a"]}, "else": {"type": "string"}}
    assert schema_to_gbnf(alone).notes == () and schema_to_gbnf(stray).notes == ()
    assert (
        schema_to_gbnf(alone).text
        == schema_to_gbnf({"type": "object", "properties": {"a": {"type": "null"}}}).text
    )
    assert accepts(schema_to_gbnf(stray).text, "{}")


# Generated conditionals over three properties, each with a few values: the grammar is held to
# the validator on every combination of them.
VALUES: dict[str, list[Any]] = {
    "a": [True, False, ABSENT],
    "b": [1, 2, 3, ABSENT],
    "c": ["s", "t", None, 1, ABSENT],
}
BASES = {
    "a": [{"type": "boolean"}, {}, {"enum": [True]}],
    "b": [{"enum": [1, 2, 3]}, {"type": "integer"}, {"enum": [1, 2]}],
    "c": [{"type": ["string", "null", "integer"]}, {}, {"type": ["string", "null"]}],
}


def _value_schemas(name: str) -> st.SearchStrategy[Any]:
    values = [value for value in VALUES[name] if value is not ABSENT]
    return st.one_of(
        st.sampled_from(values).map(lambda value: {"const": value}),
        st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True).map(
            lambda enum: {"enum": enum}
        ),
        st.sampled_from(["boolean", "integer", "string", "null", ["string", "null"]]).map(
            lambda kind: {"type": kind}
        ),
        st.sampled_from([True, False]),
    )


def _constraints() -> st.SearchStrategy[dict[str, Any]]:
    names = st.lists(st.sampled_from(list(VALUES)), max_size=2, unique=True)
    return st.builds(
        lambda required, props: {
            **({"required": required} if required else {}),
            **({"properties": props} if props else {}),
        },
        names,
        st.fixed_dictionaries({}, optional={name: _value_schemas(name) for name in VALUES}),
    )


def _conditional() -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda test, then, other, kind: {
            "if": {**test, **({"type": kind} if kind else {})},
            **({"then": then} if then is not None else {}),
            **({"else": other} if other is not None else {}),
        },
        _constraints(),
        st.none() | st.just(False) | _constraints(),
        st.none() | st.just(False) | _constraints(),
        st.sampled_from([None, None, "object", "string"]),
    )


@st.composite
def conditional_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "properties": {name: draw(st.sampled_from(BASES[name])) for name in VALUES}
    }
    if draw(st.booleans()):
        schema["type"] = "object"
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    required = draw(st.lists(st.sampled_from(list(VALUES)), max_size=1))
    if required:
        schema["required"] = required
    conditionals = draw(st.lists(_conditional(), min_size=1, max_size=2))
    if len(conditionals) == 1:
        schema.update(conditionals[0])
    else:
        schema["allOf"] = conditionals
    return schema


def accepted_in_some_order(parsed: Grammar, value: Any) -> bool:
    """Whether the grammar takes ``value`` with its keys in some order.

    The grammar writes the properties a case declares in order, then the others, and
    cases put together declare different ones.
    """
    if not isinstance(value, dict):
        return accepts(parsed, json.dumps(value))
    return any(
        accepts(parsed, json.dumps(dict(order), separators=(",", ":")))
        for order in itertools.permutations(value.items())
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conditional_schemas())
def test_generated_conditionals_refuse_no_valid_instance_and_pass_no_invalid_one_unnoted(
    schema: dict[str, Any],
) -> None:
    grammar = schema_to_gbnf(schema)
    parsed = parse_grammar(grammar.text)
    validator = compile_schema(schema)
    for value in instances(VALUES, with_non_objects=True):
        text = json.dumps(value, separators=(",", ":"))
        if validator.is_valid(value):
            assert accepted_in_some_order(parsed, value), f"a valid instance is refused: {text}"
        elif not grammar.notes:
            assert not accepted_in_some_order(parsed, value), f"an invalid one passes: {text}"


def _object_part() -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.one_of(
        _value_schemas("b"),
        st.builds(
            lambda low, high: {
                "type": "integer",
                **({"minimum": low} if low is not None else {}),
                **({"maximum": high} if high is not None else {}),
            },
            st.none() | st.integers(0, 3),
            st.none() | st.integers(0, 3),
        ),
        st.sampled_from([{"type": ["string", "null"]}, {"type": "boolean"}, {}]),
    )
    return st.builds(
        lambda constraints, props, extra: {
            **constraints,
            **({"properties": props} if props else {}),
            **({"additionalProperties": extra} if extra is not None else {}),
        },
        _constraints(),
        st.fixed_dictionaries({}, optional={name: leaf for name in VALUES}),
        st.none() | st.sampled_from([False, {"type": "integer"}, {"enum": [True, "s"]}]),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_object_part(), min_size=2, max_size=3), st.booleans())
def test_object_schemas_put_together_take_exactly_the_instances_of_their_allof(
    parts: list[dict[str, Any]], beside: bool
) -> None:
    # Put together name by name: a property one part does not declare meets that part's
    # additionalProperties; the first part's keywords may stand beside the allOf.
    schema: dict[str, Any] = {**parts[0], "allOf": parts[1:]} if beside else {"allOf": parts}
    grammar = schema_to_gbnf(schema)
    parsed = parse_grammar(grammar.text)
    validator = compile_schema(schema)
    for value in instances(VALUES, with_non_objects=True):
        text = json.dumps(value, separators=(",", ":"))
        if validator.is_valid(value):
            assert accepted_in_some_order(parsed, value), f"a valid instance is refused: {text}"
        elif not grammar.notes:
            assert not accepted_in_some_order(parsed, value), f"an invalid one passes: {text}"


def spelled(text: str, escape: str) -> str:
    """Return ``text`` as a JSON string: as is, every character a ``\\u`` escape, or mixed."""
    out = []
    for index, char in enumerate(text):
        if escape == "all" or (escape == "mixed" and index % 2):
            out.append(f"\\u{ord(char):04x}" if index % 3 else f"\\u{ord(char):04X}")
        else:
            out.append(json.dumps(char, ensure_ascii=False)[1:-1])
    return '"' + "".join(out) + '"'


def test_strings_a_not_excludes_are_refused_however_json_spells_them() -> None:
    excluded = ["ab", "a/", "é", 'a"', "\n", "a"]
    schema = {"type": "string", "not": {"enum": excluded}}
    grammar = schema_to_gbnf(schema)
    assert grammar.notes == ()
    parsed = parse_grammar(grammar.text)
    validator = compile_schema(schema)
    for length in range(4):
        for chars in itertools.product(["a", "b", "/", "é", '"', "\n", "\\"], repeat=length):
            for escape in ("none", "all", "mixed"):
                text = spelled("".join(chars), escape)
                assert accepts(parsed, text) == validator.is_valid(json.loads(text)), text
    for text in [
        '"a\\/"',
        '"a\\u002F"',
        '"\\u00E9"',
        '"a\\u0022"',
        '"\\u000A"',
        '"\\ud83d\\ude00"',
    ]:
        assert accepts(parsed, text) == validator.is_valid(json.loads(text)), text


def test_a_string_discriminator_is_read_through_escapes() -> None:
    schema = {
        "type": "object",
        "properties": {"kind": {"type": "string"}, "x": {"type": "integer"}},
        "if": {"properties": {"kind": {"const": "a/b"}}},
        "then": {"required": ["x"]},
        "else": {"properties": {"x": False}},
    }
    grammar = schema_to_gbnf(schema, declared_only=True, compact=True)
    assert grammar.notes == ()
    # A const is written one way (as json.dumps writes it); the else case refuses every
    # spelling of it, so that no escape slips an if-true value past the then.
    assert accepts(grammar.text, '{"kind":"a/b","x":1}')
    for kind in ('"a/b"', '"a\\/b"', '"\\u0061/b"', '"a\\u002fb"'):
        assert not accepts(grammar.text, f'{{"kind":{kind}}}'), kind
    for kind in ('"a/c"', '"a\\/"', '"\\u0061"', '"a/b\\u0020"'):
        assert accepts(grammar.text, f'{{"kind":{kind}}}'), kind
        assert not accepts(grammar.text, f'{{"kind":{kind},"x":1}}'), kind
