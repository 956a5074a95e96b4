from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from agent_contracts import AgentConfig, Message, RunRequest
from agent_executor import Agent, FunctionModel, MemoryAnalytics
from agent_executor._cli import main
from agent_executor._cli.batch import TaskItem, read_done, read_tasks, run_tasks
from agent_executor._cli.commands import UsageError
from agent_executor._cli.progress import Progress
from agent_executor._providers.base import ModelTurnRequest
from tests.agent_executor.cli.test_main import AGENT_YML, GROQ_STYLE_KEY, PARAMS_YML
from tests.fake_llm import FakeLLM, status_error

pytestmark = pytest.mark.usefixtures("offline_model")


@pytest.fixture(autouse=True)
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name, text in (("grader", AGENT_YML), ("counter", PARAMS_YML)):
        (tmp_path / "agents" / name).mkdir(parents=True)
        (tmp_path / "agents" / name / "agent.yml").write_text(text)
    return tmp_path / "agents"


def write_tasks(*lines: Any, name: str = "tasks.jsonl") -> Path:
    path = Path(name)
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def results(path: str = "results.jsonl") -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def run_many(*args: str) -> int:
    return main(["run-many", *args, "--out", "results.jsonl", "--analytics-dir", "analytics"])


def test_runs_every_task_and_writes_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    write_tasks(
        {"id": "first", "task": "Grade essay 1."},
        json.dumps("Grade essay 2."),
        "Grade essay 3 (a plain text line).",
        "",
        "# a comment",
        {"task": "Grade essay 6."},
    )
    code = run_many("grader", "--tasks", "tasks.jsonl", "--concurrency", "3")
    out, err = capsys.readouterr()

    assert code == 0
    lines = results()
    assert sorted(str(line["id"]) for line in lines) == ["2", "3", "6", "first"]
    by_id = {line["id"]: line for line in lines}
    assert by_id[6]["line"] == 6 and by_id["first"]["line"] == 1
    for line in lines:
        assert line["status"] == "completed" and line["error"] is None
        assert set(line["result_data"]) == {"title", "score"}
        assert line["model"] == "test" and line["model_tier"] == 0
        assert line["usage"]["requests"] == 1 and line["attempts"] == 1
    assert out == "4 task(s): 4 completed, 0 failed; results in results.jsonl\n"
    assert err.rstrip().splitlines()[-1].startswith("4/4 done, ") and "elapsed" in err


def test_failed_tasks_exit_1_and_a_rerun_retries_only_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_tasks(
        {"id": "a", "task": "Count.", "parameters": {"count": 1}},
        {"id": "b", "task": "Count.", "parameters": {"count": "two"}},
        {"id": "c", "task": "Count.", "parameters": {"count": 3}},
    )
    assert run_many("counter", "--tasks", "tasks.jsonl") == 1
    out = capsys.readouterr().out
    assert "3 task(s): 2 completed, 1 failed (1 input_validation_failed)" in out
    failed = {line["id"]: line for line in results()}["b"]
    assert failed["status"] == "failed" and failed["result_data"] is None
    assert failed["error"]["type"] == "input_validation_failed"
    assert failed["error"]["issues"][0]["path"] == "$.count"
    assert failed["error"]["validation_errors"][0].startswith("$.count: ")

    write_tasks(
        {"id": "a", "task": "Count.", "parameters": {"count": 1}},
        {"id": "b", "task": "Count.", "parameters": {"count": 2}},
        {"id": "c", "task": "Count.", "parameters": {"count": 3}},
    )
    assert run_many("counter", "--tasks", "tasks.jsonl") == 0
    out, err = capsys.readouterr()
    assert "skipping 2 task(s) already completed in results.jsonl" in err
    assert "3 task(s): 1 completed, 0 failed, 2 skipped (completed earlier)" in out
    lines = results()
    assert sorted(line["id"] for line in lines) == ["a", "b", "c"]
    assert all(line["status"] == "completed" for line in lines)


