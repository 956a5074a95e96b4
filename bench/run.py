"""agentshape against the frameworks users would pick instead, over one local OpenAI-shaped server.

    .venv/bin/python bench/run.py [--quick]

A local server (``bench/fleet_server.py``, its own process) answers every Chat Completions call
at once with a pr-reviewer result, so the network and the model drop out and what is left is each
framework's own cost. Four parts:

1. per-run overhead: sequential runs of the same request with agentshape (NullAnalytics, and the
   default JSONL analytics), the raw ``openai`` SDK plus ``model_validate_json`` (the floor),
   instructor (tools mode) and pydantic-ai (tool output); median microseconds per run;
2. fleet: runs at concurrency 100 with 50 ms of server latency, agentshape's ``run_many``
   against the raw SDK under an ``asyncio.Semaphore``; runs per second and peak memory;
3. retry path: the server answers invalid arguments first and valid ones after; the cost of a
   rescued run against a clean one;
4. loading the whole ``agents/`` fleet, in a cold process and again from the model cache.

The last four lines are ``overhead_vs_floor``, ``vs_instructor``, ``vs_pydantic_ai`` (agentshape's
median time divided by the other's: below 1 is faster) and ``fleet_throughput_vs_raw``
(agentshape's runs per second divided by the raw SDK's: above 1 is faster).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_contenders import (
    API_KEY,
    MODEL,
    ROOT,
    TASK,
    Contender,
    agentshape,
    instructor_tools,
    pr_reviewer,
    pydantic_ai_tool,
    raw_floor,
    raw_post,
)
from pydantic import BaseModel

from agent_contracts.config import AgentConfig
from agent_executor.agent import Agent
from agent_executor.analytics import JsonlAnalytics, NullAnalytics
from agent_executor.batch import run_many
from agent_executor.providers.openai import OpenAIProvider

SERVER = Path(__file__).resolve().parent / "fleet_server.py"
FLOOR = "raw SDK (floor)"
AGENTSHAPE = "agentshape (NullAnalytics)"
AGENTSHAPE_JSONL = "agentshape (JSONL analytics)"
INSTRUCTOR = "instructor (tools)"
PYDANTIC_AI = "pydantic-ai (tool output)"
FLEET_LATENCY_MS = 50
FLEET_CONCURRENCY = 100


@dataclass(frozen=True)
class Settings:
    """How much to run: the full benchmark or the quick one."""

    overhead_runs: int
    overhead_rounds: int
    fleet_runs: int
    fleet_rounds: int
    fleet_others: bool
    retry_runs: int
    cold_processes: int
    cached_loads: int


FULL = Settings(2000, 20, 2000, 3, True, 300, 5, 20)
QUICK = Settings(200, 5, 500, 3, False, 40, 2, 5)


# The server ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def server() -> Iterator[int]:
    """Start ``fleet_server.py`` in its own process; yield its port; stop it (closing stdin)."""
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--idle", "120", "--lifetime", "1800"],
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


def base_url(port: int, mode: str = "valid", latency_ms: int = 0) -> str:
    """Return the server's ``/v1`` URL for a behaviour (``valid`` or ``invalid-first``)."""
    return f"http://127.0.0.1:{port}/{mode}/{latency_ms}/v1"


def server_requests(port: int) -> int:
    """Return how many completions the server has answered."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as reply:
        stats = json.loads(reply.read())
    return int(stats["requests"])


# Measuring ---------------------------------------------------------------------------------------


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


async def warm_up(
    contender: Contender, port: int, runs: int, check: Callable[[object], None]
) -> float:
    """Run ``runs`` times, checking each output; return the model calls made per run."""
    before = server_requests(port)
    for _ in range(runs):
        check(await contender.run())
    return (server_requests(port) - before) / runs


def check_review(output: object) -> None:
    """Fail unless ``output`` is the server's valid review (as any model class)."""
    from fleet_server import REVIEW

    dump = getattr(output, "model_dump", None)
    data = dump(exclude_none=True) if callable(dump) else output
    if data != REVIEW:
        raise AssertionError(f"unexpected output: {output!r}")


