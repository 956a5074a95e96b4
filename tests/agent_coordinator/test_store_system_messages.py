"""A session's system message kept once per distinct text, on SQLite and PostgreSQL.

Every session of an agent begins with the same system message: migration 12 keeps each distinct
one once (``system_messages``) and a session's row names it. Every read gives the library's
transcript back exactly: for rows written so and for rows written before (the message inline),
through a resume (the model is sent the system message again), for two agents, for a prompt
changed between two runs of a session, and after a deletion or a prune, which deletes the
messages no session names any more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import cast

import psycopg
import pytest
from pydantic import JsonValue

from agent_contracts import Message, RunResult, RunStartedEvent, ToolCall, ToolResult, Usage
from agent_coordinator import SqlStore, open_store
from agent_coordinator._store import NewRun, RunInput
from agent_coordinator._store.records import Claim, Holding
from agent_coordinator._store.sql import Cursor, dumps, loads, stored_transcript
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Postgres
from tests.fake_llm import FakeLLM, openai_tool_call

REVIEWER = "You review pull requests. SYSMARK-reviewer: name the file and line of each problem."
WRITER = "You write short answers. SYSMARK-writer."
ANSWER = {"summary": "One bound is off by one.", "approval": "request_changes"}


@pytest.fixture
def store(database: str) -> Iterator[SqlStore]:
    opened = open_store(database)
    yield opened
    opened.close()


def _transcript(system: str, earlier: list[JsonValue], prompt: str, n: int) -> list[JsonValue]:
    """The library's transcript after a run: the earlier one (or a system message) and a turn."""
    call = ToolCall(
        id=f"call_{n}", name="submit_result", arguments=ANSWER, raw_arguments=str(ANSWER)
    )
    turn = [
        Message.user(prompt),
        Message(role="assistant", tool_calls=[call]),
        Message(
            role="tool",
            tool_results=[ToolResult(tool_call_id=call.id, name=call.name, content="ok")],
        ),
    ]
    start = earlier or [Message.system(system).model_dump(mode="json")]
    return [*start, *(message.model_dump(mode="json") for message in turn)]


def _run(
    store: SqlStore,
    run_id: str,
    session_id: str,
    *,
    agent: str = "reviewer",
    system: str = REVIEWER,
    resume: bool = False,
    new_prompt: bool = False,
) -> dict[str, JsonValue]:
    """Store, claim and finish a run as a runner does; return its result's JSON.

    With ``new_prompt`` the run's transcript begins with ``system`` instead of the system
    message the session held (the agent's prompt changed between two runs).
    """
    claim = _claimed(store, run_id, session_id, agent=agent, resume=resume)
    return _end(store, claim, agent=agent, system=system, new_prompt=new_prompt)


def _claimed(
    store: SqlStore, run_id: str, session_id: str, *, agent: str = "reviewer", resume: bool = False
) -> Claim:
    """Store a run and claim it as a runner does."""
    store.create_run(
        NewRun(
            id=run_id,
            session_id=session_id,
            kind="resume_session" if resume else "start_session",
            agent_name=agent,
            input=RunInput(prompt=f"Task of {run_id}."),
        )
    )
    claim = store.claim_run(run_id, "runner-1", 30)
    assert claim is not None
    return claim


def _end(
    store: SqlStore,
    claim: Claim,
    *,
    agent: str = "reviewer",
    system: str = REVIEWER,
    new_prompt: bool = False,
    holding: bool = False,
) -> dict[str, JsonValue]:
    """Finish a claimed run as a runner does; return its result's JSON.

    With ``holding`` the end says what the runner knows the store holds (its usual end, one
    statement on PostgreSQL); without, the end reads it back (a transaction of statements).
    """
    run_id = claim.run.id
    earlier = list(claim.transcript)
    if new_prompt:
        earlier[0] = Message.system(system).model_dump(mode="json")
    transcript = _transcript(system, earlier, f"Task of {run_id}.", len(earlier))
    result = RunResult(
        status="completed",
        result_data=ANSWER,
        usage=Usage(input_tokens=10, output_tokens=5, requests=1),
        duration_ms=3.0,
        transcript=[Message.model_validate(message) for message in transcript],
        run_id=run_id,
        agent_id=agent,
        model="gpt-test",
    )
    data = cast("dict[str, JsonValue]", result.model_dump(mode="json"))
    started = RunStartedEvent(run_id=run_id, agent_id=agent, model="gpt-test")
    ended = store.finish(
        run_id,
        "runner-1",
        status="completed",
        result=data,
        error=None,
        attempts=[],
        events=[("run_started", cast("dict[str, JsonValue]", started.model_dump(mode="json")))],
        transcript=transcript,
        holding=Holding(
            transcript=list(claim.transcript),
            turns=False,
            attempt_events=False,
            events=list(claim.events or ()),
        )
        if holding
        else None,
    )
    assert ended is not None
    return data


