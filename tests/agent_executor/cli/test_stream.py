"""``agentshape run --stream``, run as a user runs it: the final stdout and exit code are those of
the same run without ``--stream``; the growing output and progress appear on stderr (piped), in
JSON lines (``--stream --json``) or in place on a terminal (a pty read by a terminal emulator)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import NamedTuple

import pyte
import pytest
from pydantic import JsonValue

from agent_contracts import Message, RunRequest
from agent_core._json_text import dump_json
from agent_executor import Agent, FunctionModel
from agent_executor._cli import main
from agent_executor._cli.stream import run_streamed
from agent_executor._providers.base import ModelTurn, ModelTurnRequest
from agent_executor._providers.function import FunctionReply
from agent_executor._providers.streaming import DeltaSink, TurnDelta
from tests.fake_llm import FakeLLM, delayed, openai_text, openai_tool_call

pytestmark = pytest.mark.usefixtures("offline_model")

GRADER_YML = """\
id: grader
system_prompt: You grade essays.
output:
  schema:
    type: object
    required: [title, score, tags]
    properties:
      title: { type: string }
      score: { type: integer, minimum: 0 }
      tags: { type: array, items: { type: string } }
    additionalProperties: false
"""
TIERED_YML = GRADER_YML.replace(
    "system_prompt:",
    "llm:\n  model: test:fail_first=invalid_arguments+invalid_arguments\n  tiers: [test]\n"
    "system_prompt:",
)
CHATTER_YML = "id: chatter\nsystem_prompt: You chat.\n"
READER_YML = GRADER_YML.replace("id: grader", "id: reader\ntools: [fs:read]")

RESCUED = "test:fail_first=invalid_arguments"
FAILING = "test:fail_first=text+text"

# (agent, model, the exit code both runs end with)
CASES = [
    ("grader", "test", 0),
    ("grader", RESCUED, 0),
    ("grader", FAILING, 1),
    ("tiered", "", 0),  # fails twice on tier 0, escalates, completes on tier 1
    ("chatter", "test", 0),
]


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    agents = tmp_path / "agents"
    for name, text in [
        ("grader", GRADER_YML),
        ("tiered", TIERED_YML.replace("id: grader", "id: tiered")),
        ("chatter", CHATTER_YML),
        ("reader", READER_YML),
    ]:
        (agents / name).mkdir(parents=True)
        (agents / name / "agent.yml").write_text(text)
    return agents


def run_cli(
    fleet: Path, capsys: pytest.CaptureFixture[str], agent: str, model: str, *flags: str
) -> tuple[int, str, str]:
    models = ["--model", model] if model else []
    analytics = str(fleet.parent / "analytics")
    argv = ["run", agent, "--task", "Grade it.", *models, *flags]
    code = main([*argv, "--agents-dir", str(fleet), "--analytics-dir", analytics])
    out, err = capsys.readouterr()
    return code, out, err


def same_run(text: str) -> str:
    """A pretty result with its duration (which differs from run to run) blanked."""
    return re.sub(r", \d+ ms$", ", N ms", text, flags=re.MULTILINE)


def same_result(value: JsonValue) -> JsonValue:
    """A JSON result without what differs from run to run: ids and times."""
    if isinstance(value, dict):
        volatile = {"run_id", "duration_ms", "latency_ms"}
        return {k: same_result(v) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [same_result(item) for item in value]
    return value


def is_prefix(partial: JsonValue, final: JsonValue) -> bool:
    """Whether a partial value is a prefix of the final one (strings grow at their end)."""
    if isinstance(partial, str) and isinstance(final, str):
        return final.startswith(partial)
    if isinstance(partial, dict) and isinstance(final, dict):
        return all(k in final and is_prefix(v, final[k]) for k, v in partial.items())
    if isinstance(partial, list) and isinstance(final, list):
        return len(partial) <= len(final) and all(map(is_prefix, partial, final))
    return partial == final


def json_lines(text: str) -> list[dict[str, JsonValue]]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize(("agent", "model", "code"), CASES)
def test_stream_ends_with_the_same_stdout_and_exit_code(
    fleet: Path, capsys: pytest.CaptureFixture[str], agent: str, model: str, code: int
) -> None:
    plain = run_cli(fleet, capsys, agent, model)
    streamed = run_cli(fleet, capsys, agent, model, "--stream")
    assert plain[0] == streamed[0] == code
    assert same_run(streamed[1]) == same_run(plain[1])
    assert plain[1].startswith(("completed: ", "failed: "))


@pytest.mark.parametrize(("agent", "model", "code"), CASES)
def test_stream_json_prints_every_event_and_ends_with_the_json_result(
    fleet: Path, capsys: pytest.CaptureFixture[str], agent: str, model: str, code: int
) -> None:
    plain = run_cli(fleet, capsys, agent, model, "--json")
    streamed = run_cli(fleet, capsys, agent, model, "--stream", "--json")
    assert plain[0] == streamed[0] == code
    events = json_lines(streamed[1])
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_finished"
    assert [e["type"] for e in events].count("run_finished") == 1
    assert same_result(events[-1]["result"]) == same_result(json.loads(plain[1]))


def test_piped_progress_shows_partial_outputs_and_the_retry_on_stderr(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(fleet, capsys, "grader", RESCUED, "--stream")
    final = json.loads(out[out.index("{") :])
    assert code == 0
    lines = err.splitlines()
    retry = lines.index(
        "retry: attempt 1 was rejected (output_schema_validation_failed: "
        "$: 'title' is a required property); asking again"
    )
    partials = [json.loads(line.removeprefix("partial: ")) for line in lines[retry + 1 :]]
    assert partials and all(is_prefix(partial, final) for partial in partials)
    assert any(line.startswith("partial: ") for line in lines[:retry])  # attempt 1's


def test_piped_progress_of_a_free_text_run_is_its_text(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(fleet, capsys, "chatter", "test", "--stream")
    answer = out.splitlines()[-1]
    assert code == 0 and answer == "This is the test model's answer."
    assert err.splitlines()[-1] == answer


def test_json_lines_partials_are_prefixes_of_their_attempts_output(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(fleet, capsys, "grader", RESCUED, "--stream", "--json")
    events = json_lines(out)
    result = events[-1]["result"]
    assert code == 0 and isinstance(result, dict)
    attempts = result["attempts"]
    assert isinstance(attempts, list) and len(attempts) == 2
    retry = [e for e in events if e["type"] == "retry_started"]
    assert retry == [
        {
            "type": "retry_started",
            "attempt": 1,
            "reason": "output_schema_validation_failed",
            "errors": ["$: 'title' is a required property"],
        }
    ]
    partials = [e for e in events if e["type"] == "partial_output"]
    assert {e["attempt"] for e in partials} == {1, 2}
    for event in partials:
        attempt = attempts[int(str(event["attempt"])) - 1]
        assert isinstance(attempt, dict)
        assert is_prefix(event["data"], attempt["parsed"])


def test_a_free_text_run_streams_its_text_deltas(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run_cli(fleet, capsys, "chatter", "test", "--stream", "--json")
    events = json_lines(out)
    text = "".join(str(e["text"]) for e in events if e["type"] == "text_delta")
    assert len([e for e in events if e["type"] == "text_delta"]) > 1
    assert text == "This is the test model's answer."


def test_input_tool_calls_show_as_status_lines(
    fleet: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    workspace = fleet.parent / "work"
    workspace.mkdir()
    (workspace / "essay.txt").write_text("An essay.")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-for-the-fake")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    answer = {"title": "Essay", "score": 3, "tags": ["short"]}
    for flags in [(), ("--json",)]:
        fake_llm.respond(
            openai_tool_call("fs_read", {"path": "essay.txt"}, call_id="c1"),
            openai_tool_call("submit_result", answer, call_id="c2"),
            openai_tool_call("fs_read", {"path": "missing.txt"}, call_id="c1"),
            openai_tool_call("submit_result", answer, call_id="c2"),
        )
        args = ("--workspace", str(workspace), "--stream", *flags)
        for _ in range(2):  # a file that is there, then one that is not
            code, out, err = run_cli(fleet, capsys, "reader", "openai:gpt-test", *args)
            assert code == 0
            if flags:
                kinds = [e["type"] for e in json_lines(out)]
                assert kinds.index("tool_call_started") < kinds.index("tool_call_finished")
            elif 'tool: fs:read {"path": "essay.txt"}' in err:
                assert "tool: fs:read answered (" in err
            else:
                assert 'tool: fs:read {"path": "missing.txt"}' in err
                assert "tool: fs:read failed: " in err


KEY = "gsk_" + "Qw3rTy8uIoP4aSdF" * 3


class PiecewiseModel(FunctionModel):
    """A function model that streams its reply three characters at a time, as an SDK would."""

    async def stream(self, turn: ModelTurnRequest, on_delta: DeltaSink) -> ModelTurn:
        reply = await self.request(turn)
        for start in range(0, len(reply.text), 3):
            on_delta(TurnDelta(text=reply.text[start : start + 3]))
        for index, call in enumerate(reply.tool_calls):
            raw = call.raw_arguments
            for start in range(0, len(raw), 3):
                piece = raw[start : start + 3]
                on_delta(TurnDelta(call_index=index, name=call.name, arguments=piece))
        return reply


def echo_key(messages: list[Message], request: ModelTurnRequest) -> FunctionReply:
    if request.tools:
        return {"title": f"the key is {KEY} here", "score": 1, "tags": [KEY]}
    return f"Your key is {KEY}, keep it."


@pytest.mark.parametrize("json_lines_mode", [False, True])
@pytest.mark.parametrize("schema", [True, False])
def test_a_secret_streamed_in_pieces_never_shows(json_lines_mode: bool, schema: bool) -> None:
    contract: dict[str, JsonValue] = json.loads(dump_json({"type": "object"}))
    agent = Agent(system_prompt="Echo.", output_schema=contract if schema else None)
    out, err = io.StringIO(), io.StringIO()
    result = run_streamed(
        agent,
        RunRequest(task="Echo the key."),
        model=PiecewiseModel(echo_key),
        escalate=False,
        json_lines=json_lines_mode,
        out=out,
        err=err,
    )
    assert result.ok
    shown = out.getvalue() + err.getvalue()
    if json_lines_mode:  # a reader joins the text pieces
        events = json_lines(out.getvalue())
        shown += "".join(str(e["text"]) for e in events if e["type"] == "text_delta")
    assert "[REDACTED]" in shown
    assert "the key is " in shown or "Your key is " in shown  # the stream showed the rest
    leaked = [n for n in range(8, len(KEY) + 1) if KEY[:n] in shown]
    assert leaked == []


@pytest.mark.parametrize("flags", [(), ("--json",)])
@pytest.mark.parametrize("agent", ["grader", "chatter"])
def test_a_key_a_real_provider_streams_back_never_shows(
    fleet: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agent: str,
    flags: tuple[str, ...],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-for-the-fake")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    if agent == "grader":
        answer = {"title": f"the key {KEY} here", "score": 1, "tags": [KEY]}
        fake_llm.respond(openai_tool_call("submit_result", answer))
    else:
        fake_llm.respond(openai_text(f"Your key is {KEY}, keep it."))
    code, out, err = run_cli(fleet, capsys, agent, "openai:gpt-test", "--stream", *flags)
    assert code == 0
    shown = out + err
    if flags:  # a reader joins the text pieces
        shown += "".join(str(e["text"]) for e in json_lines(out) if e["type"] == "text_delta")
    assert "[REDACTED]" in out
    assert [n for n in range(8, len(KEY) + 1) if KEY[:n] in shown] == []


# On a terminal ---------------------------------------------------------------------------------

COLUMNS, ROWS = 200, 50


class Shown(NamedTuple):
    code: int
    raw: bytes
    """All the terminal got."""
    screen: list[str]
    """What the terminal shows at the end (durations blanked, trailing blank lines dropped)."""
    other: str
    """What the stream that is not on the terminal got."""


def on_terminal(fleet: Path, argv: list[str], *, tty: str) -> Shown:
    """Run the command with ``tty`` (stdout, stderr or both) on a pty, the other in a file."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    command = [str(Path(sys.executable).parent / "agentshape"), *argv]
    env = {**os.environ, "AGENTSHAPE_ANALYTICS_DIR": str(fleet.parent / "analytics")}
    other = fleet.parent / "other.txt"
    with other.open("wb") as file:
        process = subprocess.Popen(
            command,
            cwd=fleet.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=slave if tty in ("stdout", "both") else file,
            stderr=slave if tty in ("stderr", "both") else file,
        )
    os.close(slave)
    raw = b""
    try:
        while select.select([master], [], [], 60)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the command ended and closed the terminal
                break
            if not chunk:
                break
            raw += chunk
    finally:
        os.close(master)
    code = process.wait(timeout=60)
    screen = pyte.Screen(COLUMNS, ROWS)
    pyte.ByteStream(screen).feed(raw)
    lines = [same_run(line.rstrip()) for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return Shown(code, raw, lines, other.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("agent", "model", "code"), [CASES[1], CASES[2], CASES[4]])
def test_on_a_terminal_the_screen_ends_as_without_stream(
    fleet: Path, capsys: pytest.CaptureFixture[str], agent: str, model: str, code: int
) -> None:
    argv = ["run", agent, "--task", "Grade it.", "--model", model]
    plain = on_terminal(fleet, argv, tty="stdout")
    streamed = on_terminal(fleet, [*argv, "--stream"], tty="stdout")
    assert plain.code == streamed.code == code
    assert streamed.screen == plain.screen
    raw = streamed.raw
    assert b"\x1b[J" in raw  # the growing output was drawn on the terminal, then erased
    if agent == "grader" and model == RESCUED:
        _, out, _ = run_cli(fleet, capsys, agent, model, "--stream", "--json")
        first = next(e for e in json_lines(out) if e["type"] == "partial_output")
        drawn = dump_json(first["data"], indent=2).splitlines()[1].encode()
        assert drawn in raw and drawn.decode() not in "\n".join(streamed.screen)


def test_on_a_terminal_status_lines_stay_above_the_final_output(fleet: Path) -> None:
    argv = ["run", "grader", "--task", "Grade it.", "--model", RESCUED]
    plain = on_terminal(fleet, argv, tty="both").screen
    streamed = on_terminal(fleet, [*argv, "--stream"], tty="both").screen
    retry = [line for line in streamed if line.startswith("retry: attempt 1 was rejected")]
    assert len(retry) == 1
    assert [line for line in streamed if line not in retry] == plain


def test_with_stdout_piped_the_output_grows_on_stderrs_terminal(fleet: Path) -> None:
    argv = ["run", "grader", "--task", "Grade it.", "--model", RESCUED]
    plain = on_terminal(fleet, argv, tty="stderr")
    streamed = on_terminal(fleet, [*argv, "--stream"], tty="stderr")
    assert plain.code == streamed.code == 0
    assert same_run(streamed.other) == same_run(plain.other)  # stdout: the same bytes
    assert b"\x1b[J" in streamed.raw and b'"score": ' in streamed.raw  # drawn on stderr
    retry = [line for line in streamed.screen if line.startswith("retry: attempt 1 was")]
    assert [line for line in streamed.screen if line not in retry] == plain.screen
    assert len(retry) == 1


# Ctrl-C ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("flags", [(), ("--json",)])
def test_ctrl_c_cancels_the_run_with_one_line_and_exit_130(
    fleet: Path, fake_llm: FakeLLM, flags: tuple[str, ...]
) -> None:
    # The reply never comes within the test's bounds, however slow the machine: the run can
    # only end by the interrupt (the fake server cuts the wait short when it stops).
    fake_llm.respond(delayed(openai_tool_call("submit_result", {"title": "x"}), 3600))
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-test-key-for-the-fake",
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
        "AGENTSHAPE_ANALYTICS_DIR": str(fleet.parent / "analytics"),
    }
    command = [str(Path(sys.executable).parent / "agentshape"), "run", "grader"]
    process = subprocess.Popen(
        [*command, "--task", "Go.", "--model", "openai:gpt-test", "--stream", *flags],
        cwd=fleet.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300  # a bound for a stuck process, not an expected time
    while not fake_llm.requests and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_llm.requests, "the run never reached the model"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130
    assert err.endswith("agentshape: interrupted\n") and "Traceback" not in err
    if flags:
        assert [e["type"] for e in json_lines(out)] == ["run_started"]
    else:
        assert out == ""


def test_run_help_documents_stream(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--stream show the output growing" in out
    assert "one JSON line per event" in out and "run_finished" in out


def test_escalation_shows_as_a_status_line(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(fleet, capsys, "tiered", "", "--stream")
    assert code == 0 and out.startswith("completed: agent tiered on test (escalated to tier 1)")
    lines = err.splitlines()
    retry = lines.index(
        "retry: attempt 1 was rejected (output_schema_validation_failed: "
        "$: 'title' is a required property); asking again"
    )
    assert lines.index("escalate: tier 1, test") > retry  # tier 0's second attempt failed too
