"""Each thing stored once: the answer, the attempts and the transcript, read back whole.

On SQLite and PostgreSQL: a run's result keeps no copy of its attempts (the ``attempts`` rows) or
its transcript (the session's), an attempt no copy of what its raw output parses to, an
``attempt`` event no copy of its raw output, a tool call in the transcript no copy of its
arguments; every read gives the library's JSON back exactly. A
store written by 0.2.0 is rewritten that way by migration 8, every answer read back the same.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from pydantic import JsonValue

from agent_contracts import Attempt, Message, RunResult, ToolCall, ToolResult, Usage
from agent_coordinator import SqlStore, open_store
from agent_coordinator._store import NewRun, RunInput
from agent_coordinator._store.records import Holding
from agent_coordinator._store.sql import loads
from agent_core._json_text import dump_json

ANSWER: dict[str, JsonValue] = {
    "summary": "MARKER-7f3a: the retry loop backs off; one bound is off by one.",
    "approval": "request_changes",
    "comments": [
        {"file": "src/retry.py", "line": n, "severity": "concern", "message": f"comment {n}"}
        for n in range(1, 5)
    ],
}
"""A pr-reviewer answer with four comments; its marker counts the copies stored."""


@pytest.fixture
def store(database: str) -> Iterator[SqlStore]:
    opened = open_store(database)
    yield opened
    opened.close()


def _new(run_id: str, session_id: str, *, resume: bool = False) -> NewRun:
    return NewRun(
        id=run_id,
        session_id=session_id,
        kind="resume_session" if resume else "start_session",
        agent_name="pr-reviewer",
        input=RunInput(prompt="Review the retry change."),
    )


def _result(run_id: str, earlier: list[Message], *, bad_first: bool) -> RunResult:
    """A run's result as the library returns it: a re-prompt first when ``bad_first``."""
    raw = dump_json(ANSWER)
    bad = raw.replace('"concern"', '"critical"', 1)
    outputs = [bad, raw] if bad_first else [raw]
    attempts = [
        Attempt(
            number=n,
            mode="tool",
            raw_output=text,
            parsed=loads(text),
            usage=Usage(input_tokens=900, output_tokens=260, requests=1),
            latency_ms=60.5,
            tool_name="submit_result",
            model="gpt-4.1-mini",
        )
        for n, text in enumerate(outputs, start=1)
    ]
    turns = [Message.system("You review pull requests."), Message.user("Review the retry change.")]
    for n, text in enumerate(outputs, start=1):
        call = ToolCall(
            id=f"call_{run_id}_{n}", name="submit_result", arguments=loads(text), raw_arguments=text
        )
        turns.append(Message(role="assistant", tool_calls=[call]))
        turns.append(
            Message(
                role="tool",
                tool_results=[ToolResult(tool_call_id=call.id, name=call.name, content="ok")],
            )
        )
    return RunResult(
        status="completed",
        result_data=ANSWER,
        attempts=attempts,
        retries=len(outputs) - 1,
        usage=Usage(input_tokens=900 * len(outputs), output_tokens=260, requests=len(outputs)),
        duration_ms=130.0,
        transcript=[*earlier, *turns[0 if not earlier else 1 :]],
        run_id=run_id,
        agent_id="pr-reviewer",
        model="gpt-4.1-mini",
    )


def _run(
    store: SqlStore,
    run_id: str,
    session_id: str,
    *,
    resume: bool = False,
    bad_first: bool = False,
    held: bool = False,
) -> dict[str, JsonValue]:
    """Store, claim and finish a run as a runner does; return its result's JSON.

    ``held``: the runner tells the end what it knows the store holds for the run (every event
    stored so far), as ``serve``'s runners do, so the end reads none of it back.
    """
    store.create_run(_new(run_id, session_id, resume=resume))
    claim = store.claim_run(run_id, "runner-1", 30)
    assert claim is not None
    earlier = [Message.model_validate(message) for message in claim.transcript]
    data: dict[str, JsonValue] = _result(run_id, earlier, bad_first=bad_first).model_dump(
        mode="json"
    )
    attempts = cast("list[dict[str, JsonValue]]", data["attempts"])
    events: list[tuple[str, dict[str, JsonValue]]] = []
    for n, attempt in enumerate(attempts, start=1):
        event: dict[str, JsonValue] = {
            "event": "attempt",
            "ts": "2026-11-27T08:00:00Z",
            "run_id": run_id,
            "agent_id": "pr-reviewer",
            "number": n,
        }
        event |= {"mode": "tool", "raw_output": attempt["raw_output"], "errors": attempt["errors"]}
        events.append(("attempt", event))
    store.add_events(run_id, events[:1])  # a runner's flush while the run goes on
    holding = None
    if held:
        holding = Holding(
            transcript=claim.transcript,
            turns=False,
            attempt_events=True,
            events=[*(claim.events or []), *events[:1]],
        )
    ended = store.finish(
        run_id,
        "runner-1",
        status="completed",
        result=data,
        error=None,
        attempts=attempts,
        events=events[1:],
        transcript=cast("list[JsonValue]", data["transcript"]),
        holding=holding,
    )
    assert ended is not None
    return data


