"""The Python examples of the README and of each docs page type-check under ``mypy --strict`` as a
user's program would.

A document's examples are joined in order into one module (they share names, as
``test_readme.py`` runs them) and checked by the installed mypy from an empty directory, with no
project config, so only what the installed packages declare (their ``py.typed`` markers, typed
result fields, the ``Agent`` type variable's default) is seen: in the one run that checks
``examples/`` too (tests/strict_mypy.py).
"""

from __future__ import annotations

from tests.strict_mypy import DOCS_SUFFIX, StrictMypy


def test_readme_and_docs_examples_pass_mypy_strict(strict_mypy: StrictMypy) -> None:
    programs = [program for program in strict_mypy.programs if program.name.endswith(DOCS_SUFFIX)]
    assert len(programs) >= 5
    assert strict_mypy.problems(programs) == ""
