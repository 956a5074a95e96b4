from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import pytest
from jsonschema import Draft7Validator

from bench.conformance import (
    SUITE_DRAFTS,
    CorpusReport,
    LabelledCase,
    LabelledSchema,
    SuiteReport,
    check_corpus,
    iter_bench,
    iter_bfcl,
    iter_schemastore,
    main,
    run_test_suite,
)

REPO = Path(__file__).parents[2]
CONFORMANCE = Path(
    os.environ.get("AGENTSHAPE_CONFORMANCE_DIR") or REPO / ".." / "shared" / "conformance"
)
SUITE = CONFORMANCE / "json-schema-test-suite"

needs_data = pytest.mark.skipif(
    not CONFORMANCE.is_dir(),
    reason=f"conformance data not found at {CONFORMANCE} (set AGENTSHAPE_CONFORMANCE_DIR)",
)


def _suite_case_count(optional: bool, draft: str = "7") -> int:
    folder = SUITE / "tests" / f"draft{draft}"
    files = sorted((folder / "optional").rglob("*.json")) if optional else folder.glob("*.json")
    return sum(
        len(group["tests"]) for path in files for group in json.loads(path.read_text("utf-8"))
    )


def _failures(report: SuiteReport, *, optional: bool) -> str:
    return "\n".join(
        f"{f.file} :: {f.group} :: {f.description}: {f.detail}"
        for f in report.failures
        if f.optional == optional
    )


@pytest.fixture(scope="module")
def draft_reports() -> dict[str, SuiteReport]:
    return {draft: run_test_suite(SUITE, draft) for draft in SUITE_DRAFTS}


def _problems(report: CorpusReport) -> str:
    lines = [f"{f.schema_id}: {f.error}" for f in report.not_converted]
    return "\n".join(lines + [d.render() for d in report.disagreements if d.accepted is not False])


@pytest.fixture(scope="module")
def suite_report() -> SuiteReport:
    return run_test_suite(SUITE)


# ---------------------------------------------------------------- the official test suite


@needs_data
def test_every_required_draft7_case_passes(suite_report: SuiteReport) -> None:
    assert suite_report.required_failed == 0, _failures(suite_report, optional=False)
    assert suite_report.required_passed == _suite_case_count(optional=False)


@needs_data
def test_every_optional_draft7_case_is_run(suite_report: SuiteReport) -> None:
    total = suite_report.optional_passed + suite_report.optional_failed
    total += suite_report.format_passed + suite_report.format_failed
    assert total == _suite_case_count(optional=True)
    assert all(f.optional for f in suite_report.failures)


@needs_data
@pytest.mark.parametrize("draft", list(SUITE_DRAFTS))
def test_every_required_case_passes_under_each_draft(
    draft_reports: dict[str, SuiteReport], draft: str
) -> None:
    report = draft_reports[draft]
    assert report.required_failed == 0, _failures(report, optional=False)
    assert report.required_passed == _suite_case_count(optional=False, draft=draft)
    total = report.optional_passed + report.optional_failed
    total += report.format_passed + report.format_failed
    assert total == _suite_case_count(optional=True, draft=draft)


@needs_data
@pytest.mark.parametrize("draft", ["4", "6", "7", "2019-09"])
def test_optional_and_format_cases_pass_up_to_2019_09(
    draft_reports: dict[str, SuiteReport], draft: str
) -> None:
    report = draft_reports[draft]
    left = [
        f
        for f in report.failures
        if not (draft == "2019-09" and f.file.endswith("optional/dependencies-compatibility.json"))
    ]
    assert left == [], _failures(report, optional=True)
    assert report.format_failed == 0


@needs_data
@pytest.mark.parametrize("draft", ["2019-09", "2020-12"])
def test_dependencies_is_not_a_keyword_after_draft7(
    draft_reports: dict[str, SuiteReport], draft: str
) -> None:
    # The policy: `dependencies` is ignored where the draft lacks it, so the suite's optional
    # compatibility file fails exactly on the cases that expect it enforced, and nowhere else.
    report = draft_reports[draft]
    optional = [f for f in report.failures if f.section == "optional"]
    assert optional, "the compatibility cases expect `dependencies` enforced"
    assert {f.file for f in optional} == {
        f"tests/draft{draft}/optional/dependencies-compatibility.json"
    }
    assert all(not f.expected_valid and f.detail == "accepted" for f in optional)


@needs_data
def test_2020_12_format_is_an_annotation_unless_the_vocabulary_asserts_it(
    draft_reports: dict[str, SuiteReport],
) -> None:
    report = draft_reports["2020-12"]
    formats = [f for f in report.failures if f.section == "format"]
    assert formats
    # Every format failure is an invalid string accepted because format only annotates.
    assert all(not f.expected_valid and f.detail == "accepted" for f in formats), "\n".join(
        f"{f.file} :: {f.description}: {f.detail}" for f in formats if f.expected_valid
    )
    assert report.format_passed > 0
    # The custom meta-schemas of optional/format-assertion.json turn assertion on.
    assert not [f for f in report.failures if "format-assertion" in f.file]


