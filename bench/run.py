"""agentshape against the cheapest raw SDK path, instructor and pydantic-ai, on one local server.

    .venv/bin/python bench/run.py [--quick]
    .venv/bin/python bench/run.py --guard [--quick]

A local server (``bench/fleet_server.py``, its own process) answers every Chat Completions call
at once with a pr-reviewer result of 1, 50 or 500 comments, so the network and the model drop
out and what is left is each framework's own cost. The floor is the cheapest correct SDK path a
user would write: prepared JSON through the SDK's generic ``post``, ``response.json()``, and
``Review.model_validate_json`` into a hand-written model (one re-ask on invalid arguments). The
headline agentshape contender runs with the default analytics sink (``JsonlAnalytics``).

1. per-run overhead, one run at a time: async at 1, 50 and 500 items (agentshape with the
   default sink and with ``NullAnalytics``), sync at 1 and 500 items (``run_sync`` against the
   floor written with the sync client, and that floor writing the same four analytics lines
   a run writes, through the same sink), and instructor, pydantic-ai and the SDK's typed
   ``create`` at 1 item for context, and ``run_stream`` at 1 item against the server streaming
   the same reply (chunks of four characters: 238 events); interleaved rounds, median
   microseconds per run;
2. concurrency: runs per second at 100 and 1,000 in flight (50 ms server latency), agentshape's
   ``run_many`` (default sink) against the floor under an ``asyncio.Semaphore``; and the memory
   per in-flight run, 1,000 runs held in flight at once in a fresh process each;
3. retry path: the server answers invalid arguments first and valid ones after;
4. loading the whole ``agents/`` fleet, in a cold process and again from the cache;
5. the guard (``--guard`` runs it alone): process CPU time per run (user + system, every thread)
   at 1 and 500 items against the typed SDK floor (``chat.completions.create`` with the forced
   tool, then ``Review.model_validate_json``), sync and async, with instructor and pydantic-ai
   against the same floor; interleaved rounds, the median of each round's ratio.

It ends with the ratio lines (agentshape / floor, measured in the same run): ``overhead_vs_floor``,
``sync_overhead_vs_floor``, ``sync_floor_log_vs_floor`` (what the default log alone costs the
sync floor), ``sync_overhead_vs_floor_log``, ``overhead_50_vs_floor``, ``overhead_500_vs_floor``,
``analytics_500_vs_null``, ``throughput_100_vs_raw``, ``throughput_1000_vs_raw``,
``memory_per_run_vs_raw``, ``stream_overhead_vs_run`` (``run_stream`` against ``run``, both
agentshape with the default sink), ``vs_instructor`` and ``vs_pydantic_ai``; then the guard's
``cpu_sync_vs_typed_sdk_<n>``, ``cpu_async_vs_typed_sdk_<n>``, ``cpu_instructor_vs_typed_sdk_<n>``
and ``cpu_pydantic_ai_vs_typed_sdk_<n>`` at 1 and 500 items.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TypeAlias

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_contenders import (
    API_KEY,
    FLOOR_NAME,
    MODEL,
    ROOT,
    TASK,
    Contender,
    SyncContender,
    agentshape,
    agentshape_stream,
    agentshape_sync,
    instructor_tools,
    pr_reviewer,
    pydantic_ai_tool,
    raw_create,
    raw_create_sync,
    raw_floor,
    raw_floor_sync,
    raw_floor_sync_logged,
)
from pydantic import BaseModel

from agent_contracts import AgentConfig
from agent_executor import Agent, JsonlAnalytics, NullAnalytics, OpenAIProvider, run_many

SERVER = Path(__file__).resolve().parent / "fleet_server.py"
FLOOR = FLOOR_NAME
FLOOR_SYNC = FLOOR_NAME + ", sync"
FLOOR_SYNC_LOG = FLOOR_NAME + ", sync, JSONL log"
AGENTSHAPE = "agentshape (default JSONL sink)"
AGENTSHAPE_NULL = "agentshape (NullAnalytics)"
AGENTSHAPE_SYNC = "agentshape run_sync (default sink)"
AGENTSHAPE_STREAM = "agentshape run_stream (default sink)"
TYPED_CREATE = "raw SDK, typed create"
TYPED_CREATE_SYNC = "raw SDK, typed create, sync"
INSTRUCTOR = "instructor (tools)"
PYDANTIC_AI = "pydantic-ai (tool output)"
SIZES = (1, 50, 500)
FLEET_LATENCY_MS = 50
MEMORY_LATENCY_MS = 3000
"""Server latency while measuring memory: long enough for every run to be in flight at once."""


@dataclass(frozen=True)
class Settings:
    """How much to run: the full benchmark or the quick one."""

    runs: dict[int, int]
    """Sequential runs per contender, by output size."""
    rounds: int
    fleet_runs: int
    fleet_rounds: int
    fleet_others: bool
    memory_in_flight: int
    retry_runs: int
    cold_processes: int
    cached_loads: int


FULL = Settings({1: 1000, 50: 600, 500: 300}, 10, 2000, 3, True, 1000, 300, 5, 20)
QUICK = Settings({1: 150, 50: 100, 500: 60}, 5, 500, 2, False, 1000, 40, 2, 5)


# The server ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def server() -> Iterator[int]:
    """Start ``fleet_server.py`` in its own process; yield its port; stop it (closing stdin)."""
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--idle", "120", "--lifetime", "3600"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the bench server did not start: {line!r}")
        yield int(line.split()[1])
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def base_url(port: int, mode: str = "valid", latency_ms: int = 0, items: int | None = None) -> str:
    """Return the server's ``/v1`` URL for a behaviour and, for ``valid``, an output size."""
    if items is not None:
        mode = f"{mode}-{items}"
    return f"http://127.0.0.1:{port}/{mode}/{latency_ms}/v1"


