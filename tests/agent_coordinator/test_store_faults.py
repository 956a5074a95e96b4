"""Faults of the database under a running ``agentshape serve``: a PostgreSQL restart, the SQLite
file removed or replaced, a full disk. Each over real HTTP against the real process."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest

from agent_coordinator import open_store
from agent_coordinator._errors import StoreUnavailable
from agentshape import Client, RunEnded
from tests.agent_coordinator.harness import Postgres, free_port, throwaway_cluster, write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.fake_llm import FakeLLM, delayed, openai_tool_call

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
VALID = {"summary": "ok", "approval": "approve"}


class _Stderr:
    """Reads a process's standard error as it comes, so a chatty process never blocks on it."""

    def __init__(self, process: Process) -> None:
        self.lines: list[str] = []
        self._stream = process.popen.stderr
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._stream is not None
        for line in iter(self._stream.readline, ""):
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)


def _stop(process: Process, stderr: _Stderr) -> str:
    """Stop the process and return all it wrote to standard error."""
    process.popen.terminate()
    try:
        process.popen.wait(30)
    finally:
        stderr._thread.join(10)
        process.stop()
    return stderr.text()


def _error(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body["error"], body["message"]


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[Postgres]:
    """A cluster of this module's own, since its tests stop and start it (a database each)."""
    yield from throwaway_cluster("agentshape-pg-restart-")


def test_a_postgres_restart_is_survived_without_restarting_the_service(
    tmp_path: Path, own_postgres: Postgres, fake_llm: FakeLLM
) -> None:
    write_fleet(tmp_path / "agents")
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 0.2))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    database = own_postgres.new_database()
    process, url = serve(
        tmp_path, database, env, "--model", "openai:gpt-test", "--workers", "2", "--lease", "3"
    )
    stderr = _Stderr(process)
    try:
        run_ids = [httpx.post(f"{url}/runs", json=REVIEW).json()["run_id"] for _ in range(30)]
        deadline = time.monotonic() + 120
        while httpx.get(f"{url}/runs/{run_ids[0]}").json()["status"] != "completed":
            assert time.monotonic() < deadline, "the first run never completed"
            time.sleep(0.1)

        own_postgres.stop_server("fast")
        down_until = time.monotonic() + 5
        ready = httpx.get(f"{url}/ready", timeout=60)
        status, code, message = _error(ready)
        assert (status, code) == (503, "StoreUnavailable")
        assert "cannot be reached" in message and "127.0.0.1" in message
        assert "secret" not in message
        status, code, _ = _error(httpx.get(f"{url}/runs/{run_ids[-1]}", timeout=60))
        assert (status, code) == (503, "StoreUnavailable")
        status, code, _ = _error(httpx.post(f"{url}/runs", json=REVIEW, timeout=60))
        assert (status, code) == (503, "StoreUnavailable")
        assert httpx.get(f"{url}/health").json() == {"status": "ok"}
        time.sleep(max(0.0, down_until - time.monotonic()))  # the outage lasts 5 s
        assert httpx.get(f"{url}/health").status_code == 200
        own_postgres.start()

        deadline = time.monotonic() + 240
        pending = set(run_ids)
        while pending:
            assert time.monotonic() < deadline, f"{len(pending)} runs never completed"
            for run_id in sorted(pending):
                response = httpx.get(f"{url}/runs/{run_id}", timeout=60)
                assert response.status_code in (200, 503), response.text
                assert response.json().get("status") != "failed", response.text
                if response.json().get("status") == "completed":
                    pending.discard(run_id)
            time.sleep(0.2)
        assert httpx.get(f"{url}/ready").json() == {"status": "ready"}
        listed = httpx.get(f"{url}/runs", params={"limit": 100})
        assert listed.status_code == 200
        assert {item["run_id"] for item in listed.json()["items"]} >= set(run_ids)
    finally:
        log = _stop(process, stderr)
    # A runner that tried to claim while the database was down said so once, and that it
    # claims again (its workers may instead have spent the outage waiting to store a run's end).
    if "cannot claim runs" in log:
        assert log.count("cannot claim runs") == 1 and "claiming runs again" in log
    assert "Traceback" not in log


