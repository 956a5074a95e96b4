from __future__ import annotations

import pytest
from pydantic import JsonValue, ValidationError

from agent_contracts import AgentConfig, RunOptions, suggest_key

REPORT_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "required": ["summary", "findings"],
    "properties": {
        "summary": {"type": "string", "minLength": 50},
        "findings": {"type": "array", "items": {"type": "string"}},
    },
}

FILE_FORM: dict[str, JsonValue] = {
    "schema": "kb.agent/1",
    "id": "researcher",
    "name": "Code Researcher",
    "description": "Finds facts in a codebase",
    "llm": {
        "model": "openai:gpt-4o-mini",
        "tiers": ["openai:gpt-4o"],
        "temperature": 0,
        "maxTokens": 2048,
    },
    "context": {"static": {"system": "You research code."}},
    "tools": ["fs:read", "fs:search"],
    "limits": {"maxSteps": 12, "tokenBudget": 50_000, "timeoutSeconds": 120},
    "output": {
        "schema": REPORT_SCHEMA,
        "mode": "tool",
        "maxRetries": 2,
        "extractJson": False,
        "strictJsonOnly": True,
        "lenientFormats": True,
    },
}

BLUEPRINT_FORM: dict[str, JsonValue] = {
    "id": "researcher",
    "name": "Code Researcher",
    "description": "Finds facts in a codebase",
    "model": "openai:gpt-4o-mini",
    "model_tiers": ["openai:gpt-4o"],
    "temperature": 0,
    "max_tokens": 2048,
    "system_prompt": "You research code.",
    "tools": ["fs:read", "fs:search"],
    "max_steps": 12,
    "output_schema": REPORT_SCHEMA,
    "options": {
        "output_mode": "tool",
        "max_retries": 2,
        "extract_json": False,
        "strict_json_only": True,
        "lenient_formats": True,
        "token_budget": 50_000,
        "timeout_s": 120,
    },
}


def errors_of(data: object) -> list[tuple[str, str]]:
    """Return (dotted loc, message) for every error AgentConfig reports for data."""
    with pytest.raises(ValidationError) as info:
        AgentConfig.model_validate(data)
    return [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in info.value.errors()]


def test_both_forms_normalise_to_the_same_config() -> None:
    from_file = AgentConfig.model_validate(FILE_FORM)
    from_blueprint = AgentConfig.model_validate(BLUEPRINT_FORM)

    assert from_file == from_blueprint
    assert from_file.id == "researcher"
    assert from_file.model == "openai:gpt-4o-mini"
    assert from_file.model_tiers == ["openai:gpt-4o"]
    assert from_file.max_tokens == 2048
    assert from_file.system_prompt == "You research code."
    assert from_file.max_steps == 12
    assert from_file.output_schema == REPORT_SCHEMA
    assert from_file.options.max_retries == 2
    assert from_file.options.extract_json is False
    assert from_file.options.strict_json_only is True
    assert from_file.options.output_mode == "tool"
    assert from_file.options.token_budget == 50_000
    assert from_file.options.timeout_s == 120.0
    assert from_file.options.lenient_formats is True


def test_seed_000_blueprint_with_fixed_output_schema() -> None:
    config = AgentConfig.model_validate(
        {
            "name": "pr-reviewer",
            "description": "Reviews pull requests and provides structured feedback",
            "type": "autonomous",
            "parameters_schema": {
                "type": "object",
                "required": ["pr_url"],
                "properties": {"pr_url": {"type": "string"}},
            },
            "output_schema": {
                "type": "object",
                "required": ["summary", "approval", "comments"],
                "properties": {"approval": {"enum": ["approve", "request_changes", "comment"]}},
            },
            "system_prompt": "You are a thorough code reviewer...",
        }
    )
    assert config.id == config.name == "pr-reviewer"
    assert config.type == "autonomous"
    assert config.parameters_schema == {
        "type": "object",
        "required": ["pr_url"],
        "properties": {"pr_url": {"type": "string"}},
    }
    assert config.output_schema is not None
    assert config.default_output_schema is None


