"""The analytics sink: every run's events as JSON lines, and the reader the CLI reviews them with.

A run reports each event to an :class:`AnalyticsSink`. :class:`JsonlAnalytics` appends one JSON
object a line to ``<directory>/events-YYYY-MM-DD.jsonl`` (default directory
``.agentshape/analytics/``), one file per UTC day, the day taken from the event's ``ts`` field
(the time of writing for an event without one). :class:`NullAnalytics` drops events and
:class:`MemoryAnalytics` keeps them in a list.

The sink is generic over Pydantic models, so it does not depend on the exact event classes in
:mod:`agent_contracts._events`. Before a line is written it passes the redaction every writer
uses (:mod:`agent_executor._redaction`): no configured API key, no key-shaped or key-named value
and no authorization header ever reaches the log.

Writing never breaks a run: a failure (an unwritable directory, a full disk) is logged as a
warning through :mod:`logging` and counted in :attr:`JsonlAnalytics.dropped`.

:func:`read_events` (from :mod:`agent_executor._analytics_read`) reads the files back, skipping
and counting corrupt or partial lines; a bad line is never fatal.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import weakref
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from agent_executor._analytics_read import EventLines, ReadResult, as_utc, event_file, read_events
from agent_executor._redaction import REDACTED, redact, redact_json_lines

__all__ = [
    "DEFAULT_ANALYTICS_DIR",
    "REDACTED",
    "AnalyticsSink",
    "EventLines",
    "JsonlAnalytics",
    "MemoryAnalytics",
    "NullAnalytics",
    "ReadResult",
    "as_utc",
    "event_file",
    "read_events",
    "redact",
]

logger = logging.getLogger(__name__)

DEFAULT_ANALYTICS_DIR = Path(".agentshape/analytics")
"""Where :class:`JsonlAnalytics` writes when given no directory (relative to the working directory
at construction)."""


@runtime_checkable
class AnalyticsSink(Protocol):
    """Where a run reports its events; ``emit`` must never raise."""

    def emit(self, event: BaseModel) -> None:
        """Record one event.

        Args:
            event: The event, a Pydantic model (see :mod:`agent_contracts._events`).
        """


class NullAnalytics:
    """A sink that drops every event."""

    def emit(self, event: BaseModel) -> None:
        """Drop the event."""


class MemoryAnalytics:
    """A sink that keeps events in a list, for tests and for callers who want them in hand.

    The events are kept as given, not redacted: nothing here is written anywhere.
    """

    def __init__(self) -> None:
        self.events: list[BaseModel] = []
        """Every event emitted, in order."""
        self._lock = threading.Lock()

    def emit(self, event: BaseModel) -> None:
        """Append the event to :attr:`events`."""
        with self._lock:
            self.events.append(event)


def _event_day(event: BaseModel) -> date:
    ts = getattr(event, "ts", None)
    if isinstance(ts, datetime):  # a naive time is UTC already; one in UTC needs no conversion
        return as_utc(ts).date() if ts.utcoffset() else ts.date()
    return datetime.now(UTC).date()


_KEPT_ACCEPTED = 2_000
"""Characters of an accepted attempt's ``raw_output`` a JSONL line keeps (the result has it all)."""
_KEPT_REJECTED = 65_536
"""Characters of a rejected attempt's ``raw_output`` a JSONL line keeps, for debugging it."""


def _bounded(event: BaseModel) -> BaseModel:
    """Return the event with a long ``raw_output`` cut, so a line's cost does not grow with it."""
    # ``__dict__``: a missing attribute costs a Pydantic model an exception to say so.
    raw = event.__dict__.get("raw_output")
    if not isinstance(raw, str) or len(raw) <= _KEPT_ACCEPTED:
        return event
    keep = _KEPT_REJECTED if event.__dict__.get("errors") else _KEPT_ACCEPTED
    if len(raw) <= keep:
        return event
    cut = f"{raw[:keep]}... [{len(raw) - keep} more characters not logged]"
    return event.model_copy(update={"raw_output": cut})


def _serialised(event: BaseModel) -> bytes:
    """Return the event as compact JSON (UTF-8)."""
    try:
        return event.__pydantic_serializer__.to_json(event)
    except ValueError:
        # Pydantic cannot write a lone surrogate (from a model or a file name): escape it.
        payload = event.model_dump(mode="json")
        return json.dumps(payload, ensure_ascii=True, separators=(",", ":")).encode()


