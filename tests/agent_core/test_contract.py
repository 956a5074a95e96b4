from __future__ import annotations

import datetime
import decimal
import enum
import json
import uuid
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from agent_contracts import AgentConfig, ConfigError, InvalidSchemaError, ToolCall, ValidationIssue
from agent_contracts._profiles import ProviderProfile
from agent_core._contract import CUT_OFF, OutputContract, Verdict, resolve_contract
from agent_executor._providers.profiles import (
    ANTHROPIC_PROFILE,
    COMPATIBLE_PROFILE,
    OPENAI_PROFILE,
    TEST_PROFILE,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title", "score"],
    "properties": {"title": {"type": "string"}, "score": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}
OTHER: dict[str, Any] = {
    "type": "object",
    "required": ["verdict"],
    "properties": {"verdict": {"enum": ["pass", "fail"]}},
    "additionalProperties": False,
}
LIST_SCHEMA: dict[str, Any] = {"type": "array", "items": {"type": "integer"}}


class Review(BaseModel):
    title: str
    score: int


def config(**fields: Any) -> AgentConfig:
    return AgentConfig.model_validate({"id": "grader", **fields})


def resolve(
    cfg: AgentConfig,
    *,
    output_type: type[BaseModel] | None = None,
    inline: dict[str, Any] | None = None,
    named: tuple[str, dict[str, Any]] | None = None,
    lenient: bool = False,
) -> OutputContract | None:
    return resolve_contract(
        cfg, output_type=output_type, inline=inline, named=named, lenient=lenient
    )


def must(contract: OutputContract | None) -> OutputContract:
    assert contract is not None
    return contract


@pytest.mark.parametrize(
    ("profile", "dialect"),
    [
        (OPENAI_PROFILE, "openai"),
        (ANTHROPIC_PROFILE, "anthropic"),
        (COMPATIBLE_PROFILE, "neutral"),
        (TEST_PROFILE, "neutral"),
        (OPENAI_PROFILE.model_copy(update={"strict_tools": False}), "neutral"),
        (ProviderProfile(tool_dialect="anthropic", strict_tools=False), "neutral"),
    ],
)
def test_the_profile_alone_decides_the_dialect(profile: ProviderProfile, dialect: str) -> None:
    contract = must(
        resolve_contract(
            AgentConfig.model_validate({"id": "a", "output_schema": SCHEMA}),
            output_type=None,
            inline=None,
            named=None,
            lenient=False,
        )
    )
    bound = contract.bind(profile)
    assert bound.dialect == dialect
    assert bound.tool_definition() == contract.tool_definition(dialect)  # type: ignore[arg-type]


def test_agents_own_schema() -> None:
    contract = must(resolve(config(output_schema=SCHEMA)))
    assert contract.source == "agent" and contract.name is None
    assert contract.schema == SCHEMA
    assert contract.issues({"title": "x", "score": 1}) == []
    assert [str(i) for i in contract.issues({"title": "x", "score": -1})] == [
        "$.score: -1 is less than the minimum of 0"
    ]


def test_the_agents_own_contract_cannot_be_replaced() -> None:
    with pytest.raises(ConfigError, match="cannot override; this run gave an inline"):
        resolve(config(output_schema=SCHEMA), inline=OTHER)
    with pytest.raises(ConfigError, match="a named output schema"):
        resolve(config(output_schema=SCHEMA), named=("verdicts", OTHER))
    with pytest.raises(ConfigError, match="default_output_schema"):
        resolve(config(), output_type=Review, inline=OTHER)


def test_inline_then_named_then_default() -> None:
    cfg = config(default_output_schema=SCHEMA)
    inline = must(resolve(cfg, inline=OTHER, named=("n", LIST_SCHEMA)))
    named = must(resolve(cfg, named=("verdicts", OTHER)))
    default = must(resolve(cfg))
    assert (inline.source, inline.schema) == ("inline", OTHER)
    assert (named.source, named.name, named.schema) == ("named", "verdicts", OTHER)
    assert (default.source, default.schema) == ("default", SCHEMA)


def test_no_contract_means_free_text() -> None:
    assert resolve(config()) is None


def test_hash_is_stable_and_tells_schemas_apart() -> None:
    one = must(resolve(config(output_schema=SCHEMA)))
    two = must(resolve(config(default_output_schema=SCHEMA)))
    other = must(resolve(config(output_schema=OTHER)))
    assert one.hash == two.hash != other.hash


def test_invalid_schema_is_reported_with_where_it_came_from() -> None:
    with pytest.raises(InvalidSchemaError, match="inline output schema"):
        resolve(config(), inline={"type": "objekt"})


def test_lenient_formats_only_when_asked() -> None:
    schema = {"type": "object", "properties": {"when": {"type": "string", "format": "date"}}}
    strict = must(resolve(config(output_schema=schema)))
    lenient = must(resolve(config(output_schema=schema), lenient=True))
    assert strict.issues({"when": "not a date"}) != []
    assert lenient.issues({"when": "not a date"}) == []


def test_pydantic_class_contract_builds_instances() -> None:
    contract = must(resolve(config(), output_type=Review))
    assert contract.source == "agent" and contract.name == "Review"
    built = contract.build({"title": "x", "score": 2})
    assert isinstance(built, Review) and built == Review(title="x", score=2)
    assert contract.issues({"title": "x", "score": "many"}) != []


def test_schema_contract_builds_the_dynamic_model() -> None:
    contract = must(resolve(config(output_schema=SCHEMA)))
    built = contract.build({"title": "x", "score": 2})
    assert isinstance(built, contract.model)
    assert built.model_dump() == {"title": "x", "score": 2}


def test_tool_definition_per_dialect() -> None:
    contract = must(resolve(config(output_schema=SCHEMA)))
    openai = contract.tool_definition("openai")
    anthropic = contract.tool_definition("anthropic")
    ollama = contract.tool_definition("neutral")
    assert openai.name == anthropic.name == ollama.name == "submit_result"
    assert openai.strict and anthropic.strict and not ollama.strict
    assert openai.parameters["additionalProperties"] is False
    assert ollama.parameters == SCHEMA
    # Anthropic strict cannot take numeric bounds: they move to the description, and the
    # run's own validation still enforces them.
    score = anthropic.parameters["properties"]
    assert isinstance(score, dict) and "minimum" not in score["score"]


def test_non_object_root_is_wrapped_and_unwrapped() -> None:
    contract = must(resolve(config(output_schema=LIST_SCHEMA)))
    tool = contract.tool_definition("openai")
    assert tool.parameters["required"] == ["result"]
    assert "`result` argument" in tool.description
    for provider in ("openai", "anthropic", "neutral"):
        assert contract.unwrap({"result": [1, 2]}, provider) == [1, 2]
    assert contract.issues(contract.unwrap({"result": [1, "x"]}, "openai")) != []


def test_optional_fields_openai_strict_nulls_are_removed() -> None:
    schema = {
        "type": "object",
        "required": ["title"],
        "properties": {"title": {"type": "string"}, "note": {"type": "string"}},
        "additionalProperties": False,
    }
    contract = must(resolve(config(output_schema=schema)))
    assert contract.tool_definition("openai").parameters["required"] == ["title", "note"]
    value = contract.unwrap({"title": "x", "note": None}, "openai")
    assert value == {"title": "x"} and contract.issues(value) == []


def test_response_format_per_dialect() -> None:
    contract = must(resolve(config(output_schema=SCHEMA)))
    openai = contract.response_format("openai")
    ollama = contract.response_format("neutral")
    anthropic = contract.response_format("anthropic")
    assert openai.strict and not ollama.strict and anthropic.strict
    assert ollama.json_schema == SCHEMA
    assert anthropic.json_schema["additionalProperties"] is False


def test_response_format_anthropic_refuses_a_schema_it_cannot_take() -> None:
    recursive = {
        "type": "object",
        "properties": {"child": {"$ref": "#"}},
        "additionalProperties": False,
    }
    contract = must(resolve(config(output_schema=recursive)))
    with pytest.raises(ConfigError, match="structured outputs"):
        contract.response_format("anthropic")


# Judging replies --------------------------------------------------------------------------------

VALID = {"title": "x", "score": 1}


def contract() -> OutputContract:
    return must(resolve(config(output_schema=SCHEMA)))


def test_judge_value_unwraps_and_refuses_null() -> None:
    wrapped = must(resolve(config(output_schema=LIST_SCHEMA)))
    assert wrapped.judge_value("{}", {"result": [1]}, "openai").value == [1]
    anything = must(resolve(config(output_schema={})))
    verdict = anything.judge_value("null", None, "openai")
    assert not verdict.ok and "null is not a result" in str(verdict.errors[0])


def test_judge_text_whole_reply_and_extraction() -> None:
    whole = contract().judge_text(json.dumps(VALID), "openai", extract=True, strict_json_only=False)
    assert whole.ok and not whole.recovered and whole.value == VALID
    prose = "Sure:\n```json\n" + json.dumps(VALID) + "\n```"
    found = contract().judge_text(prose, "openai", extract=True, strict_json_only=False)
    assert found.ok and found.recovered
    off = contract().judge_text(prose, "openai", extract=False, strict_json_only=False)
    assert off.failure == "no_json_found"


def test_judge_text_reports_the_best_invalid_candidate() -> None:
    prose = "Here: " + json.dumps({"title": "x", "score": -2})
    verdict = contract().judge_text(prose, "openai", extract=True, strict_json_only=False)
    assert verdict.failure == "output_schema_validation_failed"
    assert verdict.value == {"title": "x", "score": -2}
    assert [str(e) for e in verdict.errors] == ["$.score: -2 is less than the minimum of 0"]


def test_judge_text_failure_types() -> None:
    none = contract().judge_text("no idea", "openai", extract=True, strict_json_only=False)
    assert none.failure == "no_json_found" and none.errors
    strict = contract().judge_text(
        "Here: " + json.dumps(VALID), "openai", extract=True, strict_json_only=True
    )
    assert strict.failure == "strict_json_only_violated" and strict.value == VALID
    cut = contract().judge_text(
        json.dumps(VALID), "openai", extract=True, strict_json_only=False, cut_off=True
    )
    assert not cut.ok and CUT_OFF in str(cut.errors[0])


def test_judge_call() -> None:
    ok = ToolCall(id="c", name="submit_result", arguments=VALID, raw_arguments=json.dumps(VALID))
    assert contract().judge_call(ok, "openai", extract=True).ok
    fenced = "```json\n" + json.dumps(VALID) + "\n```"
    broken = ToolCall(id="c", name="submit_result", raw_arguments=fenced, parse_error="bad")
    recovered = contract().judge_call(broken, "openai", extract=True)
    assert recovered.ok and recovered.recovered and recovered.raw == fenced
    refused = contract().judge_call(broken, "openai", extract=False)
    assert not refused.ok and "not valid JSON: bad" in str(refused.errors[0])
    cut = contract().judge_call(broken, "openai", extract=True, cut_off=True)
    assert CUT_OFF in str(cut.errors[0])


@pytest.mark.parametrize("how", ["text", "call"])
def test_a_reply_cut_off_in_a_loop_is_told_what_it_repeated(how: str) -> None:
    looped = '{"title": "' + "score: " * 40
    if how == "text":
        cut = contract().judge_text(
            looped, "openai", extract=True, strict_json_only=False, cut_off=True
        )
    else:
        call = ToolCall(id="c", name="submit_result", raw_arguments=looped, parse_error="cut")
        cut = contract().judge_call(call, "openai", extract=True, cut_off=True)
    assert cut.failure == "output_truncated" and cut.raw == looped
    assert [str(issue) for issue in cut.errors] == [
        '$: the reply repeated "score: " over and over until the max_tokens limit cut it off; '
        "write each value once, in a few words of your own, and close the JSON"
    ]


def test_judge_reply_without_tool() -> None:
    accepted = contract().judge_reply_without_tool(json.dumps(VALID), "neutral", extract=True)
    assert accepted.ok and accepted.recovered
    text = contract().judge_reply_without_tool("It is fine.", "openai", extract=True)
    assert text.failure == "output_tool_not_called"
    assert str(text.errors[0]) == "$: the model answered in text instead of calling submit_result"
    empty = contract().judge_reply_without_tool("", "openai", extract=True)
    assert "the reply was empty" in str(empty.errors[0])


def test_verdict_merge_states_each_error_once() -> None:
    one = contract().judge_value("{}", {"title": 3}, "openai")
    two = contract().judge_value("{}", {"title": 3}, "openai")
    wrong = Verdict(
        raw="",
        errors=[ValidationIssue(path="$", message="wrong tool")],
        failure="output_tool_not_called",
    )
    merged = Verdict.merge([one, wrong, two])
    assert [str(e) for e in merged.errors] == [
        "$: 'score' is a required property",
        "$.title: 3 is not of type 'string'",
        "$: wrong tool",
    ]
    assert merged.failure == "output_schema_validation_failed"
    assert Verdict.merge([wrong, wrong]).failure == "output_tool_not_called"


def test_config_time_checks_refuse_a_schema_no_value_can_meet() -> None:
    schema = {"type": "object", "properties": {"level": {"enum": []}}}
    with pytest.raises(InvalidSchemaError, match="enum"):
        resolve(config(output_schema=schema))


def test_config_time_checks_warn_about_a_likely_typo(caplog: pytest.LogCaptureFixture) -> None:
    schema = {"type": "object", "requried": ["a"], "properties": {"a": {"type": "string"}}}
    with caplog.at_level("WARNING", logger="agent_core._contract"):
        contract = resolve(config(output_schema=schema))
    assert contract is not None
    assert "did you mean 'required'" in caplog.text


# Pydantic classes judge a model's answer as Pydantic judges JSON -------------------------------


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class StrictOrder(BaseModel):
    model_config = ConfigDict(strict=True)

    when: datetime.datetime
    colour: Colour
    id: uuid.UUID
    price: decimal.Decimal
    pair: tuple[int, str]
    tags: set[str]
    day: datetime.date


ORDER_JSON: dict[str, Any] = {
    "when": "2024-01-02T03:04:05Z",
    "colour": "red",
    "id": "123e4567-e89b-12d3-a456-426614174000",
    "price": "1.50",
    "pair": [1, "a"],
    "tags": ["x"],
    "day": "2024-01-02",
}


def test_a_strict_pydantic_class_accepts_every_correct_json_answer() -> None:
    contract = must(resolve(config(), output_type=StrictOrder))
    assert contract.issues(ORDER_JSON) == []
    verdict = contract.judge_value(json.dumps(ORDER_JSON), ORDER_JSON, "neutral")
    assert verdict.ok
    built = contract.build(verdict.value)
    assert built == StrictOrder.model_validate_json(json.dumps(ORDER_JSON))
    assert isinstance(built, StrictOrder) and built.pair == (1, "a") and built.tags == {"x"}
    # Exactly what Pydantic refuses from JSON is refused.
    for field, wrong in [("colour", "green"), ("pair", [1, 2]), ("when", "yesterday")]:
        bad = {**ORDER_JSON, field: wrong}
        with pytest.raises(ValidationError):
            StrictOrder.model_validate_json(json.dumps(bad))
        assert [issue.path for issue in contract.issues(bad)] == [
            f"$.{field}" + ("[1]" if field == "pair" else "")
        ]
    assert contract.issues({**ORDER_JSON, "pair": "1,a"}) != []


def test_result_data_is_the_json_form_of_the_validated_output() -> None:
    class Lax(BaseModel):
        n: int
        when: datetime.datetime

    contract = must(resolve(config(), output_type=Lax))
    verdict = contract.judge_value("", {"n": "3", "when": "2024-01-02T03:04:05+00:00"}, "neutral")
    assert verdict.ok
    assert verdict.value == {"n": 3, "when": "2024-01-02T03:04:05Z"}
    assert contract.build(verdict.value) == Lax(
        n=3, when=datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    )


def test_a_lone_surrogate_is_reported_for_a_pydantic_class() -> None:
    contract = must(resolve(config(), output_type=Review))
    issues = contract.issues({"title": json.loads('"\\ud83d"'), "score": 1})
    assert [str(issue) for issue in issues] == [
        "$: a lone UTF-16 surrogate (\\ud83d) is not text Pydantic reads from JSON; "
        "send whole characters"
    ]


def test_an_accepted_value_is_built_without_a_second_check() -> None:
    contract = must(resolve(config(output_schema=SCHEMA)))
    built = contract.build({"title": "x", "score": 2})
    assert built.model_dump() == {"title": "x", "score": 2}
    # Building trusts the contract's verdict; validating the class directly still checks.
    with pytest.raises(ValidationError):
        contract.model.model_validate({"title": "x", "score": -1})


def test_the_tool_a_dialect_is_sent_is_built_once() -> None:
    contract = must(resolve(config(output_schema=SCHEMA)))
    assert contract.tool_definition("openai") is contract.tool_definition("openai")
    assert contract.tool_definition("openai") is not contract.tool_definition("neutral")
