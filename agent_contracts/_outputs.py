"""The output contracts of the five execution agents: implementer, QA, code quality, manager, DoD.

Field names, types and enums follow the design's models; the conditional rules its
field tables state are enforced as model validators:

- QA: ``fix_info`` is required when ``dod_achieved`` is false.
- Code quality: ``fix_info`` is required when ``quality_passed`` is false, and ``issues`` is
  empty when it is true.
- DoD: ``remaining_items`` is empty when ``task_complete`` is true.

Types are strict, so a model's ``"1"`` is not read as ``1`` nor ``1`` as ``true``, and unknown keys
are errors, so a misspelt ``fix_infos`` is not silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

__all__ = [
    "EXECUTION_AGENT_OUTPUTS",
    "BaseAgentOutput",
    "CodeQualityOutput",
    "DoDOutput",
    "ImplementerOutput",
    "ManagerOutput",
    "QACheck",
    "QAOutput",
    "QualityIssue",
    "TaskSummary",
    "TestResults",
]


class _Contract(BaseModel):
    """Strict, closed models: what the agent must send, nothing coerced, nothing extra."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _rule_broken(
    model: str, field: str, value: object, kind: str, template: str, **ctx: object
) -> ValidationError:
    """Return the error for a broken conditional rule, located at the field it concerns."""
    error = PydanticCustomError(kind, template, ctx or None)
    return ValidationError.from_exception_data(
        model, [InitErrorDetails(type=error, loc=(field,), input=value)]
    )


def _require_fix_info(model: str, fix_info: str | None, flag: str) -> None:
    """Raise unless ``fix_info`` holds guidance, naming the flag that made it required."""
    if fix_info is None or not fix_info.strip():
        raise _rule_broken(
            model,
            "fix_info",
            fix_info,
            "fix_info_required",
            "fix_info is required when {flag} is false: say what needs fixing",
            flag=flag,
        )


class BaseAgentOutput(_Contract):
    """What every working agent reports: how it went and what it did."""

    status: Literal["success", "partial", "blocked"]
    """``success``, ``partial`` (some work done) or ``blocked`` (cannot proceed)."""
    summary: str
    """What the agent did, for a person."""


class ImplementerOutput(BaseAgentOutput):
    """Output of the ``execution-implementer`` agent, which writes code changes."""

    files_changed: list[str] = Field(default_factory=list)
    """Paths of modified files, relative to the project root."""
    files_added: list[str] = Field(default_factory=list)
    """Paths of created files."""
    next_steps: str | None = None
    """What to verify or do next."""


class QACheck(_Contract):
    """One Definition of Done criterion and whether it held."""

    criterion: str
    """What was checked."""
    passed: bool
    """Whether the check passed."""
    details: str | None = None
    """Additional context."""


class TestResults(_Contract):
    """A summary of one pytest run."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    total: int
    """Tests collected."""
    passed: int
    """Tests that passed."""
    failed: int
    """Tests that failed."""


class QAOutput(_Contract):
    """Output of the ``execution-qa`` agent, which checks the Definition of Done."""

    dod_achieved: bool
    """Whether every acceptance criterion is met."""
    checks: list[QACheck]
    """The criterion checks performed."""
    test_results: TestResults | None = None
    """The pytest summary, when tests ran."""
    fix_info: str | None = None
    """Specific guidance for fixes; required when ``dod_achieved`` is false."""

    @model_validator(mode="after")
    def _fix_info_when_not_achieved(self) -> QAOutput:
        """Enforce: ``fix_info`` is required when ``dod_achieved`` is false."""
        if not self.dod_achieved:
            _require_fix_info("QAOutput", self.fix_info, "dod_achieved")
        return self


class QualityIssue(_Contract):
    """One code quality finding."""

    file: str
    """The file with the issue."""
    line: int | None = None
    """The line number, when known."""
    code: str
    """The tool's rule code, such as ``F401`` or ``E501``."""
    message: str
    """What is wrong, for a person."""
    severity: Literal["error", "warning"]
    """``error`` or ``warning``."""


class CodeQualityOutput(_Contract):
    """Output of the ``execution-code-quality`` agent, which runs linters and type checkers."""

    quality_passed: bool
    """Whether every quality check passed."""
    issues: list[QualityIssue] = Field(default_factory=list)
    """The issues found; empty when ``quality_passed`` is true."""
    files_analyzed: list[str]
    """The files that were checked."""
    blocking_issues_count: int
    """Errors that block a merge."""
    ignored_issues_count: int
    """False positives filtered out."""
    fix_info: str | None = None
    """What to fix; required when ``quality_passed`` is false."""

    @model_validator(mode="after")
    def _consistent_with_verdict(self) -> CodeQualityOutput:
        """Enforce: ``fix_info`` when the checks failed, no ``issues`` when they passed."""
        if not self.quality_passed:
            _require_fix_info("CodeQualityOutput", self.fix_info, "quality_passed")
        elif self.issues:
            raise _rule_broken(
                "CodeQualityOutput",
                "issues",
                [issue.model_dump() for issue in self.issues],
                "issues_when_passed",
                "issues must be empty when quality_passed is true (got {count})",
                count=len(self.issues),
            )
        return self


class ManagerOutput(_Contract):
    """Output of the ``execution-manager`` agent, which updates task artifacts."""

    updated: bool
    """Whether the artifacts were updated."""
    artifacts_modified: list[str]
    """The artifact files modified."""
    summary: str
    """What was updated."""


class TaskSummary(_Contract):
    """Aggregate completion counts for a task."""

    user_stories_total: int
    """User stories in the task."""
    user_stories_done: int
    """User stories completed."""
    phases_total: int
    """Phases in the task."""
    phases_done: int
    """Phases completed."""


class DoDOutput(_Contract):
    """Output of the ``execution-dod`` agent, which decides whether the whole task is done."""

    task_complete: bool
    """Whether all work is done."""
    confidence: Literal["high", "medium", "low"]
    """How sure the agent is of its assessment."""
    summary: TaskSummary
    """Aggregate completion counts."""
    remaining_items: list[str] = Field(default_factory=list)
    """Incomplete items; empty when ``task_complete`` is true."""
    recommendation: str
    """The next action to take."""

    @model_validator(mode="after")
    def _nothing_remaining_when_complete(self) -> DoDOutput:
        """Enforce: no ``remaining_items`` when the task is complete."""
        if self.task_complete and self.remaining_items:
            raise _rule_broken(
                "DoDOutput",
                "remaining_items",
                self.remaining_items,
                "remaining_items_when_complete",
                "remaining_items must be empty when task_complete is true (got {count})",
                count=len(self.remaining_items),
            )
        return self


EXECUTION_AGENT_OUTPUTS: Mapping[str, type[BaseModel]] = {
    "execution-implementer": ImplementerOutput,
    "execution-qa": QAOutput,
    "execution-code-quality": CodeQualityOutput,
    "execution-manager": ManagerOutput,
    "execution-dod": DoDOutput,
}
"""Each execution agent's name and the contract its output must meet."""
