"""``serve --processes N``: runner processes that claim runs beside serve and stop with it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

from agent_coordinator._runner_processes import Handed, RunnerProcesses, ServeChannel
from agent_coordinator._store.records import Claim
from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import Process, serve
from tests.fake_llm import FakeLLM, delayed, openai_tool_call

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
VALID = {"summary": "ok", "approval": "approve"}


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting to be reaped has stopped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_serve_runs_runs_in_each_process_it_starts_and_stops_them_all(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """Three runs at once with one worker a process: three processes each hold one of them.

    The model holds its answers until the test has seen all three runs inside a model call
    (the delay only bounds a broken run); then they end and serve is stopped.
    """
    write_fleet(tmp_path / "agents")
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 150))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    server, url = serve(
        tmp_path,
        database,
        env,
        *("--model", "openai:gpt-test", "--workers", "1", "--processes", "3"),
    )
    banner = server.read_until("runners:")
    children = [int(pid) for pid in re.findall(r"\d+", banner.split("(", 1)[1])]
    try:
        runs = [
            httpx.post(f"{url}/runs", json={**REVIEW, "prompt": f"Review PR {n}"}).json()
            for n in range(3)
        ]
        deadline = time.monotonic() + 120
        while len(fake_llm.requests) < 3:  # each process's one worker is inside a model call
            assert time.monotonic() < deadline, f"{len(fake_llm.requests)} runs started"
            time.sleep(0.05)
        holders = {
            int(
                httpx.get(f"{url}/runs/{run['run_id']}")
                .json()["claim_history"][-1]["runner"]
                .split(":")[1]
            )
            for run in runs
        }
    finally:
        fake_llm.end_delays()
        code = server.stop(timeout=180)
    assert len(children) == 2
    assert holders == {server.popen.pid, *children}
    assert code == 0
    assert [pid for pid in children if _alive(pid)] == []


def test_processes_needs_workers(tmp_path: Path) -> None:
    write_fleet(tmp_path / "agents")
    process = Process(
        ["serve", "--port", "0", "--workers", "0", "--processes", "2"], cwd=tmp_path, env={}
    )
    code = process.stop(timeout=60) if process.popen.wait(60) is None else process.popen.returncode
    process.stop()
    assert code == 2
    assert "--processes runs runs in more processes: it needs --workers" in process.rest


def test_runner_processes_stop_when_serve_is_killed(tmp_path: Path) -> None:
    """SIGKILL gives serve no chance to stop them: they stop themselves (Linux)."""
    write_fleet(tmp_path / "agents")
    database = str(tmp_path / "coordinator.db")
    server, _ = serve(
        tmp_path, database, {}, "--model", "test", "--workers", "1", "--processes", "2"
    )
    banner = server.read_until("runners:")
    children = [int(pid) for pid in re.findall(r"\d+", banner.split("(", 1)[1])]
    assert len(children) == 1 and _alive(children[0])
    server.kill()
    deadline = time.monotonic() + 60
    while _alive(children[0]):
        assert time.monotonic() < deadline, "the runner process outlived serve"
        time.sleep(0.05)


def _catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (Linux ``/proc``: ``SigCgt``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signum - 1)))
    return False


def _children(banner: str) -> list[int]:
    """The runner processes' pids, from serve's ``runners:`` banner line."""
    return [int(pid) for pid in re.findall(r"\d+", banner.split("(", 1)[1])]


def _runner_processes_of(serve_pid: int) -> list[int]:
    """The live ``runner`` processes whose parent is ``serve_pid`` (Linux ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not _alive(int(entry.name)):
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if parent == serve_pid and b"runner" in command:
            found.append(int(entry.name))
    return found


def _holders(url: str, runs: list[dict[str, str]]) -> set[int]:
    """The pids of the processes whose runners hold ``runs`` now."""
    return {
        int(
            httpx.get(f"{url}/runs/{run['run_id']}")
            .json()["claim_history"][-1]["runner"]
            .split(":")[1]
        )
        for run in runs
    }


def test_the_database_reaches_runner_processes_in_their_environment_not_their_command_line(
    tmp_path: Path, database: str
) -> None:
    """A PostgreSQL URL may hold a password, and every user of the host can read a command line."""
    write_fleet(tmp_path / "agents")
    server, _ = serve(
        tmp_path, database, {}, "--model", "test", "--workers", "1", "--processes", "2"
    )
    try:
        [child] = _children(server.read_until("runners:"))
        command = Path(f"/proc/{child}/cmdline").read_bytes()
        environment = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
    finally:
        assert server.stop(timeout=120) == 0
    assert database.encode() not in command
    assert b"agent_coordinator\0runner" in command
    assert f"AGENTSHAPE_DATABASE={database}".encode() in environment


def test_serve_restarts_a_runner_process_that_dies_and_logs_how_it_ended(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """SIGKILL a runner process: serve logs it and starts another, which runs runs.

    The second is killed at once too: the next waits twice as long.
    """
    write_fleet(tmp_path / "agents")
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 150))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    server, url = serve(
        tmp_path,
        database,
        env,
        *("--model", "openai:gpt-test", "--workers", "1", "--processes", "2"),
    )
    [child] = _children(server.read_until("runners:"))
    deadline = time.monotonic() + 120

    def replaced(dead: set[int]) -> int:
        while not (alive := set(_runner_processes_of(server.popen.pid)) - dead):
            assert time.monotonic() < deadline, "no runner process was started again"
            time.sleep(0.05)
        [started] = alive
        return started

    try:
        os.kill(child, signal.SIGKILL)
        first = replaced({child})
        os.kill(first, signal.SIGKILL)
        second = replaced({child, first})
        runs = [
            httpx.post(f"{url}/runs", json={**REVIEW, "prompt": f"Review PR {n}"}).json()
            for n in range(2)
        ]
        while len(fake_llm.requests) < 2:  # serve's one worker and the new process's one
            assert time.monotonic() < deadline, f"{len(fake_llm.requests)} runs started"
            time.sleep(0.05)
        holders = _holders(url, runs)
    finally:
        fake_llm.end_delays()
        code = server.stop(timeout=180)
    assert holders == {server.popen.pid, second}
    assert code == 0
    assert (
        f"runner process {child} stopped (killed by SIGKILL); starting another in 1 s"
        in server.rest
    )
    assert (
        f"runner process {first} stopped (killed by SIGKILL); starting another in 2 s"
        in server.rest
    )
    assert not _alive(second)


