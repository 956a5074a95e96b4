"""Retention: ``DELETE /sessions/{id}``, ``agentshape db prune`` and ``--retain-days`` on the
service's processes, on SQLite and PostgreSQL.

What is deleted is read back over the API or through the store: the session, its runs, their
attempts and events, its child sessions; everything younger, still active, or belonging to
another session stays.
"""

from __future__ import annotations

import asyncio
import io
import logging
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_coordinator import SqlStore, open_store
from agent_coordinator._errors import Conflict, NotFound
from agent_coordinator._retention import Sweeper, prune
from agent_coordinator._store import NewRun, RunInput
from agentshape._cli import main
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Postgres, Service, write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.agent_coordinator.test_store_migrations import STORE_0_2_0

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
DAY_S = 86_400.0


@pytest.fixture
def store(database: str) -> Iterator[SqlStore]:
    opened = open_store(database)
    yield opened
    opened.close()


def _start(
    store: SqlStore, session_id: str, *, parent: str | None = None, prompt: str = "task"
) -> str:
    """Store a session's first run (queued) and return the run's id."""
    run_id = f"run_{session_id}"
    store.create_run(
        NewRun(
            id=run_id,
            session_id=session_id,
            kind="start_session",
            agent_name="a",
            input=RunInput(prompt=prompt),
            parent_session_id=parent,
            depth=0 if parent is None else 1,
        )
    )
    return run_id


def _ended(
    store: SqlStore, session_id: str, *, parent: str | None = None, prompt: str = "task"
) -> str:
    """Store a session whose run completed with an attempt and an event; return the run's id."""
    run_id = _start(store, session_id, parent=parent, prompt=prompt)
    claim = store.claim_run(run_id, "tester", 30)
    assert claim is not None
    done = store.finish(
        run_id,
        "tester",
        status="completed",
        result={"output": "ok"},
        error=None,
        attempts=[{"number": 1, "mode": "text", "raw_output": "ok", "errors": []}],
        events=[("run_completed", {"ok": True})],
        transcript=[{"role": "user", "content": "task"}],
    )
    assert done is not None
    return run_id


def _age(database: str, session_ids: list[str], days: float) -> None:
    """Make sessions look last updated ``days`` ago (the test's arrangement, not the API's)."""
    then = time.time() - days * DAY_S
    marks = ", ".join(["%s" if database.startswith("postgres") else "?"] * len(session_ids))
    query = f"UPDATE sessions SET updated_at = {then} WHERE id IN ({marks})"
    if database.startswith("postgres"):
        import psycopg

        with psycopg.connect(database, autocommit=True) as connection:
            connection.execute(query, session_ids)
    else:
        with sqlite3.connect(database) as connection:
            connection.execute(query, session_ids)


def _stored(store: SqlStore, session_id: str) -> bool:
    """Tell whether anything of the session (row, runs, attempts, events) is left."""
    run_id = f"run_{session_id}"
    return (
        store.get_session(session_id) is not None
        or store.get_run(run_id) is not None
        or bool(store.attempts(run_id))
        or bool(store.events_after(run_id))
    )


# DELETE /sessions/{id} over HTTP ----------------------------------------------------------------


def test_delete_a_session_removes_its_runs_attempts_and_events_and_nothing_else(
    service: Service,
) -> None:
    gone = service.run({**REVIEW, "model": "test:fail_first=invalid_arguments"}).json()
    kept = service.run({**REVIEW, "model": "test:fail_first=invalid_arguments"}).json()
    assert gone["status"] == kept["status"] == "completed"
    resumed = service.run(
        {"type": "resume_session", "session_id": gone["session_id"], "prompt": "Again"}
    ).json()
    assert resumed["status"] == "completed"

    response = service.client.delete(f"/sessions/{gone['session_id']}")
    assert response.status_code == 204 and response.content == b""

    assert service.client.get(f"/sessions/{gone['session_id']}").status_code == 404
    for run_id in (gone["run_id"], resumed["run_id"]):
        assert service.client.get(f"/runs/{run_id}").status_code == 404
        assert not service.store.attempts(run_id) and not service.store.events_after(run_id)
    listed = service.client.get("/runs").json()["items"]
    assert [run["run_id"] for run in listed] == [kept["run_id"]]

    other = service.client.get(f"/sessions/{kept['session_id']}").json()
    (run,) = other["runs"]
    assert run["run_id"] == kept["run_id"] and len(run["attempts"]) == 2
    assert service.store.events_after(kept["run_id"])
    again = service.client.get(f"/sessions/{kept['session_id']}/result").json()
    assert again["status"] == "completed"


