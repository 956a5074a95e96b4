"""The command line against hostile and careless input: what a user sees, class by class.

Text UTF-8 cannot encode, JSON nested or numbered past what can be read, special files, two
writers on one results file: each ends in one ``agentshape: ...`` line and exit 2, or in a
result that is written and kept, never in a traceback, a hang or lost output.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_executor._cli import main
from agent_executor._cli.tasks import results_lock
from tests.agent_executor.cli.test_main import AGENT_YML
from tests.fake_llm import FakeLLM, openai_tool_call

HALF_EMOJI = "half \ud83d"
"""A lone surrogate: legal in JSON text, not encodable as UTF-8."""
DEEP = "[" * 5000 + "]" * 5000
HUGE = "9" * 5000


@pytest.fixture(autouse=True)
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agents" / "grader").mkdir(parents=True)
    (tmp_path / "agents" / "grader" / "agent.yml").write_text(AGENT_YML)
    return tmp_path / "agents"


@pytest.fixture
def surrogate_model(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    """An OpenAI-compatible model that answers with a lone surrogate in its ``title``."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    arguments = '{"title": "half \\ud83d", "score": 2}'  # the JSON escape, as a model sends it
    fake_llm.respond_always(openai_tool_call("submit_result", arguments))
    return fake_llm


def cli(*args: str) -> int:
    return main([*args, "--analytics-dir", "analytics"])


def one_error_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("agentshape")]
    assert len(lines) == 1, err
    return lines[0]


def logged_events() -> list[dict[str, object]]:
    return [
        json.loads(line)
        for path in Path("analytics").glob("*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def finishes(work: Callable[[], int], seconds: float = 30) -> int:
    """Run ``work`` in a daemon thread so that a hang fails the test instead of freezing it."""
    outcome: list[int] = []
    thread = threading.Thread(target=lambda: outcome.append(work()), daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert outcome, "the command hung"
    return outcome[0]


# Class 2: text that is legal JSON but not encodable UTF-8 ---------------------------------------


@pytest.mark.usefixtures("surrogate_model")
def test_run_prints_a_lone_surrogate_as_its_escape(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli("run", "grader", "--task", "Grade.", "--model", "openai:gpt-test")
    out, err = capsys.readouterr()

    assert code == 0, err
    assert '"title": "half \\ud83d"' in out
    assert [e["event"] for e in logged_events()][-1] == "run_completed"


@pytest.mark.usefixtures("surrogate_model")
def test_run_json_is_valid_json_that_reads_back_the_same_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = cli("run", "grader", "--task", "Grade.", "--model", "openai:gpt-test", "--json")
    out, _ = capsys.readouterr()

    assert code == 0
    out.encode("utf-8")
    assert json.loads(out)["result_data"] == {"title": HALF_EMOJI, "score": 2}


@pytest.mark.usefixtures("surrogate_model")
def test_run_many_keeps_every_result_and_the_analytics_sink_writes_every_event(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("tasks.jsonl").write_text("One.\nTwo.\nThree.\n")
    code = cli(
        "run-many", "grader", "--tasks", "tasks.jsonl", "--out", "results.jsonl",
        "--model", "openai:gpt-test",
    )  # fmt: skip
    out, err = capsys.readouterr()

    assert code == 0, err
    assert "3 task(s): 3 completed, 0 failed" in out
    lines = Path("results.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["result_data"]["title"] for line in lines] == [HALF_EMOJI] * 3
    ended = [e for e in logged_events() if e["event"] == "run_completed"]
    assert len(ended) == 3


def test_a_task_given_as_raw_bytes_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    task = os.fsdecode(b"caf\xe9 au lait")  # Latin-1 bytes on a UTF-8 command line
    code = cli("run", "grader", "--task", task, "--model", "test")
    line = one_error_line(capsys.readouterr().err)

    assert code == 2
    assert line == "agentshape: --task is not UTF-8 text (byte 0xe9 at character 4)"


# Class 5: deep nesting and huge integers, wherever a user gives JSON or YAML -------------------


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (DEEP, "nests deeper than 200 levels"),
        ('{"maximum": ' + HUGE + "}", "Exceeds the limit (4300 digits)"),
        ('{"maximum": NaN}', "NaN is not a JSON number"),
    ],
    ids=["deep", "huge-integer", "nan"],
)
@pytest.mark.parametrize("suffix", [".json", ".yml"])
def test_a_schema_file_past_the_bounds_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], content: str, problem: str, suffix: str
) -> None:
    if suffix == ".yml" and "NaN" in content:
        content = '{"maximum": .nan}'
        problem = "the schema is not JSON: Out of range float values"
    Path(f"schema{suffix}").write_text(content)
    agent = Path("agents/grader/agent.yml")
    agent.write_text(AGENT_YML.split("output:")[0])
    code = cli("run", "grader", "--task", "Go.", "--schema-file", f"schema{suffix}")
    line = one_error_line(capsys.readouterr().err)

    assert code == 2
    assert problem in line


@pytest.mark.parametrize(("content", "problem"), [(DEEP, "nests deeper"), (HUGE, "4300 digits")])
def test_a_validate_file_past_the_bounds_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], content: str, problem: str
) -> None:
    Path("out.json").write_text(content)
    code = main(["validate", "grader", "out.json"])
    line = one_error_line(capsys.readouterr().err)

    assert code == 2
    assert line.startswith("agentshape: out.json is not usable JSON:") and problem in line


