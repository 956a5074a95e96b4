"""Model escalation: which failures move a run to the next model tier, and the fold.

An agent with ``model_tiers`` (YAML ``llm.tiers``) escalates a run that fails its *contract*
(``output_schema_validation_failed``, ``output_tool_not_called``, ``no_json_found``,
``strict_json_only_violated``, ``output_truncated``) on one model: the whole run is done
again, from the task, on the next tier's model. Any other failure (a provider error, a
timeout, bad run parameters, a step or token limit) is returned as it is. The returned result
is the last tier's, with every tier's attempts (each naming its model), and the tokens and
time of them all.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_contracts._runs import RunError, RunResult

__all__ = ["ESCALATING_ERRORS", "escalates", "fold_escalation"]

ESCALATING_ERRORS: frozenset[str] = frozenset(
    {
        "output_schema_validation_failed",
        "output_tool_not_called",
        "no_json_found",
        "strict_json_only_violated",
        "output_truncated",
    }
)
"""The failures of a run's output contract that escalate it to the agent's next model tier."""


def escalates(error: RunError | None) -> bool:
    """Return whether a run that ended with ``error`` failed its output contract.

    Args:
        error: Why one tier's run failed (``None`` when it completed).
    """
    return error is not None and error.type in ESCALATING_ERRORS


def fold_escalation(results: Sequence[RunResult]) -> RunResult:
    """Fold the runs of an escalation into the last one's result.

    The result is the last tier's, with every tier's attempts (numbered on from one tier to the
    next), and the tokens and time of every tier.

    Args:
        results: Each tier's result, in the order they ran (at least one).

    Returns:
        The one result the caller sees.
    """
    final = results[-1]
    if len(results) == 1:
        return final
    attempts = [attempt for result in results for attempt in result.attempts]
    usage = results[0].usage
    for result in results[1:]:
        usage = usage + result.usage
    return final.model_copy(
        update={
            "attempts": [
                attempt.model_copy(update={"number": number})
                for number, attempt in enumerate(attempts, start=1)
            ],
            "retries": max(0, len(attempts) - 1),
            "usage": usage,
            "duration_ms": sum(result.duration_ms for result in results),
        }
    )
