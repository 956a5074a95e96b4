from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_executor._cli import main
from tests.agent_executor.cli.test_main import AGENT_YML
from tests.fake_llm import FakeLLM, openai_tool_call

pytestmark = pytest.mark.usefixtures("offline_model")

FAILS_ONCE = "test:fail_first=invalid_arguments"
FAILS_TWICE = "test:fail_first=invalid_arguments+invalid_arguments"
MODELS = f"test,{FAILS_ONCE},{FAILS_TWICE}"


@pytest.fixture(autouse=True)
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agents" / "grader").mkdir(parents=True)
    (tmp_path / "agents" / "grader" / "agent.yml").write_text(AGENT_YML)
    Path("tasks.jsonl").write_text(
        "".join(json.dumps({"id": key, "task": f"Grade essay {key}."}) + "\n" for key in "xyz")
    )
    return tmp_path / "agents"


def run_eval(*args: str, models: str = MODELS) -> int:
    return main(
        [
            "eval",
            "grader",
            "--tasks",
            "tasks.jsonl",
            "--models",
            models,
            "--out",
            "evals",
            "--concurrency",
            "1",
            "--analytics-dir",
            "analytics",
            *args,
        ]
    )


def figures(out: str) -> dict[str, dict[str, Any]]:
    report = json.loads(out)
    return {entry["model"]: entry for entry in report["models"]}


def test_the_test_models_first_try_rescued_and_failed_runs_are_counted_exactly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_eval("--json") == 1  # one task failed the contract on one model
    out, err = capsys.readouterr()
    by_model = figures(out)
    assert list(by_model) == ["test", FAILS_ONCE, FAILS_TWICE]
    counts = {
        model: (
            entry["runs"],
            entry["completed"],
            entry["first_try_valid"],
            entry["rescued_by_reask"],
            entry["mean_attempts"],
            entry["failures"],
        )
        for model, entry in by_model.items()
    }
    assert counts == {
        "test": (3, 3, 3, 0, 1.0, {}),
        FAILS_ONCE: (3, 3, 2, 1, 4 / 3, {}),
        FAILS_TWICE: (3, 2, 2, 0, 4 / 3, {"output_schema_validation_failed": 1}),
    }
    assert by_model[FAILS_TWICE]["contract_success"] == pytest.approx(2 / 3)
    assert by_model[FAILS_ONCE]["first_try_validity"] == pytest.approx(2 / 3)
    assert by_model["test"]["results_file"] == "evals/test.jsonl"
    assert by_model[FAILS_ONCE]["results_file"] == "evals/test_fail_first_invalid_arguments.jsonl"
    assert f"{FAILS_TWICE}: 3 task(s) to run, 0 completed earlier in" in err
    # Each model's results file is run-many's, one line a task.
    rows = [json.loads(line) for line in Path("evals/test.jsonl").read_text().splitlines()]
    assert sorted(row["id"] for row in rows) == ["x", "y", "z"]


def test_the_table_has_one_row_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_eval("--price", "test=1/2") == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "model",
        "success",
        "first",
        "try",
        "rescued",
        "attempts",
        "tokens/run",
        "p50",
        "ms",
        "p95",
        "ms",
        "cost",
        "$",
        "agreement",
    ]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert rows["test"][1:6] == ["3/3", "(100%)", "3/3", "(100%)", "0"]
    assert rows[FAILS_ONCE][1:7] == ["3/3", "(100%)", "2/3", "(67%)", "1", "1.33"]
    assert rows[FAILS_TWICE][1:7] == ["2/3", "(67%)", "2/3", "(67%)", "0", "1.33"]
    assert rows["test"][-1] == "-" and rows[FAILS_ONCE][-2:] == ["-", "-"]
    assert rows["test"][-2] != "-"  # priced


def test_the_json_report_has_its_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_eval("--json", "--price", "test=0.5/1.5", models="test") == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"agent", "tasks", "models"}
    assert report["agent"] == "grader" and report["tasks"] == 3
    (entry,) = report["models"]
    assert set(entry) == {
        "model",
        "tasks",
        "runs",
        "completed",
        "contract_success",
        "first_try_valid",
        "first_try_validity",
        "rescued_by_reask",
        "mean_attempts",
        "input_tokens",
        "output_tokens",
        "mean_tokens",
        "latency_ms",
        "price",
        "cost_usd",
        "agreement",
        "failures",
        "results_file",
    }
    assert set(entry["latency_ms"]) == {"p50", "p95"}
    assert entry["latency_ms"]["p50"] <= entry["latency_ms"]["p95"]
    assert entry["price"] == {"input_per_1m": 0.5, "output_per_1m": 1.5}
    tokens_in, tokens_out = entry["input_tokens"], entry["output_tokens"]
    assert tokens_in > 0 and tokens_out > 0
    assert entry["cost_usd"] == pytest.approx((tokens_in * 0.5 + tokens_out * 1.5) / 1e6)
    assert entry["mean_tokens"] == pytest.approx((tokens_in + tokens_out) / 3)
    assert entry["agreement"] is None