async def timed_rounds(contenders: Sequence[Contender], runs: int, rounds: int) -> list[Timing]:
    """Time ``runs`` sequential runs of each contender, interleaved in ``rounds`` rounds.

    Every round runs each contender ``runs // rounds`` times, starting with a different one each
    round, so a change in machine load hits all of them alike.
    """
    timings = [Timing(c.name) for c in contenders]
    per_round = max(1, runs // rounds)
    clock = time.perf_counter_ns
    for number in range(rounds):
        shift = number % len(contenders)
        order = list(range(len(contenders)))[shift:] + list(range(len(contenders)))[:shift]
        for index in order:
            run, samples = contenders[index].run, timings[index].samples
            for _ in range(per_round):
                start = clock()
                await run()
                samples.append(clock() - start)
    return timings


# Part 1: per-run overhead -------------------------------------------------------------------------


async def overhead(port: int, config: AgentConfig, settings: Settings) -> list[Timing]:
    """Part 1: sequential runs of every contender against the instant server."""
    url = base_url(port)
    with tempfile.TemporaryDirectory(prefix="agentshape-bench-") as analytics_dir:
        contenders = [
            raw_floor(url, config),
            raw_post(url, config),
            agentshape(url, config, NullAnalytics(), AGENTSHAPE),
            agentshape(url, config, JsonlAnalytics(analytics_dir), AGENTSHAPE_JSONL),
            instructor_tools(url, config),
            pydantic_ai_tool(url, config),
        ]
        calls = [await warm_up(c, port, 30, check_review) for c in contenders]
        timings = await timed_rounds(contenders, settings.overhead_runs, settings.overhead_rounds)
        for timing, per_run in zip(timings, calls, strict=True):
            timing.calls_per_run = per_run
        for contender in contenders:
            await contender.close()
    return timings


# Part 2: fleet ------------------------------------------------------------------------------------


@dataclass
class FleetResult:
    """Throughput and memory of one fleet contender."""

    name: str
    runs_per_s: list[float] = field(default_factory=list)
    peak_mib: float = 0.0

    @property
    def best(self) -> float:
        """The best round's runs per second."""
        return max(self.runs_per_s)


async def raw_fleet(contender: Contender, runs: int) -> None:
    """Run the raw SDK ``runs`` times with at most ``FLEET_CONCURRENCY`` calls in flight."""
    gate = asyncio.Semaphore(FLEET_CONCURRENCY)

    async def one() -> object:
        async with gate:
            return await contender.run()

    outputs = await asyncio.gather(*(one() for _ in range(runs)))
    check_review(outputs[-1])


def fleet_runners(
    url: str, config: AgentConfig, names: Sequence[str]
) -> tuple[dict[str, Callable[[int], Awaitable[None]]], list[Contender]]:
    """Return a fleet function per contender name (it runs ``n`` runs), and what to close."""
    agent: Agent[BaseModel] = Agent(
        config,
        model=OpenAIProvider(MODEL, base_url=url, api_key=API_KEY),
        analytics=NullAnalytics(),
    )

    async def agentshape_fleet(runs: int) -> None:
        results = await run_many(agent, [TASK] * runs, concurrency=FLEET_CONCURRENCY)
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
        runners[name] = functools.partial(raw_fleet, contender)
    return runners, opened


async def fleet(port: int, config: AgentConfig, settings: Settings) -> list[FleetResult]:
    """Part 2: ``run_many`` against a semaphore-bounded raw SDK, 50 ms server latency.

    The raw SDK and agentshape run ``fleet_rounds`` interleaved rounds each (the best counts);
    instructor and pydantic-ai, for context, one round (full benchmark only).
    """
    names = [FLOOR, AGENTSHAPE] + ([INSTRUCTOR, PYDANTIC_AI] if settings.fleet_others else [])
    runners, opened = fleet_runners(base_url(port, latency_ms=FLEET_LATENCY_MS), config, names)
    results = {name: FleetResult(name) for name in names}
    for go in runners.values():  # warm up: connections, caches
        await go(FLEET_CONCURRENCY)
    for number in range(settings.fleet_rounds):
        order = names[:2] if number % 2 == 0 else names[1::-1]
        if number == 0:
            order += names[2:]
        for name in order:
            gc.collect()
            start = time.perf_counter()
            await runners[name](settings.fleet_runs)
            results[name].runs_per_s.append(settings.fleet_runs / (time.perf_counter() - start))
    for contender in opened:
        await contender.close()
    return list(results.values())


def fleet_memory(port: int, name: str, runs: int) -> float:
    """Return the peak memory (MiB of RSS above the start) of one fleet, in a fresh process."""
    worker = ["--memory-worker", name, "--port", str(port), "--runs", str(runs)]
    done = subprocess.run(
        [sys.executable, __file__, *worker],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return float(json.loads(done.stdout.strip().splitlines()[-1])["peak_mib"])


async def memory_worker(port: int, name: str, runs: int) -> float:
    """In a worker process: warm up, then run one fleet; return its RSS growth at peak (MiB).

    The peak is the kernel's high-water mark (``VmHWM``), reset to the current RSS just before
    the fleet (``/proc/self/clear_refs``), so imports and the warm-up do not count.
    """
    url = base_url(port, latency_ms=FLEET_LATENCY_MS)
    runners, opened = fleet_runners(url, pr_reviewer(), [name])
    await runners[name](FLEET_CONCURRENCY)
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_kib("VmRSS")
    await runners[name](runs)
    peak = _status_kib("VmHWM")
    for contender in opened:
        await contender.close()
    return max(0, peak - before) / 1024


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


async def retry_path(port: int, config: AgentConfig, settings: Settings) -> list[RetryResult]:
    """Part 3: clean runs against runs whose first answer breaks the schema."""
    clean_url, rescue_url = base_url(port), base_url(port, mode="invalid-first")
    pairs: list[tuple[Contender, Contender]] = []
    for make in (raw_floor, instructor_tools, pydantic_ai_tool):
        clean, rescued = make(clean_url, config), make(rescue_url, config)
        rescued.name = clean.name + " rescued"
        pairs.append((clean, rescued))
    clean = agentshape(clean_url, config, NullAnalytics(), AGENTSHAPE)
    rescued = agentshape(rescue_url, config, NullAnalytics(), AGENTSHAPE + " rescued")
    pairs.insert(1, (clean, rescued))
    flat = [c for pair in pairs for c in pair]
    calls = [await warm_up(c, port, 5, check_review) for c in flat]
    timings = await timed_rounds(flat, settings.retry_runs, max(1, settings.retry_runs // 20))
    for timing, per_run in zip(timings, calls, strict=True):
        timing.calls_per_run = per_run
    for contender in flat:
        await contender.close()
    return [
        RetryResult(pair[0].name, timings[2 * i], timings[2 * i + 1])
        for i, pair in enumerate(pairs)
    ]


# Part 4: fleet load time --------------------------------------------------------------------------

LOAD_SCRIPT = """
import json, sys, time
started = time.perf_counter()
from agent_core.fleet import load_fleet
from agent_executor.agent import Agent
from agent_executor.analytics import NullAnalytics
from agent_executor.tools import KNOWN_TOOLS
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
    from agent_core.fleet import load_fleet
    from agent_executor.tools import KNOWN_TOOLS

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
    """Run the four parts and print the tables and the four ratio lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (under a minute)")
    parser.add_argument("--memory-worker", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_worker:
        peak = asyncio.run(memory_worker(args.port, args.memory_worker, args.runs))
        print(json.dumps({"peak_mib": peak}))
        return 0
    settings = QUICK if args.quick else FULL
    print(machine())
    config = pr_reviewer()
    with server() as port:
        started = time.perf_counter()
        per_run = asyncio.run(overhead(port, config, settings))
        print_overhead(per_run, settings, time.perf_counter() - started)
        started = time.perf_counter()
        fleet_results = asyncio.run(fleet(port, config, settings))
        for result in fleet_results:
            result.peak_mib = fleet_memory(port, result.name, settings.fleet_runs)
        print_fleet(fleet_results, settings, time.perf_counter() - started)
        started = time.perf_counter()
        retries = asyncio.run(retry_path(port, config, settings))
        print_retry(retries, time.perf_counter() - started)
    started = time.perf_counter()
    print_load(load_times(settings), time.perf_counter() - started)
    by_name = {t.name: t.median_us for t in per_run}
    fleet_by_name = {f.name: f.best for f in fleet_results}
    ours = by_name[AGENTSHAPE]
    print(f"overhead_vs_floor: {ours / by_name[FLOOR]:.3f}")
    print(f"vs_instructor: {ours / by_name[INSTRUCTOR]:.3f}")
    print(f"vs_pydantic_ai: {ours / by_name[PYDANTIC_AI]:.3f}")
    print(f"fleet_throughput_vs_raw: {fleet_by_name[AGENTSHAPE] / fleet_by_name[FLOOR]:.3f}")
    return 0


def print_overhead(timings: list[Timing], settings: Settings, seconds: float) -> None:
    """Print part 1's table."""
    floor = next(t for t in timings if t.name == FLOOR).median_us
    print()
    print(
        f"1. per-run overhead: {settings.overhead_runs} sequential runs each, "
        f"{settings.overhead_rounds} interleaved rounds, instant server ({seconds:.0f} s)"
    )
    print(f"   {'contender':<30} {'median us':>10} {'p90 us':>10} {'vs floor':>9} {'calls':>6}")
    for t in timings:
        print(
            f"   {t.name:<30} {t.median_us:>10.0f} {t.p90_us:>10.0f} "
            f"{t.median_us / floor:>9.3f} {t.calls_per_run:>6.2f}"
        )


def print_fleet(results: list[FleetResult], settings: Settings, seconds: float) -> None:
    """Print part 2's table."""
    raw = next(r for r in results if r.name == FLOOR).best
    print()
    print(
        f"2. fleet: {settings.fleet_runs} runs, concurrency {FLEET_CONCURRENCY}, "
        f"{FLEET_LATENCY_MS} ms server latency, best of {settings.fleet_rounds} "
        f"({seconds:.0f} s)"
    )
    print(f"   {'contender':<30} {'runs/s':>8} {'vs raw':>7} {'rounds':>24} {'peak MiB':>9}")
    for r in results:
        rounds = ", ".join(f"{x:.0f}" for x in r.runs_per_s)
        print(
            f"   {r.name:<30} {r.best:>8.0f} {r.best / raw:>7.3f} {rounds:>24} {r.peak_mib:>9.1f}"
        )
    print(
        f"   (ceiling: {FLEET_CONCURRENCY} in flight / {FLEET_LATENCY_MS} ms = "
        f"{FLEET_CONCURRENCY * 1000 / FLEET_LATENCY_MS:.0f} runs/s; peak MiB: growth of the "
        "peak RSS over one fleet in a fresh process, all results kept)"
    )


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
