"""The drafts' meta-schemas for the config-time checks: a validator each, and their text.

The engine carries every draft's meta-schema; the text is needed only to word a fault from it
(draft-04's ``dependencies``), so that one document is shipped in ``meta_schema_files/``.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

import jsonschema_rs
from pydantic import JsonValue

from agent_core._schema_documents import DRAFT_URIS, DRAFT_VALIDATORS

__all__ = ["meta_documents", "meta_validator"]

_SHIPPED = {4: "draft-04.json"}
"""The meta-schema documents shipped with the package, by draft."""


@cache
def meta_validator(draft: int) -> jsonschema_rs.Validator:
    """Return the validator of a draft's meta-schema (the engine's own copy, never fetched).

    Formats are not checked here: a pattern is checked by the engine when the schema is
    compiled, in the spelling the engine is given.

    Args:
        draft: 4, 6, 7, 2019 or 2020.

    Returns:
        A validator whose ``iter_errors`` gives every fault of a schema against the meta-schema.
    """
    return DRAFT_VALIDATORS[draft]({"$ref": DRAFT_URIS[draft]}, validate_formats=False)


@cache
def meta_documents(draft: int) -> tuple[JsonValue, ...]:
    """Return the meta-schema documents a fault of ``draft`` is worded from (may be none).

    Args:
        draft: 4, 6, 7, 2019 or 2020.

    Returns:
        The shipped meta-schema of the draft, or an empty tuple when its faults need none.
    """
    name = _SHIPPED.get(draft)
    if name is None:
        return ()
    text = files("agent_core").joinpath("meta_schema_files", name).read_text(encoding="utf-8")
    document: JsonValue = json.loads(text)
    return (document,)