class JsonlAnalytics:
    """A sink that appends each event as one JSON line to a file per UTC day.

    A long ``raw_output`` is cut (an accepted attempt keeps 2,000 characters, the result holds
    it all; a rejected one 64 Ki), so a line costs about the same whatever the output's size.

    Each line is serialised and redacted first, then written with a single ``os.write`` to the
    day's file opened with ``O_APPEND``, so processes and threads can share a file without torn
    or interleaved lines.
    ``O_APPEND`` makes every write land at the current end of the file. On Linux a ``write`` to a
    regular file on a local filesystem (ext4, xfs, btrfs, tmpfs) holds the inode lock for its whole
    length, so one ``write`` is never interleaved with another, however long the line; the
    ``PIPE_BUF`` (4 KiB) atomicity limit applies to pipes and FIFOs, not to regular files. Looping
    over partial writes would break this, so a short write (a full disk) is not retried: the line
    is ended with a newline if possible, the events whose lines were not written whole are counted
    as dropped, and :func:`read_events` counts the torn line as corrupt (or, unended at the end of
    the file, as partial). NFS does not honour ``O_APPEND`` atomically; keep the directory on a
    local disk.

    A failure to write never raises: the first failure after a success is logged as a warning
    (later ones at debug level, so a read-only directory does not flood the log) and every lost
    event is counted in :attr:`dropped`.

    Args:
        directory: Where the files go; created as needed. Relative paths are taken from the
            working directory at construction.
    """

    def __init__(self, directory: Path | str = DEFAULT_ANALYTICS_DIR) -> None:
        self.directory = Path(directory).absolute()
        """The directory the day files are written to."""
        self._lock = threading.Lock()
        self._dropped = 0
        self._failing = False
        self._open: dict[Path, int] = {}  # the day file's descriptor, kept between events
        self._paths: dict[date, Path] = {}  # the day's file name, made once a day
        weakref.finalize(self, _close_all, self._open)

    @property
    def dropped(self) -> int:
        """How many events could not be written."""
        return self._dropped

    def emit(self, event: BaseModel) -> None:
        """Append the event, redacted, as one line to its UTC day's file; never raises.

        Args:
            event: The event, a Pydantic model (see :mod:`agent_contracts._events`).
        """
        try:
            line = _serialised(_bounded(event)) + b"\n"
        except Exception as exc:  # a model's own serialiser may raise anything: one line lost
            self._drop(f"cannot serialise {type(event).__name__}: {exc}")
            return
        day = _event_day(event)
        path = self._paths.get(day)
        if path is None:
            self._paths = {day: event_file(self.directory, day)}  # one day at a time
            path = self._paths[day]
        try:
            data = redact_json_lines(line)
        except Exception as exc:  # a bug of ours: the line is lost, counted, never raised
            self._drop(f"cannot redact: {exc}")
            return
        try:
            self._append(path, data)
        except _ShortWrite as exc:
            self._drop(str(exc), exc.lost)
        except OSError as exc:
            self._drop(f"cannot write {path}: {exc.strerror or exc}")

    def _append(self, path: Path, data: bytes) -> None:
        # The day file stays open (opening costs more than writing); it is opened again for a
        # new day, after a failed write, and once deleted (no links left: made anew).
        with self._lock:
            fd = self._open.get(path)
            if fd is None or os.fstat(fd).st_nlink == 0:
                _close_all(self._open)
                path.parent.mkdir(parents=True, exist_ok=True)
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
                fd = os.open(path, flags, 0o600)
                self._open[path] = fd
            try:
                written = os.write(fd, data)
                if written != len(data):
                    with contextlib.suppress(OSError):
                        os.write(fd, b"\n")  # end the torn line so the next one stays whole
                    lost = data.count(b"\n", written)  # lines not written whole
                    raise _ShortWrite(f"short write: {written} of {len(data)} bytes", lost)
            except OSError:
                _close_all(self._open)
                raise
            self._failing = False

    def _drop(self, reason: str, events: int = 1) -> None:
        with self._lock:
            self._dropped += events
            first = not self._failing
            self._failing = True
        level = logging.WARNING if first else logging.DEBUG
        what = "analytics event" if events == 1 else f"{events} analytics events"
        logger.log(level, "%s dropped (%d so far): %s", what, self._dropped, reason)


class _ShortWrite(OSError):
    """A write that wrote part of its lines (a full disk); ``lost`` lines were not written whole."""

    def __init__(self, message: str, lost: int) -> None:
        super().__init__(message)
        self.lost = lost


def _close_all(kept: dict[Path, int]) -> None:
    for fd in kept.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    kept.clear()