def test_a_rerun_runs_only_what_is_not_completed(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_eval(models=f"test,{FAILS_TWICE}") == 1
    capsys.readouterr()
    done = Path("evals/test.jsonl").read_text()
    # The rerun's test model fails its first run twice again: the one task run again fails.
    assert run_eval("--json", models=f"test,{FAILS_TWICE}") == 1
    out, err = capsys.readouterr()
    assert "test: 0 task(s) to run, 3 completed earlier in evals/test.jsonl" in err
    assert f"{FAILS_TWICE}: 1 task(s) to run, 2 completed earlier in" in err
    assert Path("evals/test.jsonl").read_text() == done
    by_model = figures(out)
    assert by_model["test"]["completed"] == 3
    failed = by_model[FAILS_TWICE]
    assert (failed["runs"], failed["completed"], failed["first_try_valid"]) == (3, 2, 2)
    lines = Path(failed["results_file"]).read_text().splitlines()
    assert len(lines) == 3  # the failed task's old line was replaced, not kept beside the new


def test_openai_models_with_scripted_answers_and_expected_outputs(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    Path("tasks.jsonl").write_text('{"id": "x", "task": "Grade x."}\n{"id": 7, "task": "Grade."}\n')
    Path("expected.jsonl").write_text(
        '# task id -> expected output\n{"id": "x", "expected": {"title": "A", "score": 3}}\n'
        '{"id": 7, "expected": {"title": "B", "score": 5}}\n'
    )

    def answer(arguments: dict[str, Any]) -> Any:
        return openai_tool_call("submit_result", json.dumps(arguments))

    fake_llm.respond(
        # gpt-a: x is rescued by the re-ask, 7 is valid at once.
        answer({"title": "A"}),
        answer({"title": "A", "score": 3}),
        answer({"title": "B", "score": 5}),
        # gpt-b: x is valid with a wrong score, 7 fails the contract twice.
        answer({"title": "A", "score": 4}),
        answer({"title": "B", "score": -1}),
        answer({"title": "B", "score": "five"}),
    )
    code = run_eval(
        "--json",
        "--expected",
        "expected.jsonl",
        "--price",
        "openai:gpt-a=2/8",
        models="openai:gpt-a,openai:gpt-b",
    )
    out = capsys.readouterr().out
    assert code == 1
    assert [r.body["model"] for r in fake_llm.requests] == ["gpt-a"] * 3 + ["gpt-b"] * 3
    # The re-ask reached the model with what was wrong.
    assert "score" in json.dumps(fake_llm.requests[1].body["messages"][-1])
    a, b = figures(out)["openai:gpt-a"], figures(out)["openai:gpt-b"]
    assert (a["completed"], a["first_try_valid"], a["rescued_by_reask"]) == (2, 1, 1)
    assert (b["completed"], b["first_try_valid"], b["rescued_by_reask"]) == (1, 1, 0)
    assert a["mean_attempts"] == b["mean_attempts"] == 1.5
    # Every call is billed 11 prompt and 7 completion tokens by the fake server.
    assert (a["input_tokens"], a["output_tokens"]) == (33, 21)
    assert a["cost_usd"] == pytest.approx((33 * 2 + 21 * 8) / 1e6)
    assert b["price"] is None and b["cost_usd"] is None
    assert a["agreement"] == {"tasks": 2, "fields_equal": 4, "fields": 4, "share": 1.0}
    # gpt-b: x holds its title but not its score; the failed run holds no field.
    assert b["agreement"] == {"tasks": 2, "fields_equal": 1, "fields": 4, "share": 0.25}
    assert b["failures"] == {"output_schema_validation_failed": 1}


@pytest.mark.parametrize(
    ("args", "models", "message"),
    [
        (["--price", "test=1"], "test", "--price takes MODEL=IN/OUT"),
        (["--price", "test=a/b"], "test", "--price takes MODEL=IN/OUT"),
        (["--price", "tset=1/2"], "test", "'tset' is not one of --models (did you mean 'test'?)"),
        (["--price", "test=1/2", "--price", "test=3/4"], "test", "gives 'test' a price twice"),
        ([], "test,,openai:gpt-a", "--models takes models separated by commas"),
        ([], "test,test", "--models names test more than once"),
        ([], "a:b,a_b", "would share the results file"),
        (["--concurrency", "0"], "test", "--concurrency must be at least 1"),
        (["--expected", "nowhere.jsonl"], "test", "expected-outputs file nowhere.jsonl does not"),
        ([], "nosuch:model", "unknown model provider 'nosuch'"),
    ],
)
def test_bad_flags_exit_2_in_one_line_and_run_nothing(
    capsys: pytest.CaptureFixture[str], args: list[str], models: str, message: str
) -> None:
    assert run_eval(*args, models=models) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("agentshape: ") and message in err
    assert "Traceback" not in err
    assert not Path("evals").exists() or not any(Path("evals").glob("*.jsonl"))


def test_bad_expected_lines_are_all_named_by_file_and_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("expected.jsonl").write_text(
        '{"id": "x", "expected": {"score": 1}}\n'
        '{"id": "x", "expected": {"score": 2}}\n'
        '{"id": "nope", "expected": 1}\n'
        '{"id": "y", "expectd": 1}\n'
        "[1]\n"
        '{"id": "z", "expected": 1,}\n'
        '{"id": true, "expected": 1}\n'
    )
    assert run_eval("--expected", "expected.jsonl", models="test") == 2
    err = capsys.readouterr().err
    assert "expected.jsonl has 6 bad lines; nothing was evaluated:" in err
    assert "expected.jsonl:2: id 'x' is already the id of line 1" in err
    assert "expected.jsonl:3: id 'nope' is not the id of a task in the tasks file" in err
    assert (
        "expected.jsonl:4: expected: missing; expectd: unknown key (did you mean 'expected'?)"
        in err
    )
    assert 'expected.jsonl:5: a line is a JSON object: {"id": TASK_ID' in err
    assert "expected.jsonl:6: not valid JSON" in err
    assert "expected.jsonl:7: id: must be a string or an integer" in err
    assert not Path("evals").exists()


def test_a_foreign_line_in_a_results_file_is_named_by_file_and_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("evals").mkdir()
    Path("evals/test.jsonl").write_text('{"id": "x", "status": "completed"}\n')
    assert run_eval(models=f"{FAILS_ONCE},test") == 2
    err = capsys.readouterr().err
    assert err.startswith("agentshape: evals/test.jsonl has 1 bad line")
    assert list(Path("evals").iterdir()) == [Path("evals/test.jsonl")]  # nothing ran
    assert "evals/test.jsonl:1: not a results line of agentshape (usage: Field required)" in err


def test_out_must_be_a_directory(capsys: pytest.CaptureFixture[str]) -> None:
    Path("evals").write_text("a file")
    assert run_eval(models="test") == 2
    assert "--out evals is a file; give a directory" in capsys.readouterr().err


def test_a_results_file_that_is_an_input_or_not_a_plain_file_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("evals").mkdir()
    Path("evals/test.jsonl").write_text(Path("tasks.jsonl").read_text())
    assert (
        main(
            ["eval", "grader", "--tasks", "evals/test.jsonl", "--models", "test", "--out", "evals"]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "the results file evals/test.jsonl is the input file evals/test.jsonl" in err
    Path("evals/test.jsonl").unlink()
    Path("evals/test.jsonl").mkdir()
    assert run_eval(models="test") == 2
    assert "the results file evals/test.jsonl is a directory" in capsys.readouterr().err


def test_the_table_shows_agreement_with_expected_outputs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_eval(models="test") == 0
    rows = [json.loads(line) for line in Path("evals/test.jsonl").read_text().splitlines()]
    answer = next(row["result_data"] for row in rows if row["id"] == "x")
    wrong_score = {"title": answer["title"], "score": answer["score"] + 1}
    Path("expected.jsonl").write_text(json.dumps({"id": "x", "expected": wrong_score}) + "\n")
    capsys.readouterr()
    assert run_eval("--expected", "expected.jsonl", models="test") == 0  # nothing runs again
    row = capsys.readouterr().out.splitlines()[2].split()
    assert row[0] == "test" and row[-2:] == ["1/2", "(50%)"]


def test_an_eval_stopped_mid_write_resumes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_eval(models="test") == 0
    rows = Path("evals/test.jsonl").read_text().splitlines()
    torn = "\n".join(rows[:2]) + "\n" + rows[2][: len(rows[2]) // 2]
    Path("evals/test.jsonl").write_text(torn)
    capsys.readouterr()
    assert run_eval("--json", models="test") == 0
    out, err = capsys.readouterr()
    assert "test: 1 task(s) to run, 2 completed earlier in evals/test.jsonl" in err
    assert figures(out)["test"]["completed"] == 3
    assert len(Path("evals/test.jsonl").read_text().splitlines()) == 3


def test_the_eval_writes_its_report_beside_the_results_files(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_eval("--json") == 1
    printed = figures(capsys.readouterr().out)

    report = json.loads(Path("evals/eval.json").read_text())
    assert report["agent"] == "grader" and report["tasks"] == 3
    assert report["finished_at"].endswith("+00:00")
    # The same figures as printed, without the local results-file paths.
    for entry in report["models"]:
        assert {**entry, "results_file": printed[entry["model"]]["results_file"]} == printed[
            entry["model"]
        ]
    assert not any(p.name.endswith(".partial") for p in Path("evals").iterdir())
