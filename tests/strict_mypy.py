"""One ``mypy --strict`` run over every user program the tests type-check.

The docs' Python examples (one module a document), the programs in ``examples/`` and the service
client's programs (:func:`client_programs`) are checked
as a user's programs would be: by the installed mypy, from an empty directory, with no project
config, so only what the installed packages declare is seen. Checking them in one run costs one
analysis of the packages they import instead of one a test; each test then reads what mypy said
about its own programs (see :meth:`StrictMypy.problems`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from tests.doc_blocks import DOCUMENTS, ROOT, blocks

__all__ = [
    "CLIENT_PROGRAMS",
    "DOCS_SUFFIX",
    "EXAMPLES",
    "StrictMypy",
    "client_programs",
    "docs_programs",
]

EXAMPLES = ROOT / "examples"
"""The runnable example programs."""
DOCS_SUFFIX = "_examples.py"
"""How the name of a document's module of examples ends (:func:`docs_programs`)."""


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
            program = directory / f"{document.stem.replace('-', '_')}{DOCS_SUFFIX}"
            program.write_text("\n\n".join(code for _, code in examples), encoding="utf-8")
            programs.append(program)
    return programs


# The client's types ----------------------------------------------------------------------

USER_PROGRAM = """
from __future__ import annotations

import asyncio
from typing import assert_type

from pydantic import BaseModel, JsonValue

from agentshape import (
    AsyncClient, Client, PartialOutput, RunEnded, SchemaInfo, SchemaNotFoundError, SessionResult,
)


class Review(BaseModel):
    summary: str


def review(client: Client) -> str:
    result = client.start_session("writer", "Review PR 1", output_type=Review, wait=30)
    assert_type(result, SessionResult[Review])
    assert_type(result.output, Review)
    plain = client.start_session("writer", "x", parameters={"a": 1}, model="test")
    assert_type(plain.output, JsonValue)
    for event in client.events(result.run_id):
        if isinstance(event, PartialOutput):
            print(event.data, event.attempt)
        elif isinstance(event, RunEnded):
            print(event.status)
    try:
        schema: SchemaInfo = client.schemas.get("review")
    except SchemaNotFoundError as error:
        print(error.suggestion)
    else:
        print(schema.schema_)
    return result.output.summary + str(client.get_result(result.session_id, Review).output)


async def review_async(client: AsyncClient) -> Review:
    result = await client.resume_session("ses_1", "again", output_type=Review)
    async for event in client.events(result.run_id):
        print(event)
    return result.output


with Client("http://127.0.0.1:8600", token=None, timeout=10) as client:
    print(review(client))
print(asyncio.run(review_async(AsyncClient("http://127.0.0.1:8600"))))
"""


SERVICE_PAGE = ROOT / "docs" / "service.md"


def _readme_client_program() -> str:
    """The Python program of the service page's client example (a ``python - <<'EOF'`` block)."""
    text = SERVICE_PAGE.read_text(encoding="utf-8")
    [program] = re.findall(r"^python - <<'EOF'\n(.*?)^EOF$", text, re.MULTILINE | re.DOTALL)
    return str(program)


CLIENT_PROGRAMS = ("user_program.py", "docs_client.py", "wrong_program.py")
"""The client programs :func:`client_programs` writes: the last one must fail, at one line."""


def client_programs(directory: Path) -> list[Path]:
    """Write a user's program of the service client, the service page's client example, and
    the user's program with one wrong return type, in ``directory``.

    Args:
        directory: Where the programs are written.

    Returns:
        The programs written, named as in :data:`CLIENT_PROGRAMS`.
    """
    wrong = USER_PROGRAM.replace("-> Review:", "-> int:")
    texts = (USER_PROGRAM, _readme_client_program(), wrong)
    programs = [directory / name for name in CLIENT_PROGRAMS]
    for program, text in zip(programs, texts, strict=True):
        program.write_text(text, encoding="utf-8")
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
