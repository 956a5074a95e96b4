r"""A few lines of a terminal redrawn in place: the growing output of ``run --stream``.

:class:`LiveRegion` draws a text at the cursor and, on the next :meth:`~LiveRegion.show`, moves
the cursor back up over it (``\x1b[NA``), erases to the end of the screen (``\x1b[J``) and draws
the new text. Every drawn line is cut to the terminal's width less one column, so no line wraps
and the count of rows to go back over is exact; only the last rows that fit the terminal's height
are drawn. Control characters a model may send (an escape sequence of its own, a carriage return)
are shown as ``\x..`` escapes, never sent to the terminal.

A line that must appear while a region is drawn (a status line, a logged warning) is written
inside :func:`paused`: the region is erased, the line written, the region drawn again below it.
:meth:`~LiveRegion.close` erases the region for good, so what is printed next starts where the
region began and the terminal ends up showing exactly what a run without ``--stream`` shows.
"""

from __future__ import annotations

import contextlib
import os
import threading
import unicodedata
from collections.abc import Callable, Iterator
from typing import TextIO

__all__ = ["LiveRegion", "fit_lines", "is_terminal", "paused", "printable"]

_FALLBACK_SIZE = (80, 24)

_active: list[LiveRegion] = []
"""The regions being drawn now (at most one in practice), for :func:`paused`."""


def is_terminal(stream: TextIO) -> bool:
    """Return whether ``stream`` is a terminal (``False`` for a closed or unreal stream)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _terminal_size(stream: TextIO) -> tuple[int, int]:
    """Return the terminal's ``(columns, lines)``, or 80x24 when it cannot be asked."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return _FALLBACK_SIZE
    columns, lines = size.columns or _FALLBACK_SIZE[0], size.lines or _FALLBACK_SIZE[1]
    return columns, lines


def _cell_width(char: str) -> int:
    """Return how many terminal columns ``char`` takes (0 for a combining mark, 2 for wide)."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _shown(char: str) -> str:
    """Return ``char`` as it may be sent to a terminal: control characters as escapes."""
    if char == "\t":
        return "    "
    if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
        return repr(char)[1:-1]
    return char


def printable(text: str) -> str:
    r"""Return ``text`` with its control characters (but not ``\n``) shown as escapes."""
    return "".join(char if char == "\n" else _shown(char) for char in text)


def _cut(line: str, room: int) -> int:
    """Return how many characters of ``line`` fit in ``room`` columns."""
    used = 0
    for index, char in enumerate(line):
        used += _cell_width(char)
        if used > room:
            return index
    return len(line)


def fit_lines(text: str, columns: int, rows: int) -> list[str]:
    """Return the lines of ``text`` to draw in a ``columns`` x ``rows`` terminal.

    Each line is cut to ``columns - 1`` columns (so the terminal never wraps it, and a cut line
    ends with ``…``) with control characters escaped; of more lines than ``rows - 1``, the last
    ones are kept (the end is where the text grows).

    Returns:
        The lines, none wider than ``columns - 1`` columns; none for an empty text.
    """
    if not text:
        return []
    room = max(1, columns - 1)
    lines = text.split("\n")[-max(1, rows - 1) :]
    fitted: list[str] = []
    for line in lines:
        shown = "".join(_shown(char) for char in line)
        if _cut(shown, room) < len(shown):
            shown = shown[: _cut(shown, room - 1)] + "…"
        fitted.append(shown)
    return fitted


class LiveRegion:
    """Lines at the bottom of a terminal, redrawn in place; thread-safe.

    Args:
        stream: The terminal to draw on.
        size: Returns the terminal's ``(columns, lines)``; default: asked of ``stream``.
    """

    def __init__(
        self, stream: TextIO, *, size: Callable[[], tuple[int, int]] | None = None
    ) -> None:
        self.stream = stream
        self._size = size or (lambda: _terminal_size(stream))
        self._lock = threading.RLock()
        self._text = ""
        self._rows = 0
        self._closed = False
        _active.append(self)

    def show(self, text: str) -> None:
        """Replace what the region shows with ``text`` (nothing once the region is closed)."""
        with self._lock:
            if self._closed:
                return
            self._text = text
            self._erase()
            self._draw()
            self.stream.flush()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Erase the region while the block writes its lines; draw it again after them."""
        with self._lock:
            if self._closed:
                yield
                return
            self._erase()
            self.stream.flush()
            try:
                yield
            finally:
                self._draw()
                self.stream.flush()

    def close(self) -> None:
        """Erase the region for good: the cursor is back where the region began."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(ValueError):
                _active.remove(self)
            self._erase()
            with contextlib.suppress(OSError, ValueError):
                self.stream.flush()

    def _draw(self) -> None:
        columns, rows = self._size()
        lines = fit_lines(self._text, columns, rows)
        self._rows = len(lines)
        if lines:
            self.stream.write("\n".join(lines))

    def _erase(self) -> None:
        if not self._rows:
            return
        up = f"\x1b[{self._rows - 1}A" if self._rows > 1 else ""
        self.stream.write(f"\r{up}\x1b[J")
        self._rows = 0


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Pause every region being drawn while the block writes lines of its own.

    The command line's warning printer writes inside this, so a warning logged during a
    streamed run appears above the growing output instead of breaking it.
    """
    with contextlib.ExitStack() as stack:
        for region in list(_active):
            stack.enter_context(region.paused())
        yield
