from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agent_contracts import (
    RUN_ERROR_TYPES,
    Attempt,
    ConfigError,
    Message,
    RunError,
    RunOptions,
    RunRequest,
    RunResult,
    Usage,
    ValidationIssue,
    merge_options,
    options_from_env,
)

SEVERITY = ValidationIssue(
    path="$.severity", message="'critical' is not one of ['low', 'medium', 'high']"
)
COUNT = ValidationIssue(path="$.count", message="-5 is less than minimum 0")


def validation_failure() -> RunError:
    return RunError(
        type="output_schema_validation_failed",
        message="Output did not match schema after 1 retry",
        validation_errors=[SEVERITY, COUNT],
        last_output={"severity": "critical", "count": -5},
    )


def test_default_options_retry_once_and_extract_json() -> None:
    options = RunOptions()
    assert options.max_retries == 1
    assert options.extract_json is True
    assert options.strict_json_only is False
    assert options.output_mode is None
    assert options.token_budget is None
    assert options.timeout_s is None
    assert options.lenient_formats is False


def test_options_reject_negative_retries_and_unknown_modes() -> None:
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        RunOptions(max_retries=-1)
    with pytest.raises(ValidationError, match="'tool', 'native', 'prompted' or 'text'"):
        RunOptions.model_validate({"output_mode": "json"})
    with pytest.raises(ValidationError, match="valid integer"):
        RunOptions.model_validate({"max_retries": "2"})


def test_run_overrides_agent_overrides_environment() -> None:
    env = RunOptions(max_retries=5, extract_json=False)
    agent = RunOptions(max_retries=3, token_budget=1000)
    run = RunOptions(strict_json_only=True)

    merged = merge_options(env, agent, run)

    assert merged.max_retries == 3
    assert merged.extract_json is False
    assert merged.strict_json_only is True
    assert merged.token_budget == 1000
    assert merged.timeout_s is None


def test_unset_and_none_fields_fall_through() -> None:
    agent = RunOptions(token_budget=500, output_mode="prompted")
    run = RunOptions(token_budget=None)

    merged = merge_options(agent, run, None)

    assert merged.token_budget == 500
    assert merged.output_mode == "prompted"
    assert merged.max_retries == 1


def test_merge_of_nothing_gives_the_defaults() -> None:
    assert merge_options() == RunOptions()


def test_a_merged_result_overrides_everything_as_a_layer() -> None:
    resolved = merge_options(RunOptions(max_retries=2))
    assert merge_options(RunOptions(max_retries=9, extract_json=False), resolved) == resolved


def test_the_same_layers_merge_once_and_new_layers_merge_anew() -> None:
    agent = RunOptions(max_retries=2)
    first = merge_options(None, agent, None)

    assert merge_options(None, agent, None) is first
    assert merge_options(None, agent, RunOptions(max_retries=5)).max_retries == 5
    assert merge_options(None, RunOptions(max_retries=3), None).max_retries == 3
    assert merge_options(agent, None, None) == first  # a different key, the same values


def test_requests_that_give_no_options_share_one_empty_layer() -> None:
    first, second = RunRequest(task="a"), RunRequest.model_validate({"task": "b"})
    assert first.options is second.options
    assert first.options.model_fields_set == set()
    agent = RunOptions(max_retries=2)
    assert merge_options(None, agent, first.options) is merge_options(None, agent, second.options)
    assert RunRequest(task="c", options=RunOptions(max_retries=4)).options.max_retries == 4


def test_options_from_env_reads_only_what_is_set() -> None:
    env = {"SCHEMA_ENFORCEMENT_MAX_RETRIES": "4", "SCHEMA_ENFORCEMENT_EXTRACT_JSON": "false"}
    layer = options_from_env(env)
    assert (layer.max_retries, layer.extract_json) == (4, False)

    only_retries = options_from_env({"SCHEMA_ENFORCEMENT_MAX_RETRIES": "0"})
    agent = RunOptions(extract_json=False)
    assert merge_options(only_retries, agent) == RunOptions(max_retries=0, extract_json=False)
    assert options_from_env({"SCHEMA_ENFORCEMENT_EXTRACT_JSON": ""}).model_fields_set == set()


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("SCHEMA_ENFORCEMENT_MAX_RETRIES", "-1", "whole number >= 0, got '-1'"),
        ("SCHEMA_ENFORCEMENT_MAX_RETRIES", "two", "whole number >= 0, got 'two'"),
        ("SCHEMA_ENFORCEMENT_EXTRACT_JSON", "maybe", "true or false"),
    ],
)
def test_options_from_env_rejects_bad_values(name: str, value: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=name) as info:
        options_from_env({name: value})
    assert needle in str(info.value)


