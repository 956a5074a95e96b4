"""Chaos: the service left running through runner deaths and PostgreSQL restarts (issue 30).

    python bench/chaos.py [--minutes 10] [--runs 2000] [--kill-every 20] [--pg-restarts 2]
                          [--seed N] [--latency-ms 50,500] [--workers 8] [--lease 30]
                          [--drain 300] [--pg-down 5] [--keep-logs DIR]

Starts, as real processes on loopback: a throwaway PostgreSQL cluster, two ``agentshape serve``
(API only, ``--workers 0``) and two ``agentshape runner`` on its one database, and a model
server (``chaos_model.py``, on this process's event loop, so it outlives every kill) that answers
each call after 50-500 ms. Each run is three model turns: an input-tool call, an answer that
breaks the contract (re-asked), a valid answer. For ``--minutes`` it submits ``--runs`` runs,
evenly paced and alternating between the two servers (a submit that fails is retried, on the
other server, with the same ``Idempotency-Key``), SIGKILLs a random runner every
``--kill-every`` seconds and starts a replacement, and stops PostgreSQL for ``--pg-down``
seconds ``--pg-restarts`` times. Then it waits up to ``--drain`` seconds for every run to end,
reads every run and session back over the API, and prints one ``name: value`` line per count
(bench/README.md says what each means). The exit code is 1 when runs were lost, doubled or
stuck or a finished model turn was paid twice, 2 when the setup failed, 130 on Ctrl-C. Every
process and temporary directory it started is removed on the way out, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chaos_model import OUTPUT_SCHEMA, ModelServer
from chaos_processes import Command, Postgres, free_port, postgres_bin

ROOT = Path(__file__).resolve().parents[1]
AGENT = "chaos"
MODEL = "openai:chaos-model"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
SCAN_EVERY_S = 5.0
"""How often the runs are listed during the chaos (to see each run's end, and a second end)."""
PROGRESS_EVERY_S = 30.0
SUBMIT_GRACE_S = 60.0
"""How long after the chaos a submit still retries before it counts as refused."""
SESSION_READS = 5
"""Reads of a session at the end before it counts as unread (the servers take turns)."""
FINAL_READ_S = 180.0
"""The most the final read of every run and session takes, however many reads fail."""
HEADLINE = ("runs_lost", "runs_doubled", "runs_stuck", "model_turns_paid_twice")


@dataclass
class Run:
    """One submitted run, as the benchmark has seen it over the API."""

    token: str
    run_id: str | None = None
    session_id: str | None = None
    status: str | None = None
    ended_at: float | None = None
    """When it was first seen ended (monotonic)."""
    ended_twice: bool = False
    refused: str | None = None
    """Why the submit was never accepted, if it was not."""
    missing: bool = False


class Chaos:
    """The scenario: processes, load, faults, and what was seen of every run.

    Args:
        args: The parsed command line.
        tmp: A temporary directory of its own.
    """

    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.args = args
        self.tmp = tmp
        # one source each, so the kills' choices do not depend on how many retries came first
        self.rng = random.Random(args.seed)
        self.jitter = random.Random(args.seed + 1)
        low, high = (float(part) / 1000 for part in args.latency_ms.split(","))
        self.model = ModelServer((low, high), random.Random(args.seed + 2))
        self.postgres: Postgres | None = None
        self.servers: list[Command] = []
        self.server_ports: list[int] = []
        self.runners: list[Command] = []
        self.clients: list[httpx.AsyncClient] = []
        self.env: dict[str, str] = {}
        self.runs = [Run(f"chaos-{secrets.token_hex(8)}") for _ in range(args.runs)]
        self.by_id: dict[str, Run] = {}
        self.strangers: set[str] = set()
        """Runs in the store that no submit was answered with: a submit that made two runs."""
        self.reference: tuple[str, int] = ("", 0)
        """The calibration run's id and its session's message count (an uninterrupted run)."""
        self.counts = {
            "kills": 0,
            "pg_restarts": 0,
            "runner_exits": 0,
            "server_exits": 0,
            "submit_retries": 0,
        }
        self.extra_attempts = 0
        self.unread = 0
        self.final_read_end = 0.0
        """Completed runs whose session could not be read at the end."""
        self.started = time.monotonic()
        self.chaos_end = 0.0

    # processes ----------------------------------------------------------------------------

    def _common(self, name: str) -> list[str]:
        assert self.postgres is not None
        return [
            "--database",
            self.postgres.url,
            "--agents-dir",
            str(self.tmp / "agents"),
            "--registry",
            str(self.tmp / f"{name}.schemas.db"),
            "--workspace",
            str(self.tmp / "workspace"),
            "--model",
            MODEL,
            "--lease",
            str(self.args.lease),
        ]

    def _start_server(self, index: int) -> Command:
        port = self.server_ports[index]
        args = ["serve", "--port", str(port), "--workers", "0", *self._common(f"serve{index}")]
        log = self.tmp / "logs" / f"serve{index}-{time.monotonic_ns()}.log"
        return Command(args, log=log, cwd=self.tmp, env=self.env)

    def _start_runner(self) -> Command:
        args = ["runner", "--workers", str(self.args.workers), *self._common("runner")]
        log = self.tmp / "logs" / f"runner-{time.monotonic_ns()}.log"
        return Command(args, log=log, cwd=self.tmp, env=self.env)

    def _setup(self, model_url: str) -> None:
        """Write the fleet and workspace, start PostgreSQL, the servers and the runners."""
        agents = self.tmp / "agents" / AGENT
        agents.mkdir(parents=True)
        config = {
            "id": AGENT,
            "description": "Reads the notes, then answers with the run's token.",
            "system_prompt": "Read notes.txt with fs:read, then submit the token of the prompt.",
            "tools": ["fs:read"],
            "output_schema": OUTPUT_SCHEMA,
        }
        (agents / "agent.yml").write_text(json.dumps(config))
        (self.tmp / "workspace").mkdir()
        (self.tmp / "workspace" / "notes.txt").write_text("The token is in the prompt.\n")
        (self.tmp / "logs").mkdir()
        # a directory of its own: the postgres user cannot enter this (root's) one
        self.postgres = Postgres(Path(tempfile.mkdtemp(prefix="agentshape-chaos-pg-")))
        self.env = {
            "OPENAI_API_KEY": "sk-chaos",
            "OPENAI_BASE_URL": model_url,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        self.server_ports = [free_port(), free_port()]
        self.servers = [self._start_server(index) for index in range(2)]
        for server in self.servers:
            server.wait_for("listening on", 120)
        self.runners = [self._start_runner() for _ in range(2)]
        for runner in self.runners:
            runner.wait_for("workers", 120)

    # the API -------------------------------------------------------------------------------

    def _observe(self, run: Run, status: str) -> None:
        if run.status in TERMINAL and status != run.status:
            run.ended_twice = True  # seen ended, then seen otherwise
        if status in TERMINAL and run.ended_at is None:
            run.ended_at = time.monotonic()
        run.status = status

    async def _list_runs(self, client: httpx.AsyncClient) -> list[dict[str, Any]] | None:
        """Every run in the store, newest first, or ``None`` when a page could not be read."""
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            params: dict[str, int] = {"limit": 200}
            if cursor is not None:
                params["cursor"] = cursor
            try:
                response = await client.get("/runs", params=params)
            except httpx.HTTPError:
                return None
            if response.status_code != 200:
                return None
            page = response.json()
            items += page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                return items

    async def _scan(self, attempt: int = 0) -> bool:
        """List every run and note what is new; return whether the list could be read.

        The servers take turns (by ``attempt``); when one cannot list them, the other is asked.
        """
        items = await self._list_runs(self.clients[attempt % 2])
        if items is None:
            items = await self._list_runs(self.clients[(attempt + 1) % 2])
        if items is None:
            return False
        for item in items:
            run = self.by_id.get(item["run_id"])
            if run is not None:
                self._observe(run, item["status"])
            elif item["run_id"] != self.reference[0]:
                self.strangers.add(item["run_id"])
        return True

    async def _submit(self, index: int, run: Run) -> None:
        """Submit a run, retrying on the other server with the same key until accepted."""
        body = {"agent_name": AGENT, "prompt": f"Check the notes for run {run.token}."}
        headers = {"Idempotency-Key": run.token}
        attempt = 0
        while True:
            client = self.clients[(index + attempt) % 2]
            try:
                response = await client.post("/runs", json=body, headers=headers)
                if response.status_code in (200, 202):
                    data = response.json()
                    run.run_id, run.session_id = data["run_id"], data["session_id"]
                    self.by_id[data["run_id"]] = run
                    self._observe(run, data["status"])
                    return
                why = f"{response.status_code} {response.text[:200]}"
                if response.status_code < 500 and response.status_code != 429:
                    run.refused = why  # the request itself was refused: retrying cannot help
                    return
            except httpx.HTTPError as error:
                why = f"{type(error).__name__}: {error}"
            attempt += 1
            self.counts["submit_retries"] += 1
            if time.monotonic() > self.chaos_end + SUBMIT_GRACE_S:
                run.refused = why
                return
            await asyncio.sleep(min(5.0, 0.2 * 2 ** min(attempt, 5)) * self.jitter.uniform(0.5, 1))

    async def _calibrate(self) -> None:
        """Make one run with no faults: check it takes three turns, note its transcript."""
        token = f"chaos-{secrets.token_hex(8)}"
        body = {"agent_name": AGENT, "prompt": f"Check the notes for run {token}."}
        response = await self.clients[0].post("/runs", params={"wait": 60}, json=body)
        data = response.json()
        if data.get("status") != "completed":
            raise RuntimeError(f"the calibration run did not complete: {response.text}")
        session = (await self.clients[1].get(f"/sessions/{data['session_id']}")).json()
        self.reference = (data["run_id"], session["messages"])
        turns = sorted({turn for turn, _ in self.model.ledger.requests[token]})
        attempts = len(session["runs"][0]["attempts"])
        print(
            f"calibration: {len(turns)} model turns (messages {turns}), "
            f"{session['messages']} session messages, {attempts} attempts",
            file=sys.stderr,
        )

    # the faults ----------------------------------------------------------------------------

    async def _killer(self) -> None:
        """SIGKILL a random runner every ``--kill-every`` seconds and start its replacement."""
        kill_at = self.started + self.args.kill_every
        while kill_at < self.chaos_end:
            await asyncio.sleep(max(0.0, kill_at - time.monotonic()))
            index = self.rng.randrange(len(self.runners))
            # On the loop, not in a thread: the supervisor must not see the dead runner and
            # start a second replacement. Reaping a SIGKILLed process takes milliseconds.
            self.runners[index].kill()
            self.counts["kills"] += 1
            self.runners[index] = self._start_runner()
            kill_at += self.args.kill_every

    async def _restarter(self) -> None:
        """Stop PostgreSQL for ``--pg-down`` seconds, ``--pg-restarts`` times, evenly spaced.

        Each stop falls half-way between two kills, so a restart and a kill are two faults.
        """
        assert self.postgres is not None
        total = self.chaos_end - self.started
        for number in range(self.args.pg_restarts):
            at = self.started + total * (number + 1) / (self.args.pg_restarts + 1)
            at += self.args.kill_every / 2 - (at - self.started) % self.args.kill_every
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            await asyncio.to_thread(self.postgres.stop, "fast")
            await asyncio.sleep(self.args.pg_down)
            await asyncio.to_thread(self.postgres.start)
            self.counts["pg_restarts"] += 1
            print(f"{self._clock()} PostgreSQL restarted", file=sys.stderr)

    async def _supervisor(self, until: float) -> None:
        """Restart a runner or server that ended by itself (as systemd would), and count it."""
        while time.monotonic() < until:
            await asyncio.sleep(1.0)
            for index, runner in enumerate(self.runners):
                if runner.popen.poll() is not None:
                    self.counts["runner_exits"] += 1
                    print(f"{self._clock()} a runner exited: see {runner.log}", file=sys.stderr)
                    self.runners[index] = self._start_runner()
            for index, server in enumerate(self.servers):
                if server.popen.poll() is not None:
                    self.counts["server_exits"] += 1
                    print(f"{self._clock()} a server exited: see {server.log}", file=sys.stderr)
                    self.servers[index] = self._start_server(index)

    async def _scanner(self, until: float) -> None:
        """List the runs every few seconds, and report progress now and then."""
        report_at = time.monotonic() + PROGRESS_EVERY_S
        attempt = 0
        while time.monotonic() < until:
            await asyncio.sleep(SCAN_EVERY_S)
            attempt += 1
            read = await self._scan(attempt)
            if time.monotonic() >= report_at:
                report_at += PROGRESS_EVERY_S
                self._progress("" if read else " (the runs could not be listed)")

    def _clock(self) -> str:
        return f"[{time.monotonic() - self.started:5.0f} s]"

    def _progress(self, note: str = "") -> None:
        accepted = sum(1 for run in self.runs if run.run_id is not None)
        ended = sum(1 for run in self.runs if run.status in TERMINAL)
        print(
            f"{self._clock()} accepted {accepted}/{len(self.runs)}, ended {ended}, model requests "
            f"{self.model.ledger.total}, kills {self.counts['kills']}, PostgreSQL restarts "
            f"{self.counts['pg_restarts']}{note}",
            file=sys.stderr,
        )

    # the whole -----------------------------------------------------------------------------

    async def run(self) -> dict[str, object]:
        """Set up, make the runs through the faults, drain, and return the counts."""
        model_url = await self.model.start()
        try:
            await asyncio.to_thread(self._setup, model_url)
            limits = httpx.Limits(max_connections=100)
            self.clients = [
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30, limits=limits)
                for port in self.server_ports
            ]
            await self._calibrate()
            return await self._chaos()
        finally:
            for client in self.clients:
                await client.aclose()
            await asyncio.to_thread(self.stop_processes)
            await self.model.stop()

    async def _chaos(self) -> dict[str, object]:
        self.started = time.monotonic()
        self.chaos_end = self.started + self.args.minutes * 60
        drain_end = self.chaos_end + self.args.drain
        background = [
            asyncio.create_task(self._killer()),
            asyncio.create_task(self._restarter()),
            asyncio.create_task(self._supervisor(drain_end)),
            asyncio.create_task(self._scanner(drain_end)),
        ]
        try:
            interval = self.args.minutes * 60 / max(1, len(self.runs))
            submits = []
            for index, run in enumerate(self.runs):
                await asyncio.sleep(max(0.0, self.started + index * interval - time.monotonic()))
                submits.append(asyncio.create_task(self._submit(index, run)))
            await asyncio.gather(*submits)
            await asyncio.gather(*background[:2])
            print(f"{self._clock()} chaos over; waiting for the runs to end", file=sys.stderr)
            while time.monotonic() < drain_end:
                if all(run.status in TERMINAL for run in self.runs if run.run_id is not None):
                    break
                await asyncio.sleep(2.0)
                if not await self._scan():
                    await self._read_each()  # the list cannot be read: ask run by run
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
        duration = time.monotonic() - self.started
        await self._final_read()
        return self._counts(duration)

    async def _read_run(self, index: int, run: Run) -> None:
        """Read one run that has not been seen ended: its status, or that it is gone (404)."""
        with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
            found = await self.clients[index % 2].get(f"/runs/{run.run_id}")
            run.missing = found.status_code == 404
            if found.status_code == 200:
                self._observe(run, found.json()["status"])

    async def _read_session(self, index: int, run: Run) -> None:
        """Check a completed run's session for a second run, or the run's end written twice.

        The servers take turns for up to :data:`SESSION_READS` reads, within
        :data:`FINAL_READ_S` of the final read's start; after that the session counts as unread.
        """
        for attempt in range(SESSION_READS):
            if time.monotonic() > self.final_read_end:
                break
            with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                answer = await self.clients[(index + attempt) % 2].get(
                    f"/sessions/{run.session_id}"
                )
                if answer.status_code == 200:
                    session = answer.json()
                    # more messages than an uninterrupted run's: the end was written twice
                    if len(session["runs"]) != 1 or session["messages"] > self.reference[1]:
                        run.ended_twice = True
                    if len(session["runs"][-1]["attempts"]) > 2:
                        self.extra_attempts += 1
                    return
            await asyncio.sleep(1.0)
        self.unread += 1

    async def _read_each(self, *, sessions: bool = False) -> None:
        """Read each accepted run not seen ended, and with ``sessions`` each completed one's."""
        gate = asyncio.Semaphore(8)

        async def check(index: int, run: Run) -> None:
            async with gate:
                if run.status not in TERMINAL:
                    await self._read_run(index, run)
                if sessions and run.status == "completed":
                    await self._read_session(index, run)

        await asyncio.gather(
            *(check(i, run) for i, run in enumerate(self.runs) if run.run_id is not None)
        )

    async def _final_read(self) -> None:
        """Read every run and session back: runs gone, runs ended twice, extra attempts."""
        self.final_read_end = time.monotonic() + FINAL_READ_S
        deadline = time.monotonic() + 60
        attempt = 0
        while not await self._scan(attempt):
            attempt += 1
            if time.monotonic() > deadline:
                print(
                    "the runs could not be listed at the end: a run made by a second submit "
                    "would go unseen",
                    file=sys.stderr,
                )
                break
            await asyncio.sleep(1.0)
        await self._read_each(sessions=True)

    def _counts(self, duration: float) -> dict[str, object]:
        accepted = [run for run in self.runs if run.run_id is not None]
        status = {name: sum(1 for run in accepted if run.status == name) for name in TERMINAL}
        refused = sum(1 for run in self.runs if run.refused is not None)
        missing = sum(1 for run in accepted if run.missing)
        # listed before the answer to its submit arrived is not a stranger
        strangers = self.strangers - self.by_id.keys()
        paid_twice = in_flight = 0
        for run in self.runs:
            paid, repeated = self.model.ledger.repeats(run.token, run.ended_at)
            paid_twice += paid
            in_flight += repeated
        return {
            "runs_lost": refused + missing + status["failed"] + status["cancelled"],
            "runs_doubled": len(strangers) + sum(1 for run in accepted if run.ended_twice),
            "runs_stuck": sum(
                1 for run in accepted if not run.missing and run.status not in TERMINAL
            ),
            "model_turns_paid_twice": paid_twice,
            "runs_submitted": len(self.runs),
            "runs_accepted": len(accepted),
            "runs_refused": refused,
            "runs_completed": status["completed"],
            "runs_failed": status["failed"],
            "runs_cancelled": status["cancelled"],
            "runs_missing": missing,
            "runs_made_by_a_second_submit": len(strangers),
            "runs_with_extra_attempts": self.extra_attempts,
            "sessions_unread": self.unread,
            "model_requests": self.model.ledger.total,
            "model_turns_asked_again_in_flight": in_flight,
            **self.counts,
            "duration_s": round(duration, 1),
        }

    def failures(self) -> list[str]:
        """A line for each run that was refused, failed or is still not ended (a few of each)."""
        lines = []
        for label, runs in (
            ("refused", [run for run in self.runs if run.refused is not None]),
            ("failed", [run for run in self.runs if run.status in ("failed", "cancelled")]),
            (
                "not ended",
                [run for run in self.runs if run.run_id and run.status not in TERMINAL],
            ),
        ):
            for run in runs[:3]:
                lines.append(
                    f"  {label}: {run.token} {run.run_id} {run.status} {run.refused or ''}"
                )
        return lines

    def stop_processes(self) -> None:
        """Stop every agentshape process (SIGTERM, then SIGKILL) and remove PostgreSQL."""
        for command in [*self.runners, *self.servers]:
            with contextlib.suppress(OSError):
                command.stop()
        if self.postgres is not None:
            self.postgres.remove()
            self.postgres = None


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="chaos time (default 10)")
    parser.add_argument("--runs", type=int, default=2000, help="runs submitted (default 2000)")
    parser.add_argument(
        "--kill-every", type=float, default=20.0, help="seconds between runner kills (default 20)"
    )
    parser.add_argument(
        "--pg-restarts", type=int, default=2, help="PostgreSQL restarts (default 2)"
    )
    parser.add_argument("--pg-down", type=float, default=5.0, help="seconds PostgreSQL is down")
    parser.add_argument("--seed", type=int, default=None, help="the random seed (default: new)")
    parser.add_argument(
        "--latency-ms", default="50,500", help="the model's least,most latency (default 50,500)"
    )
    parser.add_argument("--workers", type=int, default=8, help="each runner's workers (8)")
    parser.add_argument("--lease", type=float, default=30.0, help="the runners' lease (30 s)")
    parser.add_argument(
        "--drain", type=float, default=300.0, help="most seconds to wait for the runs' ends"
    )
    parser.add_argument(
        "--keep-logs", type=Path, default=None, help="copy every process's log here at the end"
    )
    args = parser.parse_args()
    if args.seed is None:
        args.seed = secrets.randbelow(2**31)
    low, _, high = args.latency_ms.partition(",")
    if not (low.strip().isdigit() and high.strip().isdigit() and int(low) <= int(high)):
        parser.error("--latency-ms takes LOW,HIGH in milliseconds, LOW <= HIGH")
    if not (0 < args.minutes <= 600 and 0 < args.runs <= 100_000 and args.kill_every > 0):
        parser.error("--minutes must be in (0, 600], --runs in [1, 100000], --kill-every > 0")
    if not (0 <= args.pg_restarts <= 20 and 0 <= args.drain <= 3600 and args.workers > 0):
        parser.error("--pg-restarts must be in [0, 20], --drain in [0, 3600], --workers > 0")
    return args