def test_serve_wakes_its_runner_processes_when_it_stores_a_run(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """On SQLite, whose runners otherwise find a run at their next poll (an hour here).

    Two held runs show both processes claim; once they have ended, both runners are idle. Then
    serve's one worker is held by a third run, and a fourth is stored: the runner process
    claims it only if serve wakes it.
    """
    write_fleet(tmp_path / "agents")
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 150))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    server, url = serve(
        tmp_path,
        str(tmp_path / "coordinator.db"),
        env,
        *("--model", "openai:gpt-test", "--workers", "1", "--processes", "2"),
        *("--poll", "3600"),
    )
    [child] = _children(server.read_until("runners:"))
    deadline = time.monotonic() + 120

    def started(count: int) -> None:
        while len(fake_llm.requests) < count:
            assert time.monotonic() < deadline, f"{len(fake_llm.requests)} of {count} runs started"
            time.sleep(0.05)

    try:
        first = [
            httpx.post(f"{url}/runs", json={**REVIEW, "prompt": f"Review PR {n}"}).json()
            for n in range(2)
        ]
        started(2)
        fake_llm.end_delays()
        for run in first:
            while httpx.get(f"{url}/runs/{run['run_id']}").json()["status"] != "completed":
                assert time.monotonic() < deadline, f"run {run['run_id']} did not complete"
                time.sleep(0.05)
        fake_llm.hold_delays()
        third = httpx.post(f"{url}/runs", json={**REVIEW, "prompt": "Review PR 3"}).json()
        started(3)
        fourth = httpx.post(f"{url}/runs", json={**REVIEW, "prompt": "Review PR 4"}).json()
        started(4)  # serve's one worker holds one of them: the runner process holds the other
        holders = _holders(url, [third, fourth])
    finally:
        fake_llm.end_delays()
        code = server.stop(timeout=180)
    assert holders == {server.popen.pid, child}
    assert code == 0


def test_processes_auto_is_one_process_a_core(tmp_path: Path) -> None:
    write_fleet(tmp_path / "agents")
    server, _ = serve(
        tmp_path,
        str(tmp_path / "coordinator.db"),
        {},
        *("--model", "test", "--workers", "1", "--processes", "auto"),
    )
    try:
        banner = server.read_until("runners:")
    finally:
        assert server.stop(timeout=120) == 0
    children = _children(banner) if "(" in banner else []
    assert len(children) == (os.cpu_count() or 1) - 1
    assert banner.startswith("  runners:  1 in this process")


