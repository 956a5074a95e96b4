from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from agent_contracts import (
    EXECUTION_AGENT_OUTPUTS,
    CodeQualityOutput,
    DoDOutput,
    ImplementerOutput,
    ManagerOutput,
    QAOutput,
)
from agent_contracts import _outputs as outputs

# The example outputs of the design's contract document, verbatim.
IMPLEMENTER_EXAMPLES = [
    """{
  "status": "success",
  "summary": "Implemented reverse_string and capitalize_words functions with type hints and docstrings",
  "files_changed": ["src/utils.py"],
  "files_added": ["tests/test_utils.py"],
  "next_steps": "Verify tests pass and type hints are correct"
}""",  # noqa: E501
    """{
  "status": "partial",
  "summary": "Implemented reverse_string but could not implement capitalize_words due to unclear requirements",
  "files_changed": ["src/utils.py"],
  "files_added": [],
  "next_steps": "Clarify capitalization rules for hyphenated words before continuing"
}""",  # noqa: E501
    """{
  "status": "blocked",
  "summary": "Cannot proceed - missing dependency on database models",
  "files_changed": [],
  "files_added": [],
  "next_steps": "Complete Phase 1 (database setup) before implementing this feature"
}""",
]

QA_EXAMPLES = [
    """{
  "dod_achieved": true,
  "checks": [
    {
      "criterion": "reverse_string function exists with type hints",
      "passed": true,
      "details": "Function found in src/utils.py with proper signature"
    },
    {
      "criterion": "All tests pass",
      "passed": true,
      "details": "pytest: 10 passed in 0.23s"
    }
  ],
  "test_results": {
    "total": 10,
    "passed": 10,
    "failed": 0
  }
}""",
    """{
  "dod_achieved": false,
  "checks": [
    {
      "criterion": "All tests pass",
      "passed": false,
      "details": "2 tests failed: test_reverse_empty_string, test_capitalize_special_chars"
    }
  ],
  "test_results": {
    "total": 10,
    "passed": 8,
    "failed": 2
  },
  "fix_info": "Fix failing tests:\\n1. reverse_string('') raises TypeError - should return ''\\n2. capitalize_words('hello-world') returns 'Hello-world' - should be 'Hello-World'"
}""",  # noqa: E501
    """{
  "dod_achieved": false,
  "checks": [
    {
      "criterion": "Tests executable",
      "passed": false,
      "details": "pytest command failed with exit code 5 (no tests collected)"
    }
  ],
  "test_results": {
    "total": 0,
    "passed": 0,
    "failed": 0
  },
  "fix_info": "No test files found. Expected test file at tests/test_utils.py does not exist."
}""",
]

CODE_QUALITY_EXAMPLE = """{
  "quality_passed": false,
  "issues": [
    {
      "file": "src/utils.py",
      "line": 15,
      "code": "ANN001",
      "message": "Missing type annotation for function parameter",
      "severity": "error"
    }
  ],
  "files_analyzed": ["src/utils.py", "tests/test_utils.py"],
  "blocking_issues_count": 1,
  "ignored_issues_count": 0,
  "fix_info": "Add type annotation to 'capitalize_words' parameter 's'"
}"""

MANAGER_EXAMPLE = """{
  "updated": true,
  "artifacts_modified": [
    "user-stories/US-001.md",
    "README.md"
  ],
  "summary": "Marked US-001 acceptance criteria as complete"
}"""

DOD_EXAMPLES = [
    """{
  "task_complete": true,
  "confidence": "high",
  "summary": {
    "user_stories_total": 7,
    "user_stories_done": 7,
    "phases_total": 4,
    "phases_done": 4
  },
  "remaining_items": [],
  "recommendation": "All user stories complete. All tests passing. Code quality passed. Ready for production deployment."
}""",  # noqa: E501
    """{
  "task_complete": false,
  "confidence": "high",
  "summary": {
    "user_stories_total": 7,
    "user_stories_done": 5,
    "phases_total": 4,
    "phases_done": 3
  },
  "remaining_items": [
    "US-006: Graceful degradation - Status: In Progress",
    "US-007: Error messages - Status: Pending"
  ],
  "recommendation": "Continue with US-006. Phase 4 remaining."
}""",
]

EXAMPLES: list[tuple[type[BaseModel], str]] = [
    *((ImplementerOutput, text) for text in IMPLEMENTER_EXAMPLES),
    *((QAOutput, text) for text in QA_EXAMPLES),
    (CodeQualityOutput, CODE_QUALITY_EXAMPLE),
    (ManagerOutput, MANAGER_EXAMPLE),
    *((DoDOutput, text) for text in DOD_EXAMPLES),
]


@pytest.mark.parametrize(("contract", "text"), EXAMPLES)
def test_every_design_example_parses(contract: type[BaseModel], text: str) -> None:
    parsed = contract.model_validate_json(text)
    assert parsed.model_dump(exclude_unset=True) == json.loads(text)
    assert contract.model_validate(json.loads(text)) == parsed


def test_typed_access_to_a_parsed_output() -> None:
    qa = QAOutput.model_validate_json(QA_EXAMPLES[1])
    assert qa.test_results is not None
    assert (qa.test_results.total, qa.test_results.failed) == (10, 2)
    assert [check.passed for check in qa.checks] == [False]
    dod = DoDOutput.model_validate_json(DOD_EXAMPLES[1])
    assert dod.summary.user_stories_done == 5


