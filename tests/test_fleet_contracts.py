"""The fleet's YAML output schemas say the same as the contracts they were written from.

The five execution agents of seed 003 have a Pydantic twin in ``agent_contracts._outputs``: every
example of the seed, and every way of breaking one (a missing field, a wrong type, a wrong enum
value, an extra key, a broken conditional rule), must get the same verdict from the agent's YAML
schema (as ``validate_output`` and as the ``model_from_schema`` model) and from the Pydantic
class. The four agents of seed 004 have no Pydantic twin; their closed schemas are checked
against examples and the mistakes they exist to catch.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel, JsonValue, ValidationError

from agent_contracts import (
    EXECUTION_AGENT_OUTPUTS,
    CodeQualityOutput,
    DoDOutput,
    QACheck,
    QAOutput,
    QualityIssue,
    TaskSummary,
    TestResults,
    merge_options,
)
from agent_core import load_agent_config, load_fleet, model_from_schema, validate_output

REPO = Path(__file__).resolve().parents[1]
AGENTS = REPO / "agents"
SEEDS = REPO.parent / "shared" / "seeds"
Loc = tuple[str | int, ...]

# In-test copies of seed 003's examples (and a few more valid outputs), so the test runs anywhere.
VALID: dict[str, list[JsonValue]] = {
    "execution-implementer": [
        {
            "status": "success",
            "summary": "Implemented reverse_string and capitalize_words functions with type "
            "hints and docstrings",
            "files_changed": ["src/utils.py"],
            "files_added": ["tests/test_utils.py"],
            "next_steps": "Verify tests pass and type hints are correct",
        },
        {
            "status": "blocked",
            "summary": "Cannot proceed - missing dependency on database models",
            "files_changed": [],
            "files_added": [],
            "next_steps": None,
        },
        {"status": "partial", "summary": ""},
    ],
    "execution-qa": [
        {
            "dod_achieved": True,
            "checks": [
                {
                    "criterion": "reverse_string function exists with type hints",
                    "passed": True,
                    "details": "Function found in src/utils.py with proper signature",
                },
                {"criterion": "All tests pass", "passed": True, "details": None},
            ],
            "test_results": {"total": 10, "passed": 10, "failed": 0},
        },
        {
            "dod_achieved": False,
            "checks": [
                {
                    "criterion": "All tests pass",
                    "passed": False,
                    "details": "2 tests failed: test_reverse_empty_string",
                }
            ],
            "test_results": {"total": 10, "passed": 8, "failed": 2},
            "fix_info": "Fix failing tests:\n1. reverse_string('') raises TypeError",
        },
        {
            "dod_achieved": False,
            "checks": [{"criterion": "Tests executable", "passed": False}],
            "test_results": None,
            "fix_info": "No test files found.",
        },
    ],
    "execution-code-quality": [
        {
            "quality_passed": False,
            "issues": [
                {
                    "file": "src/utils.py",
                    "line": 15,
                    "code": "ANN001",
                    "message": "Missing type annotation for function parameter",
                    "severity": "error",
                },
                {
                    "file": "src/utils.py",
                    "line": None,
                    "code": "E501",
                    "message": "Line too long",
                    "severity": "warning",
                },
            ],
            "files_analyzed": ["src/utils.py", "tests/test_utils.py"],
            "blocking_issues_count": 1,
            "ignored_issues_count": 0,
            "fix_info": "Add type annotation to 'capitalize_words' parameter 's'",
        },
        {
            "quality_passed": True,
            "issues": [],
            "files_analyzed": ["src/utils.py"],
            "blocking_issues_count": 0,
            "ignored_issues_count": 3,
            "fix_info": None,
        },
    ],
    "execution-manager": [
        {
            "updated": True,
            "artifacts_modified": ["user-stories/US-001.md", "README.md"],
            "summary": "Marked US-001 acceptance criteria as complete",
        }
    ],
    "execution-dod": [
        {
            "task_complete": True,
            "confidence": "high",
            "summary": {
                "user_stories_total": 7,
                "user_stories_done": 7,
                "phases_total": 4,
                "phases_done": 4,
            },
            "remaining_items": [],
            "recommendation": "All user stories complete. Ready for production deployment.",
        },
        {
            "task_complete": False,
            "confidence": "low",
            "summary": {
                "user_stories_total": 7,
                "user_stories_done": 5,
                "phases_total": 4,
                "phases_done": 3,
            },
            "remaining_items": [
                "US-006: Graceful degradation - Status: In Progress",
                "US-007: Error messages - Status: Pending",
            ],
            "recommendation": "Continue with US-006. Phase 4 remaining.",
        },
    ],
}

# Values of every JSON type, put in place of every part of a valid output.
REPLACEMENTS: tuple[JsonValue, ...] = ("1", "", "SUCCESS", 1, -3, 1.5, True, False, None, [], {})
# Every character Python's str.strip() removes, and a few that look blank but are not.
BLANKS = [chr(code) for code in range(0x110000) if chr(code).isspace()]
NOT_BLANK = ["\ufeff", "\u200b", "\u180e", "\u2060", "x"]


@functools.cache
def output_schema(agent_id: str) -> dict[str, JsonValue]:
    config = load_agent_config(AGENTS / agent_id / "agent.yml")
    assert isinstance(config.output_schema, dict), agent_id
    return config.output_schema


def schema_accepts(agent_id: str, value: JsonValue) -> bool:
    """The YAML schema's verdict, required to be the same through both of its routes."""
    schema = output_schema(agent_id)
    by_engine = validate_output(value, schema) == []
    model = model_from_schema(schema, name="Output")
    try:
        model.model_validate(value)
        by_model = True
    except ValidationError:
        by_model = False
    assert by_engine == by_model, (agent_id, value)
    return by_engine


