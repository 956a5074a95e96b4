"""``python3 dev.py test``: what it hands pytest, and the exit code it ends with."""

from __future__ import annotations

import sys

import dev


def test_the_tests_run_in_three_processes_and_fast_skips_the_slow_ones() -> None:
    assert dev.pytest_arguments([]) == ["-n", "3", "--dist", "loadgroup"]
    assert dev.pytest_arguments(["--fast", "-x"]) == [
        *("-n", "3", "--dist", "loadgroup"),
        *("-m", "not slow", "-x"),
    ]


def test_a_worker_count_given_is_kept() -> None:
    assert dev.pytest_arguments(["-n", "0", "tests/test_dev.py"]) == [
        "-n",
        "0",
        "tests/test_dev.py",
    ]
    assert dev.pytest_arguments(["--fast", "--numprocesses=4"]) == [
        *("-m", "not slow", "--numprocesses=4")
    ]


def test_the_exit_code_is_pytests_when_the_tests_did_not_pass() -> None:
    assert dev.test_outcome([], 0) == 0
    assert dev.test_outcome(["ruff check"], 0) == 1
    assert dev.test_outcome([], 5) == 5  # no test was collected
    assert dev.test_outcome(["mypy --strict", "pytest (exit 1)"], 1) == 1
    assert dev.test_outcome([], 2) == 2  # interrupted


def test_the_checks_run_in_order_and_each_keeps_its_output_and_exit_code() -> None:
    say = [sys.executable, "-c", "import sys; print('first'); sys.exit(3)"]
    err = [sys.executable, "-c", "import sys; print('second', file=sys.stderr)"]
    assert dev._run_checks([say, err]) == [(say, 3, "first\n"), (err, 0, "second\n")]
