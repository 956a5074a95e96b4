"""Make a big store: N sessions shaped like real use, written in bulk through the store's own SQL.

    .venv/bin/python bench/service_scale.py --sessions 100000 --database /tmp/big.db
    .venv/bin/python bench/service_scale.py --sessions 100000 --database postgresql://...
    .venv/bin/python bench/service_scale.py --bench [--small 10000] [--big 100000]

The store is opened (and migrated) with ``open_store``, as ``agentshape serve`` opens it, and
filled in transactions of a thousand sessions with the same columns the service writes. Each
session is the shipped pr-reviewer's (most) or one of a few other agents', created at a time
spread over the last 60 days (older sessions have lower ``seq``, as they would). About 10% of
runs fail with validation errors after a retry, about 15% of completed runs needed one retry, and
about 10% of sessions were resumed once. Each run has the result, attempts and analytics events
(``run_started``, ``model_turn``, ``attempt``, ``retry``, ``run_completed``/``run_failed``) a
runner would store, and the session its transcript.

The per-agent, per-day rollups the analytics read are then filled from those events, as a
migration fills them for a store written before they existed. The store must be new (empty):
the tool refuses one that already holds sessions. It exits 0 and prints what it built.

``--bench`` builds a small and a big SQLite store in a temporary directory and, for each, starts
``agentshape serve`` (its own process, no runners) on it and measures the service's CPU time per
view of the sessions page (``GET /reports/sessions?limit=50``; and, reported beside it, filtered
by a status and by an error type) and of the analytics (``GET /reports/analytics``, whole and
``since=7d``), and its peak RSS; it prints the big store's figures over the small one's:
``reports_page_100k_vs_10k``, ``reports_analytics_100k_vs_10k``, ``service_rss_100k_vs_10k``
(targets 1.5, 1.5 and 1.3), with the load average.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's packages, and bench.service, run as a script

from agent_coordinator import SqlStore, open_store  # noqa: E402
from agent_coordinator._store.sql import dumps, stored_attempt, stored_result  # noqa: E402
from bench.service import cpu_seconds, start_service  # noqa: E402

DAY_S = 86_400.0
SPAN_DAYS = 60
BATCH = 1_000
"""Sessions written per transaction."""
AGENTS = (("pr-reviewer", 0.7), ("researcher", 0.1), ("tester", 0.1), ("reviewer", 0.1))
MODEL = "gpt-4.1-mini"
TASK = "Review the retry change in src/payments/retry.py."
FAILED_SHARE = 0.10
RETRIED_SHARE = 0.15
RESUMED_SHARE = 0.10
_SEVERITIES = ("nitpick", "suggestion", "concern", "blocker")


@dataclass
class Built:
    """What was written."""

    sessions: int = 0
    runs: int = 0
    failed: int = 0
    retried: int = 0
    resumed: int = 0
    batched: int = 0
    events: int = 0
    agents: set[str] = field(default_factory=set)


def _answer(rng: random.Random) -> dict[str, Any]:
    """A pr-reviewer answer with a few comments."""
    return {
        "summary": "The retry loop now backs off exponentially; one bound is off by one.",
        "approval": rng.choice(("approve", "request_changes", "comment")),
        "comments": [
            {
                "file": "src/payments/retry.py",
                "line": rng.randint(1, 400),
                "severity": rng.choice(_SEVERITIES),
                "message": "The last attempt sleeps before giving up; return without waiting.",
            }
            for _ in range(rng.randint(1, 4))
        ],
        "metrics": {"files_reviewed": 2, "lines_changed": rng.randint(5, 300)},
    }


_ISSUE = {
    "path": "$.comments[0].severity",
    "message": "'critical' is not one of ['nitpick', 'suggestion', 'concern', 'blocker']",
    "keyword": "enum",
    "schema_path": "$.properties.comments.items.properties.severity.enum",
}


def _ts(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat()


def _attempt(number: int, raw: str, ok: bool, tokens: tuple[int, int], ms: float) -> dict[str, Any]:
    return {
        "number": number,
        "mode": "tool",
        "raw_output": raw,
        "parsed": None,
        "errors": [] if ok else [_ISSUE],
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1], "requests": 1},
        "latency_ms": ms,
        "recovered_by_extraction": False,
        "tool_name": "submit_result",
        "model": MODEL,
    }


@dataclass
class _Run:
    """One run's rows: the run, its attempts and its events."""

    row: tuple[object, ...]
    attempts: list[tuple[object, ...]]
    events: list[tuple[object, ...]]
    transcript: list[dict[str, Any]]
    error: dict[str, Any] | None


