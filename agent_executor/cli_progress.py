r"""A progress bar for a batch of runs, on standard error.

On a terminal the bar redraws in place (``\r[#####.....] 12/40, 1 failed``); into a file or a
pipe it writes one line about every tenth of the batch instead, so logs stay readable.
"""

from __future__ import annotations

import math
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Counts finished runs and shows how far the batch is.

    Args:
        total: How many runs the batch has.
        stream: Where the bar goes (standard error).
        interactive: Redraw in place; default: whether ``stream`` is a terminal.
        width: The bar's width in characters, on a terminal.
    """

    def __init__(
        self, total: int, stream: TextIO, *, interactive: bool | None = None, width: int = 30
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

    def start(self) -> None:
        """Show the empty bar (on a terminal; nothing otherwise)."""
        if self.interactive and self.total:
            self._draw()

    def advance(self, *, failed: bool = False) -> None:
        """Count one finished run and update the display.

        Args:
            failed: Whether the run failed.
        """
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
        return text

    def _draw(self) -> None:
        filled = self.width * self.done // self.total if self.total else self.width
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {self._counts()}")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a real stream
        return False