def test_a_runner_process_asked_to_stop_is_not_started_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM (or a terminal's SIGINT, which stops serve too): it puts its runs back, exits 0."""
    write_fleet(tmp_path / "agents")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[2]))
    processes = RunnerProcesses(
        1,
        [
            *("--agents-dir", str(tmp_path / "agents"), "--registry", str(tmp_path / "s.db")),
            *("--workspace", str(tmp_path), "--model", "test", "--workers", "1"),
            "--no-analytics",
        ],
        database=str(tmp_path / "coordinator.db"),
        stop_s=60,
    )

    async def main() -> None:
        supervisor = asyncio.create_task(processes.supervise(lambda run_id: None))
        [pid] = processes.pids
        deadline = time.monotonic() + 120
        while not _catches(pid, signal.SIGTERM):  # its runner is up: SIGTERM stops it cleanly
            assert time.monotonic() < deadline, "the runner process did not start"
            await asyncio.sleep(0.05)
        os.kill(pid, signal.SIGTERM)
        while "not starting another" not in caplog.text:
            assert time.monotonic() < deadline, caplog.text
            await asyncio.sleep(0.05)
        supervisor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await supervisor

    processes.start()
    [pid] = processes.pids
    try:
        with caplog.at_level(logging.WARNING, logger="agent_coordinator._runner_processes"):
            asyncio.run(main())
    finally:
        processes.stop()
    assert (
        f"runner process {pid} stopped (exit code 0: it was asked to); not starting another"
        in caplog.text
    )
    assert "starting another in" not in caplog.text


def _waited(url: str, body: dict[str, object], wait: float = 60) -> httpx.Response:
    return httpx.post(f"{url}/runs", params={"wait": wait}, json=body, timeout=wait + 60)


def test_a_waited_run_is_stored_claimed_by_a_runner_process_and_answered(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """``?wait=`` runs go to a runner process with a free slot, stored already claimed by it.

    No claim of the queue between: started when stored, one claim, by the runner process; the
    answer is the run's end, as through serve's own runner.
    """
    write_fleet(tmp_path / "agents")
    fake_llm.respond_always(openai_tool_call("submit_result", VALID))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    server, url = serve(
        tmp_path,
        database,
        env,
        *("--model", "openai:gpt-test", "--workers", "2", "--processes", "2"),
    )
    [child] = _children(server.read_until("runners:"))
    try:
        deadline = time.monotonic() + 120
        answers = []
        for n in range(4):
            while True:  # until the runner process has said who it is, serve runs runs itself
                answer = _waited(url, {**REVIEW, "prompt": f"Review PR {n}"})
                run = httpx.get(f"{url}/runs/{answer.json()['run_id']}").json()
                holder = int(run["claim_history"][-1]["runner"].split(":")[1])
                if holder == child or answers:
                    break
                assert time.monotonic() < deadline, "no run was handed to the runner process"
            answers.append((answer.status_code, answer.json(), run, holder))
    finally:
        code = server.stop(timeout=180)
    assert code == 0
    for status, answered, run, holder in answers:
        assert status == 200
        assert {key: answered[key] for key in run if key != "claim_history"} == {
            key: value for key, value in run.items() if key != "claim_history"
        }
        assert answered["result"]["result_data"] == VALID
        assert run["status"] == "completed"
        assert holder == child
        assert run["claims"] == 1 and len(run["claim_history"]) == 1
        assert run["claim_history"][0]["ended"] == "completed"
        assert run["started_at"] == run["created_at"]  # stored claimed, not queued


def test_a_burst_of_waited_runs_through_runner_processes_all_end_once(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """More runs at once than the runner processes have slots: the rest go to serve's runner
    and the queue. Every one ends, completed, claimed once; counted back over the API."""
    write_fleet(tmp_path / "agents")
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 0.05))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    server, url = serve(
        tmp_path,
        database,
        env,
        *("--model", "openai:gpt-test", "--workers", "3", "--processes", "3"),
    )
    children = _children(server.read_until("runners:"))
    total = 60

    async def burst() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=total)
        async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
            return await asyncio.gather(
                *(
                    client.post(
                        "/runs", params={"wait": 100}, json={**REVIEW, "prompt": f"Review PR {n}"}
                    )
                    for n in range(total)
                )
            )

    deadline = time.monotonic() + 120
    try:
        ready = []  # until a runner process has said who it is, serve runs runs itself
        while not ready or _holders(url, ready[-1:]) & set(children) == set():
            assert time.monotonic() < deadline, "no run was handed to a runner process"
            ready.append(_waited(url, {**REVIEW, "prompt": "Ready?"}).json())
        answers = asyncio.run(burst())
        listed: list[dict[str, object]] = []
        cursor = None
        while True:
            page = httpx.get(
                f"{url}/runs", params={"limit": 50} | ({"cursor": cursor} if cursor else {})
            ).json()
            listed += page["items"]
            if (cursor := page["next_cursor"]) is None:
                break
        views = [httpx.get(f"{url}/runs/{run['run_id']}").json() for run in listed]
    finally:
        code = server.stop(timeout=180)
    assert code == 0
    assert [answer.status_code for answer in answers] == [200] * total
    ids = {answer.json()["run_id"] for answer in answers}
    assert len(ids) == total
    assert {view["run_id"] for view in views} == ids | {run["run_id"] for run in ready}
    assert len(views) == total + len(ready)
    # Claimed once; or, handed to a runner process whose slots its own claims had filled
    # meanwhile, put back in the queue first and claimed there (--workers holds).
    assert {view["status"] for view in views} == {"completed"}
    for view in views:
        ends = [claim["ended"] for claim in view["claim_history"]]
        assert ends in (["completed"], ["requeued", "completed"]), view
        assert view["claims"] == len(ends)
    handed = {  # stored claimed by a runner process's runner, not claimed from the queue
        int(view["claim_history"][0]["runner"].split(":")[1])
        for view in views
        if view["started_at"] == view["created_at"]
    }
    assert handed & set(children)