def test_seed_001_blueprint_default_schema_and_its_options() -> None:
    config = AgentConfig.model_validate(
        {
            "name": "security-scanner",
            "description": "Scans code for security vulnerabilities",
            "system_prompt": "...",
            "default_output_schema": {
                "type": "object",
                "required": ["scan_complete", "vulnerabilities"],
            },
            "default_output_schema_options": {"max_retries": 3, "extract_json": True},
        }
    )
    assert config.output_schema is None
    assert config.default_output_schema == {
        "type": "object",
        "required": ["scan_complete", "vulnerabilities"],
    }
    assert config.options.max_retries == 3
    assert config.options.model_fields_set == {"max_retries", "extract_json"}


def test_unknown_top_level_key_suggests_the_nearest() -> None:
    config = {"name": "a", "sytem_prompt": "hi"}
    assert errors_of(config) == [
        ("sytem_prompt", "unknown key 'sytem_prompt' at $ (did you mean 'system_prompt'?)")
    ]


def test_unknown_nested_keys_name_their_path() -> None:
    config = {
        "id": "a",
        "output": {"shema": {}},
        "context": {"static": {"sytem": "x"}},
        "options": {"max_retry": 2},
    }
    assert errors_of(config) == [
        ("output.shema", "unknown key 'shema' at $.output (did you mean 'schema'?)"),
        (
            "context.static.sytem",
            "unknown key 'sytem' at $.context.static (did you mean 'system'?)",
        ),
        ("options.max_retry", "unknown key 'max_retry' at $.options (did you mean 'max_retries'?)"),
    ]


def test_unknown_key_in_a_small_section_lists_the_known_keys() -> None:
    assert errors_of({"id": "a", "limits": {"steps_max": 3}}) == [
        (
            "limits.steps_max",
            "unknown key 'steps_max' at $.limits (known keys: maxSteps, requestTimeoutSeconds, "
            "timeoutSeconds, tokenBudget)",
        )
    ]


def test_suggestion_ignores_case_and_underscores() -> None:
    assert suggest_key("max_steps", ["maxSteps", "tokenBudget"]) == "maxSteps"
    assert suggest_key("maxSteps", ["max_steps", "max_tokens"]) == "max_steps"
    assert suggest_key("zzz", ["max_steps"]) is None


def test_output_schema_given_twice_is_an_error() -> None:
    config = {"id": "a", "output_schema": {"type": "object"}, "output": {"schema": True}}
    assert errors_of(config) == [
        (
            "output.schema",
            "$.output_schema and $.output.schema both set output_schema; give only one",
        )
    ]


def test_system_prompt_given_twice_is_an_error() -> None:
    config = {"id": "a", "system_prompt": "x", "context": {"static": {"system": "y"}}}
    assert errors_of(config) == [
        (
            "context.static.system",
            "$.system_prompt and $.context.static.system both set system_prompt; give only one",
        )
    ]


def test_an_option_given_twice_is_an_error() -> None:
    config = {"id": "a", "options": {"max_retries": 1}, "output": {"maxRetries": 2}}
    assert errors_of(config) == [
        (
            "output.maxRetries",
            "$.options.max_retries and $.output.maxRetries both set options.max_retries; "
            "give only one",
        )
    ]


def test_fixed_and_default_output_schema_together_is_an_error() -> None:
    with pytest.raises(ValidationError, match="not both"):
        AgentConfig(id="a", output_schema={"type": "object"}, default_output_schema=True)


def test_an_agent_needs_an_id_or_a_name() -> None:
    assert errors_of({"description": "nameless"}) == [("", "an agent needs an 'id' or a 'name'")]
    assert AgentConfig(id="only-id").name == "only-id"


def test_unsupported_file_schema_is_an_error() -> None:
    assert errors_of({"schema": "kb.agent/2", "id": "a"}) == [
        ("schema", "unsupported config schema 'kb.agent/2'; agentshape reads 'kb.agent/1'")
    ]


def test_a_section_must_be_a_mapping() -> None:
    assert errors_of({"id": "a", "limits": 5}) == [
        ("limits", "$.limits must be a mapping of keys, not int")
    ]