def _run(
    rng: random.Random,
    *,
    session_id: str,
    agent: str,
    kind: str,
    started: float,
    failed: bool,
    retried: bool,
    batch_id: str | None = None,
) -> _Run:
    run_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    answer = _answer(rng)
    good = dumps(answer)
    bad = good.replace('"severity":"', '"severity":"critical', 1)
    tries = 2 if failed or retried else 1
    turns: list[float] = [rng.lognormvariate(6.5, 0.4) for _ in range(tries)]
    tokens = [(rng.randint(600, 1400), rng.randint(150, 400)) for _ in range(tries)]
    outputs = [bad] * (tries - 1) + [bad if failed else good]
    attempts = [
        _attempt(n, outputs[n - 1], ok=not (failed or n < tries), tokens=tokens[n - 1], ms=ms)
        for n, ms in zip(range(1, tries + 1), turns, strict=True)
    ]
    duration = sum(turns) + rng.uniform(5, 40)
    ended = started + duration / 1000
    usage = {
        "input_tokens": sum(t[0] for t in tokens),
        "output_tokens": sum(t[1] for t in tokens),
        "requests": tries,
    }
    base = {"run_id": run_id, "agent_id": agent}
    events: list[tuple[str, dict[str, Any], float]] = [
        (
            "run_started",
            {**base, "event": "run_started", "model": MODEL, "output_mode": "tool"}
            | {"max_retries": 1},
            started,
        )
    ]
    clock = started
    for n in range(1, tries + 1):
        clock += turns[n - 1] / 1000
        events.append(
            (
                "model_turn",
                {**base, "event": "model_turn", "step": n, "model": MODEL}
                | {
                    "usage": {"input_tokens": tokens[n - 1][0], "output_tokens": tokens[n - 1][1]}
                    | {"requests": 1},
                    "latency_ms": turns[n - 1],
                    "stop_reason": "tool_calls",
                    "tool_calls": ["submit_result"],
                }
                | ({} if batch_id is None else {"batch_id": batch_id}),
                clock,
            )
        )
        ok = not (failed or n < tries)
        events.append(
            (
                "attempt",
                {**base, "event": "attempt", "number": n, "mode": "tool"}
                | {"raw_output": outputs[n - 1], "errors": [] if ok else [_ISSUE]},
                clock,
            )
        )
        if n < tries:
            events.append(
                (
                    "retry",
                    {**base, "event": "retry", "number": n}
                    | {"reason": "output_schema_validation_failed", "error_count": 1},
                    clock,
                )
            )
    error: dict[str, Any] | None = None
    if failed:
        error = {
            "type": "output_schema_validation_failed",
            "message": "the output did not match the schema after 1 retry",
            "validation_errors": [f"{_ISSUE['path']}: {_ISSUE['message']}"],
            "issues": [_ISSUE],
            "last_output": None,
        }
        end = {"event": "run_failed", "error_type": error["type"], "message": error["message"]}
    else:
        end = {"event": "run_completed", "model": MODEL, "recovered_by_extraction": False}
    end |= {"usage": usage, "duration_ms": duration, "attempts": tries, "retries": tries - 1}
    events.append((str(end["event"]), {**base, **end}, ended))
    transcript = [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": None, "tool_calls": [{"name": "submit_result"}]},
    ]
    result: dict[str, Any] = {
        "status": "failed" if failed else "completed",
        "result_text": None if failed else good,
        "result_data": None if failed else answer,
        "error": error,
        "attempts": attempts,
        "retries": tries - 1,
        "usage": usage,
        "duration_ms": duration,
        "transcript": transcript,
        "run_id": run_id,
        "agent_id": agent,
        "model": MODEL,
        "model_tier": 0,
        "schema_hash": None,
        "schema_name": None,
        "schema_source": "agent",
        "recovered_by_extraction": False,
        "schema_validation": {"valid": not failed, "schema_name": None, "retry_count": tries - 1},
    }
    status = "failed" if failed else "completed"
    row = (
        run_id,
        session_id,
        kind,
        agent,
        status,
        dumps({"prompt": TASK, "options": {"max_retries": 1}}),
        None,
        None,
        # as the store's finish writes it: the attempts in their rows, not again in the result
        dumps(stored_result(result, attempts, ())),
        None if error is None else dumps(error),
        None,
        None,
        1,
        0,
        started,
        started,
        ended,
    )
    return _Run(
        row=row,
        attempts=[(run_id, a["number"], dumps(stored_attempt(a))) for a in attempts],
        events=[(run_id, kind_, dumps({**data, "ts": _ts(at)}), at) for kind_, data, at in events],
        transcript=transcript,
        error=error,
    )


