"""Validation throughput: agentshape against jsonschema and a hand-written Pydantic model.

The value is a medium review: the seed 000 pr-reviewer output (``output_schema`` of the example
blueprint in /work/shared/seeds/000_*.txt) with 50 review comments. Each contender validates the
same value again and again; the best of several timed rounds (interleaved, so machine load hits
all contenders alike) gives validations per second.

    .venv/bin/python bench/validate.py [--quick]

Prints one line per contender, then
    validate_vs_draft7validator: R   (agentshape model_validate / Draft7Validator.is_valid)
    validate_vs_pydantic: R          (agentshape model_validate / hand-written Pydantic model)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from jsonschema import Draft7Validator
from pydantic import BaseModel, Field, JsonValue

from agent_core import model_from_schema, validate_output

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"


def seed_output_schema() -> dict[str, JsonValue]:
    """Return the pr-reviewer ``output_schema`` from the seed 000 design document."""
    matches = sorted(SEEDS.glob("000_*.txt"))
    if not matches:
        sys.exit(f"error: no seed 000 document in {SEEDS}")
    text = matches[0].read_text(encoding="utf-8")
    for block in re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL):
        try:
            blueprint = json.loads(block)
        except ValueError:
            continue
        if isinstance(blueprint, dict) and blueprint.get("name") == "pr-reviewer":
            schema = blueprint["output_schema"]
            assert isinstance(schema, dict)
            return schema
    sys.exit(f"error: no pr-reviewer blueprint with an output_schema in {matches[0]}")


def review(comments: int = 50) -> dict[str, JsonValue]:
    """Return a valid pr-reviewer output with ``comments`` comments (deterministic)."""
    severities = ["nitpick", "suggestion", "concern", "blocker"]
    return {
        "summary": "Retries failed card charges with exponential back-off; adds idempotency keys.",
        "approval": "request_changes",
        "comments": [
            {
                "file": f"src/payments/module_{index % 7}.py",
                "line": 10 + index * 3,
                "severity": severities[index % 4],
                "message": f"Comment {index}: the retry loop should cap the total wait time.",
            }
            for index in range(comments)
        ],
        "metrics": {"files_reviewed": 7, "lines_changed": 412, "complexity_score": 6.5},
    }


class Comment(BaseModel):
    """Hand-written model of one review comment."""

    file: str
    line: int
    severity: Literal["nitpick", "suggestion", "concern", "blocker"]
    message: str


class Metrics(BaseModel):
    """Hand-written model of the review metrics."""

    files_reviewed: int | None = None
    lines_changed: int | None = None
    complexity_score: float | None = Field(default=None, ge=0, le=10)


class Review(BaseModel):
    """Hand-written model of the pr-reviewer output."""

    summary: str
    approval: Literal["approve", "request_changes", "comment"]
    comments: list[Comment]
    metrics: Metrics | None = None


def per_second(
    contenders: dict[str, Callable[[], object]], *, loops: int, rounds: int
) -> dict[str, float]:
    """Return calls per second of each contender: its best of ``rounds`` runs of ``loops`` calls.

    Rounds are interleaved (every contender runs once per round), so a change in machine load
    during the benchmark affects all of them alike.
    """
    best = dict.fromkeys(contenders, float("inf"))
    for call in contenders.values():
        call()
    for _ in range(rounds):
        for name, call in contenders.items():
            start = time.perf_counter()
            for _ in range(loops):
                call()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: loops / seconds for name, seconds in best.items()}


def main() -> int:
    """Run the benchmark and print throughputs and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer loops (a smoke run)")
    args = parser.parse_args()
    loops, rounds = (200, 3) if args.quick else (2000, 7)

    schema = seed_output_schema()
    data = review(50)
    model = model_from_schema(schema, name="Review")
    draft7 = Draft7Validator(schema)
    assert draft7.is_valid(data), "the benchmark value must be valid"
    assert not validate_output(data, schema), "agentshape must accept the benchmark value"
    model.model_validate(data)
    Review.model_validate(data)

    results = per_second(
        {
            "agentshape Model.model_validate": lambda: model.model_validate(data),
            "agentshape validate_output": lambda: validate_output(data, schema),
            "jsonschema Draft7Validator.is_valid": lambda: draft7.is_valid(data),
            "hand-written Pydantic model_validate": lambda: Review.model_validate(data),
        },
        loops=loops,
        rounds=rounds,
    )
    print(f"value: pr-reviewer output, 50 comments, {len(json.dumps(data))} bytes of JSON")
    print(f"loops: {loops} x best of {rounds}")
    for name, rate in results.items():
        print(f"{name}: {rate:,.0f} validations/s")
    ours = results["agentshape Model.model_validate"]
    draft7_rate = results["jsonschema Draft7Validator.is_valid"]
    pydantic_rate = results["hand-written Pydantic model_validate"]
    output_rate = results["agentshape validate_output"]
    print(f"validate_output_vs_draft7validator: {output_rate / draft7_rate:.1f}")
    print(f"validate_vs_draft7validator: {ours / draft7_rate:.1f}")
    print(f"validate_vs_pydantic: {ours / pydantic_rate:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