def test_the_first_requests_after_a_postgres_restart_are_answered(
    tmp_path: Path, own_postgres: Postgres
) -> None:
    """The pool's connections all broke with the restart; requests never see it.

    No runner here: its claims would meet the broken connections before the requests do.
    """
    write_fleet(tmp_path / "agents")
    process, url = serve(tmp_path, own_postgres.new_database(), {}, "--workers", "0")
    stderr = _Stderr(process)
    try:
        run = httpx.post(f"{url}/runs", json=REVIEW).json()
        with ThreadPoolExecutor(8) as pool:  # several connections in the pool
            warm = list(pool.map(lambda _: httpx.get(f"{url}/runs").status_code, range(16)))
        assert warm == [200] * 16
        own_postgres.stop_server("fast")
        own_postgres.start()
        with ThreadPoolExecutor(8) as pool:
            answers = list(
                pool.map(lambda _: httpx.get(f"{url}/runs/{run['run_id']}", timeout=60), range(8))
            )
        assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers]
        assert {a.json()["status"] for a in answers} == {"queued"}
        assert httpx.post(f"{url}/runs", json=REVIEW).status_code == 202
    finally:
        _stop(process, stderr)


def test_reads_made_in_worker_threads_after_a_postgres_restart_are_answered(
    tmp_path: Path, own_postgres: Postgres
) -> None:
    """A session's page reads its runs in a worker thread, over the threads' own pool, which no
    caller retries: its connections, all broken by the restart, are never lent again."""
    write_fleet(tmp_path / "agents")
    process, url = serve(tmp_path, own_postgres.new_database(), {}, "--workers", "0")
    stderr = _Stderr(process)
    try:
        run = httpx.post(f"{url}/runs", json=REVIEW).json()
        page = f"{url}/sessions/{run['session_id']}"
        with ThreadPoolExecutor(8) as pool:  # several connections in the threads' pool
            warm = list(pool.map(lambda _: httpx.get(page, timeout=60).status_code, range(16)))
        assert warm == [200] * 16
        own_postgres.stop_server("fast")
        own_postgres.start()
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: httpx.get(page, timeout=60), range(16)))
        failed = [answer.text for answer in answers if answer.status_code != 200]
        assert failed == []
        assert {a.json()["runs"][0]["status"] for a in answers} == {"queued"}
    finally:
        _stop(process, stderr)


def test_a_page_whose_read_loses_its_connection_midway_is_answered(
    tmp_path: Path, own_postgres: Postgres
) -> None:
    """A session's page reads its runs in a worker thread; the server ends that read's
    connection while it waits on a lock, and the page is read again, not answered 503."""
    write_fleet(tmp_path / "agents")
    database = own_postgres.new_database()
    process, url = serve(tmp_path, database, {}, "--workers", "0")
    stderr = _Stderr(process)
    try:
        run = httpx.post(f"{url}/runs", json=REVIEW).json()
        page = f"{url}/sessions/{run['session_id']}"
        assert httpx.get(page).status_code == 200
        with psycopg.connect(database) as holder, ThreadPoolExecutor(1) as pool:
            holder.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
            answer = pool.submit(httpx.get, page, timeout=60)
            waiting: list[int] = []
            deadline = time.monotonic() + 60
            while not waiting:
                assert time.monotonic() < deadline, "the page's read never waited on the lock"
                with psycopg.connect(database, autocommit=True) as observer:
                    waiting = [
                        int(row[0])
                        for row in observer.execute(
                            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                            "AND wait_event_type = 'Lock' AND query LIKE '%%FROM runs%%'"
                        ).fetchall()
                    ]
                    if waiting:
                        observer.execute("SELECT pg_terminate_backend(%s)", (waiting[0],))
                time.sleep(0.05)
            holder.rollback()
            done = answer.result(timeout=60)
        assert done.status_code == 200, done.text
        assert done.json()["runs"][0]["run_id"] == run["run_id"]
    finally:
        logged = _stop(process, stderr)
    assert "was lost" in logged  # the first read's failure, logged as it was retried


