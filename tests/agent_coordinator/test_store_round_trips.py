"""Statements one run costs PostgreSQL, counted by the server's own statement log."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import cast

import httpx
import psycopg
from pydantic import JsonValue

from agent_contracts import Attempt, AttemptEvent
from agent_coordinator import open_store
from agent_coordinator._store.records import Holding
from tests.agent_coordinator.harness import Postgres, new_run, write_fleet
from tests.agent_coordinator.processes import serve

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
STATEMENT = re.compile(r"\[(\d+)\] LOG:  (?:statement|execute [^:]*): (.*)")
IDLE_CLAIMS = ("SELECT id, lease_owner, claims", "SELECT id, claims FROM batches")
"""Only a claim that found no queued run looks for runs whose lease ran out, and a runner looks
for batches to claim after its runs. An idle runner makes both after each run and when woken;
whether they fall inside the counted window depends on timing, so they are not counted."""
MOST_STATEMENTS_A_RUN = 2
"""Storing the run already claimed by ``serve``'s own runner is one statement (the session, the
run and its claim's event), its end one more (the run, its attempts, events, rollups, session
and notification), each committed on its own."""
MOST_TRANSACTIONS_A_RUN = 2


def _counted_database(postgres: Postgres) -> str:
    """A new database owned by a role whose every statement the server logs."""
    role = f"counted_{os.getpid()}_{postgres.new_database().rsplit('_', 1)[-1]}"
    with psycopg.connect(postgres.url(), autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {role} LOGIN")
        connection.execute(f"CREATE DATABASE {role} OWNER {role}")
        connection.execute(f"ALTER ROLE {role} SET log_statement = 'all'")
    return f"postgresql://{role}@127.0.0.1:{postgres.port}/{role}"


def _transactions(log: str) -> list[list[str]]:
    """The transactions the log shows whole, each its statements.

    A transaction is ``BEGIN`` to ``COMMIT``, or one statement sent outside them (the
    connections commit each statement on its own).
    """
    open_: dict[str, list[str]] = {}
    whole: list[list[str]] = []
    for backend, statement in STATEMENT.findall(log):
        if statement == "BEGIN":
            open_[backend] = [statement]
        elif backend in open_:
            open_[backend].append(statement)
            if statement == "COMMIT":
                whole.append(open_.pop(backend))
        else:
            whole.append([statement])
    return whole


def test_one_run_costs_postgresql_a_bounded_number_of_statements(
    tmp_path: Path, postgres: Postgres
) -> None:
    """Storing, claiming, starting and ending one run (and answering ``?wait=``) is batched."""
    database = _counted_database(postgres)
    write_fleet(tmp_path / "agents")
    server, url = serve(
        tmp_path, database, {}, "--workers", "1", "--model", "test", "--poll", "3600"
    )
    log = postgres.root / "log"
    try:
        with httpx.Client(base_url=url, timeout=90) as client:
            first = client.post("/runs", params={"wait": 60}, json=REVIEW).json()
            start = log.stat().st_size
            second = client.post("/runs", params={"wait": 60}, json=REVIEW).json()
            with log.open("rb") as stream:
                stream.seek(start)
                logged = stream.read().decode(errors="replace")
    finally:
        server.stop()
    assert (first["status"], second["status"]) == ("completed", "completed")
    # The run's transactions begin after the second POST and commit before its answer.
    transactions = [
        statements
        for statements in _transactions(logged)
        if not any(statement.startswith(IDLE_CLAIMS) for statement in statements)
    ]
    statements = [statement for transaction in transactions for statement in transaction]
    assert 0 < len(statements) <= MOST_STATEMENTS_A_RUN, "\n".join(statements)
    assert len(transactions) <= MOST_TRANSACTIONS_A_RUN, "\n".join(statements)


def test_a_run_whose_attempt_event_was_stored_before_its_end_ends_in_one_statement(
    postgres: Postgres,
) -> None:
    """A runner's flush that stored an attempt event whole while the run went on.

    The end leaves the raw output out of that event (its attempt row keeps it) in the same
    statement, and the event reads back whole.
    """
    database = _counted_database(postgres)
    store = open_store(database)
    try:
        run, claim = store.create_claimed_run(new_run("run_flushed"), "runner-1", 30)
        assert claim is not None
        raw = '{"grade": "B", "notes": "the flushed attempt"}'
        attempt = Attempt(number=1, mode="tool", raw_output=raw, parsed={"grade": "B"})
        flushed = AttemptEvent(run_id=run.id, agent_id="grader", number=1, mode="tool")
        flushed = flushed.model_copy(update={"raw_output": raw})
        event = ("attempt", cast("dict[str, JsonValue]", flushed.model_dump(mode="json")))
        store.add_events(run.id, [event])  # the runner's tick, while the run goes on
        log = postgres.root / "log"
        start = log.stat().st_size
        ended = store.finish(
            run.id,
            "runner-1",
            status="completed",
            result={"status": "completed", "result_data": {"grade": "B"}},
            error=None,
            attempts=[attempt.model_dump(mode="json")],
            holding=Holding(
                transcript=[], turns=False, attempt_events=True, events=[*claim.events, event]
            ),
        )
        with log.open("rb") as stream:
            stream.seek(start)
            logged = stream.read().decode(errors="replace")
        assert ended is not None and ended.status == "completed"
        statements = [statement for _, statement in STATEMENT.findall(logged)]
        assert len(statements) == 1, "\n".join(statements)
        (read,) = [e.data for e in store.events_after(run.id) if e.type == "attempt"]
        assert read["raw_output"] == raw
        with store._tx(write=False) as cursor:
            rows = store._exec(cursor, "SELECT data FROM events WHERE type = 'attempt'").fetchall()
        assert [raw in str(row[0]) for row in rows] == [False]
    finally:
        store.close()
