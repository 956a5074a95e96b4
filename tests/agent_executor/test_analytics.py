from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent_contracts import AttemptEvent, ValidationIssue
from agent_executor import (
    DEFAULT_ANALYTICS_DIR,
    AnalyticsSink,
    JsonlAnalytics,
    MemoryAnalytics,
    NullAnalytics,
    read_events,
)
from agent_executor._analytics import REDACTED, redact

ROOT = Path(__file__).resolve().parents[2]
DAY = datetime(2026, 1, 19, 12, 30, tzinfo=UTC)
DAY_FILE = "events-2026-01-19.jsonl"


class Ping(BaseModel):
    """A stand-in event: the sink works with any Pydantic model."""

    event: str = "ping"
    ts: datetime = DAY
    writer: str = "main"
    seq: int = 0
    payload: str = ""
    extra: dict[str, JsonValue] = Field(default_factory=dict)


class Unserialisable(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    thing: object


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


# --- sinks ----------------------------------------------------------------------------------


def test_every_sink_satisfies_the_protocol(tmp_path: Path) -> None:
    for sink in (NullAnalytics(), MemoryAnalytics(), JsonlAnalytics(tmp_path)):
        assert isinstance(sink, AnalyticsSink)


def test_memory_sink_keeps_events_in_order() -> None:
    sink = MemoryAnalytics()
    first, second = Ping(seq=1), Ping(seq=2)
    sink.emit(first)
    sink.emit(second)
    assert sink.events == [first, second]


def test_jsonl_sink_writes_one_line_per_event_in_the_utc_day_file(tmp_path: Path) -> None:
    sink = JsonlAnalytics(tmp_path / "analytics")
    sink.emit(Ping(seq=1))
    # The file is chosen by the event's day in UTC, not in its own offset.
    sink.emit(Ping(seq=2, ts=datetime(2026, 1, 20, 0, 30, tzinfo=timezone(timedelta(hours=2)))))
    sink.emit(Ping(seq=3, ts=datetime(2026, 1, 19, 20, 30, tzinfo=timezone(timedelta(hours=-5)))))
    directory = tmp_path / "analytics"
    assert sorted(p.name for p in directory.iterdir()) == [DAY_FILE, "events-2026-01-20.jsonl"]
    day = [json.loads(line) for line in lines(directory / DAY_FILE)]
    assert [event["seq"] for event in day] == [1, 2]
    assert day[0] == {
        "event": "ping",
        "ts": "2026-01-19T12:30:00Z",
        "writer": "main",
        "seq": 1,
        "payload": "",
        "extra": {},
    }
    assert [json.loads(x)["seq"] for x in lines(directory / "events-2026-01-20.jsonl")] == [3]
    assert sink.dropped == 0


def test_default_directory_is_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    sink = JsonlAnalytics()
    assert sink.directory == tmp_path / DEFAULT_ANALYTICS_DIR
    sink.emit(Ping())
    assert (tmp_path / ".agentshape" / "analytics" / DAY_FILE).is_file()


def test_real_contract_events_are_written(tmp_path: Path) -> None:
    sink = JsonlAnalytics(tmp_path)
    sink.emit(AttemptEvent(run_id="r1", agent_id="reviewer", number=1, mode="tool", ts=DAY))
    [event] = read_events(tmp_path).events
    assert event["event"] == "attempt"
    assert event["run_id"] == "r1"
    assert event["ts"] == "2026-01-19T12:30:00Z"


def test_many_lines_are_written_whole_in_order_and_redacted(tmp_path: Path) -> None:
    sink = JsonlAnalytics(tmp_path)
    secret = "sk-proj-" + "Zx9" * 10
    for seq in range(600):  # about 300 KiB of lines
        sink.emit(Ping(seq=seq, payload=f"{seq} {'x' * 400} key {secret}", extra={"n": seq}))

    written = lines(tmp_path / DAY_FILE)
    assert [json.loads(line)["seq"] for line in written] == list(range(600))
    assert all(secret not in line and REDACTED in line for line in written)


# --- redaction ------------------------------------------------------------------------------


def test_redaction_guard_keeps_keys_and_auth_headers_out_of_the_log(tmp_path: Path) -> None:
    openai_key = "sk-proj-" + "A1b2C3d4" * 6
    anthropic_key = "sk-ant-api03-" + "Zz9_Yy8-" * 8
    sink = JsonlAnalytics(tmp_path)
    sink.emit(
        Ping(
            payload=f"called with {openai_key} and then {anthropic_key}.",
            extra={
                "headers": {
                    "Authorization": "Bearer abc.def.ghi-123",
                    "x-api-key": "plain-looking-value",
                    "X_API_KEY": ["nested"],
                    "Content-Type": "application/json",
                },
                "api_key": "short",
                "apiKey": "short2",
                "body": "error: Authorization: Bearer tok_0123456789 rejected; api_key=abc987",
                "note": '{"x-api-key": "zzz111"}',
                "usage": {"input_tokens": 12, "output_tokens": 3},
                "empty_key": None,
            },
        )
    )
    text = (tmp_path / DAY_FILE).read_text()
    for secret in (
        openai_key,
        anthropic_key,
        "abc.def.ghi-123",
        "plain-looking-value",
        "nested",
        "short",
        "tok_0123456789",
        "abc987",
        "zzz111",
    ):
        assert secret not in text
    [event] = read_events(tmp_path).events
    assert event["payload"] == f"called with {REDACTED} and then {REDACTED}."
    extra = event["extra"]
    assert isinstance(extra, dict)
    assert extra["headers"] == {
        "Authorization": REDACTED,
        "x-api-key": REDACTED,
        "X_API_KEY": REDACTED,
        "Content-Type": "application/json",
    }
    assert extra["api_key"] == REDACTED
    assert extra["apiKey"] == REDACTED
    assert extra["body"] == f"error: Authorization: Bearer {REDACTED} rejected; api_key={REDACTED}"
    assert extra["note"] == f'{{"x-api-key": "{REDACTED}"}}'
    assert extra["usage"] == {"input_tokens": 12, "output_tokens": 3}


def test_redact_leaves_ordinary_text_alone() -> None:
    value: JsonValue = {
        "task": "use scikit-learn (sk-learn) to assess risk-management-framework-for-2026",
        "tokens": 5,
        "items": ["a", 1, None, True],
    }
    assert redact(value) == value


# --- failures never break the run -----------------------------------------------------------


def test_directory_that_cannot_be_created_drops_and_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the directory should be")
    sink = JsonlAnalytics(blocker / "analytics")
    with caplog.at_level(logging.DEBUG, logger="agent_executor._analytics"):
        sink.emit(Ping(seq=1))
        sink.emit(Ping(seq=2))
    assert sink.dropped == 2
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # later failures are logged at debug level, not repeated
    assert "analytics event dropped (1 so far)" in warnings[0].getMessage()
    assert str(blocker / "analytics") in warnings[0].getMessage()


def test_unwritable_day_file_does_not_raise(tmp_path: Path) -> None:
    (tmp_path / DAY_FILE).mkdir()  # the day's file cannot be opened for writing
    sink = JsonlAnalytics(tmp_path)
    sink.emit(Ping())
    assert sink.dropped == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_does_not_raise(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / DAY_FILE).symlink_to("/dev/full")  # every write fails with ENOSPC
    sink = JsonlAnalytics(tmp_path)
    with caplog.at_level(logging.WARNING, logger="agent_executor._analytics"):
        sink.emit(Ping())
    assert sink.dropped == 1
    assert "No space left on device" in caplog.text


def test_a_day_file_or_directory_removed_between_events_is_made_anew(tmp_path: Path) -> None:
    folder = tmp_path / "analytics"
    sink = JsonlAnalytics(folder)
    sink.emit(Ping(seq=1))
    (folder / DAY_FILE).unlink()
    sink.emit(Ping(seq=2))
    assert [e["seq"] for e in read_events(folder)] == [2]
    (folder / DAY_FILE).unlink()
    folder.rmdir()
    sink.emit(Ping(seq=3))
    sink.emit(Ping(seq=4))
    assert [e["seq"] for e in read_events(folder)] == [3, 4]
    assert sink.dropped == 0


def test_unserialisable_event_is_dropped_not_raised(tmp_path: Path) -> None:
    sink = JsonlAnalytics(tmp_path)
    sink.emit(Unserialisable(thing=object()))
    sink.emit(Ping())
    assert sink.dropped == 1
    assert len(read_events(tmp_path)) == 1


def test_writing_recovers_after_a_failure(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / DAY_FILE
    blocker.mkdir()
    sink = JsonlAnalytics(tmp_path)
    with caplog.at_level(logging.WARNING, logger="agent_executor._analytics"):
        sink.emit(Ping(seq=1))
        blocker.rmdir()
        sink.emit(Ping(seq=2))
        blocker.unlink()
        blocker.mkdir()
        sink.emit(Ping(seq=3))
    assert sink.dropped == 2
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


# --- concurrency ----------------------------------------------------------------------------

WRITER_SCRIPT = """
import sys
from datetime import datetime, timezone
from pydantic import BaseModel
from agent_executor._analytics import JsonlAnalytics

class Ping(BaseModel):
    event: str = "ping"
    ts: datetime
    writer: str
    seq: int
    payload: str

sink = JsonlAnalytics(sys.argv[1])
name, count, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ts = datetime(2026, 1, 19, 12, 30, tzinfo=timezone.utc)
for seq in range(count):
    sink.emit(Ping(ts=ts, writer=name, seq=seq, payload=name[0] * size))
sys.exit(1 if sink.dropped else 0)
"""


def test_concurrent_threads_and_processes_write_only_whole_lines(tmp_path: Path) -> None:
    count, size = 150, 20_000  # lines far longer than PIPE_BUF
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER_SCRIPT, str(tmp_path), name, str(count), str(size)],
            env=env,
        )
        for name in ("proc-a", "proc-b")
    ]
    sink = JsonlAnalytics(tmp_path)

    def write(name: str) -> None:
        for seq in range(count):
            sink.emit(Ping(writer=name, seq=seq, payload=name[-1] * size))

    threads = [threading.Thread(target=write, args=(f"thread-{n}",)) for n in "xyz"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [process.wait(timeout=120) for process in processes] == [0, 0]
    assert sink.dropped == 0

    result = read_events(tmp_path)
    assert (result.corrupt, result.partial) == (0, 0)
    assert result.files == [tmp_path / DAY_FILE]
    writers = ["proc-a", "proc-b", "thread-x", "thread-y", "thread-z"]
    seen = sorted((str(e["writer"]), e["seq"]) for e in result.events)
    assert seen == sorted((w, s) for w in writers for s in range(count))
    for event in result.events:
        writer = str(event["writer"])
        fill = writer[0] if writer.startswith("proc") else writer[-1]
        assert event["payload"] == fill * size


def test_a_long_accepted_output_is_cut_in_the_log_a_rejected_one_kept(tmp_path: Path) -> None:
    sink = JsonlAnalytics(tmp_path)
    output = json.dumps({"comments": [{"line": n, "message": "x" * 40} for n in range(500)]})
    issue = ValidationIssue(path="$", message="'summary' is a required property")
    common = {"run_id": "r1", "agent_id": "a", "mode": "tool", "ts": DAY}
    sink.emit(AttemptEvent(number=1, raw_output=output, errors=[issue], **common))
    sink.emit(AttemptEvent(number=2, raw_output=output, **common))
    rejected, accepted = read_events(tmp_path).events
    assert rejected["raw_output"] == output
    kept = accepted["raw_output"]
    assert isinstance(kept, str)
    assert kept == f"{output[:2000]}... [{len(output) - 2000} more characters not logged]"


def test_text_that_is_not_utf8_is_logged_escaped_not_dropped(tmp_path: Path) -> None:
    sink = JsonlAnalytics(tmp_path)
    sink.emit(AttemptEvent(run_id="r1", agent_id="a", number=1, mode="tool", raw_output="x\ud800y"))
    assert sink.dropped == 0
    [event] = read_events(tmp_path).events
    assert event["raw_output"] == "x\ud800y"


# --- writing: order, a short write, exit ----------------------------------------------------


def seqs(path: Path) -> list[int]:
    return [json.loads(line)["seq"] for line in path.read_text().splitlines()]


def test_lines_are_written_in_the_order_emitted_across_sinks(tmp_path: Path) -> None:
    first, second = JsonlAnalytics(tmp_path / "a"), JsonlAnalytics(tmp_path / "b")
    for seq in range(200):
        (first if seq % 2 else second).emit(Ping(seq=seq))
    assert seqs(tmp_path / "a" / DAY_FILE) == list(range(1, 200, 2))
    assert seqs(tmp_path / "b" / DAY_FILE) == list(range(0, 200, 2))


SHORT_WRITE_SCRIPT = """
import logging, resource, signal, sys
from datetime import datetime, timezone
from pydantic import BaseModel
from agent_executor._analytics import JsonlAnalytics

class Ping(BaseModel):
    event: str = "ping"
    ts: datetime = datetime(2026, 1, 19, 12, 30, tzinfo=timezone.utc)
    seq: int
    pad: str = "x" * 40

logging.basicConfig(level=logging.WARNING)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit is cut short instead
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
sink = JsonlAnalytics(sys.argv[1])
for seq in range(10):
    sink.emit(Ping(seq=seq))
print(sink.dropped)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="needs RLIMIT_FSIZE and SIGXFSZ (Linux)")
def test_a_write_cut_short_counts_the_lines_it_did_not_write_whole(tmp_path: Path) -> None:
    line = len(
        json.dumps({"event": "ping", "ts": "2026-01-19T12:30:00Z", "seq": 0, "pad": "x" * 40})
    )
    limit = 3 * (line + 1) + 10  # three whole lines and part of the fourth
    done = subprocess.run(
        [sys.executable, "-c", SHORT_WRITE_SCRIPT, str(tmp_path), str(limit)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["7"]  # the fourth cut short, the six after refused
    assert "short write" in done.stderr
    read = read_events(tmp_path)
    assert [event["seq"] for event in read.events] == [0, 1, 2]
    assert (read.corrupt, read.partial) == (0, 1)  # the torn line, left unended at the limit


EXIT_SCRIPT = """
import sys
from datetime import datetime, timezone
from pydantic import BaseModel
from agent_executor._analytics import JsonlAnalytics

class Ping(BaseModel):
    event: str = "ping"
    ts: datetime = datetime(2026, 1, 19, 12, 30, tzinfo=timezone.utc)
    seq: int

sink = JsonlAnalytics(sys.argv[1])
for seq in range(500):
    sink.emit(Ping(seq=seq))
if sys.argv[2] == "raise":
    raise SystemExit("stopped with an error")
"""


@pytest.mark.parametrize("ending", ["return", "raise"])
def test_lines_emitted_before_exit_are_written(tmp_path: Path, ending: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT, str(tmp_path), ending],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == (0 if ending == "return" else 1), done.stderr
    assert seqs(tmp_path / DAY_FILE) == list(range(500))