@pytest.mark.parametrize("value", [DEEP, HUGE])
def test_a_param_past_the_bounds_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code = cli("run", "grader", "--task", "Go.", "--model", "test", "--param", f"x={value}")
    line = one_error_line(capsys.readouterr().err)

    assert code == 2
    assert line.startswith("agentshape: --param x: not usable JSON:")


def test_task_lines_past_the_bounds_are_reported_by_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("tasks.jsonl").write_text(
        f'Fine.\n{{"task": "x", "parameters": {{"a": {DEEP}}}}}\n{{"task": {HUGE}}}\n'
    )
    code = cli("run-many", "grader", "--tasks", "tasks.jsonl", "--out", "r.jsonl")
    err = capsys.readouterr().err

    assert code == 2 and "Traceback" not in err
    assert "tasks.jsonl:2: not usable JSON: it nests deeper than 200 levels" in err
    assert "tasks.jsonl:3: not usable JSON: Exceeds the limit (4300 digits)" in err
    assert not Path("r.jsonl").exists()


def test_an_agent_yml_past_the_bounds_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("agents/grader/agent.yml").write_text(AGENT_YML + f"metadata: {DEEP}\n")
    code = cli("run", "grader", "--task", "Go.", "--model", "test")
    line = one_error_line(capsys.readouterr().err)

    assert code == 2
    assert line.endswith("agent.yml: the document nests deeper than 200 levels")


def test_analytics_skips_and_counts_a_deep_or_huge_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli("run", "grader", "--task", "Go.", "--model", "test") == 0
    [day] = Path("analytics").glob("*.jsonl")
    with day.open("a") as log:
        log.write(DEEP + "\n" + '{"type": "run_started", "n": ' + HUGE + "}\n")
    capsys.readouterr()
    code = main(["analytics", "analytics", "--json"])
    out, err = capsys.readouterr()

    assert code == 0, err
    review = json.loads(out)
    assert review["corrupt_lines"] == 2
    assert review["agents"][0]["runs"] == 1


# Class 8: two run-many processes on one results file --------------------------------------------


def test_a_second_writer_on_one_results_file_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("tasks.jsonl").write_text("One.\n")
    Path("results.jsonl").write_text('{"id": 7, "status": "completed"}\n')
    with results_lock(Path("results.jsonl")):  # another run-many holds it
        code = cli(
            "run-many", "grader", "--tasks", "tasks.jsonl", "--out", "results.jsonl",
            "--model", "test",
        )  # fmt: skip
    line = one_error_line(capsys.readouterr().err)

    assert code == 2
    assert line.startswith(
        "agentshape: --out results.jsonl is being written by another agentshape run-many"
    )
    assert Path("results.jsonl").read_text() == '{"id": 7, "status": "completed"}\n'
    code = cli(
        "run-many", "grader", "--tasks", "tasks.jsonl", "--out", "results.jsonl", "--model", "test"
    )
    assert code == 0  # once the first one is done, the lock is free
    assert len(Path("results.jsonl").read_text().splitlines()) == 2


# Class 9: special files ------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["/dev/full", "/dev/null"])
def test_out_to_a_device_is_refused(capsys: pytest.CaptureFixture[str], device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"{device} does not exist here")
    Path("tasks.jsonl").write_text("One.\n")
    code = cli("run-many", "grader", "--tasks", "tasks.jsonl", "--out", device, "--model", "test")
    line = one_error_line(capsys.readouterr().err)

    assert code == 2
    assert line == (
        f"agentshape: --out {device} is not a regular file (a device, FIFO or socket); "
        "give a results file of its own"
    )


def test_out_hard_linked_to_the_tasks_file_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    Path("tasks.jsonl").write_text("One.\n")
    os.link("tasks.jsonl", "results.jsonl")
    code = cli("run-many", "grader", "--tasks", "tasks.jsonl", "--out", "results.jsonl")
    line = one_error_line(capsys.readouterr().err)

    assert code == 2
    assert line == "agentshape: --out must not be the tasks file"
    assert Path("tasks.jsonl").read_text() == "One.\n"


def test_dev_zero_as_an_input_file_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("/dev/zero does not exist here")
    code = finishes(lambda: main(["validate", "grader", "/dev/zero"]))
    line = one_error_line(capsys.readouterr().err)

    assert code == 2
    assert line == (
        "agentshape: cannot read output file /dev/zero: "
        "not a regular file (a FIFO, device or socket), so not read"
    )


def test_a_fifo_named_agent_yml_does_not_hang_list(capsys: pytest.CaptureFixture[str]) -> None:
    (Path("agents") / "piped").mkdir()
    os.mkfifo(Path("agents") / "piped" / "agent.yml")
    code = finishes(lambda: main(["list", "agents"]))
    out, err = capsys.readouterr()

    assert code == 1
    assert "Traceback" not in err
    assert "not a regular file" in out + err


def test_an_input_file_over_the_cap_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with open("big.json", "wb") as handle:
        handle.truncate(16 * 1024 * 1024 + 1)  # sparse: no disk needed
    code = main(["validate", "grader", "big.json"])
    line = one_error_line(capsys.readouterr().err)

    assert code == 2
    assert (
        line
        == "agentshape: cannot read output file big.json: larger than the 16 MiB cap, so not read"
    )


def test_a_fifo_among_the_analytics_logs_does_not_hang_analytics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli("run", "grader", "--task", "Go.", "--model", "test") == 0
    os.mkfifo(Path("analytics") / "events-2000-01-01.jsonl")
    capsys.readouterr()
    code = finishes(lambda: main(["analytics", "analytics", "--json"]))
    out, err = capsys.readouterr()

    assert code == 0, err
    assert json.loads(out)["agents"][0]["runs"] == 1
