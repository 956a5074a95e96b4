"""One attempt's judgement: :class:`Verdict`, what the model sent and what is wrong with it."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import JsonValue

from agent_contracts.runs import RunErrorType
from agent_contracts.validation import ValidationIssue

__all__ = ["CUT_OFF", "Verdict", "whole_reply_issue"]

CUT_OFF = (
    "the reply was cut off by the max_tokens limit before it was complete; "
    "send a shorter, complete answer"
)
"""The problem reported for a reply the ``max_tokens`` limit cut short (never recovered)."""


def whole_reply_issue(message: str, keyword: str | None = None) -> ValidationIssue:
    """Return a problem with the reply as a whole (path ``$``).

    Args:
        message: What is wrong.
        keyword: The schema keyword or rule that failed, when there is one.
    """
    return ValidationIssue(path="$", message=message, keyword=keyword)


@dataclass
class Verdict:
    """One attempt's judgement: what the model sent, what it parsed to, what is wrong with it.

    Attributes:
        raw: Exactly what the model sent (tool arguments or reply text).
        value: The value judged, in the designer's shape; ``None`` when nothing parsed.
        errors: Every problem; empty when the value meets the contract.
        recovered: Whether the value had to be dug out of surrounding text.
        failure: The run error type this attempt would fail the run with.
    """

    raw: str
    value: JsonValue = None
    errors: list[ValidationIssue] = field(default_factory=list)
    recovered: bool = False
    failure: RunErrorType = "output_schema_validation_failed"

    @property
    def ok(self) -> bool:
        """Whether the attempt met the contract."""
        return not self.errors

    @staticmethod
    def merge(verdicts: list[Verdict]) -> Verdict:
        """Fold one turn's failed verdicts into one attempt, each error stated once.

        The raw output and value are the last schema failure's (the last verdict's when all
        are wrong-tool calls); the failure type is ``output_tool_not_called`` only when every
        verdict is one.
        """
        if len(verdicts) == 1:
            return verdicts[0]
        errors: list[ValidationIssue] = []
        for verdict in verdicts:
            errors += [e for e in verdict.errors if e not in errors]
        schema_failures = [v for v in verdicts if v.failure != "output_tool_not_called"]
        last = schema_failures[-1] if schema_failures else verdicts[-1]
        failure: RunErrorType = last.failure if schema_failures else "output_tool_not_called"
        return Verdict(raw=last.raw, value=last.value, errors=errors, failure=failure)