def test_delete_an_unknown_session_is_404(service: Service) -> None:
    response = service.client.delete("/sessions/ses_missing")
    assert response.status_code == 404
    assert response.json()["error"] == "SessionNotFound"
    assert "ses_missing" in response.json()["message"]


def test_delete_a_session_with_a_run_waiting_is_409_and_deletes_nothing(
    make_service: ServiceFactory,
) -> None:
    service = make_service(workers=0)
    run = service.client.post("/runs", json=REVIEW).json()
    response = service.client.delete(f"/sessions/{run['session_id']}")
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "SessionBusy" and run["run_id"] in body["message"]
    assert service.client.get(f"/sessions/{run['session_id']}").status_code == 200
    assert service.client.get(f"/runs/{run['run_id']}").json()["status"] == "queued"


def test_delete_needs_the_token(make_service: ServiceFactory) -> None:
    service = make_service(token="secret")
    run = service.run(REVIEW).json()
    refused = httpx.delete(f"{service.url}/sessions/{run['session_id']}")
    assert refused.status_code == 401
    assert service.client.get(f"/sessions/{run['session_id']}").status_code == 200


# child sessions, through the store ---------------------------------------------------------------


def test_a_session_is_deleted_with_its_child_sessions(store: SqlStore) -> None:
    _ended(store, "parent")
    _ended(store, "child", parent="parent")
    _ended(store, "grandchild", parent="child")
    _ended(store, "other")
    sessions, runs = store.delete_session("parent")
    assert sessions == ("parent", "child", "grandchild") and runs == 3
    for gone in sessions:
        assert not _stored(store, gone)
    assert store.get_session("other") is not None and store.attempts("run_other")


def test_a_session_whose_child_has_a_run_running_is_not_deleted(store: SqlStore) -> None:
    _ended(store, "parent")
    child_run = _start(store, "child", parent="parent")
    assert store.claim_run(child_run, "tester", 30) is not None
    with pytest.raises(Conflict) as raised:
        store.delete_session("parent")
    assert raised.value.code == "SessionBusy"
    assert "child session 'child'" in raised.value.message and child_run in raised.value.message
    assert store.get_session("parent") is not None
    still = store.get_run(child_run)
    assert still is not None and still.status == "running"


def test_a_resume_of_a_deleted_session_is_404(service: Service) -> None:
    run = service.run(REVIEW).json()
    assert service.client.delete(f"/sessions/{run['session_id']}").status_code == 204
    resume = service.client.post(
        "/runs", json={"type": "resume_session", "session_id": run["session_id"], "prompt": "x"}
    )
    assert resume.status_code == 404 and resume.json()["error"] == "SessionNotFound"


# prune -------------------------------------------------------------------------------------------


def _landscape(store: SqlStore, database: str) -> None:
    """Old ended sessions (some with children), young ones, and old ones still active."""
    for n in range(7):
        _ended(store, f"old{n}")
    _ended(store, "old_child", parent="old0")
    _ended(store, "young")
    _ended(store, "old_parent_young_child")
    _ended(store, "young_child", parent="old_parent_young_child")
    _start(store, "old_queued")
    running = _start(store, "old_running")
    assert store.claim_run(running, "tester", 30) is not None
    _ended(store, "old_with_active_child")
    _start(store, "active_child", parent="old_with_active_child")
    old = [f"old{n}" for n in range(7)]
    old += ["old_child", "old_parent_young_child", "old_queued", "old_running"]
    old += ["old_with_active_child", "active_child"]
    _age(database, old, 40)