def _copies(store: SqlStore, marker: str) -> int:
    """Count the marker's occurrences over every stored text column the runs write."""
    with store._tx(write=False) as cursor:
        rows = [
            *store._exec(cursor, "SELECT transcript FROM sessions").fetchall(),
            *store._exec(cursor, "SELECT input FROM runs").fetchall(),
            *store._exec(cursor, "SELECT result FROM runs").fetchall(),
            *store._exec(cursor, "SELECT error FROM runs").fetchall(),
            *store._exec(cursor, "SELECT data FROM attempts").fetchall(),
            *store._exec(cursor, "SELECT data FROM events").fetchall(),
        ]
    return sum(str(row[0]).count(marker) for row in rows if row[0] is not None)


@pytest.mark.parametrize("held", [False, True], ids=["read-back", "held"])
def test_a_run_stores_its_answer_once_per_place_and_reads_back_whole(
    store: SqlStore, held: bool
) -> None:
    """Also when the attempt event a flush stored whole is known to the end (``held``)."""
    data = _run(store, "run_1", "ses_1", bad_first=True, held=held)
    # The two attempts' raw outputs, and the transcript's two tool calls' raw text: each once.
    assert _copies(store, "MARKER-7f3a") == 4
    attempted = [event.data for event in store.events_after("run_1") if event.type == "attempt"]
    assert [event["raw_output"] for event in attempted] == [
        attempt["raw_output"] for attempt in cast("list[dict[str, JsonValue]]", data["attempts"])
    ]
    run = store.get_run("run_1")
    assert run is not None and run.result == data
    assert store.attempts("run_1") == data["attempts"]
    session = store.get_session("ses_1")
    assert session is not None and session.transcript == data["transcript"]
    assert RunResult.model_validate(run.result).result_data == ANSWER
    # A list leaves the transcript out (get_run gives it); the rest is whole.
    without = {key: value for key, value in data.items() if key != "transcript"}
    assert [item.result for item in store.list_runs(limit=10)] == [without]


def test_each_run_of_a_resumed_session_reads_back_its_own_transcript(store: SqlStore) -> None:
    first = _run(store, "run_1", "ses_1")
    second = _run(store, "run_2", "ses_1", resume=True, bad_first=True)
    assert len(cast("list[JsonValue]", second["transcript"])) > len(
        cast("list[JsonValue]", first["transcript"])
    )
    for run_id, data in (("run_1", first), ("run_2", second)):
        run = store.get_run(run_id)
        assert run is not None and run.result == data
    assert [run.result for run in store.session_runs("ses_1")] == [
        {key: value for key, value in data.items() if key != "transcript"}
        for data in (first, second)
    ]


def test_a_transcript_that_does_not_continue_the_session_keeps_earlier_runs_whole(
    store: SqlStore,
) -> None:
    first = _run(store, "run_1", "ses_1")
    store.create_run(_new("run_2", "ses_1", resume=True))
    assert store.claim_run("run_2", "runner-1", 30) is not None
    other = _result("run_2", [], bad_first=False).model_dump(mode="json")
    other["transcript"] = [Message.user("a different conversation").model_dump(mode="json")]
    store.finish(
        "run_2",
        "runner-1",
        status="completed",
        result=other,
        error=None,
        attempts=cast("list[dict[str, JsonValue]]", other["attempts"]),
        transcript=cast("list[JsonValue]", other["transcript"]),
    )
    for run_id, data in (("run_1", first), ("run_2", other)):
        run = store.get_run(run_id)
        assert run is not None and run.result == data


def _fail(store: SqlStore, run_id: str, *, cancel: bool) -> dict[str, JsonValue]:
    """Store a run that fails validation (asked to cancel while it ran, when ``cancel``)."""
    store.create_run(_new(run_id, f"ses_{run_id}"))
    assert store.claim_run(run_id, "runner-1", 30) is not None
    if cancel:
        store.request_cancel(run_id)
    data = _result(run_id, [], bad_first=False).model_dump(mode="json")
    error: dict[str, JsonValue] = {
        "type": "output_schema_validation_failed",
        "message": "ERRMARK-91c2: the output did not match the schema after 1 retry",
        "validation_errors": ["$.comments[0].severity: 'critical' is not one of the enum"],
        "issues": [],
        "last_output": None,
    }
    data |= {"status": "failed", "result_data": None, "error": error}
    store.finish(
        run_id,
        "runner-1",
        status="failed",
        result=data,
        error=error,
        attempts=cast("list[dict[str, JsonValue]]", data["attempts"]),
        transcript=cast("list[JsonValue]", data["transcript"]),
    )
    return data