@needs_data
def test_command_prints_suite_summary_and_exits_zero() -> None:
    result = subprocess.run(
        [sys.executable, "bench/conformance.py", str(SUITE)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    required = [line for line in lines if line.startswith("required: ")]
    optional = [line for line in lines if line.startswith("optional: ")]
    assert len(required) == 1
    assert re.fullmatch(r"required: \d+ passed, 0 failed", required[0])
    assert len(optional) == 1
    assert re.fullmatch(r"optional: \d+ passed, \d+ failed", optional[0])
    assert [line for line in lines if line.startswith("format: ")] == [
        "format: 676 passed, 0 failed"
    ]
    assert result.stderr == ""


@needs_data
def test_command_runs_every_draft_with_all() -> None:
    result = subprocess.run(
        [sys.executable, "bench/conformance.py", str(SUITE), "--draft", "all"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    heads = [line.split(":")[0] for line in lines if line.startswith("JSON-Schema-Test-Suite")]
    assert heads == [f"JSON-Schema-Test-Suite draft{draft}" for draft in SUITE_DRAFTS]
    for prefix in ("required: ", "optional: ", "format: "):
        assert len([line for line in lines if line.startswith(prefix)]) == len(SUITE_DRAFTS)
    assert all(
        re.fullmatch(r"required: \d+ passed, 0 failed", line)
        for line in lines
        if line.startswith("required: ")
    )


# ---------------------------------------------------------------- labelled corpora


def _every(items: Iterator[LabelledSchema], step: int) -> Iterator[LabelledSchema]:
    return islice(items, 0, None, step)


@needs_data
def test_bfcl_parameters_all_convert_and_examples_validate() -> None:
    report = check_corpus("bfcl", iter_bfcl(CONFORMANCE / "bfcl"))
    assert report.schemas > 0
    assert report.not_converted == [], _problems(report)
    assert report.false_accept == 0, _problems(report)
    assert report.crashed == 0, _problems(report)
    assert report.false_reject == 0, "\n".join(d.render() for d in report.disagreements)


@needs_data
def test_jsonschemabench_converts_without_false_accepts() -> None:
    report = check_corpus("jsonschemabench", iter_bench(CONFORMANCE / "jsonschemabench"))
    assert report.schemas > 0
    assert report.instances > 0
    assert report.not_converted == [], _problems(report)
    assert report.crashed == 0, _problems(report)
    assert report.false_accept == 0, _problems(report)
    # The labels assume formats are asserted; 2020-12 makes `format` an annotation (the
    # README's policy): a 2020-12 instance that breaks only a format is accepted, counted apart.
    assert report.format_annotation == 1, _problems(report)


@needs_data
def test_schemastore_converts_without_false_accepts() -> None:
    report = check_corpus("schemastore", iter_schemastore(CONFORMANCE / "schemastore"))
    assert report.schemas > 0
    assert report.not_converted == [], _problems(report)
    assert report.false_accept == 0, _problems(report)
    assert report.crashed == 0, _problems(report)


@needs_data
def test_bfcl_derived_invalid_instances_are_rejected_by_jsonschema_too() -> None:
    derived = [
        (item.schema, case)
        for item in islice(iter_bfcl(CONFORMANCE / "bfcl"), 200)
        for case in item.cases
        if not case.valid
    ]
    assert derived
    for schema, case in derived:
        assert not Draft7Validator(schema).is_valid(case.data), case.name


# ---------------------------------------------------------------- the harness itself


def test_check_corpus_counts_each_kind_of_outcome() -> None:
    items = [
        LabelledSchema(
            "ints",
            {"type": "integer"},
            [
                LabelledCase("good", 3, valid=True),
                LabelledCase("labelled valid but is not", "x", valid=True),
                LabelledCase("labelled invalid but is not", 4, valid=False),
                LabelledCase("bad", "y", valid=False),
            ],
        ),
        LabelledSchema("broken", {"type": "not-a-type"}, [LabelledCase("any", 1, valid=True)]),
    ]
    report = check_corpus("made-up", items)
    assert (report.schemas, report.instances, report.agree) == (2, 5, 2)
    assert (report.false_accept, report.false_reject, report.crashed) == (1, 1, 0)
    assert [f.schema_id for f in report.not_converted] == ["broken"]
    assert "not-a-type" in report.not_converted[0].error
    assert report.summary() == "agree: 2/5, false_accept: 1, false_reject: 1, not_converted: 1"
    assert not report.ok
    rejected = next(d for d in report.disagreements if d.accepted is False)
    assert rejected.case == "labelled valid but is not"
    assert rejected.issues, "a rejection names what is wrong"
    text = rejected.render()
    assert "[made-up] ints :: labelled valid but is not" in text
    assert "ours: reject; label: valid" in text


def test_check_corpus_counts_2020_12_format_accepts_apart() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "format": "ipv4"}
    items = [
        LabelledSchema(
            "ips",
            schema,
            [LabelledCase("not an ip", "x", valid=False), LabelledCase("number", 3, valid=False)],
        )
    ]
    report = check_corpus("made-up", items)
    assert (report.format_annotation, report.false_accept) == (1, 1)
    assert report.summary() == (
        "agree: 0/2, false_accept: 1, false_reject: 0, not_converted: 0, format_annotation: 1"
    )


def _write_suite(root: Path, *, required_valid: bool) -> Path:
    draft7 = root / "tests" / "draft7"
    (draft7 / "optional").mkdir(parents=True)
    (root / "remotes").mkdir()
    (root / "remotes" / "int.json").write_text('{"type": "integer"}')
    group = {
        "description": "remote ref",
        "schema": {"$ref": "http://localhost:1234/int.json"},
        "tests": [
            {"description": "an integer", "data": 1, "valid": True},
            {"description": "a string", "data": "a", "valid": required_valid},
        ],
    }
    (draft7 / "ref.json").write_text(json.dumps([group]))
    optional = {
        "description": "min",
        "schema": {"minimum": 2},
        "tests": [{"data": 1, "valid": True}],
    }
    (draft7 / "optional" / "extra.json").write_text(json.dumps([optional]))
    (draft7 / "optional" / "format").mkdir()
    fmt = {
        "description": "date",
        "schema": {"format": "date"},
        "tests": [{"data": "2020-13-01", "valid": False}],
    }
    (draft7 / "optional" / "format" / "date.json").write_text(json.dumps([fmt]))
    return root


def test_main_reports_suite_counts_and_fails_on_required_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _write_suite(tmp_path / "suite", required_valid=True)
    assert main([str(suite), "-v"]) == 1
    out = capsys.readouterr().out
    assert "required: 1 passed, 1 failed" in out
    assert "optional: 0 passed, 1 failed" in out
    assert "format: 1 passed, 0 failed" in out
    assert "FAIL (required) tests/draft7/ref.json :: remote ref :: a string" in out
    assert "FAIL (optional) tests/draft7/optional/extra.json :: min" in out


def test_main_runs_the_draft_it_is_given_under_that_draft(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Draft-04's boolean exclusiveMaximum only means something when the runner names draft-04.
    suite = tmp_path / "suite"
    draft4 = suite / "tests" / "draft4"
    draft4.mkdir(parents=True)
    (suite / "remotes").mkdir()
    group = {
        "description": "draft-04 exclusiveMaximum",
        "schema": {"maximum": 3, "exclusiveMaximum": True},
        "tests": [
            {"description": "below", "data": 2, "valid": True},
            {"description": "the bound", "data": 3, "valid": False},
        ],
    }
    (draft4 / "maximum.json").write_text(json.dumps([group]))
    assert main([str(suite), "--draft", "4"]) == 0
    out = capsys.readouterr().out
    assert "JSON-Schema-Test-Suite draft4:" in out
    assert "required: 2 passed, 0 failed" in out
    assert main([str(suite), "--draft", "6"]) == 2
    assert "tests/draft6" in capsys.readouterr().err


def test_main_exits_zero_when_required_cases_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _write_suite(tmp_path / "suite", required_valid=False)
    assert main([str(suite)]) == 0
    out = capsys.readouterr().out
    assert "required: 2 passed, 0 failed" in out
    assert "optional: 0 passed, 1 failed" in out
    assert "FAIL" not in out


def test_main_rejects_a_missing_path_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "no such directory" in err
    assert "nowhere" in err
    assert "Traceback" not in err


def test_main_rejects_a_missing_corpus_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--bench", str(tmp_path / "absent")]) == 2
    assert "--bench: no such directory" in capsys.readouterr().err


def test_main_rejects_a_corpus_dir_without_its_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--schemastore", str(tmp_path)]) == 2
    assert "index.jsonl" in capsys.readouterr().err


def test_main_without_arguments_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "give the test suite PATH" in capsys.readouterr().err


def test_main_explains_corpus_disagreements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = tmp_path / "bench"
    bench.mkdir()
    records = [
        {
            "id": "Mini/one",
            "schema": {"type": "object", "required": ["a"]},
            "tests": [
                {"data": {"a": 1}, "valid": True},
                {"data": {}, "valid": True, "description": "wrong label"},
            ],
        },
        {"id": "Mini/two", "schema": {"type": 5}, "tests": []},
    ]
    (bench / "Mini.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    explain = tmp_path / "explain.txt"
    assert main(["--bench", str(bench), "--explain", str(explain)]) == 1
    out = capsys.readouterr().out
    assert "agree: 1/2, false_accept: 0, false_reject: 1, not_converted: 1" in out
    text = explain.read_text()
    assert "[jsonschemabench] Mini/two :: not converted:" in text
    assert "[jsonschemabench] Mini/one :: tests[1]" in text
    assert "ours: reject; label: valid" in text
    assert "label note: wrong label" in text
