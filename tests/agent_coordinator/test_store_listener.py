"""PostgreSQL's notifications wake runners and ``?wait=`` requests in other processes."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.agent_coordinator.harness import Postgres, write_fleet
from tests.agent_coordinator.processes import Process, serve

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}


def test_a_runner_polling_once_an_hour_claims_each_run_another_process_stores(
    tmp_path: Path, postgres: Postgres
) -> None:
    """Only the database's notification can wake a runner that polls hourly: runs still end.

    Each run after the first is stored while the runner sleeps: it claimed (and found nothing)
    right after ending the previous one, before that run's answer reached the caller.
    """
    database = postgres.new_database()
    write_fleet(tmp_path / "agents")
    server, url = serve(tmp_path, database, {}, "--workers", "0", "--model", "test")
    runner = Process(
        ["runner", "--workers", "1", "--database", database, "--model", "test", "--poll", "3600"],
        cwd=tmp_path,
        env={},
    )
    try:
        runner.read_until("workers")
        statuses = [
            httpx.post(
                f"{url}/runs",
                params={"wait": 60},
                json={**REVIEW, "prompt": f"Review PR {n}"},
                timeout=90,
            ).json()["status"]
            for n in range(3)
        ]
    finally:
        assert runner.stop() == 0
        server.stop()
    assert statuses == ["completed", "completed", "completed"]


def test_a_runner_on_sqlite_polls_at_the_interval_it_was_given(tmp_path: Path) -> None:
    """SQLite cannot notify: ``--poll`` is how soon a runner in another process sees a run."""
    database = str(tmp_path / "coordinator.db")
    write_fleet(tmp_path / "agents")
    server, url = serve(tmp_path, database, {}, "--workers", "0", "--model", "test")
    runner = Process(
        ["runner", "--workers", "1", "--database", database, "--model", "test", "--poll", "0.05"],
        cwd=tmp_path,
        env={},
    )
    try:
        runner.read_until("workers")
        answer = httpx.post(f"{url}/runs", params={"wait": 60}, json=REVIEW, timeout=90)
    finally:
        assert runner.stop() == 0
        server.stop()
    assert answer.json()["status"] == "completed"


def test_poll_must_be_a_positive_number_of_seconds(tmp_path: Path) -> None:
    process = Process(["runner", "--poll", "0"], cwd=tmp_path, env={})
    code = process.popen.wait(60)
    assert process.popen.stderr is not None
    error = process.popen.stderr.read()
    process.stop()
    assert code == 2
    assert "'0' is not a positive number of seconds" in error