def server_requests(port: int) -> int:
    """Return how many completions the server has answered."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as reply:
        stats = json.loads(reply.read())
    return int(stats["requests"])


# Measuring ---------------------------------------------------------------------------------------

AnyContender: TypeAlias = Contender | SyncContender


@dataclass
class Timing:
    """Per-run wall times of one contender, in nanoseconds, and its model calls per run."""

    name: str
    samples: list[int] = field(default_factory=list)
    calls_per_run: float = 0.0

    @property
    def median_us(self) -> float:
        """Median microseconds per run."""
        return statistics.median(self.samples) / 1000

    @property
    def p90_us(self) -> float:
        """90th percentile microseconds per run."""
        return statistics.quantiles(self.samples, n=10)[-1] / 1000


def checker(items: int | None) -> Callable[[object], None]:
    """Return a check that fails unless an output is the server's valid review of that size."""
    from fleet_server import REVIEW, review_with

    expected = REVIEW if items is None else review_with(items)

    def check(output: object) -> None:
        dump = getattr(output, "model_dump", None)
        data = dump(exclude_none=True) if callable(dump) else output
        if data != expected:
            raise AssertionError(f"unexpected output: {str(output)[:200]}")

    return check


def check_review(output: object) -> None:
    """Fail unless ``output`` is the server's four-comment review (as any model class)."""
    checker(None)(output)


def call(loop: asyncio.AbstractEventLoop, contender: AnyContender) -> object:
    """Run a contender once from synchronous code (the async ones on ``loop``)."""
    if isinstance(contender, SyncContender):
        return contender.run()
    return loop.run_until_complete(contender.run())


def warm_up(
    loop: asyncio.AbstractEventLoop,
    contender: AnyContender,
    port: int,
    runs: int,
    check: Callable[[object], None],
) -> float:
    """Run ``runs`` times, checking each output; return the model calls made per run."""
    before = server_requests(port)
    for _ in range(runs):
        check(call(loop, contender))
    return (server_requests(port) - before) / runs


