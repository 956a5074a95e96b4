"""The service's commands (``python -m agent_coordinator`` or ``agentshape``) as subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import httpx


class Process:
    """A command of the service running in its own process, its output read line by line."""

    def __init__(
        self,
        args: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        module: str = "agent_coordinator",
    ) -> None:
        """Start ``python -m <module> <args>`` (``agentshape``: the command a user types)."""
        self.popen = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=cwd,
            env={**os.environ, **env, "PYTHONPATH": str(Path(__file__).parents[2])},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.rest = ""
        """What the process wrote after the lines read, once it has stopped."""

    def read_until(self, marker: str, timeout: float = 60) -> str:
        """Return the first stdout line containing ``marker``."""
        deadline = time.monotonic() + timeout
        assert self.popen.stdout is not None
        while time.monotonic() < deadline:
            line = self.popen.stdout.readline()
            if not line:
                stderr = self.popen.stderr.read() if self.popen.stderr else ""
                raise AssertionError(f"the process ended: {''.join(self.lines)}{stderr}")
            self.lines.append(line)
            if marker in line:
                return line
        raise AssertionError(f"no {marker!r} in {''.join(self.lines)}")

    def stop(self, timeout: float = 20) -> int:
        """Terminate (SIGTERM) and return the exit code."""
        if self.popen.poll() is None:
            self.popen.terminate()
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            raise
        finally:
            self.rest = "".join(stream.read() for stream in self._streams())
            for stream in self._streams():
                stream.close()
        return code

    def kill(self) -> None:
        """SIGKILL the process and close its pipes."""
        self.popen.kill()
        self.popen.wait(10)
        for stream in self._streams():
            stream.close()

    def _streams(self) -> list[IO[str]]:
        return [s for s in (self.popen.stdout, self.popen.stderr) if s is not None and not s.closed]


def serve(
    cwd: Path,
    database: str,
    env: Mapping[str, str],
    *extra: str,
    module: str = "agent_coordinator",
) -> tuple[Process, str]:
    """Start ``serve`` on a free port and return it with its URL."""
    process = Process(
        ["serve", "--port", "0", "--database", database, *extra], cwd=cwd, env=env, module=module
    )
    line = process.read_until("listening on")
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
