"""The code blocks of the README and of every page of the docs site, for the tests that run them.

A block is a fenced ```` ```LANG ```` block; each is returned with the document and line it starts
on. Left out: blocks that include a file of the repository (``--8<--``, the docs' way to show
``examples/``: tests/test_examples.py runs those files), and blocks between
``<!-- pending: BRANCH ... -->`` and ``<!-- /pending -->``, documentation of a branch not merged
yet, whose examples need its code: merging the branch removes the markers, and from then on its
blocks run like the others.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
"""The README and the docs pages, each run with its own names and its own scratch project."""


PENDING = re.compile(r"^<!-- pending: [^\n]*-->$.*?^<!-- /pending -->$", re.MULTILINE | re.DOTALL)
"""A region documenting a branch not merged yet (see the module's docstring)."""


def blocks(document: Path, language: str) -> list[tuple[int, str]]:
    """Return ``(line, code)`` for every ``language`` block of ``document``, in order."""
    fence = re.compile(rf"^```{re.escape(language)}\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    text = document.read_text(encoding="utf-8")
    skipped = [match.span() for match in PENDING.finditer(text)]
    return [
        (text.count("\n", 0, match.start()) + 1, match.group(1))
        for match in fence.finditer(text)
        if "--8<--" not in match.group(1)
        and not any(start <= match.start() < end for start, end in skipped)
    ]


def name(document: Path) -> str:
    """The document's path from the repository's root, as a test id and in messages."""
    return document.relative_to(ROOT).as_posix()