def _executemany(
    store: SqlStore, cursor: Any, query: str, rows: Sequence[tuple[object, ...]]
) -> None:
    # Both drivers' cursors batch executemany (psycopg pipelines it), which is what makes this
    # bulk; the store's Cursor protocol names only execute.
    if rows:
        cursor.executemany(store._q(query), rows)


def build(
    store: SqlStore,
    sessions: int,
    *,
    seed: int = 1,
    now: float | None = None,
    batched_share: float = 0.0,
) -> Built:
    """Write ``sessions`` sessions (with their runs, attempts and events) into an empty store.

    Args:
        store: An open, migrated store with no sessions.
        sessions: How many sessions to write.
        seed: The random seed (the same seed builds the same shapes).
        now: The newest session's time (default: the clock).
        batched_share: The share of runs whose model calls went through a provider batch
            (their ``model_turn`` events carry a ``batch_id``); with 0 the same seed builds the
            same store as before there were batches.

    Returns:
        What was written.

    Raises:
        SystemExit: The store already holds sessions.
    """
    with store._tx(write=False) as cursor:
        row = store._exec(cursor, "SELECT COUNT(*) FROM sessions").fetchone()
    if row is not None and int(str(row[0])) > 0:
        raise SystemExit(f"{store.url} already holds {row[0]} sessions: give a new database")
    rng = random.Random(seed)
    end = time.time() if now is None else now
    times = sorted(end - rng.random() * SPAN_DAYS * DAY_S for _ in range(sessions))
    names = [name for name, _ in AGENTS]
    weights = [weight for _, weight in AGENTS]
    built = Built()
    for start in range(0, sessions, BATCH):
        session_rows: list[tuple[object, ...]] = []
        run_rows: list[tuple[object, ...]] = []
        attempt_rows: list[tuple[object, ...]] = []
        event_rows: list[tuple[object, ...]] = []
        errors: list[dict[str, Any]] = []
        for created in times[start : start + BATCH]:
            session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            agent = rng.choices(names, weights)[0]
            resumed = rng.random() < RESUMED_SHARE
            transcript: list[dict[str, Any]] = []
            clock = created
            status = "completed"
            for kind in ("start_session", "resume_session") if resumed else ("start_session",):
                failed = rng.random() < FAILED_SHARE
                retried = not failed and rng.random() < RETRIED_SHARE
                batched = batched_share > 0 and rng.random() < batched_share
                run = _run(
                    rng,
                    session_id=session_id,
                    agent=agent,
                    kind=kind,
                    started=clock,
                    failed=failed,
                    retried=retried,
                    batch_id=f"batch_{start // BATCH}" if batched else None,
                )
                run_rows.append(run.row)
                built.batched += batched
                attempt_rows.extend(run.attempts)
                event_rows.extend(run.events)
                if run.error is not None:
                    errors.append(run.error)
                transcript.extend(run.transcript)
                clock = float(str(run.row[-1])) + rng.uniform(60, 3600)
                status = "failed" if failed else "completed"
                built.runs += 1
                built.failed += failed
                built.retried += retried
            built.resumed += resumed
            built.agents.add(agent)
            session_rows.append(
                (session_id, agent, status, dumps(transcript), None, 0, created, clock)
            )
        with store._tx() as cursor:
            _executemany(
                store,
                cursor,
                "INSERT INTO sessions (id, agent_name, status, transcript, parent_session_id, "
                "depth, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                session_rows,
            )
            _executemany(
                store,
                cursor,
                "INSERT INTO runs (id, session_id, kind, agent_name, status, input, "
                "idempotency_key, request_hash, result, error, lease_owner, lease_expires_at, "
                "claims, cancel_requested, created_at, started_at, finished_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                run_rows,
            )
            _executemany(
                store,
                cursor,
                "INSERT INTO attempts (run_id, number, data) VALUES (?, ?, ?)",
                attempt_rows,
            )
            _executemany(
                store,
                cursor,
                "INSERT INTO events (run_id, type, data, created_at) VALUES (?, ?, ?, ?)",
                event_rows,
            )
            for error in errors:  # the error-type filter choices, as the end of a run notes them
                store._note_error(cursor, error)
        built.sessions += len(session_rows)
        built.events += len(event_rows)
    # The rollups a run's end would have updated, filled as a migration fills them for a store
    # written before they existed.
    with store._tx() as cursor:
        store._backfill(cursor)
    return built