def _stored(store: SqlStore, query: str) -> list[tuple[object, ...]]:
    with store._tx(write=False) as cursor:
        return [tuple(row) for row in store._exec(cursor, query).fetchall()]


def _assert_reads_back(store: SqlStore, runs: dict[str, dict[str, JsonValue]]) -> None:
    """Every run's result and its session's transcript read back exactly (the same JSON text)."""
    latest: dict[str, JsonValue] = {}
    for run_id, data in runs.items():
        run = store.get_run(run_id)
        assert run is not None and run.result == data, run_id
        assert dumps(run.result["transcript"]) == dumps(data["transcript"]), run_id
        latest[run.session_id] = data["transcript"]
    listed = {session.id: session.transcript for session in store.list_sessions(limit=100)}
    for session_id, transcript in latest.items():
        session = store.get_session(session_id)
        assert session is not None, session_id
        assert dumps(session.transcript) == dumps(transcript), session_id
        assert dumps(listed[session_id]) == dumps(transcript), session_id


def test_two_agents_keep_each_system_message_once_and_read_back_whole(store: SqlStore) -> None:
    runs = {f"run_r{n}": _run(store, f"run_r{n}", f"ses_r{n}") for n in range(3)}
    runs |= {
        f"run_w{n}": _run(store, f"run_w{n}", f"ses_w{n}", agent="writer", system=WRITER)
        for n in range(2)
    }
    _assert_reads_back(store, runs)
    kept = sorted(
        str(loads(row[0])) for row in _stored(store, "SELECT message FROM system_messages")
    )
    assert kept == sorted(
        str(Message.system(text).model_dump(mode="json")) for text in (REVIEWER, WRITER)
    )
    # No session's row holds a copy of its system message.
    assert not [
        row for row in _stored(store, "SELECT transcript FROM sessions") if "SYSMARK" in str(row[0])
    ]


def test_a_resumed_session_continues_with_its_system_message(store: SqlStore) -> None:
    first = _run(store, "run_1", "ses_1")
    second = _run(store, "run_2", "ses_1", resume=True)
    assert second["transcript"][: len(first["transcript"])] == first["transcript"]  # type: ignore[index,arg-type]
    _assert_reads_back(store, {"run_1": first, "run_2": second})
    assert len(_stored(store, "SELECT digest FROM system_messages")) == 1


def test_a_prompt_changed_between_two_runs_keeps_each_runs_own(store: SqlStore) -> None:
    first = _run(store, "run_1", "ses_1")
    changed = "You review pull requests, briefly. SYSMARK-changed."
    second = _run(store, "run_2", "ses_1", resume=True, system=changed, new_prompt=True)
    assert cast("list[JsonValue]", second["transcript"])[0] == Message.system(changed).model_dump(
        mode="json"
    )
    _assert_reads_back(store, {"run_1": first, "run_2": second})
    assert _kept_messages(store) == sorted([REVIEWER, changed])
    # The session names the new one only: a prune (that deletes no session) deletes the old one,
    # and the first run, which began with it, reads back all the same.
    pruned = store.prune_batch(before=time.time() - 3600, limit=10)
    assert pruned.sessions == ()
    assert _kept_messages(store) == [changed]
    _assert_reads_back(store, {"run_1": first, "run_2": second})


