r"""How ``agentshape run --stream`` shows a run's events while it runs.

Two views, both fed events in their ``to_json()`` form (held back by
:class:`~agent_executor._cli.secret_edge.SecretEdge`) and both redacted as every other output:

- :class:`GrowingView`, for people: the output as far as the model has written it (a contract's
  latest partial output as indented JSON; the reply's text, of a free-text run or before a
  contract's output begins), redrawn in place on a
  terminal, plus one status line on standard error for each input-tool call, its answer, each
  retry and each escalation. The growing output is drawn on standard output when that is a
  terminal, else on standard error when that is one; with neither a terminal it is written to
  standard error as lines (``partial: {...}``, the reply's text as it comes), at most a few a
  second. It is erased before the final output is printed, so standard output ends up exactly
  as without ``--stream``.
- :class:`JsonLinesView`, for programs (``--stream --json``): one JSON line per event on
  standard output, the last a ``run_finished`` line holding the run's result.

Both are closed once, when the run ends or is interrupted, and write nothing after that.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TextIO

from agent_core._json_text import dump_json
from agent_executor._cli.live import LiveRegion, is_terminal, printable
from agent_executor._cli.secret_edge import EventJson
from agent_executor._redaction import redact_json_text, redact_text

__all__ = ["REDRAW_INTERVAL_S", "GrowingView", "JsonLinesView", "StreamView"]

REDRAW_INTERVAL_S = 0.05
"""Shortest time between two draws of the growing output (its latest state is drawn)."""

_STATUS_WIDTH = 160
"""Longest a status line's detail (arguments, errors) is, in characters."""


def _short(text: str, width: int = _STATUS_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class JsonLinesView:
    """Writes each event as one JSON line (``--stream --json``).

    Args:
        out: Where the lines go (standard output).
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._lock = threading.Lock()
        self._closed = False

    def show(self, event: EventJson) -> None:
        """Write one event as a redacted JSON line, flushed at once."""
        with self._lock:
            if self._closed:
                return
            self.out.write(redact_json_text(dump_json(event)) + "\n")
            self.out.flush()

    def close(self) -> None:
        """Write nothing more."""
        with self._lock:
            self._closed = True


class GrowingView:
    """Shows the output growing, and status lines, while a run runs (see the module).

    Args:
        err: Standard error: the status lines, and the growing output as lines when there is
            no ``region``.
        region: Where the output grows in place (on standard output, or standard error, when
            it is a terminal), or ``None``.
        clock: Seconds from a monotonic clock (a test may pass its own).
    """

    def __init__(
        self,
        err: TextIO,
        region: LiveRegion | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.err = err
        self.region = region
        self._clock = clock
        self._lock = threading.RLock()
        self._closed = False
        self._partial = False
        self._step = 0
        self._text = ""
        self._line_open = False
        self._pending: str | None = None
        self._drawn_at = float("-inf")
        self._timer: asyncio.TimerHandle | None = None

    @classmethod
    def for_streams(cls, out: TextIO, err: TextIO) -> GrowingView:
        """Return the view for these streams: drawn in place on whichever is a terminal."""
        terminal = out if is_terminal(out) else err if is_terminal(err) else None
        return cls(err, LiveRegion(terminal) if terminal is not None else None)

    def show(self, event: EventJson) -> None:
        """Show one event (nothing once the view is closed)."""
        with self._lock:
            if self._closed:
                return
            kind = event.get("type")
            if kind == "run_started":
                self._started(event)
            elif kind == "text_delta":
                self._text_delta(event)
            elif kind == "partial_output":
                self._partial = True
                self._end_line()
                self._grown(dump_json(event.get("data"), indent=2), dump_json(event.get("data")))
            elif kind == "tool_call_started":
                arguments = dump_json(event.get("arguments"))
                self._status(f"tool: {event.get('name')} {_short(arguments)}")
            elif kind == "tool_call_finished":
                self._tool_finished(event)
            elif kind == "retry_started":
                self._retry(event)

    def close(self) -> None:
        """Show the last state and erase the growing output: the final output comes next."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._cancel_timer()
            if self.region is not None:
                self.region.close()
                return
            self._flush_lines()
            self._end_line()
            self.err.flush()

    def _started(self, event: EventJson) -> None:
        tier = event.get("model_tier")
        if isinstance(tier, int) and tier > 0:
            self._status(f"escalate: tier {tier}, {event.get('model')}")
        self._restart()

    def _text_delta(self, event: EventJson) -> None:
        if self._partial:
            return  # the output is shown by its partial outputs from now on
        step = event.get("step")
        if isinstance(step, int) and step != self._step:
            self._step = step
            self._restart()
        piece = str(event.get("text") or "")
        self._text += piece
        if self.region is not None:
            self._grown(self._text)
            return
        self.err.write(printable(redact_text(piece)))
        self._line_open = not piece.endswith("\n")
        self.err.flush()

    def _tool_finished(self, event: EventJson) -> None:
        content = str(event.get("content") or "")
        if event.get("is_error"):
            self._status(f"tool: {event.get('name')} failed: {_short(content)}")
        else:
            self._status(f"tool: {event.get('name')} answered ({len(content)} characters)")

    def _retry(self, event: EventJson) -> None:
        errors = event.get("errors")
        problems = "; ".join(str(e) for e in errors) if isinstance(errors, list) else ""
        why = f"{event.get('reason')}" + (f": {_short(problems)}" if problems else "")
        self._status(f"retry: attempt {event.get('attempt')} was rejected ({why}); asking again")
        self._restart()

    def _restart(self) -> None:
        """Start the growing output afresh (a new attempt, turn or tier)."""
        self._flush_lines()
        self._end_line()
        self._text = ""
        self._partial = False
        self._pending = None
        self._drawn_at = float("-inf")
        self._cancel_timer()
        if self.region is not None:
            self.region.show("")

    def _grown(self, drawn: str, line: str = "") -> None:
        """Show the output's new state: drawn now, or when the redraw interval has passed."""
        self._pending = drawn if self.region is not None else f"partial: {line}"
        wait = self._drawn_at + REDRAW_INTERVAL_S - self._clock()
        if wait <= 0:
            self._flush_lines()
        elif self._timer is None:
            self._timer = _call_later(wait, self._draw_later)

    def _draw_later(self) -> None:
        """Draw the state that arrived too soon after the last draw (unless drawn since)."""
        with self._lock:
            self._timer = None
            if not self._closed:
                self._flush_lines()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _flush_lines(self) -> None:
        """Draw the output's latest state, if it was not drawn yet."""
        if self._pending is None:
            return
        text, self._pending = self._pending, None
        self._drawn_at = self._clock()
        if self.region is not None:
            self.region.show(redact_text(text))
        else:
            self._end_line()
            self.err.write(printable(redact_text(text)) + "\n")
            self.err.flush()

    def _status(self, line: str) -> None:
        self._flush_lines()
        shown = printable(redact_text(line)) + "\n"
        if self.region is not None:
            with self.region.paused():
                self.err.write(shown)
                self.err.flush()
            return
        self._end_line()
        self.err.write(shown)
        self.err.flush()

    def _end_line(self) -> None:
        if self._line_open:
            self.err.write("\n")
            self._line_open = False


def _call_later(delay: float, draw: Callable[[], None]) -> asyncio.TimerHandle | None:
    """Call ``draw`` after ``delay`` seconds on the running event loop (none: not at all)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.call_later(delay, draw)


StreamView = GrowingView | JsonLinesView
"""Either view: ``show(event)`` then ``close()``."""
