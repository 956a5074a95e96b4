"""Every ```sh example in the README after the set-up commands runs as written, offline.

The examples run in order, each in bash, in a scratch project directory holding a copy of the
fleet (and, beside it, a link to ``../shared`` when the conformance data is there), with the
installed ``agentshape`` and ``python`` first on ``PATH``, no API keys, and
``AGENTSHAPE_MODEL=test`` exported as the README's command-line section tells the reader to (so
the offline test model answers). ``bash`` blocks (installing, activating a virtual environment)
change the machine and are not run here. A block fails the test when bash exits non-zero; a
block that reads ``../shared`` is skipped when the data is absent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _shell_examples() -> list[tuple[int, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in BLOCK.finditer(text)]
    return blocks[1:]  # the first block is the set-up commands (dev.py) themselves


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_readme_shell_examples_run(tmp_path: Path) -> None:
    examples = _shell_examples()
    assert len(examples) >= 5
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
        assert done.returncode == 0, f"README.md:{line}\n{done.stdout}\n{done.stderr}"
