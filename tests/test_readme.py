"""Every ```python example in the README and in each docs page runs as written, in order,
sharing one namespace per document (a later example may use names an earlier one defined)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_blocks import DOCUMENTS, ROOT, blocks, name

README = ROOT / "README.md"


def _examples() -> list[tuple[int, str]]:
    return blocks(README, "python")


def test_readme_and_docs_have_python_examples() -> None:
    assert len(_examples()) >= 1
    assert sum(len(blocks(document, "python")) for document in DOCUMENTS) >= 12


@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_python_examples_run(
    document: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    for line, code in blocks(document, "python"):
        # dont_inherit: run as a user's script runs, without this module's __future__ imports
        # (string annotations would hide a class a Pydantic model refers to).
        exec(compile(code, f"{name(document)}:{line}", "exec", dont_inherit=True), namespace)
