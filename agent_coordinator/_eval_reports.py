"""The evals the dashboard shows: ``agentshape eval``'s reports, read from a directory.

``agentshape serve --evals-dir DIR`` points the service at a directory of eval outputs: each
``agentshape eval ... --out DIR/NAME`` writes ``DIR/NAME/eval.json``
(:class:`~agent_executor._evals.EvalReport`), and an eval run with ``--out DIR`` itself writes
``DIR/eval.json``. :func:`read_eval_reports` reads them all, newest first; a file that is not
a report is listed with what is wrong with it, so one bad file hides none of the others.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from agent_executor._evals import EVAL_REPORT_FILE, EvalReport

__all__ = ["MAX_REPORT_BYTES", "EvalEntry", "read_eval_reports"]

MAX_REPORT_BYTES = 4 * 1024 * 1024
"""Largest report file read; a larger one is listed as an error (a report is a few kB)."""


class EvalEntry(BaseModel):
    """One report file of the evals directory: its figures, or why they cannot be shown."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """The report file, relative to the evals directory (``NAME/eval.json``)."""
    report: EvalReport | None = None
    """The eval's figures; ``None`` when the file cannot be read as a report."""
    error: str | None = None
    """Why the file cannot be read as a report, naming the file; ``None`` when it can."""


def read_eval_reports(directory: Path) -> list[EvalEntry]:
    """Read every eval report in ``directory`` and its subdirectories one level down.

    Args:
        directory: The evals directory.

    Returns:
        One entry a report file, newest ``finished_at`` first (unreadable files last, by
        path); none when the directory does not exist.
    """
    if not directory.is_dir():
        return []
    paths = [directory / EVAL_REPORT_FILE, *sorted(directory.glob(f"*/{EVAL_REPORT_FILE}"))]
    entries = [_entry(directory, path) for path in paths if path.is_file()]
    good = [e for e in entries if e.report is not None]
    bad = [e for e in entries if e.report is None]
    good.sort(key=lambda e: e.report.finished_at if e.report else "", reverse=True)
    return good + bad


def _entry(directory: Path, path: Path) -> EvalEntry:
    name = path.relative_to(directory).as_posix()
    try:
        if path.stat().st_size > MAX_REPORT_BYTES:
            return EvalEntry(path=name, error=f"{name}: larger than {MAX_REPORT_BYTES} bytes")
        data = json.loads(path.read_text(encoding="utf-8"))
        return EvalEntry(path=name, report=EvalReport.model_validate(data))
    except OSError as exc:
        return EvalEntry(path=name, error=f"{name}: cannot be read ({exc.strerror or exc})")
    except (UnicodeDecodeError, ValueError) as exc:
        # ValidationError is a ValueError: both mean the file is not a report.
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        where = ".".join(str(part) for part in first["loc"]) if first else ""
        reason = f"{where}: {first['msg']}" if first else str(exc)
        return EvalEntry(path=name, error=f"{name}: not an eval report ({reason})")
