"""The release: its archives carry the licence, its version is one, its changelog names it."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from agentshape import __version__

ROOT = Path(__file__).resolve().parents[1]


def test_version_shows_the_running_code_even_with_stale_metadata(tmp_path: Path) -> None:
    # An editable install not reinstalled since a bump: its metadata names another version.
    stale = tmp_path / "agentshape-0.0.1.dist-info"
    stale.mkdir()
    (stale / "METADATA").write_text("Metadata-Version: 2.1\nName: agentshape\nVersion: 0.0.1\n")
    program = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from importlib.metadata import version\n"
        "assert version('agentshape') == '0.0.1'\n"
        "from agentshape._cli import main\n"
        "sys.exit(main(['--version']))\n"
    )

    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"agentshape {__version__}\n"


def test_the_changelog_names_the_version_and_the_policy() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", text, re.MULTILINE)
    assert released and released[0] == __version__  # a bump comes with its entry
    assert "## [Unreleased]" in text
    assert "## Versioning" in text and "`agentshape.__all__`" in text


def test_the_licence_is_an_spdx_expression_with_its_file() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


@pytest.mark.slow
def test_the_wheel_and_the_sdist_carry_the_licence(tmp_path: Path) -> None:
    # --no-isolation: the build backend from the dev extra, so no download is needed.
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    (wheel,) = tmp_path.glob(f"agentshape-{__version__}-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = f"agentshape-{__version__}.dist-info"
        metadata = archive.read(f"{info}/METADATA").decode()
    assert f"{info}/licenses/LICENSE" in names
    assert "agent_core/meta_schema_files/draft-04.json" in names
    assert "License-Expression: MIT" in metadata.splitlines()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert not [line for line in requires if "jsonschema>" in line and "extra ==" not in line]

    (sdist,) = tmp_path.glob(f"agentshape-{__version__}.tar.gz")
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    top = f"agentshape-{__version__}"
    assert {f"{top}/LICENSE", f"{top}/CHANGELOG.md", f"{top}/pyproject.toml"} <= set(members)
    # The tests the sdist carries run the docs' and the examples' code.
    docs = {f"{top}/mkdocs.yml", f"{top}/docs/index.md", f"{top}/examples/extract_pydantic.py"}
    assert docs <= set(members)
