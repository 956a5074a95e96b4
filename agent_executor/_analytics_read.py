"""Reading the analytics files back: :func:`read_events`, :class:`EventLines`, and their names.

The JSONL sink (:mod:`agent_executor._analytics`) writes one file per UTC day,
``events-YYYY-MM-DD.jsonl`` (:func:`event_file`); the reader skips and counts corrupt or partial
lines, so a bad line is never fatal.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import BinaryIO

from pydantic import JsonValue

__all__ = ["EventLines", "ReadResult", "as_utc", "event_file", "read_events"]

logger = logging.getLogger("agent_executor._analytics")

_FILE_PREFIX = "events-"
_FILE_SUFFIX = ".jsonl"


def as_utc(moment: datetime) -> datetime:
    """Return ``moment`` as an aware time in UTC; a naive time is taken to be UTC already."""
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def event_file(directory: Path, day: date) -> Path:
    """Return the file that holds the events of one UTC day: ``events-YYYY-MM-DD.jsonl``."""
    return directory / f"{_FILE_PREFIX}{day.isoformat()}{_FILE_SUFFIX}"


@dataclass(frozen=True)
class ReadResult:
    """The events :func:`read_events` recovered, and what it had to skip.

    Iterating it yields the events.
    """

    events: list[dict[str, JsonValue]] = field(default_factory=list)
    """Each whole line that parsed to a JSON object, in file order (files by day)."""
    corrupt: int = 0
    """Lines skipped because they were not a JSON object (torn, glued or garbled)."""
    partial: int = 0
    """Last lines skipped because they had no newline yet (being written, or cut off)."""
    files: list[Path] = field(default_factory=list)
    """The files read."""
    unreadable: list[Path] = field(default_factory=list)
    """Files that could not be opened or read, and were skipped."""

    def __iter__(self) -> Iterator[dict[str, JsonValue]]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)


def _file_day(path: Path) -> date | None:
    stem = path.name.removeprefix(_FILE_PREFIX).removesuffix(_FILE_SUFFIX)
    try:
        return date.fromisoformat(stem)
    except ValueError:
        return None


def _event_time(event: dict[str, JsonValue]) -> datetime | None:
    ts = event.get("ts")
    if not isinstance(ts, str):
        return None
    try:
        parsed = datetime.fromisoformat(ts)
    except ValueError:
        return None
    # Not converted (a far-past offset time cannot be): comparing aware times is exact anyway.
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _json_object(raw: bytes) -> dict[str, JsonValue] | None:
    """Return the JSON object a line holds, or ``None`` when it holds anything else."""
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError, a huge integer, deep nesting
        return None
    return event if isinstance(event, dict) else None


def _at_or_after(event: dict[str, JsonValue], since: datetime) -> bool:
    """Whether the event has a readable ``ts`` at or after ``since`` (an aware time)."""
    when = _event_time(event)
    return when is not None and when >= since


def _open_log(path: Path) -> BinaryIO:
    """Open a log file for reading without blocking; a FIFO or device is refused (``OSError``)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


class EventLines:
    """The whole lines of analytics files, read one at a time, with counts of what was skipped.

    Iterating reads the files in day order and yields each complete, non-blank line as bytes; a
    last line without its newline is counted in :attr:`partial`, an unreadable file is logged
    and listed in :attr:`unreadable`. Nothing is kept but the counts, so a log of any size is
    read in constant memory. The consumer decides what a line holds and counts the lines it
    cannot use in :attr:`corrupt`.

    Args:
        source: A directory (every ``events-*.jsonl`` in it, oldest day first) or one file.
        since: Day files before this time's UTC day are not read (an aware time, or ``None``).
    """

    def __init__(self, source: Path | str, *, since: datetime | None = None) -> None:
        source = Path(source)
        if source.is_dir():
            files = sorted(source.glob(f"{_FILE_PREFIX}*{_FILE_SUFFIX}"))
            if since is not None:
                first = as_utc(since).date()
                files = [f for f in files if (_file_day(f) or first) >= first]
        else:
            files = [source] if source.exists() else []
        self.files: list[Path] = files
        """The files to read."""
        self.unreadable: list[Path] = []
        """Files that could not be opened or read, and were skipped."""
        self.partial = 0
        """Last lines skipped because they had no newline yet (being written, or cut off)."""
        self.corrupt = 0
        """Lines the consumer could not use (not a JSON object: torn, glued or garbled)."""

    def __iter__(self) -> Iterator[bytes]:
        for path in self.files:
            try:
                with _open_log(path) as handle:
                    for raw in handle:
                        if not raw.endswith(b"\n"):
                            self.partial += 1
                        elif raw.strip():
                            yield raw
            except OSError as exc:
                logger.warning("cannot read analytics file %s: %s", path, exc.strerror or exc)
                self.unreadable.append(path)


def read_events(source: Path | str, *, since: datetime | None = None) -> ReadResult:
    """Read analytics events back from a directory of day files or from one file.

    Corrupt lines, a last line without its newline, and unreadable files are skipped and counted;
    none of them raises. A source that does not exist gives an empty result with no files. (To
    read a large log without holding it, iterate :class:`EventLines` instead.)

    Args:
        source: A directory (every ``events-*.jsonl`` in it, oldest day first) or one file.
        since: Keep only events whose ``ts`` is at or after this time (naive means UTC); events
            without a readable ``ts`` are left out, and day files before its UTC day are not read.

    Returns:
        The events as dicts, with counts of what was skipped.
    """
    since_utc = None if since is None else as_utc(since)
    lines = EventLines(source, since=since_utc)
    events: list[dict[str, JsonValue]] = []
    for raw in lines:
        event = _json_object(raw)
        if event is None:
            lines.corrupt += 1
        elif since_utc is None or _at_or_after(event, since_utc):
            events.append(event)
    return ReadResult(
        events=events,
        corrupt=lines.corrupt,
        partial=lines.partial,
        files=lines.files,
        unreadable=lines.unreadable,
    )
