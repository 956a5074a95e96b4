"""The plans PostgreSQL keeps for a run's statements, read from the server's log (auto_explain).

psycopg prepares a statement after a few executions, and PostgreSQL then keeps one generic plan
for it, made without the parameters' values. These tests have the server make the generic plan
from the first execution and log every plan it runs, then read the plan of a run's end.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import psycopg

from agent_coordinator import open_store
from tests.agent_coordinator.harness import Postgres, new_run, write_fleet
from tests.agent_coordinator.processes import serve

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
PLAN = re.compile(r"LOG:  duration: [\d.]+ ms  plan:\n((?:\t.*\n)+)")


def _explained_database(postgres: Postgres) -> tuple[str, str]:
    """A new database, and its URL for a role whose every statement's generic plan is logged."""
    role = f"explained_{os.getpid()}_{postgres.new_database().rsplit('_', 1)[-1]}"
    with psycopg.connect(postgres.url(), autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {role} LOGIN")
        connection.execute(f"CREATE DATABASE {role} OWNER {role}")
        for setting, value in (
            ("session_preload_libraries", "auto_explain"),
            ("auto_explain.log_min_duration", "0"),
            ("auto_explain.log_nested_statements", "on"),
            ("plan_cache_mode", "force_generic_plan"),
        ):
            connection.execute(f"ALTER ROLE {role} SET {setting} = '{value}'")
    return role, f"postgresql://{role}@127.0.0.1:{postgres.port}/{role}"


def _analyzed_with_ended_runs(postgres: Postgres, role: str) -> None:
    """Copy the store's first run 3,000 times as ended runs, then have the statistics read it."""
    with psycopg.connect(postgres.url(role), autocommit=True) as connection:
        connection.execute(
            "INSERT INTO runs (id, session_id, kind, agent_name, status, input, claims, "
            "cancel_requested, created_at) SELECT 'old_' || n, 'ses_old_' || n, kind, "
            "agent_name, 'completed', input, claims, cancel_requested, created_at "
            "FROM (SELECT * FROM runs LIMIT 1) AS first, generate_series(1, 3000) AS n"
        )
        connection.execute("ANALYZE")


def _run_scans(logged: str, statement: str) -> list[list[str]]:
    """The indexes on ``runs`` each logged plan of a statement beginning so scans, in order."""
    return [
        re.findall(r"Scan using (\w+) on runs\b", plan)
        for plan in PLAN.findall(logged)
        if f"Query Text: {statement}" in plan
    ]


def test_a_runs_end_finds_the_run_by_its_id_whatever_the_statistics_say(
    tmp_path: Path, postgres: Postgres
) -> None:
    """Statistics that see no running run (runs run briefly) do not send the end through them.

    Through ``runs_status`` the end would read every run running at the time, one row each.
    """
    role, database = _explained_database(postgres)
    write_fleet(tmp_path / "agents")
    server, url = serve(
        tmp_path, database, {}, "--workers", "1", "--model", "test", "--poll", "3600"
    )
    log = postgres.root / "log"
    try:
        with httpx.Client(base_url=url, timeout=90) as client:
            first = client.post("/runs", params={"wait": 60}, json=REVIEW).json()
            assert first["status"] == "completed"
            _analyzed_with_ended_runs(postgres, role)
            start = log.stat().st_size
            ended = client.post("/runs", params={"wait": 60}, json=REVIEW).json()
            with log.open("rb") as stream:
                stream.seek(start)
                logged = stream.read().decode(errors="replace")
    finally:
        server.stop()
    assert ended["status"] == "completed"
    assert _run_scans(logged, "WITH ended AS") == [["runs_id_key"]], logged


def test_a_held_runs_lease_renewal_and_release_find_it_by_its_id(postgres: Postgres) -> None:
    """A runner renews the leases of its runs every few seconds, each found by its id."""
    role, database = _explained_database(postgres)
    store = open_store(database)
    try:
        run, _ = store.create_claimed_run(new_run("run_held"), "runner-1", 30)
        _analyzed_with_ended_runs(postgres, role)
        log = postgres.root / "log"
        start = log.stat().st_size
        assert store.renew(run.id, "runner-1", 30).held
        assert store.renew_many([run.id], "runner-1", 30)[run.id].held
        assert store.release(run.id, "runner-1")
        with log.open("rb") as stream:
            stream.seek(start)
            logged = stream.read().decode(errors="replace")
    finally:
        store.close()
    for statement in (
        "UPDATE runs SET lease_expires_at = $1 WHERE id = $2 ",
        "UPDATE runs SET lease_expires_at = $1 WHERE id IN ",
        "UPDATE runs SET status = 'queued'",
    ):
        assert _run_scans(logged, statement) == [["runs_id_key"]], logged