def test_a_rerun_with_everything_done_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    write_tasks("One.", "Two.")
    assert run_many("grader", "--tasks", "tasks.jsonl") == 0
    before = Path("results.jsonl").read_text()
    assert run_many("grader", "--tasks", "tasks.jsonl") == 0
    assert Path("results.jsonl").read_text() == before
    assert "2 skipped" in capsys.readouterr().out


def test_a_torn_last_line_is_dropped_and_its_task_rerun(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_tasks({"id": "x", "task": "One."}, {"id": "y", "task": "Two."})
    done = {"id": "x", "status": "completed", "result_data": {"title": "t", "score": 1}}
    Path("results.jsonl").write_text(json.dumps(done) + '\n{"id": "y", "status": "compl')
    assert run_many("grader", "--tasks", "tasks.jsonl") == 0
    lines = results()
    assert [line["id"] for line in lines] == ["x", "y"]
    assert lines[0] == done and lines[1]["status"] == "completed"


def test_shared_params_and_per_task_params(capsys: pytest.CaptureFixture[str]) -> None:
    write_tasks(
        {"id": 1, "task": "Count."}, {"id": 2, "task": "Count.", "parameters": {"count": "x"}}
    )
    assert run_many("counter", "--tasks", "tasks.jsonl", "--param", "count=3") == 1
    status = {line["id"]: line["status"] for line in results()}
    assert status == {1: "completed", 2: "failed"}  # the task's own value wins


def test_bad_lines_are_all_reported_and_nothing_runs(capsys: pytest.CaptureFixture[str]) -> None:
    write_tasks(
        {"id": "a", "task": "Fine."},
        {"id": "a", "task": "Same id."},
        {"task": ""},
        {"tsk": "typo"},
        "[1, 2]",
        '{"task": "x",}',
        {"id": True, "task": "bool id"},
        {"task": "x", "parameters": [1]},
    )
    code = run_many("grader", "--tasks", "tasks.jsonl")
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert not Path("results.jsonl").exists()
    assert "tasks.jsonl has 7 bad lines; nothing was run:" in err
    assert "tasks.jsonl:2: id 'a' is already the id of line 1" in err
    assert "tasks.jsonl:3: task: String should have at least 1 character" in err
    assert "tasks.jsonl:4: task: Field required; tsk: unknown key (did you mean 'task'?)" in err
    assert "tasks.jsonl:5: a task line is a JSON object, a JSON string or plain text" in err
    assert "tasks.jsonl:6: not valid JSON: Expecting property name" in err
    assert "tasks.jsonl:7: id: must be a string or an integer" in err
    assert "tasks.jsonl:8: parameters: Input should be a valid dictionary" in err
    assert "tasks.jsonl:1:" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tasks", "tasks.jsonl", "--concurrency", "0"], "--concurrency must be at least 1"),
        (["--tasks", "nowhere.jsonl"], "tasks file nowhere.jsonl does not exist"),
        (["--tasks", "tasks.jsonl", "--max-retries", "-2"], "--max-retries"),
        (["--tasks", "tasks.jsonl", "--schema", "x"], "has its own output contract"),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    write_tasks("One.")
    assert run_many("grader", *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentshape: ") and message in err
    assert not Path("results.jsonl").exists()


def test_out_must_not_be_the_tasks_file(capsys: pytest.CaptureFixture[str]) -> None:
    write_tasks("One.", name="results.jsonl")
    assert run_many("grader", "--tasks", "results.jsonl") == 2
    assert "--out must not be the tasks file" in capsys.readouterr().err
    assert Path("results.jsonl").read_text() == "One.\n"


def test_an_unwritable_out_file_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    write_tasks("One.")
    Path("blocker").write_text("a file, not a directory")
    code = main(["run-many", "grader", "--tasks", "tasks.jsonl", "--out", "blocker/r.jsonl"])
    err = capsys.readouterr().err
    assert code == 2
    assert "agentshape: blocker" in err and "Traceback" not in err


def test_required_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run-many", "grader", "--out", "r.jsonl"]) == 2
    assert "--tasks" in capsys.readouterr().err


def test_read_tasks_defaults(tmp_path: Path) -> None:
    path = write_tasks({"task": "A.", "parameters": {"k": [1]}}, json.dumps("B."), "C.")
    assert read_tasks(path) == [
        TaskItem(id=1, line=1, task="A.", parameters={"k": [1]}),
        TaskItem(id=2, line=2, task="B.", parameters={}),
        TaskItem(id=3, line=3, task="C.", parameters={}),
    ]
    with pytest.raises(UsageError, match=r"tasks.jsonl:2: id '1' is already the id of line 1"):
        read_tasks(write_tasks({"id": 1, "task": "A."}, {"id": "1", "task": "B."}))


def test_read_tasks_caps_the_report(tmp_path: Path) -> None:
    path = write_tasks(*["[0]"] * 25)
    with pytest.raises(UsageError) as caught:
        read_tasks(path)
    message = str(caught.value)
    assert "25 bad lines" in message and "... and 5 more bad lines" in message
    assert message.count("tasks.jsonl:") == 20


def test_read_done_keeps_other_lines_and_drops_reruns(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    lines = [
        {"id": "a", "status": "completed"},
        {"id": "b", "status": "failed"},
        {"id": "z", "status": "failed"},  # not in this batch: kept
        {"note": "no id"},
    ]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n")
    pending = [TaskItem(id=k, line=1, task="t", parameters={}) for k in ("a", "b", "c")]
    done, dropped = read_done(out, pending)
    assert done == {"a"} and dropped == 1
    kept = out.read_text().splitlines()
    assert [json.loads(x) for x in kept[:3]] == [lines[0], lines[2], lines[3]]
    assert kept[3] == "not json"
    assert read_done(tmp_path / "missing.jsonl", pending) == (set(), 0)


async def test_run_tasks_writes_results_as_they_finish_with_bounded_concurrency() -> None:
    in_flight = 0
    most = 0
    last_done = asyncio.Event()

    async def answer(messages: list[Message], request: ModelTurnRequest) -> dict[str, Any]:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        task = messages[-1].content
        if task == "slow":
            await last_done.wait()  # finishes only after the last task did
        else:
            await asyncio.sleep(0)
        in_flight -= 1
        if task == "t5":
            last_done.set()
        return {"title": task, "score": 1}

    config = AgentConfig.model_validate(
        {"id": "g", "system_prompt": "Grade.", "output_schema": json.loads(SCHEMA_JSON)}
    )
    agent: Agent[Any] = Agent(config, analytics=MemoryAnalytics(), env={})
    items = [
        TaskItem(id=i, line=i, task=t, parameters={})
        for i, t in enumerate(["slow", "t2", "t3", "t4", "t5"], start=1)
    ]
    sink = io.StringIO()
    progress = Progress(len(items), io.StringIO(), interactive=False)
    failed = await run_tasks(
        agent,
        items,
        concurrency=2,
        requests=[RunRequest(task=item.task) for item in items],
        model=FunctionModel(answer),
        escalate=True,
        sink=sink,
        progress=progress,
    )
    order = [json.loads(line)["result_data"]["title"] for line in sink.getvalue().splitlines()]
    assert sum(failed.values()) == 0 and progress.done == 5
    assert order == ["t2", "t3", "t4", "t5", "slow"]
    assert most == 2


SCHEMA_JSON = json.dumps(
    {
        "type": "object",
        "required": ["title", "score"],
        "properties": {"title": {"type": "string"}, "score": {"type": "integer"}},
    }
)


def test_a_task_may_hold_a_line_separator_character(capsys: pytest.CaptureFixture[str]) -> None:
    Path("tasks.jsonl").write_text('{"id": "u", "task": "one\u2028two"}\n', encoding="utf-8")
    assert read_tasks(Path("tasks.jsonl")) == [
        TaskItem(id="u", line=1, task="one\u2028two", parameters={})
    ]


def test_an_out_file_that_is_not_text_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    write_tasks("One.")
    Path("results.jsonl").write_bytes(b"\xff\xfe binary")
    assert run_many("grader", "--tasks", "tasks.jsonl") == 2
    assert "--out results.jsonl is not UTF-8 text" in capsys.readouterr().err
    assert Path("results.jsonl").read_bytes() == b"\xff\xfe binary"


def test_the_results_file_never_holds_the_key_a_401_quotes(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", GROQ_STYLE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    fake_llm.respond_always(status_error(401, f"bad key {GROQ_STYLE_KEY}"))
    write_tasks({"task": "one"}, {"task": "two"})
    assert run_many("grader", "--tasks", "tasks.jsonl", "--model", "openai:gpt-test") == 1
    capsys.readouterr()
    lines = results()
    messages = [line["error"]["message"] for line in lines]
    assert len(messages) == 2
    assert all(m.startswith("openai 401:") and "bad key [REDACTED]" in m for m in messages)
    assert GROQ_STYLE_KEY not in Path("results.jsonl").read_text()


def test_batch_with_the_test_model_writes_live_rows_plus_batch_id(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_tasks({"id": "a", "task": "Grade essay 1."}, {"id": "b", "task": "Grade essay 2."})
    assert run_many("grader", "--tasks", "tasks.jsonl", "--batch") == 0
    captured = capsys.readouterr()
    assert "2 completed, 0 failed; 1 batch round(s); results in results.jsonl" in captured.out
    assert "batch test-batch-1 (round 1): 2/2 done, ended" in captured.err
    rows = results()
    assert [(row["id"], row["status"], row["batch_id"]) for row in rows] == [
        ("a", "completed", "test-batch-1"),
        ("b", "completed", "test-batch-1"),
    ]
    live_keys = set(results()[0]) - {"batch_id"}
    Path("results.jsonl").unlink()
    assert run_many("grader", "--tasks", "tasks.jsonl") == 0
    assert set(results()[0]) == live_keys
    # The analytics say which runs went through a batch: 2 of the 4 logged.
    capsys.readouterr()
    assert main(["analytics", "analytics"]) == 0
    table = capsys.readouterr().out
    assert "Runs through a provider batch" in table
    row = next(
        line
        for line in table.splitlines()[table.splitlines().index("Runs through a provider batch") :]
        if line.startswith("grader")
    )
    assert row.split() == ["grader", "2", "4"]
    assert main(["analytics", "analytics", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agents"][0]["batched"] == 2


def test_batch_through_openai_records_its_batches_beside_out_and_skips_done_tasks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.agent_executor.test_batching import grader
    from tests.fake_batches import FakeBatches

    fake = FakeBatches(grader, polls_to_end=2)
    try:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
        write_tasks({"id": "one", "task": "grade ok 1"}, {"id": "two", "task": "grade bad 2"})
        args = ("grader", "--tasks", "tasks.jsonl", "--model", "openai:gpt-test")
        assert run_many(*args, "--batch", "--batch-poll", "0") == 0
        err = capsys.readouterr().err
        first, second = fake.batches
        assert f"batch {first.id} (round 1): 0/2 done" in err
        assert f"batch {second.id} (round 2): 1/1 done, ended" in err
        rows = {row["id"]: row for row in results()}
        assert rows["one"]["batch_id"] == first.id and rows["two"]["batch_id"] == second.id
        assert rows["two"]["retries"] == 1 and rows["two"]["usage"]["requests"] == 2
        state = [
            json.loads(line) for line in Path("results.jsonl.batches").read_text().splitlines()
        ]
        assert [entry["batch_id"] for entry in state] == [first.id, second.id]
        # A rerun skips what is done and sends nothing.
        assert run_many(*args, "--batch", "--batch-poll", "0") == 0
        assert len(fake.batches) == 2
        assert "skipping 2 task(s) already completed" in capsys.readouterr().err
    finally:
        fake.close()


def test_batch_refuses_an_agent_with_input_tools_in_one_line(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (fleet / "reader").mkdir()
    text = AGENT_YML.replace("id: grader", "id: reader").replace(
        "output:", "tools: [fs:read]\noutput:"
    )
    (fleet / "reader" / "agent.yml").write_text(text)
    write_tasks({"task": "read it"})
    assert run_many("reader", "--tasks", "tasks.jsonl", "--batch") != 0
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if not line.startswith("note: using the offline test model")]
    assert len(errors) == 1 and "--batch cannot run agents with input tools" in errors[0]