def timed_rounds(
    loop: asyncio.AbstractEventLoop, contenders: Sequence[AnyContender], runs: int, rounds: int
) -> list[Timing]:
    """Time ``runs`` sequential runs of each contender, interleaved in ``rounds`` rounds.

    Every round runs each contender ``runs // rounds`` times, starting with a different one each
    round, so a change in machine load hits all of them alike. An async contender's runs are
    timed inside its event loop, a sync one's around each call.
    """
    timings = [Timing(c.name) for c in contenders]
    per_round = max(1, runs // rounds)
    clock = time.perf_counter_ns

    async def batch(contender: Contender, samples: list[int]) -> None:
        for _ in range(per_round):
            start = clock()
            await contender.run()
            samples.append(clock() - start)

    for number in range(rounds):
        shift = number % len(contenders)
        order = list(range(len(contenders)))[shift:] + list(range(len(contenders)))[:shift]
        for index in order:
            contender, samples = contenders[index], timings[index].samples
            if isinstance(contender, SyncContender):
                for _ in range(per_round):
                    start = clock()
                    contender.run()
                    samples.append(clock() - start)
            else:
                loop.run_until_complete(batch(contender, samples))
    return timings


# Part 1: per-run overhead -------------------------------------------------------------------------


def contenders_for(
    url: str, config: AgentConfig, items: int, analytics_dir: str
) -> list[AnyContender]:
    """Return the contenders of one output size (the context ones at one item only)."""
    chosen: list[AnyContender] = [
        raw_floor(url, config),
        agentshape(url, config, JsonlAnalytics(analytics_dir), AGENTSHAPE),
        agentshape(url, config, NullAnalytics(), AGENTSHAPE_NULL),
    ]
    if items != 50:
        chosen += [
            raw_floor_sync(url, config),
            raw_floor_sync_logged(url, config, JsonlAnalytics(analytics_dir)),
            agentshape_sync(url, config, JsonlAnalytics(analytics_dir), AGENTSHAPE_SYNC),
        ]
    if items == 1:
        chosen += [
            agentshape_stream(url, config, JsonlAnalytics(analytics_dir), AGENTSHAPE_STREAM),
            raw_create(url, config),
            instructor_tools(url, config),
            pydantic_ai_tool(url, config),
        ]
    return chosen


def overhead(port: int, config: AgentConfig, settings: Settings) -> dict[int, list[Timing]]:
    """Part 1: sequential runs of every contender, at each output size."""
    loop = asyncio.new_event_loop()
    results: dict[int, list[Timing]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="agentshape-bench-") as analytics_dir:
            for items in SIZES:
                url = base_url(port, items=items)
                contenders = contenders_for(url, config, items, analytics_dir)
                check = checker(items)
                calls = [warm_up(loop, c, port, 20, check) for c in contenders]
                timings = timed_rounds(loop, contenders, settings.runs[items], settings.rounds)
                for timing, per_run in zip(timings, calls, strict=True):
                    timing.calls_per_run = per_run
                for contender in contenders:
                    if isinstance(contender, SyncContender):
                        contender.close()
                    else:
                        loop.run_until_complete(contender.close())
                results[items] = timings
    finally:
        loop.close()
    return results


# Part 2: concurrency ------------------------------------------------------------------------------


@dataclass
class FleetResult:
    """Throughput of one contender at one concurrency."""

    name: str
    concurrency: int
    runs_per_s: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        """The best round's runs per second."""
        return max(self.runs_per_s)


async def raw_fleet(contender: Contender, runs: int, concurrency: int) -> None:
    """Run the raw SDK ``runs`` times with at most ``concurrency`` calls in flight."""
    gate = asyncio.Semaphore(concurrency)

    async def one() -> object:
        async with gate:
            return await contender.run()

    outputs = await asyncio.gather(*(one() for _ in range(runs)))
    check_review(outputs[-1])


def fleet_runners(
    url: str, config: AgentConfig, names: Sequence[str], concurrency: int, analytics_dir: str
) -> tuple[dict[str, Callable[[int], Awaitable[None]]], list[Contender]]:
    """Return a fleet function per contender name (it runs ``n`` runs), and what to close."""
    agent: Agent[BaseModel] = Agent(
        config,
        model=OpenAIProvider(MODEL, base_url=url, api_key=API_KEY),
        analytics=JsonlAnalytics(analytics_dir),
    )

    async def agentshape_fleet(runs: int) -> None:
        results = await run_many(agent, [TASK] * runs, concurrency=concurrency)
        failed = [r for r in results if not r.ok]
        if failed:
            raise AssertionError(f"{len(failed)} agentshape runs failed: {failed[0].error}")
        check_review(results[-1].output)

    makers = {FLOOR: raw_floor, INSTRUCTOR: instructor_tools, PYDANTIC_AI: pydantic_ai_tool}
    runners: dict[str, Callable[[int], Awaitable[None]]] = {}
    opened: list[Contender] = []
    for name in names:
        if name == AGENTSHAPE:
            runners[name] = agentshape_fleet
            continue
        contender = makers[name](url, config)
        opened.append(contender)
        runners[name] = functools.partial(raw_fleet, contender, concurrency=concurrency)
    return runners, opened


async def fleet(port: int, config: AgentConfig, settings: Settings) -> list[FleetResult]:
    """Part 2: ``run_many`` against a semaphore-bounded floor, 50 ms server latency.

    At each concurrency the floor and agentshape run ``fleet_rounds`` interleaved rounds (the
    best counts); instructor and pydantic-ai, for context, one round at 100 (full run only).
    """
    results: list[FleetResult] = []
    url = base_url(port, latency_ms=FLEET_LATENCY_MS)
    with tempfile.TemporaryDirectory(prefix="agentshape-bench-") as analytics_dir:
        for concurrency in (100, 1000):
            names = [FLOOR, AGENTSHAPE]
            if settings.fleet_others and concurrency == 100:
                names += [INSTRUCTOR, PYDANTIC_AI]
            runners, opened = fleet_runners(url, config, names, concurrency, analytics_dir)
            found = {name: FleetResult(name, concurrency) for name in names}
            runs = max(settings.fleet_runs, 2 * concurrency)
            for go in runners.values():  # warm up: connections, caches
                await go(concurrency)
            for number in range(settings.fleet_rounds):
                order = names[:2] if number % 2 == 0 else names[1::-1]
                if number == 0:
                    order += names[2:]
                for name in order:
                    gc.collect()
                    start = time.perf_counter()
                    await runners[name](runs)
                    found[name].runs_per_s.append(runs / (time.perf_counter() - start))
            for contender in opened:
                await contender.close()
            results += found.values()
    return results


def fleet_memory(port: int, name: str, in_flight: int) -> float:
    """Return the peak memory growth (KiB) of ``in_flight`` runs held at once, in a new process."""
    worker = ["--memory-worker", name, "--port", str(port), "--runs", str(in_flight)]
    done = subprocess.run(
        [sys.executable, __file__, *worker],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return float(json.loads(done.stdout.strip().splitlines()[-1])["peak_kib"])


async def memory_worker(port: int, name: str, runs: int) -> float:
    """In a worker process: warm up, then hold ``runs`` runs in flight at once; return KiB.

    The server waits ``MEMORY_LATENCY_MS`` before answering, so every run is in flight at the
    same time. The peak is the kernel's high-water mark (``VmHWM``), reset to the current RSS
    just before (``/proc/self/clear_refs``), so imports and the warm-up do not count.
    """
    url = base_url(port, latency_ms=MEMORY_LATENCY_MS)
    with tempfile.TemporaryDirectory(prefix="agentshape-bench-") as analytics_dir:
        runners, opened = fleet_runners(url, pr_reviewer(), [name], runs, analytics_dir)
        await runners[name](min(runs, 50))
        gc.collect()
        Path("/proc/self/clear_refs").write_text("5")
        before = _status_kib("VmRSS")
        await runners[name](runs)
        peak = _status_kib("VmHWM")
        for contender in opened:
            await contender.close()
    return float(max(0, peak - before))


def _status_kib(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field_name} in /proc/self/status")


# Part 3: retry path -------------------------------------------------------------------------------


@dataclass
class RetryResult:
    """A framework's clean run and rescued run."""

    name: str
    clean: Timing
    rescued: Timing


def retry_path(port: int, config: AgentConfig, settings: Settings) -> list[RetryResult]:
    """Part 3: clean runs against runs whose first answer breaks the schema."""
    clean_url, rescue_url = base_url(port), base_url(port, mode="invalid-first")
    pairs: list[tuple[Contender, Contender]] = []
    for make in (raw_floor, instructor_tools, pydantic_ai_tool):
        clean, rescued = make(clean_url, config), make(rescue_url, config)
        rescued.name = clean.name + " rescued"
        pairs.append((clean, rescued))
    clean = agentshape(clean_url, config, NullAnalytics(), AGENTSHAPE_NULL)
    rescued = agentshape(rescue_url, config, NullAnalytics(), AGENTSHAPE_NULL + " rescued")
    pairs.insert(1, (clean, rescued))
    flat = [c for pair in pairs for c in pair]
    loop = asyncio.new_event_loop()
    try:
        calls = [warm_up(loop, c, port, 5, check_review) for c in flat]
        rounds = max(1, settings.retry_runs // 20)
        timings = timed_rounds(loop, flat, settings.retry_runs, rounds)
        for timing, per_run in zip(timings, calls, strict=True):
            timing.calls_per_run = per_run
        for contender in flat:
            loop.run_until_complete(contender.close())
    finally:
        loop.close()
    return [
        RetryResult(pair[0].name, timings[2 * i], timings[2 * i + 1])
        for i, pair in enumerate(pairs)
    ]


# Part 4: fleet load time --------------------------------------------------------------------------

LOAD_SCRIPT = """
import json, sys, time
started = time.perf_counter()
from agent_core._fleet import load_fleet
from agent_executor._agent import Agent
from agent_executor._analytics import NullAnalytics
from agent_executor._tools import KNOWN_TOOLS
imported = time.perf_counter()
fleet = load_fleet(sys.argv[1], known_tools=KNOWN_TOOLS)
agents = [Agent(config, analytics=NullAnalytics()) for config in fleet.values()]
loaded = time.perf_counter()
print(json.dumps({"agents": len(agents), "import_s": imported - started,
                  "load_s": loaded - imported}))
"""


@dataclass
class LoadResult:
    """Fleet load times, in milliseconds."""

    agents: int
    process_ms: list[float]
    import_ms: list[float]
    cold_ms: list[float]
    cached_ms: list[float]


def load_times(settings: Settings) -> LoadResult:
    """Part 4: the whole ``agents/`` fleet, in fresh processes and again from the cache."""
    from agent_core import load_fleet
    from agent_executor import KNOWN_TOOLS

    folder = ROOT / "agents"
    process_ms, import_ms, cold_ms = [], [], []
    agents = 0
    for _ in range(settings.cold_processes):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", LOAD_SCRIPT, str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            cwd=ROOT,
        )
        process_ms.append((time.perf_counter() - start) * 1000)
        report = json.loads(done.stdout.strip().splitlines()[-1])
        agents = int(report["agents"])
        import_ms.append(report["import_s"] * 1000)
        cold_ms.append(report["load_s"] * 1000)
    cached_ms = []
    for _ in range(settings.cached_loads + 1):
        start = time.perf_counter()
        loaded = load_fleet(folder, known_tools=KNOWN_TOOLS)
        _ = [Agent(config, analytics=NullAnalytics()) for config in loaded.values()]
        cached_ms.append((time.perf_counter() - start) * 1000)
    return LoadResult(agents, process_ms, import_ms, cold_ms, cached_ms[1:])


# Part 5: the guard --------------------------------------------------------------------------------

GUARD_SIZES = (1, 500)
GUARD_RUNS = {1: 1000, 500: 300}
"""Runs per contender in the guard, by output size."""
GUARD_ROUNDS = 10


@dataclass
class CpuTiming:
    """Process CPU time per run of one contender, one sample per interleaved round."""

    name: str
    samples: list[float] = field(default_factory=list)
    """Microseconds of process CPU time (user + system, all threads) per run, by round."""

    @property
    def median_us(self) -> float:
        """Median over the rounds of the CPU microseconds per run."""
        return statistics.median(self.samples)


def guard_contenders(url: str, config: AgentConfig, analytics_dir: str) -> list[AnyContender]:
    """Return the guard's contenders: the typed SDK floor, agentshape, instructor, pydantic-ai."""
    return [
        raw_create(url, config),
        raw_create_sync(url, config),
        agentshape(url, config, JsonlAnalytics(analytics_dir), AGENTSHAPE),
        agentshape_sync(url, config, JsonlAnalytics(analytics_dir), AGENTSHAPE_SYNC),
        instructor_tools(url, config),
        pydantic_ai_tool(url, config),
    ]


def cpu_rounds(
    loop: asyncio.AbstractEventLoop, contenders: Sequence[AnyContender], runs: int, rounds: int
) -> list[CpuTiming]:
    """Measure the process CPU time per run of each contender, interleaved in ``rounds`` rounds.

    Each round runs every contender ``runs // rounds`` times, starting with a different one
    each round, and samples ``time.process_time_ns`` (user + system time of every thread of
    this process: the SDK's, the event loop's and any the library starts) around that batch.
    The server runs in its own process, so its CPU time is not counted.
    """
    timings = [CpuTiming(c.name) for c in contenders]
    per_round = max(1, runs // rounds)
    clock = time.process_time_ns

    async def batch(contender: Contender) -> None:
        for _ in range(per_round):
            await contender.run()

    for number in range(rounds):
        shift = number % len(contenders)
        order = list(range(len(contenders)))[shift:] + list(range(len(contenders)))[:shift]
        for index in order:
            contender = contenders[index]
            start = clock()
            if isinstance(contender, SyncContender):
                for _ in range(per_round):
                    contender.run()
            else:
                loop.run_until_complete(batch(contender))
            timings[index].samples.append((clock() - start) / per_round / 1000)
    return timings


def guard(port: int, config: AgentConfig, scale: float = 1.0) -> dict[int, list[CpuTiming]]:
    """Part 5: process CPU time per run against the typed SDK floor, at 1 and 500 items.

    Args:
        port: The bench server's port.
        config: The pr-reviewer agent's config.
        scale: A factor on the runs per contender (``--quick`` passes less than 1).

    Returns:
        The CPU timings of every contender, by output size.
    """
    per_size: dict[int, list[CpuTiming]] = {}
    with tempfile.TemporaryDirectory(prefix="agentshape-bench-") as analytics_dir:
        for items in GUARD_SIZES:
            url = base_url(port, items=items)
            contenders = guard_contenders(url, config, analytics_dir)
            loop = asyncio.new_event_loop()
            try:
                check = checker(items)
                for contender in contenders:
                    warm_up(loop, contender, port, 20, check)
                runs = max(GUARD_ROUNDS, int(GUARD_RUNS[items] * scale))
                per_size[items] = cpu_rounds(loop, contenders, runs, GUARD_ROUNDS)
                for contender in contenders:
                    if isinstance(contender, SyncContender):
                        contender.close()
                    else:
                        loop.run_until_complete(contender.close())
            finally:
                loop.close()
    return per_size


def guard_ratio(timing: CpuTiming, floor: CpuTiming) -> float:
    """Return the median over the rounds of ``timing``'s CPU per run / ``floor``'s, same round.

    Both ran in every round, one after the other, so a change in machine load between rounds
    cancels out of each round's ratio.
    """
    return statistics.median(a / f for a, f in zip(timing.samples, floor.samples, strict=True))


def _floor_of(timing: CpuTiming, by_name: dict[str, CpuTiming]) -> CpuTiming:
    """Return the floor a contender is compared with: the sync one for sync contenders."""
    return by_name[TYPED_CREATE_SYNC] if "sync" in timing.name else by_name[TYPED_CREATE]


def guard_lines(per_size: dict[int, list[CpuTiming]]) -> list[str]:
    """Return the guard's ratio lines: CPU per run against the typed SDK floor, same rounds."""
    lines = []
    for items, timings in per_size.items():
        by_name = {t.name: t for t in timings}
        for key, name in (
            ("sync", AGENTSHAPE_SYNC),
            ("async", AGENTSHAPE),
            ("instructor", INSTRUCTOR),
            ("pydantic_ai", PYDANTIC_AI),
        ):
            ratio = guard_ratio(by_name[name], _floor_of(by_name[name], by_name))
            lines.append(f"cpu_{key}_vs_typed_sdk_{items}: {ratio:.3f}")
    return lines


def print_guard(per_size: dict[int, list[CpuTiming]], seconds: float) -> None:
    """Print part 5's tables, one per output size."""
    print()
    print(
        f"5. the guard: process CPU time (user + sys, all threads) per run, {GUARD_ROUNDS} "
        f"interleaved rounds, instant server, default JSONL sink ({seconds:.0f} s)"
    )
    for items, timings in per_size.items():
        by_name = {t.name: t for t in timings}
        print(f"   {items} item{'s' if items != 1 else ''}:")
        print(f"   {'contender':<38} {'CPU us/run':>10} {'vs typed SDK':>13}")
        for t in timings:
            ratio = guard_ratio(t, _floor_of(t, by_name))
            print(f"   {t.name:<38} {t.median_us:>10.0f} {ratio:>13.3f}")


# Report -------------------------------------------------------------------------------------------


def machine() -> str:
    """Return the date and machine line: nproc, CPU model, Python and library versions."""
    cpu = platform.processor() or "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    versions = ", ".join(
        f"{name} {_version(name)}"
        for name in ("openai", "instructor", "pydantic-ai-slim", "pydantic", "httpx2")
    )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; nproc {len(os.sched_getaffinity(0))}, "
        f"{cpu}, Python {platform.python_version()}; {versions}; load average {load}"
    )


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def main() -> int:
    """Run the five parts (or the guard alone) and print the tables and the ratio lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a few minutes)")
    parser.add_argument(
        "--guard", action="store_true", help="run the guard (part 5) alone (a few minutes)"
    )
    parser.add_argument("--memory-worker", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_worker:
        peak = asyncio.run(memory_worker(args.port, args.memory_worker, args.runs))
        print(json.dumps({"peak_kib": peak}))
        return 0
    settings = QUICK if args.quick else FULL
    scale = 0.25 if args.quick else 1.0
    print(machine())
    config = pr_reviewer()
    if args.guard:
        with server() as port:
            started = time.perf_counter()
            cpu = guard(port, config, scale)
            print_guard(cpu, time.perf_counter() - started)
        print()
        for line in guard_lines(cpu):
            print(line)
        return 0
    with server() as port:
        started = time.perf_counter()
        per_size = overhead(port, config, settings)
        print_overhead(per_size, settings, time.perf_counter() - started)
        started = time.perf_counter()
        fleet_results = asyncio.run(fleet(port, config, settings))
        memory = {
            name: fleet_memory(port, name, settings.memory_in_flight) / settings.memory_in_flight
            for name in (FLOOR, AGENTSHAPE)
        }
        print_fleet(fleet_results, memory, settings, time.perf_counter() - started)
        started = time.perf_counter()
        retries = retry_path(port, config, settings)
        print_retry(retries, time.perf_counter() - started)
        started = time.perf_counter()
        cpu = guard(port, config, scale)
        guard_s = time.perf_counter() - started
    started = time.perf_counter()
    print_load(load_times(settings), time.perf_counter() - started)
    print_guard(cpu, guard_s)
    print()
    for line in [*ratio_lines(per_size, fleet_results, memory), *guard_lines(cpu)]:
        print(line)
    return 0


def ratio_lines(
    per_size: dict[int, list[Timing]], fleet_results: list[FleetResult], memory: dict[str, float]
) -> list[str]:
    """Return the ratio lines: agentshape against the floor (or another), measured together."""
    median = {size: {t.name: t.median_us for t in timings} for size, timings in per_size.items()}
    best = {(f.name, f.concurrency): f.best for f in fleet_results}
    one, five_hundred = median[1], median[500]
    return [
        f"overhead_vs_floor: {one[AGENTSHAPE] / one[FLOOR]:.3f}",
        f"sync_overhead_vs_floor: {one[AGENTSHAPE_SYNC] / one[FLOOR_SYNC]:.3f}",
        f"sync_500_vs_floor: {five_hundred[AGENTSHAPE_SYNC] / five_hundred[FLOOR_SYNC]:.3f}",
        f"sync_floor_log_vs_floor: {one[FLOOR_SYNC_LOG] / one[FLOOR_SYNC]:.3f}",
        f"sync_overhead_vs_floor_log: {one[AGENTSHAPE_SYNC] / one[FLOOR_SYNC_LOG]:.3f}",
        f"overhead_50_vs_floor: {median[50][AGENTSHAPE] / median[50][FLOOR]:.3f}",
        f"overhead_500_vs_floor: {five_hundred[AGENTSHAPE] / five_hundred[FLOOR]:.3f}",
        f"overhead_500_null_vs_floor: {five_hundred[AGENTSHAPE_NULL] / five_hundred[FLOOR]:.3f}",
        f"analytics_500_vs_null: {five_hundred[AGENTSHAPE] / five_hundred[AGENTSHAPE_NULL]:.3f}",
        f"throughput_100_vs_raw: {best[AGENTSHAPE, 100] / best[FLOOR, 100]:.3f}",
        f"throughput_1000_vs_raw: {best[AGENTSHAPE, 1000] / best[FLOOR, 1000]:.3f}",
        f"memory_per_run_vs_raw: {memory[AGENTSHAPE] / max(memory[FLOOR], 1e-9):.3f}",
        f"stream_overhead_vs_run: {one[AGENTSHAPE_STREAM] / one[AGENTSHAPE]:.3f}",
        f"vs_instructor: {one[AGENTSHAPE] / one[INSTRUCTOR]:.3f}",
        f"vs_pydantic_ai: {one[AGENTSHAPE] / one[PYDANTIC_AI]:.3f}",
    ]


def print_overhead(per_size: dict[int, list[Timing]], settings: Settings, seconds: float) -> None:
    """Print part 1's tables, one per output size."""
    print()
    print(
        f"1. per-run overhead, one run at a time, {settings.rounds} interleaved rounds, "
        f"instant server ({seconds:.0f} s)"
    )
    for items, timings in per_size.items():
        medians = {t.name: t.median_us for t in timings}
        print(f"   {items} item{'s' if items != 1 else ''} ({settings.runs[items]} runs each):")
        print(f"   {'contender':<38} {'median us':>10} {'p90 us':>10} {'vs floor':>9} {'calls':>6}")
        for t in timings:
            floor = medians[FLOOR_SYNC] if "sync" in t.name else medians[FLOOR]
            print(
                f"   {t.name:<38} {t.median_us:>10.0f} {t.p90_us:>10.0f} "
                f"{t.median_us / floor:>9.3f} {t.calls_per_run:>6.2f}"
            )


def print_fleet(
    results: list[FleetResult], memory: dict[str, float], settings: Settings, seconds: float
) -> None:
    """Print part 2's table and the memory per in-flight run."""
    print()
    print(
        f"2. concurrency: at least {settings.fleet_runs} runs, {FLEET_LATENCY_MS} ms server "
        f"latency, best of {settings.fleet_rounds} ({seconds:.0f} s)"
    )
    print(f"   {'contender':<38} {'in flight':>9} {'runs/s':>8} {'vs raw':>7} {'rounds':>24}")
    raw = {r.concurrency: r.best for r in results if r.name == FLOOR}
    for r in results:
        rounds = ", ".join(f"{x:.0f}" for x in r.runs_per_s)
        print(
            f"   {r.name:<38} {r.concurrency:>9} {r.best:>8.0f} "
            f"{r.best / raw[r.concurrency]:>7.3f} {rounds:>24}"
        )
    print(
        f"   memory per in-flight run ({settings.memory_in_flight} runs in flight at once, "
        f"{MEMORY_LATENCY_MS} ms latency, fresh process, peak RSS growth / runs):"
    )
    for name, kib in memory.items():
        print(f"   {name:<38} {kib:>8.1f} KiB")


def print_retry(results: list[RetryResult], seconds: float) -> None:
    """Print part 3's table."""
    print()
    print(f"3. retry path: invalid arguments first, valid second ({seconds:.0f} s)")
    print(
        f"   {'contender':<30} {'clean us':>9} {'rescued us':>11} {'ratio':>6} "
        f"{'calls clean/rescued':>20}"
    )
    for r in results:
        calls = f"{r.clean.calls_per_run:.2f} / {r.rescued.calls_per_run:.2f}"
        print(
            f"   {r.name:<30} {r.clean.median_us:>9.0f} {r.rescued.median_us:>11.0f} "
            f"{r.rescued.median_us / r.clean.median_us:>6.2f} {calls:>20}"
        )


def print_load(result: LoadResult, seconds: float) -> None:
    """Print part 4's lines."""
    med = statistics.median
    print()
    print(f"4. loading agents/ ({result.agents} agents: load_fleet + Agent each) ({seconds:.0f} s)")
    print(
        f"   cold process: {med(result.process_ms):.0f} ms wall per process "
        f"(imports {med(result.import_ms):.0f} ms, fleet load {med(result.cold_ms):.1f} ms), "
        f"median of {len(result.process_ms)}"
    )
    print(
        f"   from the model cache: {med(result.cached_ms):.1f} ms per fleet load, "
        f"median of {len(result.cached_ms)}"
    )


if __name__ == "__main__":
    sys.exit(main())
