"""The rollups a run's end updates: ``GET /reports/analytics`` against the CLI's review."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from agent_coordinator import open_store
from agent_coordinator._event_log import is_analytics
from agent_coordinator._store.migrations import MIGRATIONS
from agent_coordinator._store.sqlite import SqliteStore
from bench.service_scale import build
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Service, new_run, write_fleet
from tests.agent_coordinator.processes import serve
from tests.fake_llm import FakeLLM, delayed, openai_tool_call

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
VALID = {"summary": "ok", "approval": "approve"}
LATENCY = ("run_latency", "model_latency")


def _stored_events(service: Service) -> list[str]:
    """The analytics events the service stored, as its JSONL log holds them (not its claims)."""
    with service.store._tx(write=False) as cursor:
        rows = service.store._exec(cursor, "SELECT type, data FROM events ORDER BY id").fetchall()
    return [str(data) for kind, data in rows if is_analytics(str(kind), json.loads(str(data)))]


def _cli_review(tmp_path: Path, lines: list[str], *args: str) -> dict[str, object]:
    """``agentshape analytics --json`` over the events, written as a day's JSONL log."""
    folder = tmp_path / "events"
    folder.mkdir(exist_ok=True)
    day = datetime.now(UTC).date().isoformat()
    (folder / f"events-{day}.jsonl").write_text("".join(line + "\n" for line in lines))
    done = subprocess.run(
        [sys.executable, "-m", "agentshape", "analytics", str(folder), "--json", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    review: dict[str, object] = json.loads(done.stdout)
    return review


def _same(api: dict[str, object], cli: dict[str, object]) -> None:
    """The API's review is the CLI's; latency percentiles within the histograms' 2 %."""
    for key in ("events", "unrecognised_events", "agent"):
        assert api[key] == cli[key], key
    rows = [(api["overall"], cli["overall"])]
    rows += list(zip(api["agents"], cli["agents"], strict=True))  # type: ignore[call-overload]
    for mine, theirs in rows:
        for key, value in theirs.items():
            if key not in LATENCY:
                assert mine[key] == value, (theirs["agent_id"], key)
                continue
            assert mine[key]["count"] == value["count"]
            assert mine[key]["max_ms"] == pytest.approx(value["max_ms"])
            for name in ("p50_ms", "p95_ms"):
                assert mine[key][name] == pytest.approx(value[name], rel=0.025), (key, name)


def test_the_analytics_review_is_the_clis_over_the_same_events(
    make_service: ServiceFactory, tmp_path: Path
) -> None:
    service = make_service()
    service.run({**REVIEW, "model": "test"})
    service.run({**REVIEW, "model": "test:fail_first=invalid_arguments+invalid_arguments"})
    service.run({**REVIEW, "model": "test:fail_first=invalid_arguments"})
    service.run({"agent_name": "writer", "prompt": "hi"})
    resumed = service.run({"agent_name": "writer", "prompt": "hi"}).json()
    again = {"type": "resume_session", "session_id": resumed["session_id"], "prompt": "again"}
    assert service.run(again).json()["status"] == "completed"
    lines = _stored_events(service)
    api = service.client.get("/reports/analytics").json()
    assert api["overall"]["runs"] == 6
    _same(api, _cli_review(tmp_path, lines))
    writer = service.client.get("/reports/analytics", params={"agent": "writer"}).json()
    assert writer["overall"]["runs"] == 3
    cli_writer = _cli_review(tmp_path, lines, "--agent", "writer")
    cli_writer["unrecognised_events"] = writer["unrecognised_events"]  # not an agent's: see below
    _same(writer, cli_writer)
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    since = service.client.get("/reports/analytics", params={"since": yesterday}).json()
    assert since["since"].startswith(yesterday)
    _same(since, _cli_review(tmp_path, lines, "--since", yesterday))
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    empty = service.client.get("/reports/analytics", params={"since": tomorrow}).json()
    assert (empty["overall"]["runs"], empty["agents"]) == (0, [])


def test_the_analytics_review_is_the_clis_over_the_services_own_log(tmp_path: Path) -> None:
    """``serve`` writes its runs' analytics to a JSONL log, as the library does; the CLI's review
    of that log is the API's, unrecognised events included (the claims and cancels the store
    logs are no events of the log)."""
    write_fleet(tmp_path / "agents")
    log = tmp_path / "log"
    process, url = serve(
        tmp_path,
        str(tmp_path / "coordinator.db"),
        {},
        "--workers",
        "2",
        "--model",
        "test",
        "--analytics-dir",
        str(log),
    )
    try:
        for model in ("test", "test:fail_first=invalid_arguments"):
            run = httpx.post(f"{url}/runs?wait=60", json={**REVIEW, "model": model}, timeout=90)
            assert run.json()["status"] == "completed", run.text
        queued = httpx.post(f"{url}/runs", json={"agent_name": "writer", "prompt": "hi"}).json()
        httpx.post(f"{url}/runs/{queued['run_id']}/cancel", params={"wait": 30}, timeout=60)
        api = httpx.get(f"{url}/reports/analytics").json()
    finally:
        process.stop()
    assert api["unrecognised_events"] == 0
    done = subprocess.run(
        [sys.executable, "-m", "agentshape", "analytics", str(log), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    _same(api, json.loads(done.stdout))


def test_runs_ending_at_once_are_reviewed_as_the_cli_reviews_their_events(
    make_service: ServiceFactory, tmp_path: Path
) -> None:
    """Ends made together (SQLite writes them in one group, their figures summed once per agent
    and day) are counted as one by one: completed, rescued and failed, of two agents."""
    service = make_service(workers=24)
    models = (
        "test",
        "test:fail_first=invalid_arguments",
        "test:fail_first=invalid_arguments+invalid_arguments",
    )
    bodies = [
        {**REVIEW, "model": models[n % 3]}
        if n % 4
        else {"agent_name": "writer", "prompt": f"hi {n}"}
        for n in range(48)
    ]
    with ThreadPoolExecutor(max_workers=24) as pool:
        statuses = [answer.json()["status"] for answer in pool.map(service.run, bodies)]
    assert statuses.count("failed") == sum(1 for n in range(48) if n % 4 and n % 3 == 2)
    api = service.client.get("/reports/analytics").json()
    assert api["overall"]["runs"] == 48
    _same(api, _cli_review(tmp_path, _stored_events(service)))


def test_streamed_failed_and_cancelled_runs_are_reviewed_as_the_cli_reviews_their_events(
    make_service: ServiceFactory, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """A run's end counts the events its runner holds; the CLI counts the stored ones."""
    fake_llm.respond(delayed(openai_tool_call("submit_result", VALID), 120))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    service = make_service(env=env, model="openai:gpt-test", workers=2)
    hanging = service.client.post("/runs", json=REVIEW).json()
    deadline = time.monotonic() + 60
    while service.client.get(f"/runs/{hanging['run_id']}").json()["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    streamed = {**REVIEW, "model": "test:fail_first=invalid_arguments", "stream": True}
    assert service.run(streamed).json()["status"] == "completed"
    failed = service.run({**REVIEW, "model": "test:fail_first=invalid_arguments+invalid_arguments"})
    assert failed.json()["status"] == "failed"
    cancel = service.client.post(f"/runs/{hanging['run_id']}/cancel", params={"wait": 20})
    assert cancel.json()["status"] == "cancelled"
    with service.store._tx(write=False) as cursor:
        rows = service.store._exec(cursor, "SELECT type, data FROM events ORDER BY id").fetchall()
    assert {"partial_output", "retry", "run_failed"} <= {str(row[0]) for row in rows}
    # The analytics leave out stream events and the service's own (no analytics events at all).
    lines = [str(data) for kind, data in rows if is_analytics(str(kind), json.loads(str(data)))]
    api = service.client.get("/reports/analytics").json()
    overall = api["overall"]
    assert (overall["runs"], overall["completed"], overall["incomplete"]) == (2, 1, 1)
    assert (overall["retries"], overall["first_try_valid"]) == (2, 0)
    assert api["unrecognised_events"] == 0  # the claims and the cancel are the service's
    _same(api, _cli_review(tmp_path, lines))


def test_a_big_store_is_reviewed_as_the_cli_reviews_its_events(
    database: str, tmp_path: Path
) -> None:
    store = open_store(database)
    try:
        build(store, 400, seed=7)
    finally:
        store.close()
    service = Service(tmp_path, database, workers=0)
    try:
        api = service.client.get("/reports/analytics").json()
        assert api["overall"]["runs"] > 400
        cli = _cli_review(tmp_path, _stored_events(service))
        _same(api, cli)
        assert len(api["overall"]["days"]) > 30
    finally:
        service.close()


def test_runs_through_a_provider_batch_are_counted_as_the_cli_counts_them(
    database: str, tmp_path: Path
) -> None:
    store = open_store(database)
    try:
        built = build(store, 120, seed=11, batched_share=0.3)
    finally:
        store.close()
    assert 0 < built.batched < built.runs
    service = Service(tmp_path, database, workers=0)
    try:
        api = service.client.get("/reports/analytics").json()
        assert api["overall"]["batched"] == built.batched
        _same(api, _cli_review(tmp_path, _stored_events(service)))
        reviewer = service.client.get("/reports/analytics", params={"agent": "pr-reviewer"})
        assert 0 < reviewer.json()["overall"]["batched"] < built.batched
    finally:
        service.close()


def test_a_store_from_before_the_rollups_is_migrated_with_its_runs_reviewed(
    tmp_path: Path,
) -> None:
    """A store with migration 1 only (as 0.2.0 wrote it) is filled from its stored events."""
    path = tmp_path / "old.db"
    built = tmp_path / "built.db"
    store = open_store(built)
    try:
        build(store, 300, seed=3)
    finally:
        store.close()
    old = sqlite3.connect(path)
    [statements] = [statements for version, statements in MIGRATIONS if version == 1]
    for statement in statements:
        old.execute(statement.format(serial="INTEGER PRIMARY KEY AUTOINCREMENT"))
    old.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
    old.execute("INSERT INTO schema_migrations VALUES (1, 0)")
    old.execute("ATTACH DATABASE ? AS built", (str(built),))
    for table, columns in (
        (
            "sessions",
            "seq, id, agent_name, status, transcript, parent_session_id, depth, created_at, "
            "updated_at",
        ),
        (
            "runs",
            "seq, id, session_id, kind, agent_name, status, input, idempotency_key, "
            "request_hash, result, error, lease_owner, lease_expires_at, claims, cancel_requested, "
            "created_at, started_at, finished_at",
        ),
        ("attempts", "*"),
        ("events", "*"),
    ):
        old.execute(f"INSERT INTO main.{table} SELECT {columns} FROM built.{table}")
    old.commit()
    old.close()
    service = Service(tmp_path, str(path), workers=0)
    try:
        api = service.client.get("/reports/analytics").json()
        _same(api, _cli_review(tmp_path, _stored_events(service)))
        page = service.client.get("/reports/sessions").json()
        assert (page["total"], page["error_types"]) == (300, ["output_schema_validation_failed"])
    finally:
        service.close()


def test_runs_stay_in_the_analytics_after_their_events_are_pruned(service: Service) -> None:
    service.run({**REVIEW, "model": "test"})
    service.run({**REVIEW, "model": "test:fail_first=invalid_arguments+invalid_arguments"})
    before = service.client.get("/reports/analytics").json()
    with service.store._tx() as cursor:  # what retention does to old sessions' rows
        service.store._exec(cursor, "DELETE FROM events")
    after = service.client.get("/reports/analytics").json()
    assert (after["overall"]["runs"], after["overall"]["failed"]) == (2, 1)
    assert after == before


STORE_0_2_0 = Path(__file__).parent / "data" / "store-0.2.0.db"
"""A store written by agentshape 0.2.0 (commit 1ca4834, migration 1 only): its own test harness's
service ran a completed, a failed, a rescued and a resumed writer session, and a queued run was
cancelled; then the WAL was checkpointed into the file."""


def test_a_store_written_by_0_2_0_is_migrated_and_its_runs_reviewed(tmp_path: Path) -> None:
    path = tmp_path / "coordinator.db"
    shutil.copyfile(STORE_0_2_0, path)
    service = Service(tmp_path, str(path))
    try:
        page = service.client.get("/reports/sessions").json()
        assert (page["total"], page["total_exact"]) == (5, True)
        assert page["error_types"] == ["cancelled", "output_schema_validation_failed"]
        failed = service.client.get(
            "/reports/sessions", params={"error_type": "output_schema_validation_failed"}
        ).json()
        assert [row["status"] for row in failed["items"]] == ["failed"]
        api = service.client.get("/reports/analytics").json()
        assert (api["overall"]["runs"], api["overall"]["failed"]) == (5, 1)
        _same(api, _cli_review(tmp_path, _stored_events(service)))
        assert service.run({"agent_name": "writer", "prompt": "hi"}).json()["status"] == (
            "completed"
        )
        after = service.client.get("/reports/analytics", params={"agent": "writer"}).json()
        assert after["overall"]["runs"] == 3
    finally:
        service.close()


def _history(store: SqliteStore, days: int) -> None:
    """Rollups of 4 agents over the last ``days`` days, a run and 30 latency buckets a day each."""
    today = datetime.now(UTC).date()
    with store._tx() as cursor:
        for back in range(days):
            day = (today - timedelta(days=back)).isoformat()
            for agent in ("a", "b", "c", "d"):
                store._exec(
                    cursor,
                    "INSERT INTO rollups (agent_id, day, runs, completed, attempted, first_ok, "
                    "rescued, retries, incomplete, input_tokens, output_tokens, events, "
                    "unrecognised) VALUES (?, ?, 1, 1, 1, 1, 0, 0, 0, 10, 10, 3, 0)",
                    (agent, day),
                )
                for bucket in range(30):
                    store._exec(
                        cursor,
                        "INSERT INTO rollup_counts (agent_id, day, kind, name, total) "
                        "VALUES (?, ?, 'run_ms', ?, 1)",
                        (agent, day, str(300 + bucket)),
                    )


def _steps_of_a_week(store: SqliteStore) -> tuple[int, int]:
    """SQLite's steps (in hundreds) to review the last 7 days, and the runs the review counts."""
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0

    week = datetime.now(UTC).date() - timedelta(days=6)
    connection = store._connection()
    connection.set_progress_handler(step, 100)
    try:
        review = store.rollup_review(source="test", since=week, agent=None)
    finally:
        connection.set_progress_handler(None, 0)
    return steps, review.overall.runs


def test_a_review_of_a_window_reads_the_window_however_long_the_history(tmp_path: Path) -> None:
    # Rollups outlive pruned sessions, so a service that has run for a year keeps a year of
    # days: a week's review must read a week of them.
    month, year = open_store(tmp_path / "month.db"), open_store(tmp_path / "year.db")
    try:
        assert isinstance(month, SqliteStore) and isinstance(year, SqliteStore)
        _history(month, 30)
        _history(year, 400)
        (month_steps, month_runs), (year_steps, year_runs) = (
            _steps_of_a_week(month),
            _steps_of_a_week(year),
        )
    finally:
        month.close()
        year.close()
    assert month_runs == year_runs == 28  # 7 days of 4 agents
    assert year_steps < 1.5 * month_steps, (month_steps, year_steps)


def test_failures_the_service_writes_itself_are_no_analytics_events(database: str) -> None:
    """A run that used up its leases and a run failed inside its runner each get a
    ``run_failed`` with the error only, which the JSONL log never holds: neither is counted,
    nor reported unrecognised."""
    store = open_store(database)
    try:
        store.migrate()
        store.create_run(new_run("run_spent"))
        for owner in ("runner_a", "runner_b"):
            assert store.claim(owner, 0.05, 2) is not None
            time.sleep(0.1)  # the lease runs out
        assert store.claim("runner_c", 30, 2) is None  # the second expiry used the leases up
        store.create_run(new_run("run_broken"))
        claimed = store.claim("runner_d", 30, 2)
        assert claimed is not None and claimed.run.id == "run_broken"
        failure = {"type": "internal_error", "message": "the runner broke"}
        ended = store.finish(
            "run_broken",
            "runner_d",
            status="failed",
            result=None,
            error=failure,
            events=[("run_failed", {"error": failure})],  # as Runner._fail stores it
        )
        assert ended is not None and ended.status == "failed"
        kinds = [
            event.type for run in ("run_spent", "run_broken") for event in store.events_after(run)
        ]
        assert kinds.count("run_failed") == 2
        review = store.rollup_review(source="store")
        assert (review.events, review.unrecognised_events, review.overall.runs) == (0, 0, 0)
    finally:
        store.close()
