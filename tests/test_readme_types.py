"""The Python examples of the README and of each docs page type-check under ``mypy --strict`` as a
user's program would.

A document's examples are joined in order into one module (they share names, as
``test_readme.py`` runs them) and checked by the installed mypy from an empty directory, with no
project config, so only what the installed packages declare (their ``py.typed`` markers, typed
result fields, the ``Agent`` type variable's default) is seen.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.doc_blocks import DOCUMENTS, blocks


def test_readme_and_docs_examples_pass_mypy_strict(tmp_path: Path) -> None:
    programs = []
    for document in DOCUMENTS:
        examples = blocks(document, "python")
        if examples:
            # One module a document: a page's names are its own.
            program = tmp_path / f"{document.stem.replace('-', '_')}_examples.py"
            program.write_text("\n\n".join(code for _, code in examples), encoding="utf-8")
            programs.append(str(program))
    assert len(programs) >= 5
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *programs],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
