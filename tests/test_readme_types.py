"""The README's Python examples type-check under ``mypy --strict`` as a user's program would.

The examples are joined in order into one module (they share names, as ``test_readme.py`` runs
them) and checked by the installed mypy from an empty directory, with no project config, so
only what the installed packages declare (their ``py.typed`` markers, typed result fields, the
``Agent`` type variable's default) is seen.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.test_readme import _examples


def test_readme_examples_pass_mypy_strict(tmp_path: Path) -> None:
    program = tmp_path / "readme_examples.py"
    program.write_text("\n\n".join(code for _, code in _examples()), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(program)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