def test_runs_handed_to_a_killed_runner_process_are_taken_over_and_end_once(
    tmp_path: Path, database: str, fake_llm: FakeLLM
) -> None:
    """SIGKILL a runner process holding handed runs: their leases run out, others end them."""
    write_fleet(tmp_path / "agents")
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 150))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    server, url = serve(
        tmp_path,
        database,
        env,
        *("--model", "openai:gpt-test", "--workers", "2", "--processes", "2"),
        *("--lease", "1.5"),
    )
    [child] = _children(server.read_until("runners:"))
    deadline = time.monotonic() + 120
    try:
        while True:  # until the runner process has said who it is, serve runs runs itself
            called = len(fake_llm.requests)
            first = _waited(url, {**REVIEW, "prompt": "Review PR 0"}, wait=0.2).json()
            if _holders(url, [first]) == {child}:
                break
            fake_llm.end_delays()
            while httpx.get(f"{url}/runs/{first['run_id']}").json()["status"] == "running":
                assert time.monotonic() < deadline, "a run serve's runner holds did not end"
                time.sleep(0.05)
            fake_llm.hold_delays()
        second = _waited(url, {**REVIEW, "prompt": "Review PR 1"}, wait=0.2).json()
        runs = [first, second]
        assert _holders(url, runs) == {child}
        while len(fake_llm.requests) < called + 2:  # both are inside their model call
            assert time.monotonic() < deadline, "the runner process did not call the model"
            time.sleep(0.05)
        os.kill(child, signal.SIGKILL)
        fake_llm.end_delays()
        views = []
        for run in runs:
            while (view := httpx.get(f"{url}/runs/{run['run_id']}").json())["status"] in (
                "queued",
                "running",
            ):
                assert time.monotonic() < deadline, f"run {run['run_id']} was not taken over"
                time.sleep(0.1)
            views.append(view)
        events = [
            [
                line.removeprefix("event: ")
                for line in httpx.get(f"{url}/runs/{run['run_id']}/events").text.splitlines()
                if line.startswith("event: ")
            ]
            for run in runs
        ]
    finally:
        fake_llm.end_delays()
        code = server.stop(timeout=180)
    assert code == 0
    for view, kinds in zip(views, events, strict=True):
        assert (view["status"], view["claims"]) == ("completed", 2)
        assert [claim["ended"] for claim in view["claim_history"]] == ["expired", "completed"]
        assert int(view["claim_history"][0]["runner"].split(":")[1]) == child
        assert kinds.count("run_completed") == 1
    assert f"runner process {child} stopped (killed by SIGKILL)" in server.rest