def test_wrong_values_are_reported_at_the_key_as_written() -> None:
    config = {
        "id": "a",
        "limits": {"maxSteps": "5"},
        "output": {"mode": "tools"},
        "llm": {"tiers": ["big", 3]},
        "default_output_schema_options": {"max_retries": -1},
    }
    assert sorted(errors_of(config)) == [
        ("default_output_schema_options.max_retries", "Input should be greater than or equal to 0"),
        ("limits.maxSteps", "Input should be a valid integer"),
        ("llm.tiers.1", "Input should be a valid string"),
        ("output.mode", "Input should be 'tool', 'native', 'prompted' or 'text'"),
    ]


def test_values_are_not_coerced() -> None:
    assert errors_of({"id": "a", "max_steps": True}) == [
        ("max_steps", "Input should be a valid integer")
    ]


def test_schema_fields_take_objects_or_booleans_only() -> None:
    assert AgentConfig(id="a", output_schema=False).output_schema is False
    assert errors_of({"id": "a", "parameters_schema": "object"}) == [
        ("parameters_schema", "a JSON Schema is an object or a boolean, not str")
    ]


def test_every_problem_is_reported_at_once() -> None:
    config = {"id": "a", "nmae": "x", "max_steps": 0, "output": {"mode": 1, "schema": 7}}
    assert len(errors_of(config)) == 4


def test_null_values_count_as_not_given() -> None:
    config = AgentConfig.model_validate(
        {"id": "a", "system_prompt": None, "limits": None, "output": {"schema": None}}
    )
    assert config.system_prompt == ""
    assert config.output_schema is None


def test_dump_loads_back_and_keeps_the_option_layer() -> None:
    config = AgentConfig.model_validate(FILE_FORM | {"output": {"maxRetries": 4}})
    dumped = config.model_dump()

    assert dumped["options"] == {"max_retries": 4, "token_budget": 50_000, "timeout_s": 120.0}
    again = AgentConfig.model_validate(dumped)
    assert again == config
    assert again.options.model_fields_set == {"max_retries", "token_budget", "timeout_s"}
    assert AgentConfig.model_validate_json(config.model_dump_json()) == config


def test_options_instance_keeps_what_it_set() -> None:
    config = AgentConfig(id="a", options=RunOptions(max_retries=3))
    assert config.options.max_retries == 3
    assert config.options.model_fields_set == {"max_retries"}


def test_config_is_immutable() -> None:
    config = AgentConfig(id="a")
    with pytest.raises(ValidationError, match="frozen"):
        config.id = "b"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {"type": "array", "items": {"type": "string"}},
            [
                ("output.schema", "must have properties: the fields the output has"),
                (
                    "output.schema.type",
                    "must be \"object\", not 'array'; use the output_schema form for another "
                    "root (it is wrapped for tool calls)",
                ),
            ],
        ),
        (
            {"type": "object"},
            [("output.schema", "must have properties: the fields the output has")],
        ),
        (
            {"properties": {"a": {"type": "string"}}},
            [
                (
                    "output.schema",
                    'must be "object" (no type is given); use the output_schema form for another '
                    "root (it is wrapped for tool calls)",
                )
            ],
        ),
        (True, [("output.schema", 'must be an object schema with type "object" and properties')]),
    ],
)
def test_seed_004s_load_time_rules_are_errors_for_the_file_forms_output_schema(
    schema: object, expected: list[tuple[str, str]]
) -> None:
    file_form = {"schema": "kb.agent/1", "id": "a", "output": {"schema": schema}}
    assert sorted(errors_of(file_form)) == expected
    blueprint = AgentConfig.model_validate({"id": "a", "output_schema": schema})
    assert blueprint.output_schema == schema  # the output_schema form wraps a non-object root


def test_a_webhook_must_be_an_http_url_with_a_host() -> None:
    hooked = AgentConfig.model_validate({"id": "a", "webhook": "https://hooks.example.com/x"})
    assert hooked.webhook == "https://hooks.example.com/x"
    assert [loc for loc, _ in errors_of({"id": "a", "webhook": "ftp://hooks.example.com"})] == [
        "webhook"
    ]
