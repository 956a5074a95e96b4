"""The runner processes ``serve --processes N`` starts beside itself, keeps running and stops.

``serve`` runs one event loop, so one core; runs need CPU of their own (each model answer is
parsed and validated). Runner processes (``python -m agent_coordinator runner``) claim runs from
the same store, so one host uses its cores. They get ``SIGTERM`` when ``serve`` stops, put the
runs they still hold back in the queue (see :mod:`~agent_coordinator._runner`), and are waited
for; one that outlives the wait is killed. On Linux they also get ``SIGTERM`` when ``serve``
dies without stopping them (``SIGKILL``, a crash), so none is left behind.

The database's address reaches them in their environment (:data:`DATABASE_ENV`), never on their
command line, which every user of the host can read (``ps``) and which may hold a password.

Each runner process is joined to ``serve`` by a socket pair, its channel: ``serve`` writes a
byte when it stores a run (the runner process claims at once instead of at its next poll) and the
runner process writes the id of each run it ends (the requests waiting for it in ``serve`` answer
at once). PostgreSQL's notifications do both already; SQLite has none. The channel's end also
tells ``serve`` the process died: it logs the exit status and, unless the process exited 0 (it
was asked to stop), starts another after a back-off.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "CHANNEL",
    "DATABASE_ENV",
    "EXIT_WITH_PARENT",
    "RunnerProcesses",
    "ServeChannel",
    "exit_with_parent",
]

logger = logging.getLogger(__name__)

EXIT_WITH_PARENT = "--exit-with-parent"
"""The ``runner`` option (not in its help) naming the process whose death stops it."""
CHANNEL = "--serve-channel"
"""The ``runner`` option (not in its help) naming the file descriptor of its channel to serve."""
DATABASE_ENV = "AGENTSHAPE_DATABASE"
"""The environment variable naming the database when ``--database`` is not given."""
_PR_SET_PDEATHSIG = 1
"""Linux's ``prctl`` option: the signal a process gets when its parent dies."""
_WAKE = b"w"


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


def _exit_status(returncode: int) -> str:
    """Say how a process ended, from its ``Popen.returncode``.

    Args:
        returncode: The exit code, or minus the signal that killed it.

    Returns:
        ``exit code 3`` or ``killed by SIGKILL``.
    """
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


