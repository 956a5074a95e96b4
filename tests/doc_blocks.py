"""The code blocks of the README and of every page of the docs site, for the tests that run them.

A block is a fenced ```` ```LANG ```` block; each is returned with the document and line it starts
on. Blocks that include a file of the repository (``--8<--``, the docs' way to show
``examples/``) are left out: tests/test_examples.py runs those files.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
"""The README and the docs pages, each run with its own names and its own scratch project."""


def blocks(document: Path, language: str) -> list[tuple[int, str]]:
    """Return ``(line, code)`` for every ``language`` block of ``document``, in order."""
    fence = re.compile(rf"^```{re.escape(language)}\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    text = document.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 1, match.group(1))
        for match in fence.finditer(text)
        if "--8<--" not in match.group(1)
    ]


def name(document: Path) -> str:
    """The document's path from the repository's root, as a test id and in messages."""
    return document.relative_to(ROOT).as_posix()
