r"""A progress bar for a batch of runs, on standard error.

On a terminal the bar redraws in place (``\r[#####.....] 12/40, 1 failed, 0:04 elapsed, ETA
0:09``); into a file or a pipe it writes one line about every tenth of the batch instead, so logs
stay readable. The ETA is the remaining runs at the average pace so far.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Counts finished runs and shows how far the batch is.

    Args:
        total: How many runs the batch has.
        stream: Where the bar goes (standard error).
        interactive: Redraw in place; default: whether ``stream`` is a terminal.
        width: The bar's width in characters, on a terminal.
        clock: Seconds from a monotonic clock (a test may pass its own).
    """

    def __init__(
        self,
        total: int,
        stream: TextIO,
        *,
        interactive: bool | None = None,
        width: int = 30,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        """How many runs the batch has."""
        self.done = 0
        """How many have finished."""
        self.failed = 0
        """How many of those failed."""
        self.stream = stream
        self.interactive = _is_terminal(stream) if interactive is None else interactive
        self.width = width
        self._step = max(1, math.ceil(total / 10))
        self._clock = clock
        self._started = clock()

    def start(self) -> None:
        """Show the empty bar (on a terminal; nothing otherwise)."""
        self._started = self._clock()
        if self.interactive and self.total:
            self._draw()

    def advance(self, *, failed: bool = False) -> None:
        """Count one finished run and update the display."""
        self.done += 1
        self.failed += int(failed)
        if self.interactive:
            self._draw()
            if self.done == self.total:
                self.stream.write("\n")
        elif self.done % self._step == 0 or self.done == self.total:
            self.stream.write(f"{self._counts(done=True)}\n")
        self.stream.flush()

    def _counts(self, *, done: bool = False) -> str:
        text = f"{self.done}/{self.total}" + (" done" if done else "")
        if self.failed:
            text += f", {self.failed} failed"
        elapsed = self._clock() - self._started
        text += f", {_clock_time(elapsed)} elapsed"
        if 0 < self.done < self.total:
            text += f", ETA {_clock_time(elapsed / self.done * (self.total - self.done))}"
        return text

    def _draw(self) -> None:
        filled = self.width * self.done // self.total if self.total else self.width
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {self._counts()}")


def _clock_time(seconds: float) -> str:
    """Return ``seconds`` as ``M:SS`` (``H:MM:SS`` from an hour on)."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a real stream
        return False
