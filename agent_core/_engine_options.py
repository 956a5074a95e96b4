"""How the validation engine is told to read a draft: format assertion, keywords a draft lacks.

Every validator for a designer's schema takes its options from :func:`engine_options`, so a
schema means the same everywhere. ``format`` is asserted under draft-04 to 2019-09, and under
2020-12 only with the format-assertion vocabulary; ``lenient=True`` never asserts.
``dependencies`` is ignored under 2019-09 and 2020-12, which replaced it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

import jsonschema_rs

from agent_core._schema_documents import _EXTRA_FORMATS

__all__ = ["EngineOptions", "engine_options", "format_assertion"]


class EngineOptions(TypedDict):
    """Keyword arguments for a ``jsonschema_rs`` validator class or ``validator_map_for``."""

    validate_formats: bool | None
    formats: dict[str, Callable[[str], bool]] | None
    keywords: dict[str, type[jsonschema_rs.KeywordValidator]] | None


class _NotAKeyword:
    """A custom engine keyword that accepts everything: a word the draft does not define."""

    def __init__(self, parent_schema: object, value: object, schema_path: object) -> None:
        del parent_schema, value, schema_path

    def validate(self, instance: object) -> None:
        """Accept every instance."""
        del instance


_LATER_DRAFT_IGNORED: dict[str, type[jsonschema_rs.KeywordValidator]] = {
    "dependencies": _NotAKeyword
}


def format_assertion(draft: int, *, lenient: bool) -> bool | None:
    """Return the engine's ``validate_formats`` for a draft.

    Args:
        draft: 4, 6, 7, 2019 or 2020.
        lenient: Whether formats are never asserted.

    Returns:
        False when lenient; True under draft-04 to 2019-09; ``None`` under 2020-12 (the
        specification's choice: an annotation unless the meta-schema asks for assertion).
    """
    if lenient:
        return False
    return True if draft < 2020 else None


def engine_options(draft: int, *, lenient: bool) -> EngineOptions:
    """Return the validator options that make the engine read a schema under ``draft``.

    Args:
        draft: 4, 6, 7, 2019 or 2020.
        lenient: Whether formats are never asserted.

    Returns:
        ``validate_formats``, extra ``formats`` (``uuid`` under draft-07 and earlier) and the
        custom ``keywords`` that neutralize words the draft does not define.
    """
    return EngineOptions(
        validate_formats=format_assertion(draft, lenient=lenient),
        formats=dict(_EXTRA_FORMATS) if draft < 2019 else None,
        keywords=dict(_LATER_DRAFT_IGNORED) if draft >= 2019 else None,
    )