def main() -> int:
    args = _arguments()
    if postgres_bin() is None:
        print("chaos: PostgreSQL is not installed (apt-get install postgresql)", file=sys.stderr)
        return 2
    # Ctrl-C even when started with SIGINT ignored (a background job), and SIGTERM alike: both
    # end in the clean-up below
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    tmp = Path(tempfile.mkdtemp(prefix="agentshape-chaos-"))
    chaos = Chaos(args, tmp)
    print(
        f"chaos: seed {args.seed}, {args.runs} runs over {args.minutes:g} min, a runner killed "
        f"every {args.kill_every:g} s, {args.pg_restarts} PostgreSQL restarts; logs in {tmp}",
        file=sys.stderr,
    )
    try:
        counts = asyncio.run(chaos.run())
    except KeyboardInterrupt:
        print("chaos: interrupted; stopping everything it started", file=sys.stderr)
        return 130
    except (
        RuntimeError,
        OSError,
        KeyError,
        ValueError,
        subprocess.SubprocessError,
        httpx.HTTPError,
    ) as error:
        print(f"chaos: the setup failed: {error}", file=sys.stderr)
        return 2
    finally:
        chaos.stop_processes()
        if args.keep_logs is not None:
            shutil.copytree(tmp / "logs", args.keep_logs, dirs_exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
    for line in chaos.failures():
        print(line, file=sys.stderr)
    for name, value in counts.items():
        print(f"{name}: {value}")
    return 1 if any(counts[name] for name in HEADLINE) else 0


if __name__ == "__main__":
    sys.exit(main())