class ServeChannel:
    """A runner process's end of its channel to the ``serve`` that started it.

    Args:
        fd: The channel's file descriptor, inherited from ``serve``.
    """

    def __init__(self, fd: int) -> None:
        self._socket = socket.socket(fileno=fd)
        self._socket.setblocking(False)

    def listen(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` on the running event loop each time ``serve`` stores a run.

        Args:
            wake: What wakes this process's runner.
        """
        loop = asyncio.get_running_loop()

        def readable() -> None:
            try:
                data = self._socket.recv(4096)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if data:
                wake()
            else:  # serve is gone; exit_with_parent stops this process
                loop.remove_reader(self._socket)

        loop.add_reader(self._socket, readable)

    def ended(self, run_id: str) -> None:
        """Tell ``serve`` this process ended run ``run_id`` (its waiting requests answer now).

        A full channel drops the message: the waiting request reads the run at its next poll.
        """
        with contextlib.suppress(OSError):
            self._socket.send(f"{run_id}\n".encode())


class _Child:
    """One runner process, serve's end of its channel, and the wait before its restart."""

    def __init__(
        self, popen: subprocess.Popen[bytes], channel: socket.socket, backoff: float
    ) -> None:
        self.popen = popen
        self.channel = channel
        self.backoff = backoff
        self.started = time.monotonic()
        self.pending = b""


class RunnerProcesses:
    """Runner processes started together, restarted when one dies, stopped together.

    Args:
        count: How many to start.
        argv: The ``runner`` command's options (fleet, workers...), without the database.
        database: The ``--database`` value they use (``None``: the default), passed in their
            environment.
        stop_s: Seconds each may take to stop after ``SIGTERM`` before it is killed.
        restart_s: Seconds before a dead one is started again; doubled after each death that
            came less than ``steady_s`` after its start, up to ``max_restart_s``.
        max_restart_s: The longest wait before a restart.
        steady_s: Seconds a process must have run for its death to start the back-off anew.
    """

    def __init__(
        self,
        count: int,
        argv: Sequence[str],
        *,
        database: str | None,
        stop_s: float,
        restart_s: float = 1.0,
        max_restart_s: float = 30.0,
        steady_s: float = 60.0,
    ) -> None:
        self.count = count
        self.argv = list(argv)
        self.database = database
        self.stop_s = stop_s
        self.restart_s = restart_s
        self.max_restart_s = max_restart_s
        self.steady_s = steady_s
        self._children: list[_Child] = []

    @property
    def pids(self) -> list[int]:
        """The process ids of the runner processes running now."""
        return [child.popen.pid for child in self._children]

    def start(self) -> None:
        """Start the processes (their output other than errors is dropped).

        Raises:
            OSError: A process could not be started (those already started are stopped).
        """
        try:
            for _ in range(self.count):
                self._children.append(self._spawn(self.restart_s))
        except OSError:
            self.stop()
            raise

    def _spawn(self, backoff: float) -> _Child:
        ours, theirs = socket.socketpair()
        env: Mapping[str, str] = os.environ
        if self.database is not None:
            env = {**os.environ, DATABASE_ENV: self.database}
        try:
            popen = subprocess.Popen(
                [
                    *(sys.executable, "-m", "agent_coordinator", "runner", *self.argv),
                    *(EXIT_WITH_PARENT, str(os.getpid()), CHANNEL, str(theirs.fileno())),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=env,
                pass_fds=(theirs.fileno(),),
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        return _Child(popen, ours, backoff)

    def wake(self, index: int) -> None:
        """Tell runner process number ``index`` a run was stored (a full channel: it is awake).

        Args:
            index: Which process, from 0 to :attr:`count` less 1 (one being restarted is not
                told: the next run's wake goes to another).
        """
        if index < len(self._children):
            with contextlib.suppress(OSError):
                self._children[index].channel.send(_WAKE)

    async def supervise(self, on_ended: Callable[[str], None]) -> None:
        """Relay the runs the processes end, and restart each that dies; until cancelled.

        One that exits 0 (asked to stop) is logged and not restarted.

        Args:
            on_ended: Called on the event loop with the id of each run a runner process ended.
        """
        loop = asyncio.get_running_loop()
        died: asyncio.Queue[_Child] = asyncio.Queue()
        restarts: set[asyncio.Task[None]] = set()

        def watch(child: _Child) -> None:
            loop.add_reader(child.channel, self._read, child, on_ended, died)

        async def replace(child: _Child) -> None:
            replacement = await self._restart(child)
            if replacement is not None:
                watch(replacement)

        for child in self._children:
            watch(child)
        try:
            while True:  # each death waits its own back-off: one crashing does not hold others
                restart = asyncio.create_task(replace(await died.get()))
                restarts.add(restart)
                restart.add_done_callback(restarts.discard)
        finally:
            for restart in restarts:
                restart.cancel()
            await asyncio.gather(*restarts, return_exceptions=True)
            for child in self._children:
                if child.channel.fileno() != -1:  # -1: closed, that process has ended
                    loop.remove_reader(child.channel)

    def _read(
        self, child: _Child, on_ended: Callable[[str], None], died: asyncio.Queue[_Child]
    ) -> None:
        try:
            data = child.channel.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the process closed its end: it is exiting
            asyncio.get_running_loop().remove_reader(child.channel)
            died.put_nowait(child)
            return
        lines = (child.pending + data).split(b"\n")
        child.pending = lines.pop()
        for line in lines:
            if line:
                on_ended(line.decode())

    async def _restart(self, child: _Child) -> _Child | None:
        """Log how ``child`` ended, wait the back-off, start another in its place.

        One that exited 0 was asked to stop (``SIGTERM``, or ``SIGINT`` from a terminal that
        stops ``serve`` too) and put its runs back: it is not started again.
        """
        returncode = await asyncio.to_thread(child.popen.wait)
        child.channel.close()
        if returncode == 0:
            logger.warning(
                "runner process %d stopped (exit code 0: it was asked to); not starting another",
                child.popen.pid,
            )
            return None
        delay = (
            self.restart_s if time.monotonic() - child.started >= self.steady_s else child.backoff
        )
        logger.warning(
            "runner process %d stopped (%s); starting another in %.0f s",
            child.popen.pid,
            _exit_status(returncode),
            delay,
        )
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_restart_s)
            try:
                replacement = self._spawn(delay)
            except OSError as error:
                logger.error(
                    "runner process could not be started (%s); trying again in %.0f s", error, delay
                )
                continue
            self._children[self._children.index(child)] = replacement
            return replacement

    def stop(self) -> None:
        """Ask every process to stop (``SIGTERM``), wait for each, kill what does not stop."""
        for child in self._children:
            if child.popen.poll() is None:
                child.popen.terminate()
        for child in self._children:
            try:
                child.popen.wait(self.stop_s)
            except subprocess.TimeoutExpired:
                logger.warning(
                    "runner process %d did not stop within %.0f s; killing it",
                    child.popen.pid,
                    self.stop_s,
                )
                child.popen.kill()
                child.popen.wait()
            child.channel.close()
        self._children.clear()
