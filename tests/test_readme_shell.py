"""Every ```sh example in the README (after the set-up commands) and in each docs page runs as
written, offline.

The examples of one document run in order, each in bash, in a scratch project directory of that
document holding a copy of the fleet (and, beside it, a link to ``../shared`` when the
conformance data is there), with the installed ``agentshape`` and ``python`` first on ``PATH``,
no API keys, and ``AGENTSHAPE_MODEL=test`` exported as the command-line docs tell the reader to
(so the offline test model answers). ``bash`` blocks (installing, activating a virtual
environment, commands for a real model or a desktop client) change the machine or need what the
tests do not have, and are not run here. A block fails the test when bash exits non-zero; a
block that reads ``../shared`` is skipped when the data is absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_blocks import DOCUMENTS, ROOT, blocks, name


def _shell_examples(document: Path) -> list[tuple[int, str]]:
    found = blocks(document, "sh")
    if document == ROOT / "README.md":
        return found[1:]  # the first block is the set-up commands (dev.py) themselves
    return found


def test_readme_and_docs_have_shell_examples() -> None:
    assert len(_shell_examples(ROOT / "README.md")) >= 2
    assert sum(len(_shell_examples(document)) for document in DOCUMENTS) >= 15


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_shell_examples_run(document: Path, tmp_path: Path) -> None:
    examples = _shell_examples(document)
    if not examples:
        return
    project = tmp_path / "project"
    shutil.copytree(ROOT / "agents", project / "agents")
    shutil.copytree(ROOT / "bench", project / "bench")  # `python bench/conformance.py ...`
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        (tmp_path / "shared").symlink_to(shared)
    scripts = Path(sys.executable).parent
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OPENAI_", "ANTHROPIC_", "OLLAMA_", "AGENTSHAPE_"))
    }
    env["AGENTSHAPE_MODEL"] = "test"
    env["PATH"] = f"{scripts}{os.pathsep}{env.get('PATH', '')}"
    for line, code in examples:
        if "../shared" in code and not shared.is_dir():
            continue
        script = "set -euo pipefail\n" + code.replace(".venv/bin/", "")
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"{name(document)}:{line}\n{done.stdout}\n{done.stderr}"