OLD = ["old0", "old1", "old2", "old3", "old4", "old5", "old6", "old_child"]
KEPT = [
    "young",
    "old_parent_young_child",
    "young_child",
    "old_queued",
    "old_running",
    "old_with_active_child",
    "active_child",
]


def test_prune_deletes_every_older_ended_session_and_nothing_else(
    store: SqlStore, database: str
) -> None:
    _landscape(store, database)
    out = io.StringIO()
    assert main(["db", "prune", "--older-than", "30d", "--database", database], out=out) == 0
    text = out.getvalue()
    assert text.startswith("agentshape db prune: deleted 8 sessions (8 runs) last updated before ")
    assert "(30 days ago)" in text
    assert sorted(line.strip() for line in text.splitlines()[1:]) == sorted(OLD)
    for gone in OLD:
        assert not _stored(store, gone), gone
    for kept in KEPT:
        assert store.get_session(kept) is not None, kept
    assert store.get_run("run_old_running").status == "running"  # type: ignore[union-attr]
    assert store.get_run("run_old_queued").status == "queued"  # type: ignore[union-attr]


def test_prune_in_small_batches_reaches_every_session(store: SqlStore, database: str) -> None:
    _landscape(store, database)
    pruned = prune(store, before=time.time() - 30 * DAY_S, batch=2)
    assert sorted(pruned.sessions) == sorted(OLD) and pruned.runs == 8
    for kept in KEPT:
        assert store.get_session(kept) is not None, kept


def test_the_sweeper_deletes_in_batches_what_a_prune_would(store: SqlStore, database: str) -> None:
    _landscape(store, database)
    swept = asyncio.run(Sweeper(store, 30, batch=2).sweep())
    assert sorted(swept.sessions) == sorted(OLD) and swept.runs == 8
    for kept in KEPT:
        assert store.get_session(kept) is not None, kept
    assert asyncio.run(Sweeper(store, 30, batch=2).sweep()).sessions == ()


