"""The coordinator service against direct library calls, over the same local provider server.

    .venv/bin/python bench/service.py [--runs 900] [--burst 1000] [--postgres]

``bench/fleet_server.py`` (its own process) answers every Chat Completions call with a valid
pr-reviewer result after ``--latency`` ms (20), so the model drops out. Parts:

1. throughput at concurrency 100: ``--runs`` runs through the service (``python -m
   agent_coordinator serve`` in its own process: HTTP, the SQLite store, in-process runners;
   each request waits for its run with ``?wait=``) against the same runs made directly with
   ``run_many`` over one kept ``Agent`` in this process; runs per second each, and
   ``service_vs_library: R`` (the service's rate divided by the library's; target at least
   0.9). ``service_cpu_vs_library[sqlite]: C`` is the CPU the service's processes spend a run
   (``serve`` and every process it started) over the CPU the library spends a run (target at
   most 1.5). The two sides take turns, three rounds each, so a machine shared with other
   work loads both alike; the load average is printed beside them. The service is measured
   as docs/service.md tells a user to run it on SQLite, one process (``serve --processes 1
   --workers 100``, the default): ``service_vs_library`` is that figure; then with one process
   a core (``--processes auto``; ``--processes`` here changes it), the 100 runs at once shared
   among them (``--workers 50`` each on 2 cores), the size docs/service.md gives PostgreSQL:
   those lines name the options in their brackets;
2. with ``--postgres``, the same against a throwaway PostgreSQL cluster (``initdb`` of the
   Debian package): ``service_cpu_vs_library[postgres]: C`` counts the database server's
   processes (the postmaster and its backends, from ``/proc``) with the service's (target at
   most 2.0);
3. a burst: ``--burst`` runs submitted at once without waiting, then read back until every one
   has ended; ``burst: N submitted, N completed, 0 lost`` when none is lost or run twice
   (``--burst 0`` leaves it out);
4. storage: ``--sessions`` pr-reviewer sessions (one run each, the four-comment answer, analytics
   on) through a service of their own, on a SQLite file of their own; ``bytes_per_session: N``
   is the pages the store uses (after a checkpoint and ``VACUUM``: tables and indexes, page-level)
   less those of an empty store, over the sessions (target at most 8192; ``--sessions 0``
   leaves it out). ``--bytes-only`` measures just this.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' PostgreSQL cluster helper, run as a script
SERVER = Path(__file__).resolve().parent / "fleet_server.py"
MODEL = "openai:gpt-4.1-mini"
LATENCY_MS = 20
CONCURRENCY = 100
ROUNDS = 3
"""Library and service are measured in alternating rounds (the machine's load drifts)."""
TASK = "Review the retry change in src/payments/retry.py."
BODY = {"agent_name": "pr-reviewer", "prompt": TASK}


def cpu_seconds(pid: int) -> float:
    """Return a process's user plus system CPU time (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children() -> dict[int, list[int]]:
    """Return every process's children, by parent pid (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    return children


def tree_cpu(*roots: int) -> float:
    """Return the CPU time of processes and all their descendants alive now.

    A descendant that ended meanwhile takes its CPU with it: the service's runner processes
    and PostgreSQL's pooled backends live as long as the measurement.
    """
    children = _children()
    total, todo = 0.0, list(roots)
    while todo:
        pid = todo.pop()
        total += cpu_seconds(pid)
        todo.extend(children.get(pid, ()))
    return total


def load_average() -> str:
    """Return the 1, 5 and 15 minute load averages and the cores, for the printed lines."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


@contextmanager
def postgres_cluster() -> Iterator[tuple[str, int]]:
    """Yield a new database's URL in a throwaway PostgreSQL cluster, and its postmaster's pid."""
    import shutil

    from tests.agent_coordinator.harness import Postgres

    root = Path(tempfile.mkdtemp(prefix="agentshape-bench-pg-"))
    try:
        cluster = Postgres(root)
    except Exception:
        shutil.rmtree(root, ignore_errors=True)
        raise
    try:
        postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
        yield cluster.new_database(), postmaster
    finally:
        cluster.stop()


def start_provider() -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--idle", "300", "--lifetime", "1800"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("PORT "):
        raise RuntimeError(f"the provider server did not start: {line!r}")
    return process, int(line.split()[1])


def start_service(
    env: dict[str, str],
    database: Path,
    workers: int,
    *,
    analytics: bool = False,
    url: str | None = None,
    extra: tuple[str, ...] = (),
) -> tuple[subprocess.Popen[str], str]:
    """Start ``serve`` on a free port with ``workers`` in-process runners; return it and its URL.

    ``database`` is the SQLite file (its directory holds the schema registry), unless ``url``
    names a PostgreSQL database; ``extra`` are more ``serve`` options.
    """
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_coordinator",
            "serve",
            "--port",
            "0",
            "--workers",
            str(workers),
            "--database",
            url or str(database),
            "--registry",
            str(database.with_suffix(".schemas.db")),
            "--model",
            MODEL,
            "--agents-dir",
            str(ROOT / "agents"),
            # the library side runs with NullAnalytics: the same work on both sides
            *(() if analytics else ("--no-analytics",)),
            *extra,
        ],
        cwd=database.parent,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if "listening on" not in line:
        raise RuntimeError(f"the service did not start: {line!r}")
    url = line.split("listening on ", 1)[1].split()[0]
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return process, url
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


class Side:
    """Runs, wall time and CPU time of one side, summed over the rounds."""

    def __init__(self) -> None:
        self.runs = 0
        self.seconds = 0.0
        self.cpu = 0.0
        self.database_cpu = 0.0
        """Of :attr:`cpu`, what the database server's processes spent."""

    @property
    def rate(self) -> float:
        return self.runs / self.seconds


class Connection:
    """One keep-alive HTTP/1.1 connection that speaks just enough HTTP for ``POST /runs``.

    The load generator's counterpart of ``fleet_server.py``'s minimal server: httpx spends
    about 2 ms of CPU on a request, and on a two-core machine that is taken from the service
    it measures. Real HTTP all the same: a request line, headers and a JSON body; the status
    line, headers and ``Content-Length`` body of each answer.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, target: str, body: bytes) -> tuple[int, bytes]:
        if self.streams is None:
            self.streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.streams
        writer.write(
            f"POST {target} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        status = int((await reader.readline()).split()[1])
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, await reader.readexactly(length)

    async def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            await self.streams[1].wait_closed()


class Callers:
    """``CONCURRENCY`` callers of the service, each with its own keep-alive connection."""

    def __init__(self, url: str) -> None:
        address = urlsplit(url)
        assert address.hostname is not None and address.port is not None
        self.connections = [Connection(address.hostname, address.port) for _ in range(CONCURRENCY)]

    async def wave(self, total: int) -> None:
        """Make ``total`` runs, ``CONCURRENCY`` at a time, each waiting for its end.

        As ``run_many`` does on the library's side: a caller whose run ended starts the next
        one still to make, so ``CONCURRENCY`` runs are in flight until fewer are left (a caller
        with a fixed share of the runs would leave the service idle while the slowest share
        ends).
        """
        body = json.dumps(BODY).encode()
        left = total

        async def caller(connection: Connection) -> list[str]:
            nonlocal left
            statuses = []
            while left > 0:
                left -= 1
                status, answer = await connection.post("/runs?wait=60", body)
                statuses.append(str(json.loads(answer)["status"]) if status < 300 else str(status))
            return statuses

        done = await asyncio.gather(*(caller(c) for c in self.connections))
        failed = [status for statuses in done for status in statuses if status != "completed"]
        assert not failed, f"{len(failed)} service runs did not complete: {set(failed)}"

    async def close(self) -> None:
        await asyncio.gather(*(connection.close() for connection in self.connections))


async def throughput(
    env: dict[str, str], url: str, cpu: Callable[[], tuple[float, float]], runs: int
) -> tuple[Side, Side]:
    """Measure both sides in alternating rounds, so both see the same load on a shared machine.

    ``cpu`` reads the CPU seconds the service's processes and the database server's processes
    have spent so far.
    """
    from agent_core import load_agent_config
    from agent_executor import Agent, NullAnalytics, run_many

    agent = Agent(
        load_agent_config(ROOT / "agents" / "pr-reviewer" / "agent.yml"),
        analytics=NullAnalytics(),
        env=env,
    )
    callers = Callers(url)
    library, service = Side(), Side()
    try:
        await run_many(agent, [TASK] * CONCURRENCY, concurrency=CONCURRENCY, model=MODEL)  # warm
        await callers.wave(CONCURRENCY)  # warm
        for round_ in range(ROUNDS):
            share = runs // ROUNDS + (round_ < runs % ROUNDS)
            started, own = time.perf_counter(), time.process_time()
            results = await run_many(agent, [TASK] * share, concurrency=CONCURRENCY, model=MODEL)
            library.seconds += time.perf_counter() - started
            library.cpu += time.process_time() - own
            library.runs += share
            assert all(result.ok for result in results), "a library run failed"
            started, (spent, database) = time.perf_counter(), cpu()
            await callers.wave(share)
            service.seconds += time.perf_counter() - started
            now_spent, now_database = cpu()
            service.cpu += now_spent + now_database - spent - database
            service.database_cpu += now_database - database
            service.runs += share
    finally:
        await callers.close()
    return library, service


async def burst(url: str, count: int) -> tuple[int, int, int]:
    limits = httpx.Limits(max_connections=200)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        created = await asyncio.gather(
            *(client.post("/runs", json={**BODY, "prompt": f"{TASK} #{n}"}) for n in range(count))
        )
        ids = {response.json()["run_id"] for response in created if response.status_code == 202}
        deadline = time.monotonic() + 600
        ended: dict[str, dict[str, object]] = {}
        while len(ended) < len(ids) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            ended = {}
            cursor = None
            while True:
                params: dict[str, object] = {"limit": 200}
                if cursor is not None:
                    params["cursor"] = cursor
                page = (await client.get("/runs", params=params)).json()
                for item in page["items"]:
                    if item["run_id"] in ids and item["status"] in ("completed", "failed"):
                        ended[item["run_id"]] = item
                cursor = page["next_cursor"]
                if cursor is None:
                    break
    completed = sum(1 for item in ended.values() if item["status"] == "completed")
    twice = sum(1 for item in ended.values() if item["claims"] != 1)
    return len(ids), completed, len(ids) - len(ended) + twice


def used_bytes(database: Path) -> int:
    """Return the bytes a SQLite store's pages hold (checkpointed and vacuumed first)."""
    connection = sqlite3.connect(database)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("VACUUM")
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        free = connection.execute("PRAGMA freelist_count").fetchone()[0]
        size = connection.execute("PRAGMA page_size").fetchone()[0]
    finally:
        connection.close()
    return int((pages - free) * size)


async def _sessions(url: str, count: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for _ in range(count):
            answer = await client.post("/runs?wait=60", json=BODY)
            assert answer.json()["status"] == "completed", answer.text


def bytes_per_session(env: dict[str, str], sessions: int) -> float:
    """Return the store's bytes per pr-reviewer session (one run, four comments, analytics on)."""
    from agent_coordinator import open_store

    with tempfile.TemporaryDirectory(prefix="agentshape-bytes-") as tmp:
        empty = Path(tmp) / "empty.db"
        open_store(empty).close()
        database = Path(tmp) / "coordinator.db"
        service, url = start_service(env, database, 4, analytics=True)
        try:
            asyncio.run(_sessions(url, sessions))
        finally:
            service.terminate()
            service.wait(30)
            if service.stdout is not None:
                service.stdout.close()
        return (used_bytes(database) - used_bytes(empty)) / sessions


def _stop(service: subprocess.Popen[str]) -> None:
    service.terminate()
    service.wait(30)
    if service.stdout is not None:
        service.stdout.close()


def _report(store: str, label: str, library: Side, served: Side, workers: int) -> None:
    print(
        f"library: {library.rate:.1f} runs/s ({library.runs} runs, concurrency "
        f"{CONCURRENCY}; {library.cpu / library.runs * 1000:.1f} ms of CPU a run)"
    )
    print(
        f"service[{store}{label}]: {served.rate:.1f} runs/s (HTTP + {store} + {workers} "
        f"runners a process; "
        f"{served.cpu / served.runs * 1000:.1f} ms of CPU a run, of which the database server "
        f"{served.database_cpu / served.runs * 1000:.1f})"
    )
    cpu_ratio = (served.cpu / served.runs) / (library.cpu / library.runs)
    print(f"service_cpu_vs_library[{store}{label}]: {cpu_ratio:.2f} ({load_average()})")


def _processes(text: str) -> int:
    return (os.cpu_count() or 1) if text == "auto" else int(text)


def _sqlite(
    env: dict[str, str], tmp: Path, args: argparse.Namespace, processes: int
) -> tuple[int, int]:
    """Measure the service on SQLite run as ``serve --processes N``; return the burst's counts."""
    extra = (*args.serve_option, "--processes", str(processes))
    label = _label(processes, args.workers)
    database = Path(tmp) / f"coordinator-{processes}.db"
    service, url = start_service(env, database, _share(args.workers, processes), extra=extra)
    try:
        library, served = asyncio.run(
            throughput(env, url, lambda: (tree_cpu(service.pid), 0.0), args.runs)
        )
        _report("sqlite", label, library, served, _share(args.workers, processes))
        ratio = served.rate / library.rate
        if processes == 1:
            print(
                f"service_vs_library: {ratio:.2f} (serve --processes 1 --workers "
                f"{args.workers}, as docs/service.md sizes it on SQLite; {load_average()})"
            )
        else:
            print(f"service_vs_library[sqlite{label}]: {ratio:.2f} ({load_average()})")
        if args.burst and processes == args.processes:
            submitted, completed, lost = asyncio.run(burst(url, args.burst))
            print(f"burst: {submitted} submitted, {completed} completed, {lost} lost")
            return submitted, lost
    finally:
        _stop(service)
    return 0, 0


def _postgres(env: dict[str, str], tmp: Path, args: argparse.Namespace, processes: int) -> None:
    """Measure the service on a throwaway PostgreSQL cluster run as ``serve --processes N``."""
    extra = (*args.serve_option, "--processes", str(processes))
    with postgres_cluster() as (database, postmaster):
        workers = _share(args.workers, processes)
        service, url = start_service(
            env, Path(tmp) / f"pg-{processes}.db", workers, url=database, extra=extra
        )
        try:
            library, served = asyncio.run(
                throughput(
                    env, url, lambda: (tree_cpu(service.pid), tree_cpu(postmaster)), args.runs
                )
            )
            _report("postgres", _label(processes, args.workers), library, served, workers)
        finally:
            _stop(service)


def _share(workers: int, processes: int) -> int:
    """Return the ``--workers`` of each of ``processes`` that run ``workers`` runs at once."""
    return -(-workers // processes)


def _label(processes: int, workers: int) -> str:
    """The bracket's tail naming a run with more than one process: ``, --processes 2 ...``."""
    if processes == 1:
        return ""
    return f", --processes {processes} --workers {_share(workers, processes)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=900)
    parser.add_argument("--burst", type=int, default=1000, help="0 leaves the burst out")
    parser.add_argument(
        "--workers",
        type=int,
        default=CONCURRENCY,
        help="runs at once in the service, shared among its processes (%(default)s)",
    )
    parser.add_argument("--latency", type=int, default=LATENCY_MS, help="model latency, ms")
    parser.add_argument("--postgres", action="store_true", help="also measure on PostgreSQL")
    parser.add_argument(
        "--serve-option",
        action="append",
        default=[],
        help="one more option for serve (repeat: --serve-option=--lease --serve-option=60)",
    )
    parser.add_argument(
        "--processes",
        type=_processes,
        default="auto",
        metavar="N",
        help="serve --processes for the second measurement (default auto: one a core)",
    )
    parser.add_argument("--sessions", type=int, default=200, help="sessions the storage part makes")
    parser.add_argument("--bytes-only", action="store_true", help="measure only bytes_per_session")
    args = parser.parse_args()
    provider, port = start_provider()
    env = {
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/valid/{args.latency}/v1",
    }
    submitted = lost = 0
    try:
        if args.bytes_only:
            print(f"bytes_per_session: {bytes_per_session(env, args.sessions):.0f}")
            return 0
        with tempfile.TemporaryDirectory(prefix="agentshape-bench-") as tmp:
            counts = sorted({1, args.processes})
            for processes in counts:  # the burst goes to the last: args.processes
                submitted, lost = _sqlite(env, Path(tmp), args, processes)
            if args.postgres:
                for processes in counts:
                    _postgres(env, Path(tmp), args, processes)
        if args.sessions:
            print(f"bytes_per_session: {bytes_per_session(env, args.sessions):.0f}")
    finally:
        if provider.stdin is not None:
            provider.stdin.close()
        provider.wait(10)
        if provider.stdout is not None:
            provider.stdout.close()
    return 0 if lost == 0 and submitted == args.burst else 1


if __name__ == "__main__":
    sys.exit(main())
