"""Contract evals: what one model's run results say about how well it meets a contract.

:func:`evaluate_model` folds the results of one model's runs (one :class:`EvalRun` a task) into
a :class:`ModelEval`: contract success, first-try validity, runs rescued by the re-ask, mean
attempts, tokens, latency percentiles, cost at a known :class:`Price`, and, given expected
outputs, field-level agreement (:func:`field_agreement`).

Field-level agreement is the share of the expected outputs' leaf fields that the model's output
holds with the same value at the same path. A leaf is a string, number, boolean or null, or an
empty object or array; an array's items are fields by position. Fields the model adds beyond the
expected output are not counted; a run that failed the contract holds none of its fields. The
share is taken over all fields of all tasks with an expected output, so a task with many fields
weighs more than one with few.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "EVAL_REPORT_FILE",
    "Agreement",
    "EvalReport",
    "EvalRun",
    "LatencyPercentiles",
    "ModelEval",
    "Price",
    "evaluate_model",
    "field_agreement",
    "leaf_fields",
    "percentile",
]

_PER_MILLION = 1_000_000


@dataclass(frozen=True)
class Price:
    """What a model costs, in US dollars per million tokens."""

    input_per_1m: float
    output_per_1m: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Return the dollars ``input_tokens`` and ``output_tokens`` cost at this price."""
        return (
            input_tokens * self.input_per_1m + output_tokens * self.output_per_1m
        ) / _PER_MILLION


@dataclass(frozen=True)
class EvalRun:
    """One task's run, as far as an eval counts it."""

    task_id: str
    completed: bool
    retries: int
    attempts: int
    input_tokens: int
    output_tokens: int
    duration_ms: float
    output: JsonValue = None
    error_type: str | None = None


class Agreement(BaseModel):
    """Field-level agreement with the expected outputs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int = Field(ge=0)
    """Tasks that had an expected output."""
    fields_equal: int = Field(ge=0)
    """Expected leaf fields the model's outputs held with the expected value."""
    fields: int = Field(ge=0)
    """Expected leaf fields in all."""
    share: float | None = Field(ge=0, le=1)
    """``fields_equal / fields``; ``None`` when there were no fields."""


class LatencyPercentiles(BaseModel):
    """Run wall time percentiles, in milliseconds (nearest rank)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    p50: float | None
    """The median run's wall time; ``None`` without runs."""
    p95: float | None
    """The 95th percentile run's wall time; ``None`` without runs."""


class ModelEval(BaseModel):
    """How one model did on an eval's tasks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    """The model, as given to the eval."""
    tasks: int = Field(ge=0)
    """Tasks of the eval."""
    runs: int = Field(ge=0)
    """Tasks with a result (all of them once the eval has finished)."""
    completed: int = Field(ge=0)
    """Runs that met the contract."""
    contract_success: float | None
    """``completed / runs``; ``None`` without runs."""
    first_try_valid: int = Field(ge=0)
    """Runs whose first attempt met the contract."""
    first_try_validity: float | None
    """``first_try_valid / runs``; ``None`` without runs."""
    rescued_by_reask: int = Field(ge=0)
    """Runs that met the contract only after a re-ask."""
    mean_attempts: float | None
    """Attempts at the output per run; ``None`` without runs."""
    input_tokens: int = Field(ge=0)
    """Input tokens all runs spent."""
    output_tokens: int = Field(ge=0)
    """Output tokens all runs spent."""
    mean_tokens: float | None
    """Input plus output tokens per run; ``None`` without runs."""
    latency_ms: LatencyPercentiles
    """Run wall time percentiles."""
    price: Price | None
    """The model's price, when one was given."""
    cost_usd: float | None
    """What all runs cost at ``price``; ``None`` without a price."""
    agreement: Agreement | None
    """Agreement with the expected outputs; ``None`` without expected outputs."""
    failures: dict[str, int]
    """Failed runs, counted by error type."""


EVAL_REPORT_FILE = "eval.json"
"""The name of the report ``agentshape eval`` writes beside its results files (``--out``)."""


class EvalReport(BaseModel):
    """One eval's figures, as ``agentshape eval`` writes them to :data:`EVAL_REPORT_FILE`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str
    """The agent whose contract was evaluated."""
    tasks: int = Field(ge=0)
    """How many tasks each model was given."""
    finished_at: str
    """When the eval finished (ISO 8601, UTC)."""
    models: list[ModelEval]
    """Each model's figures, in the order the eval ran them."""


def evaluate_model(
    model: str,
    runs: Sequence[EvalRun],
    *,
    tasks: int,
    price: Price | None = None,
    expected: Mapping[str, JsonValue] | None = None,
) -> ModelEval:
    """Fold one model's runs into its eval figures."""
    count = len(runs)
    completed = [run for run in runs if run.completed]
    first_try = sum(1 for run in completed if run.retries == 0)
    input_tokens = sum(run.input_tokens for run in runs)
    output_tokens = sum(run.output_tokens for run in runs)
    durations = [run.duration_ms for run in runs]
    failures = Counter(run.error_type or "unknown" for run in runs if not run.completed)
    return ModelEval(
        model=model,
        tasks=tasks,
        runs=count,
        completed=len(completed),
        contract_success=_share(len(completed), count),
        first_try_valid=first_try,
        first_try_validity=_share(first_try, count),
        rescued_by_reask=len(completed) - first_try,
        mean_attempts=_share(sum(run.attempts for run in runs), count),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        mean_tokens=_share(input_tokens + output_tokens, count),
        latency_ms=LatencyPercentiles(p50=percentile(durations, 50), p95=percentile(durations, 95)),
        price=price,
        cost_usd=None if price is None else price.cost(input_tokens, output_tokens),
        agreement=None if expected is None else _agreement(runs, expected),
        failures=dict(failures.most_common()),
    )


def field_agreement(output: JsonValue, expected: JsonValue) -> tuple[int, int]:
    """Count the leaf fields of ``expected`` that ``output`` holds with the same value."""
    actual = dict(leaf_fields(output))
    fields = equal = 0
    for path, value in leaf_fields(expected):
        fields += 1
        if path in actual and _same_json(actual[path], value):
            equal += 1
    return equal, fields


def leaf_fields(value: JsonValue, path: str = "$") -> Iterator[tuple[str, JsonValue]]:
    """Yield ``(path, value)`` for every leaf of a JSON value (``$.a.b``, ``$.items[0]``)."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaf_fields(item, f"{path}.{key}")
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaf_fields(item, f"{path}[{index}]")
    else:
        yield path, value


def percentile(values: Sequence[float], q: float) -> float | None:
    """Return the nearest-rank ``q``-th percentile of ``values`` (``None`` when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _agreement(runs: Sequence[EvalRun], expected: Mapping[str, JsonValue]) -> Agreement:
    """Return the agreement of ``runs`` with the expected outputs of their tasks."""
    tasks = equal = fields = 0
    for run in runs:
        if run.task_id not in expected:
            continue
        tasks += 1
        matched, total = field_agreement(
            run.output if run.completed else None, expected[run.task_id]
        )
        if not run.completed:
            matched = 0  # a failed run holds none of the fields, not even an expected null
        equal += matched
        fields += total
    return Agreement(tasks=tasks, fields_equal=equal, fields=fields, share=_share(equal, fields))


def _share(part: float, whole: int) -> float | None:
    return part / whole if whole else None


def _same_json(left: JsonValue, right: JsonValue) -> bool:
    """Whether two JSON leaves are equal as JSON values (a boolean is not a number)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return bool(left == right)
