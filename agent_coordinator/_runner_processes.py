"""The runner processes ``serve --processes N`` starts beside itself, keeps running and stops.

``serve`` runs one event loop, so one core; runs need CPU of their own (each model answer is
parsed and validated). Runner processes (``python -m agent_coordinator runner``) claim runs from
the same store, so one host uses its cores. They get ``SIGTERM`` when ``serve`` stops, put the
runs they still hold back in the queue (see :mod:`~agent_coordinator._runner`), and are waited
for; one that outlives the wait is killed. On Linux they also get ``SIGTERM`` when ``serve``
dies without stopping them (``SIGKILL``, a crash), so none is left behind.

The database's address reaches them in their environment (:data:`DATABASE_ENV`), never on their
command line, which every user of the host can read (``ps``) and which may hold a password.

Each runner process is joined to ``serve`` by a socket pair, its channel, which carries one
JSON object a line each way (a malformed line is logged and skipped):

- the runner process says who it is when it starts: ``{"runner": <its runner id>, "workers": N}``;
- ``serve`` hands it a run ``?wait=`` waits for, stored already claimed by its runner:
  ``{"claim": <the claim>}`` (it executes it at once, no claim transaction); ``serve`` keeps count
  of the runs it handed each process and not yet told ended, and hands a process at most its
  ``workers`` at once;
- ``serve`` wakes it when it stores a run in the queue: ``{"wake": true}`` (it claims at once
  instead of at its next poll; PostgreSQL's notifications do this already, SQLite has none);
- the runner process tells ``serve`` of a run it handed over whose work is done,
  ``{"done": <run id>}``, and on SQLite of every other run it ends, ``{"ended": <run id>}`` (the
  requests waiting for them answer at once).

The channel's end also tells ``serve`` the process died: the runs handed to it stay stored claimed
by its runner until their leases run out and another runner takes them over, as for any runner
that dies. ``serve`` logs the exit status and, unless the process exited 0 (it was asked to
stop), starts another after a back-off; the new one is handed runs once it has said who it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence

from pydantic import ValidationError

from agent_coordinator._store.records import Claim

__all__ = [
    "CHANNEL",
    "DATABASE_ENV",
    "EXIT_WITH_PARENT",
    "Handed",
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
_WAKE = b'{"wake":true}\n'
_MAX_LINE = 64 * 1024 * 1024
"""The longest line a channel buffers; a longer one is dropped (a claim holds a transcript)."""

_Message = dict[str, object]
"""One message of the channel: a JSON object."""


class _Lines:
    """One end of a channel's framing: newline-delimited JSON objects, written without blocking.

    Args:
        sock: The channel's socket (made non-blocking).
        name: Who is at the other end, for the log.
    """

    def __init__(self, sock: socket.socket, name: str) -> None:
        sock.setblocking(False)
        self.socket = sock
        self.name = name
        self._pending = b""
        self._outbox = bytearray()
        self._writing = False

    def feed(self, data: bytes) -> list[_Message]:
        """Return the whole messages ``data`` completes; a malformed one is logged and skipped."""
        lines = (self._pending + data).split(b"\n")
        self._pending = lines.pop()
        if len(self._pending) > _MAX_LINE:
            logger.error("%s: dropped a message of over %d bytes", self.name, _MAX_LINE)
            self._pending = b""
        messages: list[_Message] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if isinstance(message, dict):
                messages.append(message)
            else:
                logger.error("%s: skipped a malformed message: %.200r", self.name, line)
        return messages

    def closed(self) -> None:
        """Log a message the other end left unfinished when it closed the channel."""
        if self._pending.strip():
            logger.error(
                "%s: the channel closed in the middle of a message: %.200r",
                self.name,
                self._pending,
            )
        self._pending = b""

    def send(self, data: bytes) -> None:
        """Send ``data`` (whole lines), now or, if the channel is full, when it drains.

        Must be called on the event loop (a full channel waits for it to be writable).
        """
        if self._writing:
            self._outbox += data
            return
        try:
            sent = self.socket.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:  # the other end is gone: its reader learns it
            return
        if sent < len(data):
            self._outbox += data[sent:]
            self._writing = True
            asyncio.get_running_loop().add_writer(self.socket, self._drain)

    def _drain(self) -> None:
        try:
            sent = self.socket.send(self._outbox)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            sent = len(self._outbox)
        del self._outbox[:sent]
        if not self._outbox:
            self._writing = False
            asyncio.get_running_loop().remove_writer(self.socket)

    def close(self) -> None:
        """Stop writing and close the socket."""
        if self._writing and self.socket.fileno() != -1:
            with contextlib.suppress(RuntimeError):  # no loop runs any more
                asyncio.get_running_loop().remove_writer(self.socket)
        self._writing = False
        self.socket.close()


def _line(message: _Message) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


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
        self._lines = _Lines(socket.socket(fileno=fd), "channel to serve")

    def listen(self, wake: Callable[[], None], take: Callable[[Claim], None]) -> None:
        """Act on what ``serve`` sends, on the running event loop.

        Args:
            wake: Called each time ``serve`` stores a run in the queue (wakes this process's
                runner).
            take: Called with each run ``serve`` stored claimed by this process's runner, to
                execute now.
        """
        loop = asyncio.get_running_loop()
        sock = self._lines.socket

        def readable() -> None:
            try:
                data = sock.recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:  # serve is gone; exit_with_parent stops this process
                self._lines.closed()
                loop.remove_reader(sock)
                return
            for message in self._lines.feed(data):
                if message.get("wake") is True:
                    wake()
                elif "claim" in message:
                    try:
                        claim = Claim.model_validate(message["claim"])
                    except ValidationError as error:
                        logger.error("channel to serve: skipped a malformed claim: %s", error)
                        continue
                    take(claim)
                else:
                    logger.error("channel to serve: skipped an unknown message: %.200r", message)

        loop.add_reader(sock, readable)

    def hello(self, runner: str, workers: int) -> None:
        """Tell ``serve`` this process's runner id and worker count (it hands runs from then on).

        Args:
            runner: The runner's id, which the runs handed to it are stored claimed by.
            workers: The most runs ``serve`` may hand it at once.
        """
        self._lines.send(_line({"runner": runner, "workers": workers}))

    def ended(self, run_id: str) -> None:
        """Tell ``serve`` this process ended run ``run_id`` (its waiting requests answer now)."""
        self._lines.send(_line({"ended": run_id}))

    def done(self, run_id: str) -> None:
        """Tell ``serve`` the work on run ``run_id``, which it handed over, is done (ended or not).

        It frees the run's slot in ``serve``'s count, and wakes the requests waiting for it.
        """
        self._lines.send(_line({"done": run_id}))

    def close(self) -> None:
        """Close this end of the channel (``serve`` sees the process gone)."""
        with contextlib.suppress(RuntimeError):  # no loop runs any more: nothing to remove
            asyncio.get_running_loop().remove_reader(self._lines.socket)
        self._lines.close()


class Handed:
    """A runner process's slot ``serve`` reserved for a run it stores claimed by that process.

    Args:
        process: The process.
        runner: The id of its runner, which the run is stored claimed by.
    """

    def __init__(self, process: _Child, runner: str) -> None:
        self.process = process
        self.runner = runner


class _Child:
    """One runner process, serve's end of its channel, and the wait before its restart."""

    def __init__(
        self, popen: subprocess.Popen[bytes], channel: socket.socket, backoff: float
    ) -> None:
        self.popen = popen
        self.lines = _Lines(channel, f"runner process {popen.pid}")
        self.backoff = backoff
        self.started = time.monotonic()
        self.runner: str | None = None
        """Its runner's id, once it said it (``None``: no run is handed to it yet)."""
        self.workers = 0
        self.reserved = 0
        """Slots reserved for runs being stored claimed by it."""
        self.handed: set[str] = set()
        """The runs handed to it whose work it has not said is done."""
        self.alive = True

    @property
    def free(self) -> int:
        """How many more runs it may be handed now."""
        if self.runner is None or not self.alive:
            return 0
        return self.workers - self.reserved - len(self.handed)


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
        return _Child(popen, ours, backoff)

    def wake(self, index: int) -> None:
        """Tell runner process number ``index`` a run was stored in the queue.

        Args:
            index: Which process, from 0 to :attr:`count` less 1 (one being restarted is not
                told: the next run's wake goes to another).
        """
        if index < len(self._children) and self._children[index].alive:
            self._children[index].lines.send(_WAKE)

    def reserve(self) -> Handed | None:
        """Reserve a slot of the runner process with the most free, for a run to hand it.

        Called on the event loop. The slot is used by :meth:`hand` or given back by
        :meth:`unreserve`.

        Returns:
            The slot, or ``None`` when no process that said who it is has a slot free.
        """
        best = max(self._children, key=lambda child: child.free, default=None)
        if best is None or best.free <= 0 or best.runner is None:
            return None
        best.reserved += 1
        return Handed(best, best.runner)

    def unreserve(self, slot: Handed) -> None:
        """Give back a slot :meth:`reserve` took, for a run that was not stored claimed."""
        slot.process.reserved -= 1

    def hand(self, slot: Handed, claim: Claim) -> None:
        """Send a run stored claimed by ``slot``'s runner to its process, which executes it now.

        If that process died meanwhile the run is not sent: its lease runs out and another
        runner takes it over.

        Args:
            slot: What :meth:`reserve` returned.
            claim: The run's claim, as the store returned it.
        """
        child = slot.process
        child.reserved -= 1
        if not child.alive:
            return
        child.handed.add(claim.run.id)
        child.lines.send(b'{"claim":' + claim.model_dump_json().encode() + b"}\n")

    async def supervise(self, on_ended: Callable[[str], None]) -> None:
        """Relay the runs the processes end, and restart each that dies; until cancelled.

        One that exits 0 (asked to stop) is logged and not restarted.

        Args:
            on_ended: Called on the event loop with the id of each run a runner process ended
                (or whose work it has done, for a run handed to it).
        """
        loop = asyncio.get_running_loop()
        died: asyncio.Queue[_Child] = asyncio.Queue()
        restarts: set[asyncio.Task[None]] = set()

        def watch(child: _Child) -> None:
            loop.add_reader(child.lines.socket, self._read, child, on_ended, died)

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
                if child.lines.socket.fileno() != -1:  # -1: closed, that process has ended
                    loop.remove_reader(child.lines.socket)

    def _read(
        self, child: _Child, on_ended: Callable[[str], None], died: asyncio.Queue[_Child]
    ) -> None:
        try:
            data = child.lines.socket.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the process closed its end: it is exiting
            asyncio.get_running_loop().remove_reader(child.lines.socket)
            child.lines.closed()
            # Its handed runs stay claimed by its runner until their leases run out.
            child.alive = False
            died.put_nowait(child)
            return
        for message in child.lines.feed(data):
            self._receive(child, message, on_ended)

    def _receive(
        self, child: _Child, message: dict[str, object], on_ended: Callable[[str], None]
    ) -> None:
        """Act on one message from runner process ``child``."""
        runner, workers = message.get("runner"), message.get("workers")
        done, ended = message.get("done"), message.get("ended")
        if isinstance(runner, str) and isinstance(workers, int) and not isinstance(workers, bool):
            child.runner, child.workers = runner, workers
        elif isinstance(done, str):
            child.handed.discard(done)
            on_ended(done)
        elif isinstance(ended, str):
            on_ended(ended)
        else:
            logger.error("%s: skipped an unknown message: %.200r", child.lines.name, message)

    async def _restart(self, child: _Child) -> _Child | None:
        """Log how ``child`` ended, wait the back-off, start another in its place.

        One that exited 0 was asked to stop (``SIGTERM``, or ``SIGINT`` from a terminal that
        stops ``serve`` too) and put its runs back: it is not started again.
        """
        returncode = await asyncio.to_thread(child.popen.wait)
        child.lines.close()
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
            child.alive = False
            child.lines.close()
        self._children.clear()