_VIEWS = (
    ("page", "/reports/sessions?limit=50"),
    ("filtered", "/reports/sessions?limit=50&status=failed"),
    ("filtered", "/reports/sessions?limit=50&error_type=output_schema_validation_failed"),
    ("analytics", "/reports/analytics"),
    ("analytics", "/reports/analytics?since=7d"),
)
_ROUNDS = 40
"""Each view is read this many times per store (after one unmeasured read)."""


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _measure(database: Path) -> dict[str, float]:
    """CPU seconds per view of each kind, and peak RSS (MiB), of a service on ``database``."""
    process, url = start_service({"PYTHONPATH": str(ROOT)}, database, 0)
    try:
        with httpx.Client(base_url=url, timeout=600) as client:
            for _, target in _VIEWS:
                client.get(target).raise_for_status()
            spent: dict[str, float] = {}
            for kind, target in _VIEWS:
                before = cpu_seconds(process.pid)
                for _ in range(_ROUNDS):
                    client.get(target).raise_for_status()
                per_view = (cpu_seconds(process.pid) - before) / _ROUNDS
                spent[kind] = spent.get(kind, 0.0) + per_view
        return {**spent, "rss": _peak_rss_mib(process.pid)}
    finally:
        process.terminate()
        process.wait(timeout=60)


def bench(small: int, big: int) -> int:
    """Build both stores, measure a service on each, print the ratios."""
    with tempfile.TemporaryDirectory(prefix="agentshape-scale-") as folder:
        figures: dict[int, dict[str, float]] = {}
        for sessions in (small, big):
            database = Path(folder) / f"store-{sessions}.db"
            store = open_store(database)
            try:
                built = build(store, sessions)
            finally:
                store.close()
            figures[sessions] = _measure(database)
            print(
                f"{sessions} sessions ({built.runs} runs, {built.events} events, "
                f"{database.stat().st_size / 2**20:.0f} MiB): sessions page "
                f"{figures[sessions]['page'] * 1000:.2f} ms CPU per view, filtered "
                f"{figures[sessions]['filtered'] * 1000:.2f} ms (2 views), analytics "
                f"{figures[sessions]['analytics'] * 1000:.2f} ms (2 views), peak RSS "
                f"{figures[sessions]['rss']:.0f} MiB",
                flush=True,
            )
    label = f"{big // 1000}k_vs_{small // 1000}k"
    print(f"reports_page_{label}: {figures[big]['page'] / figures[small]['page']:.2f}")
    print(
        f"reports_page_filtered_{label}: "
        f"{figures[big]['filtered'] / figures[small]['filtered']:.2f}"
    )
    print(
        f"reports_analytics_{label}: {figures[big]['analytics'] / figures[small]['analytics']:.2f}"
    )
    print(f"service_rss_{label}: {figures[big]['rss'] / figures[small]['rss']:.2f}")
    print("load average: " + " ".join(f"{value:.2f}" for value in os.getloadavg()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Build the store the command line names and print what was built (or run ``--bench``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sessions", type=int, help="how many sessions")
    parser.add_argument("--database", help="a SQLite path or postgresql:// URL")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bench", action="store_true", help="measure reads at two store sizes")
    parser.add_argument("--small", type=int, default=10_000, help="--bench: the small store")
    parser.add_argument("--big", type=int, default=100_000, help="--bench: the big store")
    args = parser.parse_args(argv)
    if args.bench:
        return bench(args.small, args.big)
    if args.sessions is None or args.database is None:
        parser.error("give --sessions and --database (or --bench)")
    if args.sessions < 1:
        parser.error("--sessions must be at least 1")
    store = open_store(args.database)
    try:
        began = time.perf_counter()
        built = build(store, args.sessions, seed=args.seed)
        took = time.perf_counter() - began
    finally:
        store.close()
    print(
        f"built {built.sessions} sessions ({built.resumed} resumed), {built.runs} runs "
        f"({built.failed} failed, {built.retried} retried then completed), {built.events} events, "
        f"agents {', '.join(sorted(built.agents))}, over {SPAN_DAYS} days, in {store.url} "
        f"({took:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
