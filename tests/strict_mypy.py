"""One ``mypy --strict`` run over every user program the tests type-check.

The docs' Python examples (one module a document) and the programs in ``examples/`` are checked
as a user's programs would be: by the installed mypy, from an empty directory, with no project
config, so only what the installed packages declare is seen. Checking them in one run costs one
analysis of the packages they import instead of one a test; each test then reads what mypy said
about its own programs (see :meth:`StrictMypy.problems`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from tests.doc_blocks import DOCUMENTS, ROOT, blocks

__all__ = ["EXAMPLES", "StrictMypy", "docs_programs"]

EXAMPLES = ROOT / "examples"
"""The runnable example programs."""


def docs_programs(directory: Path) -> list[Path]:
    """Write each document's Python examples, joined in order, as one module in ``directory``.

    A page's names are its own, so each document is a module of its own.

    Args:
        directory: Where the modules are written.

    Returns:
        The modules written, one for each document that has Python examples.
    """
    programs = []
    for document in DOCUMENTS:
        examples = blocks(document, "python")
        if examples:
            program = directory / f"{document.stem.replace('-', '_')}_examples.py"
            program.write_text("\n\n".join(code for _, code in examples), encoding="utf-8")
            programs.append(program)
    return programs


class StrictMypy:
    """``mypy --strict --no-incremental`` run once over ``programs`` from ``directory``.

    Args:
        programs: The files to check (their names must differ).
        directory: Where mypy runs (an empty directory: no project config is read).
    """

    def __init__(self, programs: list[Path], directory: Path) -> None:
        self.programs = programs
        done = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *map(str, programs)],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        self.returncode = done.returncode
        self.output = done.stdout + done.stderr

    def problems(self, programs: Iterable[Path]) -> str:
        """Return what mypy reported about ``programs``: empty when they type-check.

        Args:
            programs: Some of the programs checked.

        Returns:
            mypy's lines about those files when it found an error in one, else ``""``; all
            its output when it did not finish a check (it crashed, or failed with no error
            about a file it was given).
        """
        names = {program.name for program in programs}
        lines = self.output.splitlines()
        about = [line for line in lines if _file_of(line) in names]
        checked = {program.name for program in self.programs}
        located = any(_file_of(line) in checked and ": error:" in line for line in lines)
        if self.returncode not in (0, 1) or (self.returncode == 1 and not located):
            return self.output
        return "\n".join(about) if any(": error:" in line for line in about) else ""


def _file_of(line: str) -> str:
    """The name of the file a line of mypy's output is about (``path:line: error: ...``)."""
    return Path(line.split(":", 1)[0]).name
