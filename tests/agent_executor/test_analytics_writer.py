"""Deferred analytics lines: written while a model call waits, soon without one, and at exit."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel

from agent_contracts.runs import RunOptions
from agent_executor import analytics_writer
from agent_executor.agent import Agent
from agent_executor.analytics import JsonlAnalytics, NullAnalytics, read_events
from agent_executor.analytics_writer import flush_pending, mark_request, submit
from agent_executor.providers.anthropic import AnthropicProvider
from agent_executor.providers.base import Provider
from agent_executor.providers.openai import OpenAIProvider
from tests.fake_llm import FakeLLM, anthropic_tool_use, delayed, openai_tool_call

ROOT = Path(__file__).resolve().parents[2]
DAY = datetime(2026, 1, 19, 12, 30, tzinfo=UTC)
DAY_FILE = "events-2026-01-19.jsonl"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title"],
    "properties": {"title": {"type": "string"}},
}


class Ping(BaseModel):
    event: str = "ping"
    ts: datetime = DAY
    seq: int = 0


def seqs(path: Path) -> list[int]:
    return [json.loads(line)["seq"] for line in path.read_text().splitlines()]


@pytest.fixture
def no_linger(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Keep the lingering thread out: only a model call (or a flush) writes the queue.

    Yields the names of the threads the recording write (:func:`recorder`) ran on.
    """
    flush_pending()
    time.sleep(0.2)  # a linger cycle already under way ends (it found nothing to write)
    monkeypatch.setattr(analytics_writer, "_arm", lambda queue: None)
    yield []
    flush_pending()


def recorder(threads: list[str]) -> analytics_writer.Write:
    def write(events: Sequence[BaseModel]) -> None:
        threads.extend(threading.current_thread().name for _ in events)

    return write


def test_queued_lines_are_written_in_the_order_emitted_across_sinks(tmp_path: Path) -> None:
    first, second = JsonlAnalytics(tmp_path / "a"), JsonlAnalytics(tmp_path / "b")
    for seq in range(200):
        (first if seq % 2 else second).emit(Ping(seq=seq))
    assert first.flush() is True
    assert seqs(tmp_path / "a" / DAY_FILE) == list(range(1, 200, 2))
    assert seqs(tmp_path / "b" / DAY_FILE) == list(range(0, 200, 2))


def test_a_line_is_written_soon_without_a_flush_or_a_model_call(tmp_path: Path) -> None:
    sink = JsonlAnalytics(tmp_path)
    sink.emit(Ping(seq=7))
    path = tmp_path / DAY_FILE
    for _ in range(200):  # the lingering thread writes it; no reader or flush asks for it
        if path.exists() and path.read_text():
            break
        time.sleep(0.05)
    assert seqs(path) == [7]


def test_defer_false_writes_inside_emit(tmp_path: Path, no_linger: list[str]) -> None:
    sink = JsonlAnalytics(tmp_path, defer=False)
    sink.emit(Ping(seq=3))
    assert seqs(tmp_path / DAY_FILE) == [3]


def test_a_deferred_line_waits_for_its_writer(tmp_path: Path, no_linger: list[str]) -> None:
    sink = JsonlAnalytics(tmp_path)
    sink.emit(Ping(seq=4))
    assert not (tmp_path / DAY_FILE).exists()
    assert [event["seq"] for event in read_events(tmp_path)] == [4]  # a reader writes it first


def provider_for(api: str, fake: FakeLLM) -> Provider:
    if api == "openai":
        fake.respond(openai_tool_call("submit_result", {"title": "ok"}))
        return OpenAIProvider(model="gpt-test", api_key="k", base_url=fake.openai_base_url)
    fake.respond(anthropic_tool_use("submit_result", {"title": "ok"}))
    return AnthropicProvider(model="claude-test", api_key="k", base_url=fake.anthropic_base_url)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("sync", [True, False], ids=["run_sync", "run"])
def test_a_model_call_writes_the_queued_lines_while_it_waits(
    fake_llm: FakeLLM, no_linger: list[str], api: str, sync: bool
) -> None:
    provider = provider_for(api, fake_llm)
    agent = Agent(output_schema=SCHEMA, model=provider, analytics=NullAnalytics())
    submit(recorder(no_linger), Ping())
    caller = threading.current_thread().name
    result = agent.run_sync("Title it.") if sync else asyncio.run(agent.run("Title it."))
    assert result.ok
    assert no_linger == [caller]  # written during the call, on the calling thread