def test_a_row_written_before_reads_back_as_written_and_resumes(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A session's row as the store wrote it before migration 12: the whole transcript inline, as
    # stored_transcript writes it, and no system_digest.
    monkeypatch.setattr(
        "agent_coordinator._store.leases.split_transcript",
        lambda transcript: (stored_transcript(transcript), None),
    )
    first = _run(store, "run_1", "ses_1")
    monkeypatch.undo()
    assert _stored(store, "SELECT transcript, system_digest FROM sessions") == [
        (stored_transcript(cast("list[JsonValue]", first["transcript"])), None)
    ]
    _assert_reads_back(store, {"run_1": first})
    second = _run(store, "run_2", "ses_1", resume=True)
    assert second["transcript"][: len(first["transcript"])] == first["transcript"]  # type: ignore[index,arg-type]
    _assert_reads_back(store, {"run_1": first, "run_2": second})
    ((text, digest),) = _stored(store, "SELECT transcript, system_digest FROM sessions")
    assert digest is not None and "SYSMARK" not in str(text)


def _kept_messages(store: SqlStore) -> list[str]:
    """The texts of the system messages the store keeps, sorted."""
    rows = _stored(store, "SELECT message FROM system_messages")
    return sorted(str(cast("dict[str, JsonValue]", loads(row[0]))["content"]) for row in rows)


def test_deleting_and_pruning_sessions_deletes_the_system_messages_none_names(
    store: SqlStore,
) -> None:
    runs = {f"run_{n}": _run(store, f"run_{n}", f"ses_{n}") for n in range(3)}
    runs["run_w"] = _run(store, "run_w", "ses_w", agent="writer", system=WRITER)
    store.delete_session("ses_0")
    store.delete_session("ses_w")
    # The reviewer's is still named by two sessions; no session names the writer's any more.
    assert _kept_messages(store) == [REVIEWER]
    _assert_reads_back(store, {key: runs[key] for key in ("run_1", "run_2")})
    pruned = store.prune_batch(before=time.time() + 60, limit=10)
    assert sorted(pruned.sessions) == ["ses_1", "ses_2"]
    assert _stored(store, "SELECT id FROM sessions") == []
    assert _kept_messages(store) == []
    # The same store writes the writer's message again: it is stored anew, not assumed kept.
    again = _run(store, "run_again", "ses_again", agent="writer", system=WRITER)
    _assert_reads_back(store, {"run_again": again})
    assert _kept_messages(store) == [WRITER]
    names = "SELECT s.id FROM sessions s WHERE s.system_digest IS NOT NULL AND NOT EXISTS "
    names += "(SELECT 1 FROM system_messages m WHERE m.digest = s.system_digest)"
    assert _stored(store, names) == []


def _env(fake_llm: FakeLLM) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "sk-test-key-0000000000000000",
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
    }


