"""The coordinator service against direct library calls, over the same local provider server.

    .venv/bin/python bench/service.py [--runs 500] [--burst 1000]

``bench/fleet_server.py`` (its own process) answers every Chat Completions call with a valid
pr-reviewer result after 50 ms, so the model drops out. Two parts:

1. throughput at concurrency 100: ``--runs`` runs through the service (``python -m
   agent_coordinator serve`` in its own process: HTTP, the SQLite store, in-process runners;
   each request waits for its run with ``?wait=``) against the same runs made directly with
   ``run_many`` in this process; runs per second each, and ``service_vs_library: R`` (the
   service's rate divided by the library's; the target is at least 0.5);
2. a burst: ``--burst`` runs submitted at once without waiting, then read back until every one
   has ended; ``burst: N submitted, N completed, 0 lost`` when none is lost or run twice.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
SERVER = Path(__file__).resolve().parent / "fleet_server.py"
MODEL = "openai:gpt-4.1-mini"
LATENCY_MS = 50
CONCURRENCY = 100
TASK = "Review the retry change in src/payments/retry.py."
BODY = {"agent_name": "pr-reviewer", "prompt": TASK}


def cpu_seconds(pid: int) -> float:
    """Return a process's user plus system CPU time (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    env: dict[str, str], database: Path, workers: int
) -> tuple[subprocess.Popen[str], str]:
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
            str(database),
            "--registry",
            str(database.with_suffix(".schemas.db")),
            "--model",
            MODEL,
            "--agents-dir",
            str(ROOT / "agents"),
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


async def library_rate(env: dict[str, str], runs: int) -> float:
    from agent_core.loading import load_agent_config
    from agent_executor import Agent, NullAnalytics, run_many

    agent = Agent(
        load_agent_config(ROOT / "agents" / "pr-reviewer" / "agent.yml"),
        analytics=NullAnalytics(),
        env=env,
    )
    await run_many(agent, [TASK] * CONCURRENCY, concurrency=CONCURRENCY, model=MODEL)  # warm
    started, cpu = time.perf_counter(), time.process_time()
    results = await run_many(agent, [TASK] * runs, concurrency=CONCURRENCY, model=MODEL)
    elapsed = time.perf_counter() - started
    print(f"library CPU: {(time.process_time() - cpu) / runs * 1000:.1f} ms a run")
    assert all(result.ok for result in results), "a library run failed"
    return runs / elapsed


async def service_rate(url: str, runs: int) -> float:
    # One client (one keep-alive connection) per concurrent caller, as 100 separate callers
    # would have: httpx's shared pool scans every connection for every request, which at 100
    # connections made this process spend more CPU than the service it measures.
    clients = [httpx.AsyncClient(base_url=url, timeout=120) for _ in range(CONCURRENCY)]

    async def caller(client: httpx.AsyncClient, count: int) -> list[str]:
        statuses = []
        for _ in range(count):
            response = await client.post("/runs", params={"wait": 60}, json=BODY)
            statuses.append(str(response.json()["status"]))
        return statuses

    async def wave(total: int) -> list[str]:
        shares = [total // CONCURRENCY + (n < total % CONCURRENCY) for n in range(CONCURRENCY)]
        done = await asyncio.gather(*(caller(c, k) for c, k in zip(clients, shares, strict=True)))
        return [status for statuses in done for status in statuses]

    try:
        await wave(CONCURRENCY)  # warm
        started = time.perf_counter()
        statuses = await wave(runs)
        elapsed = time.perf_counter() - started
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    failed = [status for status in statuses if status != "completed"]
    assert not failed, f"{len(failed)} service runs did not complete: {set(failed)}"
    return runs / elapsed


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=CONCURRENCY)
    args = parser.parse_args()
    provider, port = start_provider()
    env = {
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/valid/{LATENCY_MS}/v1",
    }
    try:
        library = asyncio.run(library_rate(env, args.runs))
        print(f"library: {library:.1f} runs/s ({args.runs} runs, concurrency {CONCURRENCY})")
        with tempfile.TemporaryDirectory(prefix="agentshape-bench-") as tmp:
            service, url = start_service(env, Path(tmp) / "coordinator.db", args.workers)
            try:
                before = cpu_seconds(service.pid)
                rate = asyncio.run(service_rate(url, args.runs))
                spent = (cpu_seconds(service.pid) - before) / (args.runs + CONCURRENCY)
                print(
                    f"service: {rate:.1f} runs/s (HTTP + SQLite + {args.workers} runners; "
                    f"{spent * 1000:.1f} ms of service CPU a run)"
                )
                submitted, completed, lost = asyncio.run(burst(url, args.burst))
                print(f"burst: {submitted} submitted, {completed} completed, {lost} lost")
            finally:
                service.terminate()
                service.wait(30)
                if service.stdout is not None:
                    service.stdout.close()
        print(f"service_vs_library: {rate / library:.2f}")
    finally:
        if provider.stdin is not None:
            provider.stdin.close()
        provider.wait(10)
        if provider.stdout is not None:
            provider.stdout.close()
    return 0 if lost == 0 and submitted == args.burst else 1


if __name__ == "__main__":
    sys.exit(main())
