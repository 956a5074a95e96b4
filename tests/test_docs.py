"""The docs site: every relative link of the README and the docs resolves, the README stays
short, and ``mkdocs build --strict`` builds the site with a reference of every public name."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

import agentshape
from agentshape import load_agent_config
from tests.doc_blocks import DOCUMENTS, ROOT, blocks, name

LINK = re.compile(r"(?<!\!)\[[^\]\n]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```$", re.MULTILINE | re.DOTALL)


def _anchors(document: Path) -> set[str]:
    """The heading ids mkdocs (and GitHub) give ``document``'s headings."""
    text = FENCE.sub("", document.read_text(encoding="utf-8"))
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).strip().replace(" ", "-")
        anchors.add(slug)
    return anchors


def _links(document: Path) -> list[str]:
    text = FENCE.sub("", document.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans: `[a](b)` is not a link
    return [target for target in LINK.findall(text) if "://" not in target]


@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_every_relative_link_resolves(document: Path) -> None:
    broken = []
    for target in _links(document):
        path, _, anchor = target.partition("#")
        resolved = (document.parent / unquote(path)).resolve() if path else document
        if not resolved.exists():
            broken.append(f"{target}: no {resolved}")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {name(resolved)}")
    assert not broken, f"{name(document)}: " + "; ".join(broken)


def test_the_links_checked_include_the_docs_pages() -> None:
    readme = _links(ROOT / "README.md")
    pages = {page.name for page in (ROOT / "docs").glob("*.md")}
    assert {Path(target.partition("#")[0]).name for target in readme} >= pages - {"index.md"}


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [no anchor](page.md#nope)\n")
    assert _links(page) == ["#title", "missing.md", "page.md#nope"]
    assert "title" in _anchors(page) and "nope" not in _anchors(page)


@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_yaml_blocks_parse_and_agent_files_load(document: Path, tmp_path: Path) -> None:
    for line, code in blocks(document, "yaml"):
        data = yaml.safe_load(code)
        assert isinstance(data, dict), f"{name(document)}:{line}"
        if data.get("schema") == "kb.agent/1":  # a whole agent file: it loads as one
            path = tmp_path / "agents" / str(data["id"]) / "agent.yml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(code, encoding="utf-8")
            assert load_agent_config(path).id == data["id"], f"{name(document)}:{line}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_json_blocks_parse(document: Path) -> None:
    for line, code in blocks(document, "json"):
        try:
            json.loads(code)
        except ValueError as error:
            raise AssertionError(f"{name(document)}:{line}: {error}") from error


def test_blocks_of_a_pending_branch_wait_for_its_merge(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\necho runs\n```\n\n"
        "<!-- pending: some-branch: its examples need that branch -->\n\n"
        "```sh\nagentshape not-yet\n```\n\n<!-- /pending -->\n\n"
        "```sh\necho runs too\n```\n"
    )
    assert blocks(page, "sh") == [(1, "echo runs\n"), (13, "echo runs too\n")]


def test_the_readme_is_at_most_300_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300


@pytest.mark.slow  # builds the whole site
def test_the_site_builds_strict_with_every_public_name(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    reference = (tmp_path / "reference" / "index.html").read_text(encoding="utf-8")
    shown = set(re.findall(r'id="agentshape\.(\w+)"', reference))
    assert shown == set(agentshape.__all__) - {"__version__"}