def test_serve_says_so_when_its_database_cannot_be_reached_at_start(tmp_path: Path) -> None:
    write_fleet(tmp_path / "agents")
    nowhere = f"postgresql://agentshape:secret@127.0.0.1:{free_port()}/agentshape"
    process = Process(["serve", "--port", "0", "--database", nowhere], cwd=tmp_path, env={})
    assert process.popen.wait(120) == 2
    process.stop()
    last = process.rest.strip().splitlines()[-1]
    assert last.startswith("agentshape: the database at postgresql://agentshape:***@127.0.0.1:")
    assert "cannot be reached" in last and "Connection refused" in last
    assert "Traceback" not in process.rest
    assert "secret" not in process.rest
    command = subprocess.run(
        [sys.executable, "-m", "agentshape", "runner", "--database", nowhere],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert command.returncode == 2
    # One line: not a warning of the pool's for each failed attempt before it.
    [last] = command.stderr.strip().splitlines()
    assert last.startswith("agentshape: the database at postgresql://agentshape:")
    assert "cannot be reached" in last and "Connection refused" in last
    assert "Traceback" not in command.stderr and "secret" not in command.stderr


def test_a_store_that_cannot_reach_its_database_leaves_nothing_connecting() -> None:
    """The pool's threads stop with the failed open: none goes on connecting and logging its
    failures after (or into) the command's own last line."""
    nowhere = f"postgresql://agentshape:secret@127.0.0.1:{free_port()}/agentshape"
    with pytest.raises(StoreUnavailable, match="cannot be reached"):
        open_store(nowhere)
    left = [t.name for t in threading.enumerate() if t.name.startswith("agentshape")]
    assert left == []


def _cluster_pids(cluster: Postgres) -> list[int]:
    """Return the postmaster's pid and its children's (Linux ``/proc``)."""
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    pids = [postmaster]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if parent == postmaster:
                    pids.append(int(entry.name))
    return pids


@contextlib.contextmanager
def _frozen(cluster: Postgres) -> Iterator[None]:
    """Stop every process of ``cluster`` (SIGSTOP): connections stay open, nothing answers."""
    pids = _cluster_pids(cluster)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def test_a_database_that_stops_answering_makes_ready_answer_503_in_time(
    tmp_path: Path, own_postgres: Postgres
) -> None:
    write_fleet(tmp_path / "agents")
    process, url = serve(tmp_path, own_postgres.new_database(), {}, "--model", "test")
    stderr = _Stderr(process)
    try:
        assert (
            httpx.post(f"{url}/runs", params={"wait": 30}, json=REVIEW, timeout=60).json()["status"]
            == "completed"
        )
        assert httpx.get(f"{url}/ready").json() == {"status": "ready"}
        with _frozen(own_postgres):
            # Generous bound: the answer is due after READY_WITHIN_S (10 s), never "no answer".
            status, code, message = _error(httpx.get(f"{url}/ready", timeout=60))
            assert (status, code) == (503, "StoreUnavailable")
            assert "did not answer within 10 s" in message and "127.0.0.1" in message
            assert httpx.get(f"{url}/health").json() == {"status": "ok"}
        deadline = time.monotonic() + 60
        while httpx.get(f"{url}/ready", timeout=60).status_code != 200:
            assert time.monotonic() < deadline, "never ready again after the database answered"
            time.sleep(0.1)
        again = httpx.post(f"{url}/runs", params={"wait": 30}, json=REVIEW, timeout=60)
        assert again.json()["status"] == "completed"
    finally:
        _stop(process, stderr)


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_sqlite_file_removed_or_replaced_under_the_service_stops_writes(
    tmp_path: Path, how: str
) -> None:
    write_fleet(tmp_path / "agents")
    database = tmp_path / "data" / "coordinator.db"
    process, url = serve(tmp_path, str(database), {}, "--model", "test")
    stderr = _Stderr(process)
    try:
        first = httpx.post(f"{url}/runs", params={"wait": 30}, json=REVIEW, timeout=60)
        assert first.json()["status"] == "completed"
        assert httpx.get(f"{url}/ready").json() == {"status": "ready"}
        for suffix in ("", "-wal", "-shm"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)
        if how == "replaced":
            database.write_bytes(b"")

        status, code, message = _error(httpx.get(f"{url}/ready"))
        assert (status, code) == (503, "StoreUnavailable")
        assert f"the database file {database} was {how}" in message
        status, code, message = _error(
            httpx.post(f"{url}/runs", params={"wait": 10}, json=REVIEW, timeout=60)
        )
        assert (status, code) == (503, "StoreUnavailable")
        assert how in message
        status, code, _ = _error(httpx.get(f"{url}/runs/{first.json()['run_id']}"))
        assert (status, code) == (503, "StoreUnavailable")
        assert httpx.get(f"{url}/health").status_code == 200
    finally:
        log = _stop(process, stderr)
    store_says = "agentshape: ERROR agent_coordinator._store.sqlite: the database file"
    errors = [line for line in log.splitlines() if line.startswith(store_says)]
    assert len(errors) == 1 and f"was {how}" in errors[0], log  # once, however many requests


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            check=True,
            capture_output=True,
            text=True,
        )
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        pytest.skip(f"cannot mount a small tmpfs here: {detail.strip()}")