@pytest.mark.parametrize("days", ["0", "-3", "soon"])
def test_retain_days_must_be_a_positive_number(
    days: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("serve", "runner"):
        assert main([command, "--retain-days", days]) == 2
        assert f"{days!r} is not a positive number of days" in capsys.readouterr().err


def test_prune_dry_run_says_what_it_would_delete_and_deletes_nothing(
    store: SqlStore, database: str
) -> None:
    _landscape(store, database)
    out = io.StringIO()
    argv = ["db", "prune", "--older-than", "30d", "--database", database, "--dry-run"]
    assert main(argv, out=out) == 0
    assert out.getvalue().startswith("agentshape db prune: would delete 8 sessions (8 runs) ")
    for session_id in OLD + KEPT:
        assert store.get_session(session_id) is not None


def test_prune_lists_fifty_sessions_and_counts_the_rest(tmp_path: Path) -> None:
    database = str(tmp_path / "c.db")
    store = open_store(database)
    try:
        names = [f"s{n:03}" for n in range(60)]
        for name in names:
            _ended(store, name)
        _age(database, names, 40)
        out = io.StringIO()
        assert main(["db", "prune", "--older-than", "30d", "--database", database], out=out) == 0
        lines = out.getvalue().splitlines()
        assert lines[0].startswith("agentshape db prune: deleted 60 sessions (60 runs) ")
        assert [line.strip() for line in lines[1:51]] == names[:50]
        assert lines[51:] == ["  ... and 10 more"]
    finally:
        store.close()


def test_prune_refuses_a_sqlite_file_that_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo.db"
    assert main(["db", "prune", "--older-than", "30d", "--database", str(missing)]) == 2
    assert f"--database {missing}: no such file; nothing to prune" in capsys.readouterr().err
    assert not missing.exists()


def test_prune_without_a_store_here_yet_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert main(["db", "prune", "--older-than", "30d"], out=out) == 0
    assert out.getvalue() == (
        "agentshape db prune: no store at .agentshape/coordinator.db yet; nothing to prune\n"
    )
    assert not (tmp_path / ".agentshape").exists()


def test_prune_refuses_an_age_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = str(tmp_path / "c.db")
    assert main(["db", "prune", "--older-than", "a month", "--database", database]) == 2
    assert "'a month' is not an age" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("age", "said"),
    [
        ("0d", "'0d' is not a positive age"),
        ("0.0m", "'0.0m' is not a positive age"),
        ("36501d", "'36501d' is longer than 36500 days"),
        ("1000000d", "'1000000d' is longer than 36500 days"),
        ("99999999999999999999999m", "is longer than 36500 days"),
    ],
)
def test_prune_refuses_an_age_of_nothing_or_beyond_a_century_and_deletes_nothing(
    store: SqlStore, database: str, age: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _landscape(store, database)
    assert main(["db", "prune", "--older-than", age, "--database", database]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    for session_id in OLD + KEPT:
        assert store.get_session(session_id) is not None, session_id


def test_retain_days_beyond_a_century_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("serve", "runner"):
        for days in ("36501", "1e400"):
            assert main([command, "--retain-days", days]) == 2
            assert f"{days!r} is more than 36500 days" in capsys.readouterr().err


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "prune"])
def test_prune_leaves_a_file_that_is_not_a_store_as_it_was(
    tmp_path: Path, dry: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("hello\n")
    theirs = tmp_path / "theirs.db"
    with sqlite3.connect(theirs) as connection:
        connection.execute("CREATE TABLE mydata (x)")
    empty = tmp_path / "empty.db"
    empty.touch()
    said = {
        not_sqlite: "is not a SQLite database",
        theirs: "is not an agentshape store: it holds other tables (mydata)",
    }
    files = {path: path.read_bytes() for path in (not_sqlite, theirs, empty)}
    for path in files:
        argv = ["db", "prune", "--older-than", "30d", "--database", str(path)]
        out = io.StringIO()
        code = main([*argv, "--dry-run"] if dry else argv, out=out)
        err = capsys.readouterr().err
        if path == empty:
            assert code == 0 and "nothing to prune" in out.getvalue()
        else:
            assert code == 2 and said[path] in err and "Traceback" not in err
    assert {path: path.read_bytes() for path in files} == files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db", "notes.txt", "theirs.db"]


def test_a_dry_run_on_a_database_with_no_tables_yet_has_nothing_to_prune(tmp_path: Path) -> None:
    database = tmp_path / "c.db"
    with sqlite3.connect(database) as connection:  # some bytes, no table
        connection.execute("PRAGMA user_version = 1")
    before = database.read_bytes()
    out = io.StringIO()
    argv = ["db", "prune", "--older-than", "30d", "--database", str(database), "--dry-run"]
    assert main(argv, out=out) == 0
    assert out.getvalue() == f"agentshape db prune: no store at {database} yet; nothing to prune\n"
    assert database.read_bytes() == before


def test_a_dry_run_does_not_upgrade_an_older_store_and_says_what_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "old.db"
    shutil.copyfile(STORE_0_2_0, database)
    argv = ["db", "prune", "--older-than", "30d", "--database", str(database)]
    assert main([*argv, "--dry-run"]) == 2
    assert "does not upgrade it" in capsys.readouterr().err
    assert database.read_bytes() == STORE_0_2_0.read_bytes()
    assert main(argv, out=io.StringIO()) == 0  # upgrades it
    out = io.StringIO()
    assert main([*argv, "--dry-run"], out=out) == 0
    assert out.getvalue().startswith("agentshape db prune: would delete 0 sessions")


def test_a_new_sqlite_file_is_incrementally_vacuumed_and_shrinks_after_a_prune(
    tmp_path: Path,
) -> None:
    database = str(tmp_path / "c.db")
    store = open_store(database)
    try:
        for n in range(60):
            _ended(store, f"s{n}", prompt="x" * 5000)
        with sqlite3.connect(database) as connection:
            assert connection.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # incremental
            before = connection.execute("PRAGMA page_count").fetchone()[0]
        _age(database, [f"s{n}" for n in range(60)], 40)
        out = io.StringIO()
        assert main(["db", "prune", "--older-than", "30d", "--database", database], out=out) == 0
        with sqlite3.connect(database) as connection:
            after = connection.execute("PRAGMA page_count").fetchone()[0]
            free = connection.execute("PRAGMA freelist_count").fetchone()[0]
        assert after < before and free == 0
    finally:
        store.close()


def test_an_older_sqlite_file_is_pruned_and_shrinks_once_converted_as_the_readme_says(
    tmp_path: Path,
) -> None:
    database = str(tmp_path / "c.db")
    with sqlite3.connect(database) as connection:  # a file from before: no auto_vacuum
        connection.execute("PRAGMA auto_vacuum = NONE")
        connection.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER)")
        connection.execute("DROP TABLE schema_migrations")
    store = open_store(database)
    try:
        names = [f"s{n}" for n in range(60)]
        for name in names:
            _ended(store, name, prompt="x" * 5000)
        _age(database, names[:30], 40)
        assert main(["db", "prune", "--older-than", "30d", "--database", database]) == 0
        with sqlite3.connect(database) as connection:
            assert connection.execute("PRAGMA auto_vacuum").fetchone() == (0,)
            assert connection.execute("PRAGMA freelist_count").fetchone()[0] > 0  # kept, reused
        store.close()
        # The README's conversion, with the service stopped.
        with sqlite3.connect(database, isolation_level=None) as connection:
            connection.executescript("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
            before = connection.execute("PRAGMA page_count").fetchone()[0]
        store = open_store(database)
        _age(database, names[30:], 40)
        assert main(["db", "prune", "--older-than", "30d", "--database", database]) == 0
        with sqlite3.connect(database) as connection:
            assert connection.execute("PRAGMA auto_vacuum").fetchone() == (2,)
            assert connection.execute("PRAGMA page_count").fetchone()[0] < before
            assert connection.execute("PRAGMA freelist_count").fetchone()[0] == 0
        assert all(store.get_session(name) is None for name in names)
    finally:
        store.close()


# --retain-days on serve and runner ---------------------------------------------------------------


def _wait_gone(url: str, session_id: str) -> None:
    deadline = time.monotonic() + 60
    while httpx.get(f"{url}/sessions/{session_id}").status_code != 404:
        assert time.monotonic() < deadline, f"{session_id} was not swept"
        time.sleep(0.1)


def test_serve_with_retain_days_sweeps_older_ended_sessions(tmp_path: Path, database: str) -> None:
    store = open_store(database)
    try:
        _landscape(store, database)
    finally:
        store.close()
    write_fleet(tmp_path / "agents")
    # The command a user types (its logging is set up before serve's: the line must survive it).
    process, url = serve(
        tmp_path, database, {}, "--workers", "0", "--retain-days", "30", module="agentshape"
    )
    try:
        assert "retain:   30 days" in process.read_until("retain:")
        for gone in OLD:
            _wait_gone(url, gone)
        for kept in KEPT:
            assert httpx.get(f"{url}/sessions/{kept}").status_code == 200, kept
        assert httpx.get(f"{url}/runs/run_old_running").json()["status"] == "running"
        busy = httpx.delete(f"{url}/sessions/old_with_active_child")
        assert busy.status_code == 409 and busy.json()["error"] == "SessionBusy"
        assert httpx.delete(f"{url}/sessions/young").status_code == 204
        assert httpx.get(f"{url}/sessions/young").status_code == 404
        assert httpx.delete(f"{url}/sessions/young").status_code == 404
    finally:
        assert process.stop() == 0
    assert "retention: deleted 8 sessions (8 runs) ended more than 30 days ago" in process.rest


def test_runner_with_retain_days_sweeps_older_ended_sessions(tmp_path: Path, database: str) -> None:
    store = open_store(database)
    try:
        for n in range(3):
            _ended(store, f"old{n}")
        _ended(store, "young")
        _age(database, ["old0", "old1", "old2"], 40)
        _age(database, ["young"], 20)
        write_fleet(tmp_path / "agents")
        runner = Process(
            ["runner", "--database", database, "--retain-days", "30", "--workers", "1"],
            cwd=tmp_path,
            env={},
            module="agentshape",
        )
        try:
            runner.read_until("retain:   30 days")
            deadline = time.monotonic() + 60
            while store.get_session("old2") is not None:
                assert time.monotonic() < deadline, "the runner did not sweep"
                time.sleep(0.1)
        finally:
            assert runner.stop() == 0
        assert "agentshape: retention: deleted 3 sessions (3 runs)" in runner.rest
        assert all(store.get_session(f"old{n}") is None for n in range(3))
        assert store.get_session("young") is not None
    finally:
        store.close()


def test_a_resume_racing_a_delete_on_postgresql_is_404_and_stores_no_run(
    postgres: Postgres,
) -> None:
    database = postgres.new_database()
    store = open_store(database)
    try:
        _race(store, database)
    finally:
        store.close()


def _race(store: SqlStore, database: str) -> None:
    import psycopg

    _ended(store, "raced")
    resume = NewRun(
        id="run_resumed",
        session_id="raced",
        kind="resume_session",
        agent_name="a",
        input=RunInput(prompt="again"),
    )
    with psycopg.connect(database, autocommit=True) as deleter:
        # The delete holds the session's row, as DELETE /sessions/{id} does, while the resume
        # has read the session and waits to mark it queued.
        deleter.execute("BEGIN")
        deleter.execute("SELECT id FROM sessions WHERE id = 'raced' FOR UPDATE")
        outcome: list[object] = []

        def resume_it() -> None:
            try:
                outcome.append(store.create_run(resume))
            except Exception as error:
                outcome.append(error)

        thread = threading.Thread(target=resume_it)
        thread.start()
        # Watched from a connection of its own: inside the deleter's transaction
        # pg_stat_activity would be read once and kept.
        with psycopg.connect(database, autocommit=True) as watcher:
            deadline = time.monotonic() + 60
            while not watcher.execute(
                "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' "
                "AND query LIKE 'UPDATE sessions%'"
            ).fetchone():
                assert time.monotonic() < deadline and thread.is_alive(), outcome
                time.sleep(0.05)
        deleter.execute("DELETE FROM runs WHERE session_id = 'raced'")
        deleter.execute("DELETE FROM sessions WHERE id = 'raced'")
        deleter.execute("COMMIT")
        thread.join(60)
    (error,) = outcome
    assert isinstance(error, NotFound) and error.code == "SessionNotFound"
    assert store.get_run("run_resumed") is None


def test_a_sweep_that_fails_is_logged_and_the_sweeper_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = tmp_path / "c.db"
    store = open_store(database)
    try:
        _ended(store, "s")
        database.unlink()  # the store notices the file gone and refuses every transaction

        async def sweep_until_logged() -> None:
            stop = asyncio.Event()
            task = asyncio.create_task(Sweeper(store, 30, every_s=0.01).run_until(stop))
            deadline = time.monotonic() + 60
            while sum("a sweep failed" in r.getMessage() for r in caplog.records) < 2:
                assert time.monotonic() < deadline and not task.done()
                await asyncio.sleep(0.01)
            stop.set()
            await asyncio.wait_for(task, 60)

        with caplog.at_level(logging.WARNING, logger="agent_coordinator._retention"):
            asyncio.run(sweep_until_logged())
        failed = [r for r in caplog.records if "a sweep failed" in r.getMessage()]
        assert "was removed while the service ran" in failed[0].getMessage()
        assert failed[0].exc_info is None  # one line, no traceback
    finally:
        store.close()
