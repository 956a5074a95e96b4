"""What the named schema registry holds: entries, resolved schemas and the rule for names."""

from __future__ import annotations

import re
from typing import NamedTuple

from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError

from agent_contracts.errors import SchemaRegistryError
from agent_contracts.runs import JsonSchema, SchemaSource
from agent_core.json_text import unencodable

__all__ = [
    "SCHEMA_NAME_PATTERN",
    "NamedSchema",
    "ResolvedSchema",
    "check_description",
    "check_schema_name",
]


SCHEMA_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
"""What a schema name may look like: a letter or digit, then up to 127 letters, digits, ``.``,
``_`` or ``-``."""


class NamedSchema(BaseModel):
    """One registered schema's entry, without the schema itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The name callers use."""
    description: str | None = None
    """What the schema is for, when the author said."""
    hash: str
    """SHA-256 of the schema's canonical JSON, as analytics log it in ``schema_hash``."""
    created_at: AwareDatetime
    """When the name was first registered (UTC)."""
    modified_at: AwareDatetime
    """When the schema or description last changed (UTC)."""


class ResolvedSchema(NamedTuple):
    """The output schema a run uses and where it came from."""

    schema: JsonSchema
    """The JSON Schema."""
    source: SchemaSource
    """``agent``, ``inline``, ``named`` or ``default``."""


def check_schema_name(name: str, *, path: str = "<registry>") -> str:
    """Return ``name`` when it is an allowed schema name.

    Args:
        name: The proposed name.
        path: The registry file, named in the error.

    Returns:
        The name, unchanged.

    Raises:
        SchemaRegistryError: The name does not match :data:`SCHEMA_NAME_PATTERN`.
    """
    if not isinstance(name, str) or SCHEMA_NAME_PATTERN.match(name) is None:
        raise SchemaRegistryError(
            f"{name!r} is not a valid schema name: use 1 to 128 letters, digits, '.', '_' or "
            "'-', starting with a letter or digit",
            path=path,
            name=name if isinstance(name, str) else None,
        )
    return name


def check_description(description: str | None, *, path: str, name: str) -> None:
    """Refuse a description that is not UTF-8 text (bytes that were not, read as surrogates).

    Raises:
        SchemaRegistryError: It is not UTF-8 text.
    """
    problem = unencodable(description) if description is not None else None
    if problem:
        raise SchemaRegistryError(
            f"the description is not UTF-8 text ({problem})", path=path, name=name
        )


def _entry(row: tuple[object, ...], path: str) -> NamedSchema:
    """Return a registry row as an entry.

    Raises:
        SchemaRegistryError: The row is damaged (a timestamp that is not a time...), naming it.
    """
    name, description, digest, created, modified = row
    try:
        return NamedSchema.model_validate(
            {
                "name": name,
                "description": description,
                "hash": digest,
                "created_at": created,
                "modified_at": modified,
            }
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise SchemaRegistryError(
            f"the entry {name!r} is damaged ({field}: {error['msg']}); add it again with "
            "replace, or remove it",
            path=path,
            name=name if isinstance(name, str) else None,
        ) from None
