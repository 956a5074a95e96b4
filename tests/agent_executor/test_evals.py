from __future__ import annotations

import pytest

from agent_executor._evals import (
    EvalRun,
    Price,
    evaluate_model,
    field_agreement,
    leaf_fields,
    percentile,
)


def run(
    task_id: str, *, completed: bool = True, retries: int = 0, output: object = None
) -> EvalRun:
    return EvalRun(
        task_id=task_id,
        completed=completed,
        retries=retries,
        attempts=retries + 1,
        input_tokens=100,
        output_tokens=10,
        duration_ms=float(len(task_id)),
        output=output,  # type: ignore[arg-type]
        error_type=None if completed else "output_schema_validation_failed",
    )


def test_leaf_fields_name_every_leaf_by_its_path() -> None:
    value = {"a": {"b": 1, "c": [True, {"d": None}]}, "e": [], "f": {}}
    assert list(leaf_fields(value)) == [
        ("$.a.b", 1),
        ("$.a.c[0]", True),
        ("$.a.c[1].d", None),
        ("$.e", []),
        ("$.f", {}),
    ]


@pytest.mark.parametrize(
    ("output", "expected", "counts"),
    [
        ({"a": 1, "b": "x"}, {"a": 1, "b": "x"}, (2, 2)),
        ({"a": 1.0, "extra": 5}, {"a": 1}, (1, 1)),  # 1 is 1.0; fields beyond expected ignored
        ({"a": True}, {"a": 1}, (0, 1)),  # a boolean is not a number
        ({"a": 0}, {"a": False}, (0, 1)),
        ({"items": [1, 2]}, {"items": [1, 3, 4]}, (1, 3)),  # items by position
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, (1, 2)),
        ({"a": None}, {"a": None}, (1, 1)),
        ({}, {"a": None}, (0, 1)),  # a missing field is not null
        ("text", "text", (1, 1)),
        (None, {"a": 1, "b": [2]}, (0, 2)),
    ],
)
def test_field_agreement_counts_the_expected_leaves_held(
    output: object, expected: object, counts: tuple[int, int]
) -> None:
    assert field_agreement(output, expected) == counts  # type: ignore[arg-type]


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert percentile(values, 50) == 10.0
    assert percentile(values, 95) == 19.0
    assert percentile([7.0], 95) == 7.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([], 50) is None


def test_evaluate_model_counts_first_try_rescued_and_failed_runs() -> None:
    runs = [
        run("a", output={"x": 1, "y": 2}),
        run("bb", retries=1, output={"x": 1, "y": 3}),
        run("ccc", completed=False, retries=1, output={"x": 1}),
        run("dddd", output={"x": 9}),
    ]
    expected = {"a": {"x": 1, "y": 2}, "bb": {"x": 1, "y": 2}, "ccc": {"x": 1}}
    figures = evaluate_model(
        "m",
        runs,
        tasks=5,
        price=Price(1.0, 4.0),
        expected=expected,  # type: ignore[arg-type]
    )
    assert (figures.tasks, figures.runs, figures.completed) == (5, 4, 3)
    assert figures.contract_success == 0.75
    assert (figures.first_try_valid, figures.rescued_by_reask) == (2, 1)
    assert figures.first_try_validity == 0.5
    assert figures.mean_attempts == 1.5
    assert (figures.input_tokens, figures.output_tokens, figures.mean_tokens) == (400, 40, 110.0)
    assert figures.cost_usd == pytest.approx((400 * 1.0 + 40 * 4.0) / 1e6)
    assert (figures.latency_ms.p50, figures.latency_ms.p95) == (2.0, 4.0)
    assert figures.failures == {"output_schema_validation_failed": 1}
    agreement = figures.agreement
    assert agreement is not None
    # a: 2/2, bb: 1/2, ccc failed: 0/1 (its output is not counted), dddd has no expected output.
    assert (agreement.tasks, agreement.fields_equal, agreement.fields) == (3, 3, 5)
    assert agreement.share == 0.6


def test_evaluate_model_without_runs_prices_or_expected_outputs() -> None:
    figures = evaluate_model("m", [], tasks=2)
    assert figures.runs == 0
    assert figures.contract_success is None and figures.mean_attempts is None
    assert figures.latency_ms.p50 is None and figures.latency_ms.p95 is None
    assert figures.cost_usd is None and figures.price is None
    assert figures.agreement is None