def _fill(where: Path) -> None:
    """Write a file in ``where`` until its file system has no room left."""
    with open(where / "filler", "wb") as filler:
        chunk = b"\0" * 65536
        try:
            while True:
                filler.write(chunk)
                filler.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC
        with contextlib.suppress(OSError):  # the last partial chunk
            os.fsync(filler.fileno())


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_answers_507_store_full(tmp_path: Path) -> None:
    write_fleet(tmp_path / "agents")
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "4m")
    process: Process | None = None
    try:
        process, url = serve(tmp_path, str(disk / "coordinator.db"), {}, "--workers", "0")
        stderr = _Stderr(process)
        _fill(disk)
        body = {**REVIEW, "prompt": "x" * 150_000}
        answers: list[httpx.Response] = []
        for _ in range(100):
            answers.append(httpx.post(f"{url}/runs", json=body, timeout=60))
            if answers[-1].status_code != 202:
                break
        last = answers[-1]
        assert {a.status_code for a in answers[:-1]} <= {202}
        status, code, message = _error(last)
        assert (status, code) == (507, "StoreFull")
        assert "is full" in message and str(disk) in message
        (disk / "filler").unlink()
        again = httpx.post(f"{url}/runs", json=REVIEW, timeout=60)
        assert again.status_code == 202
        assert httpx.get(f"{url}/ready").json() == {"status": "ready"}
    finally:
        if process is not None:
            _stop(process, stderr)
        subprocess.run(["umount", str(disk)], check=False)


class _Held:
    """A ``serve`` on PostgreSQL whose one model call waits until :attr:`answer` is set."""

    def __init__(self, url: str, stderr: _Stderr, answer: threading.Event) -> None:
        self.url, self.stderr, self.answer = url, stderr, answer
        self.log = ""
        """What ``serve`` wrote, once it stopped."""