def test_a_failed_run_stores_its_error_once(store: SqlStore) -> None:
    data = _fail(store, "run_1", cancel=False)
    assert _copies(store, "ERRMARK-91c2") == 1
    run = store.get_run("run_1")
    assert run is not None and run.status == "failed"
    assert run.result == data and run.error == data["error"]


def test_a_run_cancelled_while_it_failed_keeps_the_library_error_in_its_result(
    store: SqlStore,
) -> None:
    data = _fail(store, "run_1", cancel=True)
    run = store.get_run("run_1")
    assert run is not None and run.status == "cancelled"
    assert run.result == data
    assert run.error is not None and run.error["type"] == "cancelled"


STORE_0_2_0 = Path(__file__).parent / "data" / "store-0.2.0.db"
"""A store written by agentshape 0.2.0 (migration 1 only; see test_rollups.py)."""


def _raw(
    path: Path,
) -> tuple[
    dict[str, JsonValue], dict[str, object], dict[str, JsonValue], dict[str, list[JsonValue]], int
]:
    """Read a SQLite store's results, attempts, transcripts and events as stored, and bytes."""
    connection = sqlite3.connect(path)
    try:
        results = {
            str(row[0]): loads(row[1])
            for row in connection.execute("SELECT id, result FROM runs WHERE result IS NOT NULL")
        }
        attempts: dict[str, object] = {}
        for run_id, data in connection.execute(
            "SELECT run_id, data FROM attempts ORDER BY run_id, number"
        ):
            cast("list[object]", attempts.setdefault(str(run_id), [])).append(loads(data))
        sessions = {
            str(row[0]): loads(row[1])
            for row in connection.execute("SELECT id, transcript FROM sessions")
        }
        events: dict[str, list[JsonValue]] = {}
        for run_id, data in connection.execute("SELECT run_id, data FROM events ORDER BY id"):
            events.setdefault(str(run_id), []).append(loads(data))
        size = connection.execute(
            "SELECT (SELECT SUM(LENGTH(result)) FROM runs) + "
            "(SELECT SUM(LENGTH(data)) FROM attempts) + "
            "(SELECT SUM(LENGTH(data)) FROM events) + "
            "(SELECT SUM(LENGTH(transcript)) FROM sessions)"
        ).fetchone()[0]
    finally:
        connection.close()
    return results, attempts, sessions, events, int(size)


def test_migration_8_rewrites_a_0_2_0_store_and_every_answer_reads_back_the_same(
    tmp_path: Path,
) -> None:
    path = tmp_path / "coordinator.db"
    shutil.copyfile(STORE_0_2_0, path)
    results, attempts, sessions, events, before = _raw(path)
    assert results and attempts
    store = open_store(path)
    try:
        for run_id, result in results.items():
            run = store.get_run(run_id)
            assert run is not None and run.result == result, run_id
            assert store.attempts(run_id) == attempts.get(run_id, []), run_id
        for session_id, transcript in sessions.items():
            session = store.get_session(session_id)
            assert session is not None and session.transcript == transcript, session_id
        for run_id, stored in events.items():
            assert [event.data for event in store.events_after(run_id)] == stored, run_id
    finally:
        store.close()
    assert _raw(path)[4] < before * 0.7


@pytest.mark.parametrize("reads_as_value", ["attempt", "tool call"])
def test_one_parsed_value_under_two_raw_texts_is_judged_by_each_text(
    store: SqlStore, reads_as_value: str
) -> None:
    # A runner hands over one object for an attempt's parse and its tool call's arguments; only
    # where the raw text reads as it exactly (key order included) is it left out.
    value: dict[str, JsonValue] = {"b": 1, "a": 2}
    exact, reordered = '{"b": 1, "a": 2}', '{"a": 2, "b": 1}'
    raw_output, raw_arguments = (
        (exact, reordered) if reads_as_value == "attempt" else (reordered, exact)
    )
    store.create_run(_new("run_1", "ses_1"))
    assert store.claim_run("run_1", "runner-1", 30) is not None
    attempt: dict[str, JsonValue] = {"number": 1, "mode": "tool", "raw_output": raw_output}
    attempt["parsed"] = value
    call: dict[str, JsonValue] = {"id": "call_1", "name": "submit_result", "arguments": value}
    call["raw_arguments"] = raw_arguments
    transcript: list[JsonValue] = [{"role": "assistant", "content": "", "tool_calls": [call]}]
    ended = store.finish(
        "run_1",
        "runner-1",
        status="completed",
        result={"status": "completed", "result_data": value},
        error=None,
        attempts=[attempt],
        transcript=transcript,
    )
    assert ended is not None
    [stored] = store.attempts("run_1")
    assert json.dumps(stored["parsed"]) == exact
    session = store.get_session("ses_1")
    assert session is not None
    [message] = cast("list[dict[str, list[dict[str, JsonValue]]]]", session.transcript)
    assert json.dumps(message["tool_calls"][0]["arguments"]) == exact
