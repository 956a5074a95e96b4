from agent_contracts import (
    ConfigFileError,
    InvalidSchemaError,
    OutputValidationError,
    ProviderError,
    ValidationIssue,
)


def test_validation_issue_renders_path_and_message() -> None:
    issue = ValidationIssue(path="$.issues[0].severity", message="'critical' is not one of ['low']")
    assert str(issue) == "$.issues[0].severity: 'critical' is not one of ['low']"


def test_config_file_error_names_file_line_and_field() -> None:
    err = ConfigFileError("unknown key 'nmae'", source="agents/a/agent.yml", line=3, field="nmae")
    assert str(err) == "agents/a/agent.yml:3: nmae: unknown key 'nmae'"


def test_invalid_schema_error_names_path() -> None:
    err = InvalidSchemaError("'strin' is not a valid type", path="$.properties.a.type")
    assert str(err) == "invalid schema at $.properties.a.type: 'strin' is not a valid type"


def test_output_validation_error_keeps_errors_and_last_output() -> None:
    issue = ValidationIssue(path="$", message="'summary' is a required property")
    err = OutputValidationError("output failed", errors=[issue], last_output={"a": 1})
    assert err.errors == [issue]
    assert err.last_output == {"a": 1}
    assert str(err) == "output failed\n  - $: 'summary' is a required property"


def test_provider_error_names_provider_and_status() -> None:
    err = ProviderError("rate limited", provider="openai", kind="provider_rate_limited", status=429)
    assert str(err) == "openai 429: rate limited"
    assert err.kind == "provider_rate_limited"