def test_implementer_lists_default_to_empty() -> None:
    output = ImplementerOutput.model_validate({"status": "success", "summary": "done"})
    assert (output.files_changed, output.files_added, output.next_steps) == ([], [], None)


def broken(text: str, **changes: object) -> dict[str, object]:
    data: dict[str, object] = json.loads(text)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def error_of(contract: type[BaseModel], data: dict[str, object]) -> tuple[tuple[object, ...], str]:
    with pytest.raises(ValidationError) as info:
        contract.model_validate(data)
    errors = info.value.errors()
    assert len(errors) == 1, errors
    return tuple(errors[0]["loc"]), errors[0]["msg"]


def test_qa_needs_fix_info_when_dod_not_achieved() -> None:
    assert error_of(QAOutput, broken(QA_EXAMPLES[1], fix_info=None)) == (
        ("fix_info",),
        "fix_info is required when dod_achieved is false: say what needs fixing",
    )
    assert error_of(QAOutput, broken(QA_EXAMPLES[1], fix_info="   "))[0] == ("fix_info",)


def test_qa_fix_info_is_optional_when_dod_achieved() -> None:
    assert QAOutput.model_validate_json(QA_EXAMPLES[0]).fix_info is None


def test_code_quality_needs_fix_info_when_not_passed() -> None:
    assert error_of(CodeQualityOutput, broken(CODE_QUALITY_EXAMPLE, fix_info=None)) == (
        ("fix_info",),
        "fix_info is required when quality_passed is false: say what needs fixing",
    )


def test_code_quality_has_no_issues_when_passed() -> None:
    data = broken(CODE_QUALITY_EXAMPLE, quality_passed=True)
    assert error_of(CodeQualityOutput, data) == (
        ("issues",),
        "issues must be empty when quality_passed is true (got 1)",
    )
    passed = broken(CODE_QUALITY_EXAMPLE, quality_passed=True, issues=[], fix_info=None)
    assert CodeQualityOutput.model_validate(passed).issues == []


def test_dod_has_no_remaining_items_when_complete() -> None:
    data = broken(DOD_EXAMPLES[1], task_complete=True)
    assert error_of(DoDOutput, data) == (
        ("remaining_items",),
        "remaining_items must be empty when task_complete is true (got 2)",
    )


@pytest.mark.parametrize(
    ("contract", "data", "loc"),
    [
        (
            QAOutput,
            broken(QA_EXAMPLES[0], test_results={"total": "10", "passed": 10, "failed": 0}),
            ("test_results", "total"),
        ),
        (QAOutput, broken(QA_EXAMPLES[0], dod_achieved="true"), ("dod_achieved",)),
        (
            DoDOutput,
            broken(
                DOD_EXAMPLES[0],
                summary={
                    "user_stories_total": True,
                    "user_stories_done": 7,
                    "phases_total": 4,
                    "phases_done": 4,
                },
            ),
            ("summary", "user_stories_total"),
        ),
        (
            CodeQualityOutput,
            broken(CODE_QUALITY_EXAMPLE, blocking_issues_count=1.5),
            ("blocking_issues_count",),
        ),
        (ManagerOutput, broken(MANAGER_EXAMPLE, updated=1), ("updated",)),
    ],
)
def test_values_are_not_coerced(
    contract: type[BaseModel], data: dict[str, object], loc: tuple[object, ...]
) -> None:
    assert error_of(contract, data)[0] == loc


@pytest.mark.parametrize(
    ("contract", "data", "loc", "needle"),
    [
        (
            ImplementerOutput,
            broken(IMPLEMENTER_EXAMPLES[0], status="done"),
            ("status",),
            "'success', 'partial' or 'blocked'",
        ),
        (
            DoDOutput,
            broken(DOD_EXAMPLES[0], confidence="certain"),
            ("confidence",),
            "'high', 'medium' or 'low'",
        ),
        (
            CodeQualityOutput,
            broken(
                CODE_QUALITY_EXAMPLE,
                issues=[{"file": "a.py", "code": "E1", "message": "m", "severity": "info"}],
            ),
            ("issues", 0, "severity"),
            "'error' or 'warning'",
        ),
        (ManagerOutput, broken(MANAGER_EXAMPLE, summary=None), ("summary",), "Field required"),
        (
            QAOutput,
            broken(QA_EXAMPLES[0], fix_infos="typo"),
            ("fix_infos",),
            "Extra inputs are not permitted",
        ),
    ],
)
def test_enums_required_fields_and_unknown_keys(
    contract: type[BaseModel], data: dict[str, object], loc: tuple[object, ...], needle: str
) -> None:
    found_loc, message = error_of(contract, data)
    assert found_loc == loc
    assert needle in message


def test_each_execution_agent_has_its_contract() -> None:
    expected = {
        "execution-implementer": ImplementerOutput,
        "execution-qa": QAOutput,
        "execution-code-quality": CodeQualityOutput,
        "execution-manager": ManagerOutput,
        "execution-dod": DoDOutput,
    }
    assert dict(EXECUTION_AGENT_OUTPUTS) == expected
    assert issubclass(ImplementerOutput, outputs.BaseAgentOutput)


def test_contract_json_schema_is_closed_and_requires_the_seed_fields() -> None:
    schema = QAOutput.model_json_schema()
    assert schema["required"] == ["dod_achieved", "checks"]
    assert schema["additionalProperties"] is False
    assert outputs.TestResults.model_json_schema()["required"] == ["total", "passed", "failed"]