def test_a_session_resumed_over_http_sends_the_model_its_system_message_again(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(
        openai_tool_call("submit_result", ANSWER),
        openai_tool_call("submit_result", {"summary": "Hi."}),
        openai_tool_call("submit_result", ANSWER),
    )
    service = make_service(env=_env(fake_llm), model="openai:gpt-test")
    body: dict[str, object] = {
        "agent_name": "reviewer",
        "prompt": "Review PR 1",
        "parameters": {"pr_url": "u"},
    }
    started = service.run(body).json()
    assert started["status"] == "completed", started
    other = service.run({"agent_name": "summariser", "prompt": "Say hi."}).json()
    assert other["status"] == "completed", other
    session_id = started["session_id"]
    resumed = service.run(
        {"type": "resume_session", "session_id": session_id, "prompt": "And the tests?"}
    ).json()
    assert resumed["status"] == "completed", resumed
    first, summary, again = (request.body["messages"] for request in fake_llm.requests)
    assert isinstance(first, list) and isinstance(again, list) and isinstance(summary, list)
    assert first[0]["role"] == "system" and "You review pull requests." in first[0]["content"]
    assert summary[0]["role"] == "system" and "You summarise text." in summary[0]["content"]
    # The resumed run's request begins with the first run's, its system message first.
    assert again[: len(first)] == first and len(again) > len(first)
    session = service.client.get(f"/sessions/{session_id}").json()
    assert session["messages"] > len(again)  # and the resumed run's answer
    assert [run["status"] for run in session["runs"]] == ["completed", "completed"]
    # Each agent's system message is kept once, apart from the sessions' rows.
    assert len(_stored(service.store, "SELECT digest FROM system_messages")) == 2


def _waiting(database: str, statement: str) -> bool:
    """Whether a connection of ``database`` waits for a lock in a statement starting so."""
    with psycopg.connect(database, autocommit=True) as watcher:
        row = watcher.execute(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE %s",
            (statement + "%",),
        ).fetchone()
    return row is not None and int(row[0]) > 0


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


def _set_default(database: str, setting: str, value: str) -> None:
    """Give ``database`` a default for ``setting``, for the connections made from now on."""
    with psycopg.connect(database, autocommit=True) as admin:
        name = admin.execute("SELECT current_database()").fetchone()
        assert name is not None
        admin.execute(f"ALTER DATABASE \"{name[0]}\" SET {setting} = '{value}'")


@pytest.mark.parametrize("isolation", ["read committed", "repeatable read"])
def test_a_deletion_waits_for_a_run_end_naming_its_message(
    postgres: Postgres, isolation: str
) -> None:
    """A run's end has stored its session's system message, not yet committed, as a deletion
    removes the only other session naming it: the deletion waits, then keeps the message
    (whatever isolation level the database's transactions default to)."""
    database = postgres.new_database()
    _set_default(database, "default_transaction_isolation", isolation)
    ending, deleting = open_store(database), open_store(database)
    try:
        _run(ending, "run_0", "ses_0")
        claim = _claimed(ending, "run_1", "ses_1")
        with psycopg.connect(database) as holder:
            # The end stops at its session's row (after storing the message) until released.
            holder.execute("SELECT 1 FROM sessions WHERE id = 'ses_1' FOR UPDATE")
            ender = threading.Thread(target=_end, args=(ending, claim))
            ender.start()
            _until(lambda: _waiting(database, "UPDATE sessions"))
            deleter = threading.Thread(target=deleting.delete_session, args=("ses_0",))
            deleter.start()
            _until(lambda: not deleter.is_alive() or _waiting(database, "LOCK TABLE"))
            holder.rollback()
        ender.join(60)
        deleter.join(60)
        assert _stored(deleting, "SELECT id FROM sessions") == [("ses_1",)]
        assert _kept_messages(deleting) == [REVIEWER]
        session = deleting.get_session("ses_1")
        assert session is not None and session.transcript[0]["content"] == REVIEWER  # type: ignore[index,call-overload]
    finally:
        ending.close()
        deleting.close()


def _pause_after(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch, starts: str
) -> tuple[threading.Event, threading.Event]:
    """Make ``store`` stop after its first statement that starts with ``starts``, until released.

    Returns:
        The event set when it stopped there, and the one that lets it go on.
    """
    reached, release = threading.Event(), threading.Event()
    execute = store._exec

    def paused(cursor: Cursor, query: str, params: Sequence[object] = ()) -> Cursor:
        answer = execute(cursor, query, params)
        if query.startswith(starts) and not reached.is_set():
            reached.set()
            release.wait(60)
        return answer

    monkeypatch.setattr(store, "_exec", paused)
    return reached, release


def test_a_deletion_between_two_ends_of_one_agent_and_day_holds_neither_back(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One end (statements) holds the day's rollups; another (one statement) waits for them;
    a deletion waits for both: each end must hold the system messages' table before the
    rollups, else the first queues behind the deletion and the three wait in a circle until
    PostgreSQL's deadlock_timeout (set to 10 minutes here) breaks it."""
    database = postgres.new_database()
    _set_default(database, "deadlock_timeout", "10min")
    first, second, deleting = open_store(database), open_store(database), open_store(database)
    release = threading.Event()
    try:
        _run(first, "run_old", "ses_old", system=WRITER)  # the session the deletion removes
        claims = {
            run_id: _claimed(store, run_id, f"ses_{run_id}")
            for store, run_id in ((first, "run_a"), (second, "run_b"))
        }
        reached, release = _pause_after(second, monkeypatch, "INSERT INTO rollups")
        # (Daemon threads: stuck in the circle, they must not keep the tests from ending.)
        threads = [
            threading.Thread(target=_end, args=(second, claims["run_b"]), daemon=True),
            threading.Thread(
                target=_end, args=(first, claims["run_a"]), kwargs={"holding": True}, daemon=True
            ),
            threading.Thread(target=deleting.delete_session, args=("ses_old",), daemon=True),
        ]
        threads[0].start()
        assert reached.wait(60)  # the first end holds the day's rollups
        threads[1].start()
        _until(lambda: _waiting(database, "WITH ended"))  # the second waits for them
        threads[2].start()
        _until(lambda: _waiting(database, "LOCK TABLE"))  # the deletion waits for the ends
        release.set()
        _until(lambda: not any(thread.is_alive() for thread in threads))
        assert sorted(str(row[0]) for row in _stored(deleting, "SELECT id FROM sessions")) == [
            "ses_run_a",
            "ses_run_b",
        ]
        assert _kept_messages(deleting) == [REVIEWER]
    finally:
        release.set()
        for store in (first, second, deleting):
            store.close()