def test_request_takes_an_inline_schema_or_a_name_not_both() -> None:
    assert RunRequest(task="t", schema_name="report").schema_name == "report"
    with pytest.raises(ValidationError, match="not both"):
        RunRequest(task="t", output_schema={"type": "object"}, schema_name="report")


def test_request_round_trips_and_keeps_its_option_layer() -> None:
    request = RunRequest(
        task="Analyse src/",
        parameters={"repo_path": "/src"},
        output_schema={"type": "object"},
        options=RunOptions(max_retries=0),
        messages=[Message.user("earlier"), Message(role="assistant", content="answer")],
    )
    again = RunRequest.model_validate_json(request.model_dump_json())

    assert again == request
    assert again.options.model_fields_set == {"max_retries"}
    assert merge_options(RunOptions(extract_json=False), again.options) == RunOptions(
        max_retries=0, extract_json=False
    )


def test_completed_run_with_text() -> None:
    result = RunResult(status="completed", result_text="3 issues found")
    assert result.ok
    assert result.as_text() == "3 issues found"
    assert result.schema_validation is None


def test_completed_run_with_data_reports_validation_metadata() -> None:
    result = RunResult(
        status="completed",
        result_data={"files_analyzed": 42, "issues": []},
        retries=1,
        schema_hash="abc",
        schema_name="code-analysis-result",
        schema_source="named",
    )
    assert json.loads(result.as_text()) == {"files_analyzed": 42, "issues": []}
    assert result.schema_validation is not None
    assert result.schema_validation.model_dump() == {
        "valid": True,
        "schema_name": "code-analysis-result",
        "retry_count": 1,
    }


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"status": "completed", "result_text": "x", "result_data": {"a": 1}},
            "exactly one of result_text and result_data (got both)",
        ),
        ({"status": "completed"}, "exactly one of result_text and result_data (got neither)"),
        (
            {"status": "completed", "result_text": "x", "error": validation_failure()},
            "a completed run has no error",
        ),
        ({"status": "failed"}, "a failed run needs an error"),
        (
            {"status": "failed", "result_data": {"a": 1}, "error": validation_failure()},
            "its last output belongs in error.last_output",
        ),
    ],
)
def test_result_xor_and_error_rules(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match="1 validation error") as info:
        RunResult.model_validate(fields)
    assert message in str(info.value)


def test_failed_run_keeps_the_seed_failure_shape() -> None:
    result = RunResult(status="failed", error=validation_failure(), run_id="run_abc123")

    assert not result.ok
    assert result.as_text() == "(No result available)"
    assert result.error is not None
    assert result.error.type == "output_schema_validation_failed"
    assert [str(issue) for issue in result.error.validation_errors] == [
        "$.severity: 'critical' is not one of ['low', 'medium', 'high']",
        "$.count: -5 is less than minimum 0",
    ]
    assert result.error.last_output == {"severity": "critical", "count": -5}


def test_result_round_trips_through_json() -> None:
    attempt = Attempt(
        number=1,
        mode="prompted",
        raw_output='Here: ```json\n{"a": 1}\n```',
        parsed={"a": 1},
        usage=Usage(input_tokens=10, output_tokens=5, requests=1),
        latency_ms=12.5,
        recovered_by_extraction=True,
    )
    result = RunResult(
        status="completed",
        result_data={"a": 1},
        attempts=[attempt],
        usage=attempt.usage,
        duration_ms=20.0,
        transcript=[Message.system("s"), Message.user("u")],
        agent_id="analyzer",
        model="test",
        model_tier=1,
        schema_hash="h",
        schema_source="agent",
        recovered_by_extraction=True,
    )
    assert RunResult.model_validate_json(result.model_dump_json()) == result
    assert attempt.ok
    assert not attempt.model_copy(update={"errors": [SEVERITY]}).ok


def test_error_types_cover_the_design_and_reject_others() -> None:
    for kind in (
        "output_schema_validation_failed",
        "output_tool_not_called",
        "input_validation_failed",
        "no_json_found",
        "token_budget_exceeded",
        "run_timeout",
        "provider_rate_limited",
        "provider_error",
        "max_steps_exceeded",
        "tool_error",
        "config_error",
    ):
        assert kind in RUN_ERROR_TYPES
    with pytest.raises(ValidationError, match="type"):
        RunError.model_validate({"type": "schema_validation_failed", "message": "m"})