def test_a_request_made_with_nothing_queued_is_not_traced(no_linger: list[str]) -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    mark_request(request)
    assert "trace" not in request.extensions
    submit(recorder(no_linger), Ping())
    mark_request(request)
    assert "trace" in request.extensions
    assert no_linger == []  # marked, not written: the write waits for the reply's wait


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_call_the_deadline_cuts_still_writes_the_queue_while_it_waits(
    fake_llm: FakeLLM, no_linger: list[str], api: str
) -> None:
    answer = (
        openai_tool_call("submit_result", {"title": "ok"})
        if api == "openai"
        else anthropic_tool_use("submit_result", {"title": "ok"})
    )
    fake_llm.respond(delayed(answer, 30))
    provider: Provider = (
        OpenAIProvider(model="gpt-test", api_key="k", base_url=fake_llm.openai_base_url)
        if api == "openai"
        else AnthropicProvider(
            model="claude-test", api_key="k", base_url=fake_llm.anthropic_base_url
        )
    )
    agent = Agent(output_schema=SCHEMA, model=provider, analytics=NullAnalytics())
    submit(recorder(no_linger), Ping())
    result = agent.run_sync("Title it.", options=RunOptions(timeout_s=1.0))
    assert result.error is not None and result.error.type == "run_timeout"
    assert no_linger == [threading.current_thread().name]  # written during the cut call


@pytest.mark.parametrize("queued", [True, False])
def test_the_trace_is_taken_off_a_request_once_it_has_written(
    fake_llm: FakeLLM, no_linger: list[str], queued: bool
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", {"title": "ok"}))
    traced: list[bool] = []

    def still_traced(response: httpx2.Response) -> None:
        traced.append("trace" in response.request.extensions)

    if queued:
        submit(recorder(no_linger), Ping())
    hooks = {"request": [mark_request], "response": [still_traced]}
    with httpx2.Client(event_hooks=hooks) as client:
        url = f"{fake_llm.openai_base_url}/chat/completions"
        assert client.post(url, json={"model": "m", "messages": []}).status_code == 200
    assert traced == [False]  # written while the reply was awaited, then no more calls
    assert no_linger == ([threading.current_thread().name] if queued else [])


def test_a_queue_past_its_bound_is_written_by_the_emitting_thread(
    monkeypatch: pytest.MonkeyPatch, no_linger: list[str]
) -> None:
    monkeypatch.setattr(analytics_writer, "MAX_PENDING", 5)
    for _ in range(5):
        submit(recorder(no_linger), Ping())
    assert no_linger == []
    submit(recorder(no_linger), Ping())
    assert no_linger == [threading.current_thread().name] * 6


def test_a_failing_write_does_not_cost_the_others_their_lines(
    tmp_path: Path, no_linger: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    def broken(events: Sequence[BaseModel]) -> None:
        raise RuntimeError("a sink's bug")

    sink = JsonlAnalytics(tmp_path)
    submit(broken, Ping())
    sink.emit(Ping(seq=9))
    assert sink.flush() is True
    assert seqs(tmp_path / DAY_FILE) == [9]
    assert "events could not be written" in caplog.text


def test_a_sinks_events_queued_together_are_written_together(no_linger: list[str]) -> None:
    batches: list[tuple[str, list[int]]] = []

    def writer(name: str) -> analytics_writer.Write:
        def write(events: Sequence[BaseModel]) -> None:
            batches.append((name, [getattr(event, "seq", -1) for event in events]))

        return write

    first, second = writer("first"), writer("second")
    for seq, write in enumerate([first, first, first, second, first, first]):
        submit(write, Ping(seq=seq))
    assert flush_pending() is True
    assert batches == [("first", [0, 1, 2]), ("second", [3]), ("first", [4, 5])]


SHORT_WRITE_SCRIPT = """
import logging, resource, signal, sys
from datetime import datetime, timezone
from pydantic import BaseModel
from agent_executor.analytics import JsonlAnalytics

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
    assert done.stdout.split() == ["7"]  # the ten went in one write: seven not written whole
    assert "short write" in done.stderr
    read = read_events(tmp_path)
    assert [event["seq"] for event in read.events] == [0, 1, 2]
    assert (read.corrupt, read.partial) == (0, 1)  # the torn line, left unended at the limit


EXIT_SCRIPT = """
import sys
from datetime import datetime, timezone
from pydantic import BaseModel
from agent_executor.analytics import JsonlAnalytics

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
def test_lines_still_queued_at_exit_are_written(tmp_path: Path, ending: str) -> None:
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


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_leaves_the_parents_queue_to_the_parent(
    tmp_path: Path, no_linger: list[str]
) -> None:
    sink = JsonlAnalytics(tmp_path)
    sink.emit(Ping(seq=1))
    pid = os.fork()
    if pid == 0:  # the child: its own line only
        try:
            sink.emit(Ping(seq=2))
            code = 0 if sink.flush() else 3
        finally:
            os._exit(locals().get("code", 4))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert seqs(tmp_path / DAY_FILE) == [2]
    assert sink.flush() is True
    assert seqs(tmp_path / DAY_FILE) == [2, 1]
