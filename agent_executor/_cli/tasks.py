"""``run-many``'s files: the tasks file it reads and the results file it appends to.

A task is a JSON object line (``id``, ``task``, ``parameters``), a JSON string, or plain text;
every bad line is reported with its number. The results file is JSONL, one line a finished task;
a rerun skips the tasks already ``completed`` there.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from agent_contracts._errors import ConfigFileError
from agent_contracts._runs import RunResult
from agent_contracts._suggest import did_you_mean
from agent_core._json_text import parse_json
from agent_core._user_files import MAX_DATA_BYTES, read_user_file, write_text_atomically
from agent_executor._cli.commands import UsageError

__all__ = ["TaskItem", "read_done", "read_tasks", "result_record", "results_lock"]

_MAX_REPORTED = 20


@dataclass(frozen=True)
class TaskItem:
    """One task of the batch.

    Attributes:
        id: The task's id (the line number when the line gave none).
        line: The line of the tasks file it came from.
        task: The task text.
        parameters: The run parameters.
    """

    id: str | int
    line: int
    task: str
    parameters: dict[str, JsonValue]

    @property
    def key(self) -> str:
        """The id as text, the way results are matched to tasks."""
        return str(self.id)


class _TaskLine(BaseModel):
    """A task line written as a JSON object."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str | int | None = None
    """The task's id."""
    task: str = Field(min_length=1)
    """The task text."""
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    """The run parameters."""


def _line_problem(number: int, text: str) -> tuple[TaskItem | None, str | None]:
    """Read one line: the task, or what is wrong with it (``(None, None)`` for a blank line)."""
    stripped = text.strip()
    if not stripped or stripped.startswith("#"):
        return None, None
    if not stripped.startswith(("{", "[", '"')):
        return TaskItem(id=number, line=number, task=stripped, parameters={}), None
    try:
        value = parse_json(stripped, source="", line=number)
    except ConfigFileError as exc:
        return None, exc.message
    if isinstance(value, str):
        if not value.strip():
            return None, "the task is an empty string"
        return TaskItem(id=number, line=number, task=value, parameters={}), None
    if not isinstance(value, dict):
        return None, "a task line is a JSON object, a JSON string or plain text, not an array"
    try:
        parsed = _TaskLine.model_validate(value)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"][:1]) or "line"
            message = error["msg"]
            if error["type"] == "extra_forbidden":
                hint = did_you_mean(field, ("id", "task", "parameters"))
                message = f"unknown key{hint} (a task line has id, task and parameters)"
            elif field == "id":
                message = "must be a string or an integer"
            problems.append(f"{field}: {message}")
        return None, "; ".join(dict.fromkeys(problems))
    item_id = parsed.id if parsed.id is not None else number
    return TaskItem(id=item_id, line=number, task=parsed.task, parameters=parsed.parameters), None


