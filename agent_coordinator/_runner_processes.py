"""The runner processes ``serve --processes N`` starts beside itself and stops with itself.

``serve`` runs one event loop, so one core; runs need CPU of their own (each model answer is
parsed and validated). Runner processes (``python -m agent_coordinator runner``) claim runs from
the same store, so one host uses its cores. They get ``SIGTERM`` when ``serve`` stops, put the
runs they still hold back in the queue (see :mod:`~agent_coordinator._runner`), and are waited
for; one that outlives the wait is killed. On Linux they also get ``SIGTERM`` when ``serve``
dies without stopping them (``SIGKILL``, a crash), so none is left behind.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["EXIT_WITH_PARENT", "RunnerProcesses", "exit_with_parent"]

logger = logging.getLogger(__name__)

EXIT_WITH_PARENT = "--exit-with-parent"
"""The ``runner`` option (not in its help) naming the process whose death stops it."""
_PR_SET_PDEATHSIG = 1
"""Linux's ``prctl`` option: the signal a process gets when its parent dies."""


def exit_with_parent(parent: int) -> None:
    """Have this process get ``SIGTERM`` when process ``parent`` (its parent) dies.

    On Linux, through ``prctl(PR_SET_PDEATHSIG)``; if the parent died already, at once.
    Elsewhere nothing: ``serve`` still stops its runner processes when it stops.

    Args:
        parent: The pid of the process that started this one.
    """
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the call above: nothing would tell us
        os.kill(os.getpid(), signal.SIGTERM)


class RunnerProcesses:
    """Runner processes started together and stopped together.

    Args:
        count: How many to start.
        argv: The ``runner`` command's options (database, fleet, workers...).
        stop_s: Seconds each may take to stop after ``SIGTERM`` before it is killed.
    """

    def __init__(self, count: int, argv: Sequence[str], *, stop_s: float) -> None:
        self.count = count
        self.argv = list(argv)
        self.stop_s = stop_s
        self._processes: list[subprocess.Popen[bytes]] = []

    @property
    def pids(self) -> list[int]:
        """The process ids of the runner processes started."""
        return [process.pid for process in self._processes]

    def start(self) -> None:
        """Start the processes (their output other than errors is dropped).

        Raises:
            OSError: A process could not be started (those already started are stopped).
        """
        try:
            for _ in range(self.count):
                self._processes.append(
                    subprocess.Popen(
                        [
                            *(sys.executable, "-m", "agent_coordinator", "runner", *self.argv),
                            *(EXIT_WITH_PARENT, str(os.getpid())),
                        ],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                    )
                )
        except OSError:
            self.stop()
            raise

    def stop(self) -> None:
        """Ask every process to stop (``SIGTERM``), wait for each, kill what does not stop."""
        for process in self._processes:
            if process.poll() is None:
                process.terminate()
        for process in self._processes:
            try:
                process.wait(self.stop_s)
            except subprocess.TimeoutExpired:
                logger.warning(
                    "runner process %d did not stop within %.0f s; killing it",
                    process.pid,
                    self.stop_s,
                )
                process.kill()
                process.wait()
        self._processes.clear()