@contextlib.contextmanager
def _serve_holding_the_model(
    tmp_path: Path, cluster: Postgres, fake_llm: FakeLLM
) -> Iterator[_Held]:
    """Start ``serve`` on a new database of ``cluster``; stop it after, the model let go."""
    write_fleet(tmp_path / "agents")
    answer = threading.Event()

    def hold(_: object) -> None:
        """Hold the model call (the test's one run makes one) until the test lets it answer."""
        answer.wait(300)

    fake_llm.refuse_when(hold)
    fake_llm.respond_always(openai_tool_call("submit_result", VALID))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    process, url = serve(
        tmp_path, cluster.new_database(), env, "--model", "openai:gpt-test", "--workers", "1"
    )
    held = _Held(url, _Stderr(process), answer)
    try:
        yield held
    finally:
        answer.set()
        held.log = _stop(process, held.stderr)


def _until_the_model_is_called(fake_llm: FakeLLM) -> None:
    deadline = time.monotonic() + 120
    while not fake_llm.requests:
        assert time.monotonic() < deadline, "the run never called the model"
        time.sleep(0.05)


def _until_ended(url: str, run_id: str) -> dict[str, object]:
    """Return the run once the service reads it ended (through the restarted database)."""
    deadline = time.monotonic() + 120
    while (response := httpx.get(f"{url}/runs/{run_id}", timeout=60)).status_code != 200 or (
        response.json()["status"] == "running"
    ):
        assert time.monotonic() < deadline, response.text
        time.sleep(0.1)
    run: dict[str, object] = response.json()
    return run


def test_a_run_answered_while_postgres_is_down_is_stored_once_it_is_back(
    tmp_path: Path, own_postgres: Postgres, fake_llm: FakeLLM
) -> None:
    """The model's answer is paid for: its end waits for the database, not for a second call."""
    with _serve_holding_the_model(tmp_path, own_postgres, fake_llm) as held:
        run_id = httpx.post(f"{held.url}/runs", json=REVIEW).json()["run_id"]
        _until_the_model_is_called(fake_llm)
        own_postgres.stop_server("fast")
        held.answer.set()
        deadline = time.monotonic() + 120
        while f"cannot store the end of run {run_id}" not in held.stderr.text():
            assert time.monotonic() < deadline, held.stderr.text()[-2000:]
            time.sleep(0.1)
        own_postgres.start()
        run = _until_ended(held.url, run_id)
        assert run["status"] == "completed", run
        result = httpx.get(f"{held.url}/sessions/{run['session_id']}/result").json()
        assert result["result_data"] == VALID
        assert len(fake_llm.requests) == 1  # the answer was not asked for again


def test_a_request_waiting_while_postgres_goes_down_gets_its_run_id_not_a_503(
    tmp_path: Path, own_postgres: Postgres, fake_llm: FakeLLM
) -> None:
    """The run is stored and running: a 503 would read as "not created", and a client would
    make (and pay for) it again. The wait answers 202 with the run as last read."""
    with _serve_holding_the_model(tmp_path, own_postgres, fake_llm) as held:
        answers: list[httpx.Response] = []
        waiting = threading.Thread(
            target=lambda: answers.append(
                httpx.post(f"{held.url}/runs", params={"wait": 120}, json=REVIEW, timeout=180)
            )
        )
        waiting.start()
        _until_the_model_is_called(fake_llm)
        own_postgres.stop_server("fast")
        held.answer.set()  # the run ends, and its end cannot be stored
        waiting.join(150)
        [waited] = answers
        run = waited.json()
        assert (waited.status_code, run["status"]) == (202, "running"), waited.text
        own_postgres.start()
        assert _until_ended(held.url, run["run_id"])["status"] == "completed"
        assert len(fake_llm.requests) == 1