def pydantic_accepts(agent_id: str, value: JsonValue) -> bool:
    try:
        EXECUTION_AGENT_OUTPUTS[agent_id].model_validate(value)
    except ValidationError:
        return False
    return True


def disagreements(agent_id: str, values: list[JsonValue]) -> list[str]:
    found = []
    for value in values:
        schema, pydantic = schema_accepts(agent_id, value), pydantic_accepts(agent_id, value)
        if schema != pydantic:
            found.append(f"schema {schema}, pydantic {pydantic}: {json.dumps(value)[:300]}")
    return found


def locations(
    value: JsonValue, here: tuple[str | int, ...] = ()
) -> Iterator[tuple[str | int, ...]]:
    yield here
    if isinstance(value, dict):
        for key, item in value.items():
            yield from locations(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from locations(item, (*here, index))


def at(value: JsonValue, loc: Loc) -> JsonValue:
    for part in loc:
        if isinstance(value, dict):
            value = value[str(part)]
        else:
            assert isinstance(value, list)
            value = value[int(part)]
    return value


def changed(value: JsonValue, loc: Loc, new: JsonValue = None, drop: bool = False) -> JsonValue:
    """Return a copy of ``value`` with the part at ``loc`` replaced by ``new`` (or dropped)."""
    result = copy.deepcopy(value)
    holder, key = at(result, loc[:-1]), loc[-1]
    if isinstance(holder, dict):
        if drop:
            del holder[str(key)]
        else:
            holder[str(key)] = new
    else:
        assert isinstance(holder, list)
        index = int(key)
        if drop:
            del holder[index]
        else:
            holder[index] = new
    return result


def mutations(value: JsonValue) -> Iterator[JsonValue]:
    """Every output one step away from ``value``: a part dropped, replaced, or added to."""
    for loc in locations(value):
        here = at(value, loc)
        if loc:
            yield changed(value, loc, drop=True)
            news = [*REPLACEMENTS, not here] if isinstance(here, bool) else list(REPLACEMENTS)
            for new in news:
                yield changed(value, loc, new)
        if isinstance(here, dict):
            yield changed(value, (*loc, "unexpected"), "x")


def seed_blocks() -> list[tuple[str, str, JsonValue]]:
    """Return ``(agent id, heading, value)`` for each JSON block of the seed 003 file."""
    files = sorted(SEEDS.glob("003_*.txt"))
    if not files:
        pytest.skip(f"seed 003 is not present under {SEEDS}")
    agent, heading, blocks = "", "", []
    lines = iter(files[0].read_text(encoding="utf-8").splitlines())
    for line in lines:
        named = re.match(r"\*\*Agent:\*\* `([\w-]+)`", line)
        if named:
            agent = named.group(1)
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
            if line.startswith("## "):
                agent = ""
        elif line.strip() == "```json" and agent:
            body = []
            for inner in lines:
                if inner.strip() == "```":
                    break
                body.append(inner)
            try:
                value = json.loads("\n".join(body))
            except json.JSONDecodeError:
                continue  # a template such as "dod_achieved": true|false
            blocks.append((agent, heading, value))
    return blocks


def test_every_execution_agent_has_its_contract_in_the_fleet() -> None:
    ids = sorted(path.parent.name for path in AGENTS.glob("*/agent.yml"))
    assert set(EXECUTION_AGENT_OUTPUTS) <= set(ids)
    for agent_id in EXECUTION_AGENT_OUTPUTS:
        assert load_agent_config(AGENTS / agent_id / "agent.yml").id == agent_id


@pytest.mark.parametrize(
    ("agent_id", "where", "model"),
    [
        *((agent_id, (), model) for agent_id, model in EXECUTION_AGENT_OUTPUTS.items()),
        ("execution-qa", ("properties", "checks", "items"), QACheck),
        ("execution-qa", ("properties", "test_results"), TestResults),
        ("execution-code-quality", ("properties", "issues", "items"), QualityIssue),
        ("execution-dod", ("properties", "summary"), TaskSummary),
    ],
)
def test_schema_fields_and_required_match_the_pydantic_model(
    agent_id: str, where: tuple[str, ...], model: type[BaseModel]
) -> None:
    node: JsonValue = output_schema(agent_id)
    for key in where:
        assert isinstance(node, dict)
        node = node[key]
    assert isinstance(node, dict)
    properties = node["properties"]
    assert isinstance(properties, dict)
    assert sorted(properties) == sorted(model.model_fields)
    required = node.get("required", [])
    assert isinstance(required, list)
    assert sorted(str(name) for name in required) == sorted(
        name for name, field in model.model_fields.items() if field.is_required()
    )
    assert node["additionalProperties"] is False


@pytest.mark.parametrize("agent_id", sorted(VALID))
def test_in_test_examples_are_valid_under_both(agent_id: str) -> None:
    for value in VALID[agent_id]:
        assert schema_accepts(agent_id, value), value
        assert pydantic_accepts(agent_id, value), value


@pytest.mark.parametrize("agent_id", sorted(VALID))
def test_every_mutation_gets_the_same_verdict(agent_id: str) -> None:
    cases = [mutation for value in VALID[agent_id] for mutation in mutations(value)]
    assert len(cases) > 30
    assert disagreements(agent_id, cases) == []
    # The mutations include outputs each side refuses, so agreement is not vacuous.
    assert not all(pydantic_accepts(agent_id, case) for case in cases)


def test_seed_examples_get_the_same_verdict_and_the_examples_are_valid() -> None:
    blocks = seed_blocks()
    examples = [block for block in blocks if block[1].startswith("Example")]
    assert {agent for agent, _, _ in blocks} == set(EXECUTION_AGENT_OUTPUTS)
    assert len(examples) >= 9
    for agent_id, heading, value in examples:
        assert schema_accepts(agent_id, value), (agent_id, heading)
        assert pydantic_accepts(agent_id, value), (agent_id, heading)
    for agent_id, _, value in blocks:
        assert disagreements(agent_id, [value, *mutations(value)]) == []


def qa(dod_achieved: bool, **extra: JsonValue) -> JsonValue:
    return {"dod_achieved": dod_achieved, "checks": [], **extra}


def quality(passed: bool, issues: int = 0, **extra: JsonValue) -> JsonValue:
    issue: JsonValue = {"file": "a.py", "code": "F401", "message": "unused", "severity": "warning"}
    return {
        "quality_passed": passed,
        "issues": [issue] * issues,
        "files_analyzed": ["a.py"],
        "blocking_issues_count": 0,
        "ignored_issues_count": 0,
        **extra,
    }


def dod(complete: bool, **extra: JsonValue) -> JsonValue:
    counts: JsonValue = {
        "user_stories_total": 1,
        "user_stories_done": 1,
        "phases_total": 1,
        "phases_done": 1,
    }
    return {
        "task_complete": complete,
        "confidence": "medium",
        "summary": counts,
        "recommendation": "Ship it.",
        **extra,
    }


RULES: list[tuple[str, JsonValue, bool]] = [
    # QA: fix_info is required, and not blank, when dod_achieved is false.
    ("execution-qa", qa(False), False),
    ("execution-qa", qa(False, fix_info=None), False),
    ("execution-qa", qa(False, fix_info=""), False),
    ("execution-qa", qa(False, fix_info=" \n\t"), False),
    ("execution-qa", qa(False, fix_info="  Re-run pytest  "), True),
    ("execution-qa", qa(True), True),
    ("execution-qa", qa(True, fix_info=""), True),
    ("execution-qa", qa(True, fix_info=None), True),
    # Code quality: fix_info when the checks failed, no issues when they passed.
    ("execution-code-quality", quality(False), False),
    ("execution-code-quality", quality(False, fix_info="\u3000"), False),
    ("execution-code-quality", quality(False, 2, fix_info="Remove the unused imports"), True),
    ("execution-code-quality", quality(True), True),
    ("execution-code-quality", quality(True, 1), False),
    ("execution-code-quality", quality(True, 1, fix_info="Remove it"), False),
    # DoD: nothing remains when the task is complete.
    ("execution-dod", dod(True), True),
    ("execution-dod", dod(True, remaining_items=[]), True),
    ("execution-dod", dod(True, remaining_items=["US-002"]), False),
    ("execution-dod", dod(False, remaining_items=["US-002"]), True),
    ("execution-dod", dod(False), True),
    # Strict types: no coercion, no extra keys.
    ("execution-qa", qa(True, test_results={"total": "1", "passed": 1, "failed": 0}), False),
    ("execution-qa", qa(True, test_results={"total": 1, "passed": 1, "failed": 0, "x": 0}), False),
    ("execution-dod", dod(False, confidence="certain"), False),
    ("execution-implementer", {"status": "done", "summary": "x"}, False),
    ("execution-manager", {"updated": "true", "artifacts_modified": [], "summary": "x"}, False),
]


@pytest.mark.parametrize(("agent_id", "value", "valid"), RULES)
def test_conditional_and_strictness_rules(agent_id: str, value: JsonValue, valid: bool) -> None:
    assert schema_accepts(agent_id, value) is valid
    assert pydantic_accepts(agent_id, value) is valid


@pytest.mark.parametrize("blank", [*BLANKS, *NOT_BLANK], ids=lambda text: f"U+{ord(text):04X}")
def test_blank_fix_info_means_what_python_strip_means(blank: str) -> None:
    for agent_id, value in [
        ("execution-qa", qa(False, fix_info=blank * 2)),
        ("execution-code-quality", quality(False, fix_info=blank * 2)),
    ]:
        assert schema_accepts(agent_id, value) is (blank not in BLANKS)
        assert pydantic_accepts(agent_id, value) is (blank not in BLANKS)


@pytest.mark.parametrize(
    ("model", "agent_id", "value"),
    [
        (QAOutput, "execution-qa", qa(True, test_results={"total": 1.0, "passed": 1, "failed": 0})),
        (CodeQualityOutput, "execution-code-quality", quality(True, blocking_issues_count=0.0)),
        (
            DoDOutput,
            "execution-dod",
            dod(
                True,
                summary={
                    "user_stories_total": 2.0,
                    "user_stories_done": 2,
                    "phases_total": 1,
                    "phases_done": 1,
                },
            ),
        ),
    ],
)
def test_the_one_known_difference_is_an_integral_float(
    model: type[BaseModel], agent_id: str, value: JsonValue
) -> None:
    # JSON Schema cannot tell 1.0 from 1 (one number in JSON), so an integer field accepts 1.0;
    # the strict Pydantic models refuse a float for an int. No schema can say this.
    assert EXECUTION_AGENT_OUTPUTS[agent_id] is model
    assert schema_accepts(agent_id, value)
    assert not pydantic_accepts(agent_id, value)


# The four agents of seed 004 have no Pydantic twin: their closed schemas against examples.
SEED_004: list[tuple[str, JsonValue, bool]] = [
    (
        "researcher",
        {
            "summary": "Analytics events are emitted from one module and buffered as JSONL files.",
            "findings": [
                {
                    "description": "Every event goes through emit() in analytics.py",
                    "files": ["agent_executor/_analytics.py"],
                    "evidence": "def emit(self, event: Event) -> None",
                    "confidence": "high",
                }
            ],
            "relevantFiles": ["agent_executor/_analytics.py"],
            "nextSteps": ["Check the run loop's calls to emit()"],
        },
        True,
    ),
    ("researcher", {"summary": "Too short.", "findings": []}, False),
    (
        "researcher",
        {
            "summary": "A summary that is long enough to pass the fifty character minimum.",
            "findings": [{"description": "d", "files": [], "evidence": "e", "confidence": "sure"}],
        },
        False,
    ),
    (
        "researcher",
        {
            "summary": "A summary that is long enough to pass the fifty character minimum.",
            "findings": [
                {"description": "d", "files": [], "evidence": "e", "confidence": "low", "x": 1}
            ],
        },
        False,
    ),
    (
        "implementer",
        {
            "summary": "Added a --json flag to the list command.",
            "filesModified": [
                {"path": "cli.py", "action": "modified", "changes": "New --json option"},
                {"path": "tests/test_cli.py", "action": "created", "changes": "Two tests"},
            ],
            "testsCovered": True,
            "applied": True,
        },
        True,
    ),
    (
        "implementer",
        {"summary": "x", "filesModified": [{"path": "a.py", "action": "renamed", "changes": "y"}]},
        False,
    ),
    (
        "implementer",
        {"summary": "x", "filesModified": [{"path": "a.py", "action": "created"}]},
        False,
    ),
    (
        "reviewer",
        {
            "summary": "Adds retry to the provider; one real bug.",
            "issues": [
                {
                    "severity": "major",
                    "category": "correctness",
                    "description": "The retry loop never gives up on a 400.",
                    "file": "providers/openai.py",
                    "line": 42,
                    "suggestion": "Retry only on 429 and 5xx.",
                }
            ],
            "overallQuality": "good",
            "approved": False,
        },
        True,
    ),
    ("reviewer", {"summary": "Clean.", "issues": [], "approved": True}, True),
    (
        "reviewer",
        {"summary": "x", "issues": [{"severity": "blocker", "description": "y"}], "approved": True},
        False,
    ),
    (
        "reviewer",
        {"summary": "x", "issues": [{"severity": "nit", "description": "y"}], "approved": True},
        True,
    ),
    (
        "reviewer",
        {
            "summary": "x",
            "issues": [{"severity": "critical", "description": "y"}],
            "approved": False,
        },
        False,
    ),
    ("reviewer", {"summary": "x", "issues": [{"severity": "nit"}], "approved": False}, False),
    (
        "tester",
        {
            "summary": "Tests for the JSON extractor.",
            "testsCreated": [
                {
                    "path": "tests/test_extract.py",
                    "testCount": 6,
                    "type": "unit",
                    "covers": "fences",
                }
            ],
            "coverage": 87.5,
            "coverageMeasured": False,
            "uncovered": ["nested fences"],
        },
        True,
    ),
    ("tester", {"summary": "x", "testsCreated": [], "coverage": 101}, False),
    (
        "tester",
        {
            "summary": "x",
            "testsCreated": [{"path": "t.py", "testCount": "3", "type": "unit"}],
            "coverage": 5,
        },
        False,
    ),
    (
        "tester",
        {
            "summary": "x",
            "testsCreated": [{"path": "t.py", "testCount": 3, "type": "smoke"}],
            "coverage": 5,
        },
        False,
    ),
    ("tester", {"summary": "x", "testsCreated": [], "coverage": 5, "extra": True}, False),
]


@pytest.mark.parametrize(("agent_id", "value", "valid"), SEED_004)
def test_seed_004_schemas_are_closed(agent_id: str, value: JsonValue, valid: bool) -> None:
    assert schema_accepts(agent_id, value) is valid


def test_shipped_agents_keep_the_seeds_one_retry() -> None:
    """One re-prompt (seed 002), unless the agent's YAML says, on that line, why not."""
    fleet = load_fleet(AGENTS, known_tools=None)
    for agent_id in fleet.ids:
        retries = merge_options(fleet[agent_id].options).max_retries
        if retries == 1:
            continue
        text = (AGENTS / agent_id / "agent.yml").read_text(encoding="utf-8")
        line = next(line for line in text.splitlines() if "maxRetries" in line)
        assert "#" in line, f"{agent_id}: maxRetries {retries} without a comment saying why"