def test_a_runner_process_logs_and_skips_what_it_cannot_read_from_serve(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Malformed lines, a claim that is not one, a message cut in two, one left unfinished."""
    ours, theirs = socket.socketpair()
    woken: list[bool] = []
    taken: list[Claim] = []

    async def main() -> None:
        channel = ServeChannel(theirs.detach())
        channel.listen(lambda: woken.append(True), taken.append)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        await loop.sock_sendall(ours, b'not json\n[1]\n{"claim": {"run": 5}}\n{"wake": tr')
        await asyncio.sleep(0)  # the rest comes later, as on a busy channel
        await loop.sock_sendall(ours, b'ue}\n{"what": 1}\n{"wake": true}\n{"wake"')
        while len(woken) < 2:
            assert loop.time() < deadline, caplog.text
            await asyncio.sleep(0.01)
        ours.close()
        while "in the middle of a message" not in caplog.text:
            assert loop.time() < deadline, caplog.text
            await asyncio.sleep(0.01)
        channel.ended("run_1")  # serve is gone: nothing to tell, nothing raised
        channel.close()

    ours.setblocking(False)
    with caplog.at_level(logging.ERROR, logger="agent_coordinator._runner_processes"):
        asyncio.run(main())
    assert (len(woken), taken) == (2, [])
    logged = [record.getMessage() for record in caplog.records]
    assert logged[:2] == [
        "channel to serve: skipped a malformed message: b'not json'",
        "channel to serve: skipped a malformed message: b'[1]'",
    ]
    assert logged[2].startswith("channel to serve: skipped a malformed claim: ")
    assert logged[3:] == [
        "channel to serve: skipped an unknown message: {'what': 1}",
        """channel to serve: the channel closed in the middle of a message: b'{"wake"'""",
    ]


_GARBLED_RUNNER = """
import os, sys
fd = int(sys.argv[sys.argv.index("--serve-channel") + 1])
os.write(fd, b'garbage\\n{"runner": "fake:1:ab", "work')
os.write(fd, b'ers": 2}\\n["x"]\\n{"what": 1}\\n{"done": "run_x"}\\n{"unfinish')
while os.read(fd, 65536):  # until serve closes the channel
    pass
"""


def test_serve_logs_and_skips_what_it_cannot_read_from_a_runner_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that writes garbage around its messages: serve keeps what it can read.

    The process stands in for a runner (the command ``serve`` starts runs this script instead):
    its id and workers are learned (serve may hand it runs), its ``done`` reaches the waiting
    requests, the rest is logged, and the message it leaves unfinished when it dies too.
    """
    script = tmp_path / "garbled.py"
    script.write_text(_GARBLED_RUNNER)
    executable = tmp_path / "python"
    executable.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    executable.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(executable))
    processes = RunnerProcesses(1, [], database=None, stop_s=60, restart_s=3600)
    ended: list[str] = []

    async def main() -> Handed | None:
        supervisor = asyncio.create_task(processes.supervise(ended.append))
        [pid] = processes.pids
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while not ended:
            assert loop.time() < deadline, caplog.text
            await asyncio.sleep(0.01)
        slot = processes.reserve()
        os.kill(pid, signal.SIGKILL)
        while "starting another in" not in caplog.text:
            assert loop.time() < deadline, caplog.text
            await asyncio.sleep(0.01)
        supervisor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await supervisor
        return slot

    processes.start()
    [pid] = processes.pids
    try:
        with caplog.at_level(logging.WARNING, logger="agent_coordinator._runner_processes"):
            slot = asyncio.run(main())
    finally:
        processes.stop()
    assert ended == ["run_x"]
    assert slot is not None and slot.runner == "fake:1:ab"
    assert [record.getMessage() for record in caplog.records] == [
        f"runner process {pid}: skipped a malformed message: b'garbage'",
        f"runner process {pid}: skipped a malformed message: b'[\"x\"]'",
        f"runner process {pid}: skipped an unknown message: {{'what': 1}}",
        f"runner process {pid}: the channel closed in the middle of a message: b'{{\"unfinish'",
        f"runner process {pid} stopped (killed by SIGKILL); starting another in 3600 s",
    ]