def test_an_outage_logs_a_line_not_one_for_each_call_waiting_it_out(
    own_postgres: Postgres, caplog: pytest.LogCaptureFixture
) -> None:
    """Every call made while the database is away retries; the log says so once (then every
    30 s), and once more when a call succeeds again, even after every retrying call gave up."""
    store = open_store(own_postgres.new_database())

    async def calls() -> list[object]:
        return await asyncio.gather(
            *(store.call(store.get_run, f"run_{n}") for n in range(20)), return_exceptions=True
        )

    try:
        own_postgres.stop_server("fast")
        with caplog.at_level(logging.WARNING, logger="agent_coordinator._store.sql"):
            failed = asyncio.run(calls())
            assert all(isinstance(error, StoreUnavailable) for error in failed), failed
            retried = [r for r in caplog.records if "trying again" in r.getMessage()]
            assert len(retried) == 1, [r.getMessage() for r in caplog.records]
            caplog.clear()
            own_postgres.start()
            assert asyncio.run(calls()) == [None] * 20
        messages = [r.getMessage() for r in caplog.records]
        assert sum("answers again" in m for m in messages) == 1, messages
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # started already
            own_postgres.start()
        store.close()


def test_a_run_s_event_stream_waits_out_a_postgres_outage_and_goes_on_to_its_end(
    tmp_path: Path, own_postgres: Postgres, fake_llm: FakeLLM
) -> None:
    """Followed over raw HTTP and with the Python client, across a stop longer than the store's
    own retries: the stream stays open (comment lines) and ends with the run, without a 500."""
    lines: list[str] = []
    followed: list[object] = []
    with _serve_holding_the_model(tmp_path, own_postgres, fake_llm) as held:
        url = held.url
        run_id = httpx.post(f"{url}/runs", json=REVIEW).json()["run_id"]

        def raw() -> None:
            with httpx.stream("GET", f"{url}/runs/{run_id}/events", timeout=120) as stream:
                for line in stream.iter_lines():
                    lines.append(line)
                    if lines[-2:-1] == ["event: end"]:  # and its data
                        return

        def client() -> None:
            with Client(url, timeout=120) as service:
                followed.extend(service.events(run_id))

        _until_the_model_is_called(fake_llm)
        readers = [threading.Thread(target=raw), threading.Thread(target=client)]
        for reader in readers:
            reader.start()
        deadline = time.monotonic() + 120
        while not any(line.startswith("event: run_claimed") for line in lines):
            assert time.monotonic() < deadline, lines
            time.sleep(0.05)
        own_postgres.stop_server("fast")
        while ": waiting for the database" not in lines:  # past the store's own retries
            assert time.monotonic() < deadline, lines
            time.sleep(0.05)
        # The dashboard's live list: its five-second stream ends as usual, asking to reconnect.
        sessions = httpx.get(f"{url}/reports/sessions/events", timeout=60)
        assert sessions.status_code == 200
        assert ": waiting for the database" in sessions.text
        assert sessions.text.endswith('event: end\ndata: {"reconnect": true}\n\n')
        own_postgres.start()
        held.answer.set()
        for reader in readers:
            reader.join(120)
        assert lines[-2:] == ["event: end", 'data: {"status": "completed"}'], lines
        assert isinstance(followed[-1], RunEnded) and followed[-1].status == "completed"
    assert "Exception in ASGI application" not in held.log


def test_a_read_in_a_worker_thread_answers_503_in_time_when_the_database_stops_answering(
    own_postgres: Postgres,
) -> None:
    """The report pages' reads: a frozen database held them (and their request) until it
    answered again, minutes later; they answer ``StoreUnavailable`` after ``thread_call_s``."""
    store = open_store(own_postgres.new_database())

    async def read() -> object:
        # The test's own bound, far past the store's: a read that never answers fails here.
        return await asyncio.wait_for(store.call_in_thread(store.count_runs), 120)

    # One loop throughout: asyncio.run would wait, as it ends, for the thread still held.
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(read()) == 0
        # A short bound only while nothing answers: the reads either side take the default,
        # however slow the machine.
        store.thread_call_s, bound = 1.0, store.thread_call_s
        with (
            _frozen(own_postgres),
            pytest.raises(StoreUnavailable, match="did not answer within 1 s"),
        ):
            loop.run_until_complete(read())
        store.thread_call_s = bound
        assert loop.run_until_complete(read()) == 0  # the database answers: so does the store
    finally:
        loop.close()
        store.close()
