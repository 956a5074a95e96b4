"""Compare JSON extraction from free-text replies: agentshape vs json_repair vs instructor.

Run from the repository root (needs the ``bench`` extras: json-repair, instructor)::

    .venv/bin/python bench/extract_compare.py [--verbose] [CASES.jsonl ...]

Each case (``bench/extract_cases/*.jsonl``) is a model reply labelled with what a careful reader
gets from it: ``"expect": "value"`` with the ``value``, or ``"expect": "refuse"`` when the reply
holds no complete JSON answer (truncated, a refusal, braces in prose). A case may carry a JSON
``schema``; agentshape is given it, and a value another library returns that breaks the schema is
counted as a refusal, because its caller would reject it too (so no library is blamed for not
knowing the schema).

Per library the table counts:

- correct: the expected value, or a refusal where refusing is expected;
- wrong: a value that is not the expected one, or any value where refusing is expected;
- refused: no value where one was expected;
- wrong*: wrong, leaving out the cases marked ``"policy": true``, whose label follows an
  agentshape rule where another reading is defensible (last candidate wins, a number at the very
  end may be cut, a missing comma is not guessed, ...).

A second table gives each library's correct count per category.

What each library is asked:

- agentshape: ``agent_core._extract.extract_json(text, schema)``; ``NoJSONFoundError`` is a refusal.
- json_repair: ``json_repair.loads(text)`` as its README shows; ``""`` (what it returns when it
  finds nothing) or an exception is a refusal.
- json_repair+schema: ``json_repair.repair_json(text, return_objects=True, schema=schema)`` for
  cases with a schema (same as json_repair otherwise).
- instructor: ``instructor.utils.extract_json_from_codeblock(text)`` (the function its MD_JSON and
  JSON modes use to pull JSON out of a text reply), then ``json.loads`` of what it returns, as
  instructor does with ``model_validate_json``; a parse error is a refusal.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import jsonschema_rs  # noqa: E402

from agent_contracts import NoJSONFoundError  # noqa: E402
from agent_core import extract_json  # noqa: E402

CASES_DIR = Path(__file__).resolve().parent / "extract_cases"
REFUSED = object()


def load_cases(paths: list[Path]) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for path in paths:
        for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                case = json.loads(line)
                case["source"] = f"{path.name}:{line_number}"
                cases.append(case)
    return cases


def same_json(a: Any, b: Any) -> bool:
    """Type-exact JSON equality (``True`` is not ``1``, ``1`` is not ``1.0``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def run_agentshape(text: str, schema: Any) -> Any:
    try:
        return extract_json(text, schema)
    except NoJSONFoundError:
        return REFUSED


def run_json_repair(text: str, schema: Any) -> Any:
    import json_repair

    try:
        value = json_repair.loads(text)
    except Exception:
        return REFUSED
    return REFUSED if value == "" else value


def run_json_repair_schema(text: str, schema: Any) -> Any:
    import json_repair

    if schema is None:
        return run_json_repair(text, schema)
    try:
        value = json_repair.repair_json(text, return_objects=True, schema=schema)
    except Exception:
        return REFUSED
    return REFUSED if value == "" else value


def run_instructor(text: str, schema: Any) -> Any:
    from instructor.utils import extract_json_from_codeblock

    try:
        return json.loads(extract_json_from_codeblock(text))
    except (ValueError, RecursionError):
        return REFUSED


LIBRARIES: dict[str, Callable[[str, Any], Any]] = {
    "agentshape": run_agentshape,
    "json_repair": run_json_repair,
    "json_repair+schema": run_json_repair_schema,
    "instructor": run_instructor,
}


def verdict(case: dict[str, Any], got: Any, *, trusts_schema: bool) -> str:
    """Return ``correct``, ``wrong`` or ``refused`` for one library's answer to one case."""
    schema = case.get("schema")
    if got is not REFUSED and schema is not None and not trusts_schema:
        validator = jsonschema_rs.validator_for(schema, validate_formats=True)
        try:
            if not validator.is_valid(got):
                got = REFUSED
        except ValueError:
            got = REFUSED
    if case["expect"] == "refuse":
        return "correct" if got is REFUSED else "wrong"
    if got is REFUSED:
        return "refused"
    return "correct" if same_json(got, case["value"]) else "wrong"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", type=Path, help="JSONL case files")
    parser.add_argument("--verbose", "-v", action="store_true", help="list every miss")
    args = parser.parse_args(argv)
    paths = args.cases or sorted(CASES_DIR.glob("*.jsonl"))
    cases = load_cases(paths)
    expected_values = sum(1 for case in cases if case["expect"] == "value")
    print(
        f"{len(cases)} cases: {expected_values} with a value to recover, "
        f"{len(cases) - expected_values} to refuse\n"
    )
    header = (
        f"{'library':<20}{'correct':>9}{'recovered':>11}{'wrong':>7}{'wrong*':>8}"
        f"{'refused':>9}{'ms':>8}"
    )
    print(header)
    print("-" * len(header))
    misses: list[str] = []
    categories = sorted({case["category"] for case in cases})
    by_category: dict[str, dict[str, int]] = {}
    for name, run in LIBRARIES.items():
        counts = {"correct": 0, "wrong": 0, "refused": 0}
        recovered = wrong_outside_policy = 0
        per_category = dict.fromkeys(categories, 0)
        started = time.perf_counter()
        for case in cases:
            got = run(case["text"], case.get("schema"))
            result = verdict(case, got, trusts_schema=name == "agentshape")
            counts[result] += 1
            if result == "correct":
                per_category[case["category"]] += 1
                recovered += case["expect"] == "value"
            elif result == "wrong" and not case.get("policy"):
                wrong_outside_policy += 1
            if result != "correct":
                shown = "REFUSED" if got is REFUSED else json.dumps(got, ensure_ascii=False)
                policy = " (policy)" if case.get("policy") else ""
                misses.append(
                    f"  {name:<19} {result:<8} {case['id'] + policy:<45} got {shown[:60]}"
                )
        elapsed = (time.perf_counter() - started) * 1000
        by_category[name] = per_category
        print(
            f"{name:<20}{counts['correct']:>9}{recovered:>11}{counts['wrong']:>7}"
            f"{wrong_outside_policy:>8}{counts['refused']:>9}{elapsed:>8.0f}"
        )
    print("\ncorrect = right value recovered or rightly refused; recovered = right value recovered")
    print("\ncorrect per category:")
    sizes = {cat: sum(1 for case in cases if case["category"] == cat) for cat in categories}
    print(f"{'category':<12}{'cases':>6}" + "".join(f"{name:>20}" for name in LIBRARIES))
    for cat in categories:
        row = "".join(f"{by_category[name][cat]:>20}" for name in LIBRARIES)
        print(f"{cat:<12}{sizes[cat]:>6}{row}")
    if args.verbose:
        print("\nmisses:")
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