def read_tasks(path: Path) -> list[TaskItem]:
    """Read a tasks file.

    Returns:
        The tasks, in file order.

    Raises:
        UsageError: The file cannot be read, or lines are bad (every one is listed, with its
            number, up to twenty), or two tasks share an id.
    """
    try:
        text = read_user_file(path, max_bytes=MAX_DATA_BYTES).decode("utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"tasks file {path} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"tasks file {path} is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"tasks file {path} is not UTF-8 text (at byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"cannot read tasks file {path}: {exc.strerror or exc}") from None
    items: list[TaskItem] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    # Split on newlines only: a JSON string may hold U+2028 and other characters that
    # str.splitlines() would break a line at.
    for number, line in enumerate(text.split("\n"), start=1):
        item, problem = _line_problem(number, line)
        if problem is not None:
            problems.append(f"{path}:{number}: {problem}")
        if item is None:
            continue
        if item.key in seen:
            problems.append(
                f"{path}:{number}: id {item.id!r} is already the id of line {seen[item.key]}"
            )
            continue
        seen[item.key] = number
        items.append(item)
    if problems:
        shown = problems[:_MAX_REPORTED]
        if len(problems) > _MAX_REPORTED:
            shown.append(f"... and {len(problems) - _MAX_REPORTED} more bad lines")
        count = f"{len(problems)} bad line{'s' if len(problems) != 1 else ''}"
        raise UsageError(f"{path} has {count}; nothing was run:\n" + "\n".join(shown))
    return items


def read_done(out: Path, pending: Sequence[TaskItem]) -> tuple[set[str], int]:
    """Find the tasks an earlier run already completed, and tidy the results file for a rerun.

    Lines of tasks about to run again (not completed) and a torn last line (no newline, not
    JSON: the earlier run was stopped mid-write) are dropped; every other line is kept as it is.

    Args:
        out: The results file (it may not exist yet).
        pending: The tasks of this batch.

    Returns:
        The ids (as text) with a ``completed`` line, and how many lines were dropped.

    Raises:
        UsageError: The file is not UTF-8 text.
        OSError: The file cannot be read or rewritten.
    """
    if not out.exists():
        return set(), 0
    try:
        lines = read_user_file(out, max_bytes=MAX_DATA_BYTES).decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"--out {out} is not UTF-8 text (at byte {exc.start}), so not a results file of "
            "agentshape; move it aside or name another file"
        ) from None
    tail = lines.pop()  # what follows the last newline: "" unless the last line has none
    entries = [(line, _record_of(line)) for line in lines if line.strip()]
    torn = False
    if tail.strip():
        record = _record_of(tail)
        torn = record is None
        if record is not None:
            entries.append((tail, record))
    done = {
        str(record["id"])
        for _, record in entries
        if record is not None and "id" in record and record.get("status") == "completed"
    }
    rerun = {item.key for item in pending} - done
    kept = [
        line
        for line, record in entries
        if record is None or "id" not in record or str(record["id"]) not in rerun
    ]
    dropped = len(entries) - len(kept) + int(torn)
    if dropped or tail.strip():
        write_text_atomically(out, "".join(f"{line}\n" for line in kept))
    return done, dropped


@contextlib.contextmanager
def results_lock(out: Path) -> Iterator[None]:
    """Hold a results file for one ``run-many``, or refuse a second writer with a clear error.

    Two processes appending to one results file would lose and duplicate results (each rewrites
    it when dropping stale lines, each reruns what the other has not written yet). The lock is
    an advisory ``flock`` on a hidden file beside it (``.NAME.lock``, left in place: removing it
    would race a third process); the operating system releases it when the process ends,
    however it ends.

    Args:
        out: The results file (its directory is created if needed).

    Raises:
        UsageError: Another process holds the lock.
        OSError: The lock file cannot be created.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = out.with_name(f".{out.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(
                f"--out {out} is being written by another agentshape run-many (it holds {lock}); "
                "wait for it to finish, or name another results file"
            ) from None
        yield
    finally:
        os.close(fd)


def _record_of(line: str) -> Mapping[str, object] | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # a torn, foreign or hostile line: not a record
        return None
    return value if isinstance(value, dict) else None


def result_record(item: TaskItem, result: RunResult) -> dict[str, JsonValue]:
    """Return the results-file line for one finished task.

    Returns:
        id, line, status, result_data, result_text, error, usage, model, model_tier, attempts,
        retries, duration_ms, run_id, schema_source, schema_name and recovered_by_extraction.
    """
    return {
        "id": item.id,
        "line": item.line,
        "status": result.status,
        "result_data": result.result_data,
        "result_text": result.result_text,
        "error": result.error.model_dump(mode="json") if result.error else None,
        "usage": result.usage.model_dump(mode="json"),
        "model": result.model,
        "model_tier": result.model_tier,
        "attempts": len(result.attempts),
        "retries": result.retries,
        "duration_ms": round(result.duration_ms, 1),
        "run_id": result.run_id,
        "schema_source": result.schema_source,
        "schema_name": result.schema_name,
        "recovered_by_extraction": result.recovered_by_extraction,
    }
