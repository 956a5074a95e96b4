"""The named schema registry: reusable output schemas kept by name in a SQLite file.

Each schema is stored as canonical JSON with a description, its hash (the ``schema_hash`` runs
log) and its timestamps, after its meta-schema check. Every operation opens its own short
connection; writes take the write lock up front (``BEGIN IMMEDIATE``) and wait up to ``timeout``
seconds, so concurrent processes never leave the file half-written. Reading a registry that does
not exist finds no schemas and creates nothing.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import re
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from pydantic import AwareDatetime, BaseModel, ConfigDict, JsonValue, ValidationError

from agent_contracts._config import suggest_key
from agent_contracts._errors import ConfigError, SchemaNotFoundError, SchemaRegistryError
from agent_contracts._runs import JsonSchema, SchemaSource
from agent_core._compiled_schema import compile_schema
from agent_core._json_text import unencodable
from agent_core._schema_checks import ensure_output_schema
from agent_core._schema_documents import canonical_json, schema_hash

__all__ = [
    "DEFAULT_REGISTRY_PATH",
    "SCHEMA_NAME_PATTERN",
    "NamedSchema",
    "ResolvedSchema",
    "SchemaRegistry",
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
        ``name``, unchanged.

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

    Args:
        description: The description, if any.
        path: The registry file, named in the error.
        name: The schema's name, named in the error.

    Raises:
        SchemaRegistryError: It is not UTF-8 text.
    """
    problem = unencodable(description) if description is not None else None
    if problem:
        raise SchemaRegistryError(
            f"the description is not UTF-8 text ({problem})", path=path, name=name
        )


def _entry(row: tuple[object, ...], path: str) -> NamedSchema:
    """Return a registry row as an entry."""
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


DEFAULT_REGISTRY_PATH = Path(".agentshape/schemas.db")
"""Where :class:`SchemaRegistry` keeps its schemas when given no path (relative to the working
directory at construction)."""


_TABLE = "output_schemas"
_CREATE = f"""
CREATE TABLE IF NOT EXISTS {_TABLE} (
    name TEXT PRIMARY KEY NOT NULL,
    description TEXT,
    schema TEXT NOT NULL,
    hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    modified_at TEXT NOT NULL
)
"""
logger = logging.getLogger(__name__)

_COLUMNS = "name, description, hash, created_at, modified_at"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _rollback(connection: sqlite3.Connection) -> None:
    """Undo an open transaction; a failure to do so is left to closing the connection."""
    if connection.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")


class SchemaRegistry:
    """Named output schemas kept in a SQLite file.

    Args:
        path: The SQLite file; created (with its directory) on the first :meth:`add`. Relative
            paths are taken from the working directory at construction.
        timeout: Seconds to wait for another process's write lock before giving up.
    """

    def __init__(self, path: Path | str = DEFAULT_REGISTRY_PATH, *, timeout: float = 10.0) -> None:
        self.path = Path(path).absolute()
        """The SQLite file."""
        self.timeout = timeout
        """Seconds a write waits for another process's lock."""

    # -- storage -----------------------------------------------------------------------------

    def _error(
        self, action: str, error: sqlite3.Error, name: str | None = None
    ) -> SchemaRegistryError:
        text = str(error)
        if isinstance(error, sqlite3.OperationalError) and "locked" in text:
            text = f"another process held the registry locked for more than {self.timeout:g} s"
        elif isinstance(error, sqlite3.DatabaseError) and (
            "not a database" in text or "malformed" in text or "no such column" in text
        ):
            text = (
                f"{text}: the file is corrupt or not an agentshape schema registry; "
                "move it aside to start a new one"
            )
        return SchemaRegistryError(
            f"cannot {action} the schema registry: {text}", path=str(self.path), name=name
        )

    @contextmanager
    def _connect(
        self, action: str, *, write: bool, name: str | None = None
    ) -> Iterator[sqlite3.Connection | None]:
        """Open the file for one operation; yield ``None`` for a read of a missing registry."""
        if self.path.is_dir():
            raise SchemaRegistryError(
                "the registry path is a directory, not a file", path=str(self.path), name=name
            )
        if not write and not self.path.exists():
            yield None
            return
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        except (OSError, sqlite3.Error) as error:
            reason = error if isinstance(error, sqlite3.Error) else sqlite3.Error(str(error))
            raise self._error(action, reason, name) from error
        try:
            if write:
                connection.execute("BEGIN IMMEDIATE")
                connection.execute(_CREATE)
            elif not self._has_table(connection):
                yield None
                return
            yield connection
            if write:
                connection.execute("COMMIT")
        except sqlite3.Error as error:
            _rollback(connection)
            raise self._error(action, error, name) from error
        except BaseException:
            _rollback(connection)
            raise
        finally:
            connection.close()

    @staticmethod
    def _has_table(connection: sqlite3.Connection) -> bool:
        row = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_TABLE,)
        ).fetchone()
        return row is not None

    def _row(self, name: str, columns: str) -> tuple[object, ...]:
        """Return ``columns`` of the schema named ``name``."""
        with self._connect("read", write=False, name=name) as connection:
            row = None
            if connection is not None:
                row = connection.execute(
                    f"SELECT {columns} FROM {_TABLE} WHERE name = ?", (name,)
                ).fetchone()
        if row is None:
            raise self._not_found(name, self.names())
        return tuple(row)

    def _not_found(self, name: str, known: builtins.list[str]) -> SchemaNotFoundError:
        return SchemaNotFoundError(
            f"no schema named {name!r} in {self.path}",
            name=name,
            known=known,
            suggestion=suggest_key(name, known) if known else None,
            path=str(self.path),
        )

    # -- the API -----------------------------------------------------------------------------

    def add(
        self,
        name: str,
        schema: JsonSchema | Mapping[str, JsonValue],
        *,
        description: str | None = None,
        replace: bool = False,
    ) -> NamedSchema:
        """Register a schema under a name.

        The schema is checked against its draft's meta-schema first; an invalid one is not
        stored. Replacing keeps the entry's ``created_at`` and moves ``modified_at``.

        Args:
            name: The name callers will use (see :data:`SCHEMA_NAME_PATTERN`).
            schema: The JSON Schema.
            description: What the schema is for.
            replace: Overwrite a schema already registered under ``name``.

        Returns:
            The stored entry.

        Raises:
            SchemaRegistryError: The name is not allowed, is taken and ``replace`` is false, or
                the registry file cannot be written.
            InvalidSchemaError: The schema is not valid under its draft.
            SchemaReferenceError: The schema has a ``$ref`` that does not resolve offline.
        """
        check_schema_name(name, path=str(self.path))
        check_description(description, path=str(self.path), name=name)
        value: JsonSchema = schema if isinstance(schema, bool) else dict(schema)
        compile_schema(value, source=f"schema {name!r}")
        # The checks every run makes, so that a stored schema is one a run can use.
        ensure_output_schema(value, source=f"schema {name!r}")
        text = canonical_json(value)
        digest = schema_hash(value)
        now = _now()
        with self._connect("write to", write=True, name=name) as connection:
            assert connection is not None
            row = connection.execute(
                f"SELECT created_at FROM {_TABLE} WHERE name = ?", (name,)
            ).fetchone()
            if row is not None and not replace:
                raise SchemaRegistryError(
                    f"a schema named {name!r} is already registered; remove it first or add it "
                    "again with replace",
                    path=str(self.path),
                    name=name,
                )
            created = str(row[0]) if row is not None else now
            connection.execute(
                f"INSERT OR REPLACE INTO {_TABLE} "
                "(name, description, schema, hash, created_at, modified_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (name, description, text, digest, created, now),
            )
        return _entry((name, description, digest, created, now), str(self.path))

    def get(self, name: str) -> JsonSchema:
        """Return the schema registered under ``name``.

        Args:
            name: The registered name.

        Returns:
            The schema, as stored (canonical key order).

        Raises:
            SchemaNotFoundError: No schema has that name; the error suggests the nearest
                registered name and lists them all.
            SchemaRegistryError: The registry file cannot be read, or the entry is damaged.
        """
        row = self._row(name, "schema")
        try:
            loaded = json.loads(str(row[0]))
        except ValueError as error:
            raise SchemaRegistryError(
                f"the stored schema {name!r} is not valid JSON: {error}",
                path=str(self.path),
                name=name,
            ) from error
        if not isinstance(loaded, dict | bool):
            raise SchemaRegistryError(
                f"the stored schema {name!r} is not a JSON object or boolean",
                path=str(self.path),
                name=name,
            )
        return loaded

    def info(self, name: str) -> NamedSchema:
        """Return the entry (description, hash, timestamps) of the schema named ``name``.

        Raises:
            SchemaNotFoundError: No schema has that name.
            SchemaRegistryError: The registry file cannot be read.
        """
        return _entry(self._row(name, _COLUMNS), str(self.path))

    def list(self) -> builtins.list[NamedSchema]:
        """Return every registered schema's entry, sorted by name.

        A damaged row (a timestamp that is not a time) is left out with a logged warning that
        names it, so one bad row never hides the others.

        Raises:
            SchemaRegistryError: The registry file cannot be read.
        """
        with self._connect("read", write=False) as connection:
            if connection is None:
                return []
            rows = connection.execute(f"SELECT {_COLUMNS} FROM {_TABLE} ORDER BY name").fetchall()
        entries = []
        for row in rows:
            try:
                entries.append(_entry(row, str(self.path)))
            except SchemaRegistryError as exc:
                logger.warning("%s", exc.format_message())
        return entries

    def names(self) -> builtins.list[str]:
        """Return every registered name, sorted.

        Raises:
            SchemaRegistryError: The registry file cannot be read.
        """
        return [entry.name for entry in self.list()]

    def __contains__(self, name: object) -> bool:
        """Whether a schema is registered under ``name``."""
        if not isinstance(name, str):
            return False
        with self._connect("read", write=False, name=name) as connection:
            if connection is None:
                return False
            row = connection.execute(f"SELECT 1 FROM {_TABLE} WHERE name = ?", (name,)).fetchone()
        return row is not None

    def remove(self, name: str) -> None:
        """Delete the schema registered under ``name``.

        Raises:
            SchemaNotFoundError: No schema has that name.
            SchemaRegistryError: The registry file cannot be written.
        """
        removed = 0
        if self.path.exists():
            with self._connect("write to", write=True, name=name) as connection:
                assert connection is not None
                removed = connection.execute(
                    f"DELETE FROM {_TABLE} WHERE name = ?", (name,)
                ).rowcount
        if not removed:
            raise self._not_found(name, self.names())

    def resolve_output_schema(
        self,
        *,
        inline: JsonSchema | None = None,
        name: str | None = None,
        agent_own: JsonSchema | None = None,
        agent_default: JsonSchema | None = None,
        agent_id: str | None = None,
    ) -> ResolvedSchema | None:
        """Pick a run's output schema: inline, else named, else the agent's default.

        The agent's own ``output_schema`` is its contract: it is used when the caller gives
        none, and a caller who gives one is refused. The chosen schema is not compiled here; the
        run does that (:func:`agent_core._contract.resolve_contract` follows the same order).
        When both ``inline`` and ``name`` are given, the inline schema wins and the name is not
        looked up.

        Args:
            inline: The caller's inline schema.
            name: The caller's registered schema name.
            agent_own: The agent's fixed ``output_schema``.
            agent_default: The agent's ``default_output_schema``.
            agent_id: The agent's id, named in the error.

        Returns:
            The schema and its source, or ``None`` for a run with no schema (free text).

        Raises:
            ConfigError: The caller gave a schema to an agent that has its own.
            SchemaNotFoundError: ``name`` is needed and not registered.
            SchemaRegistryError: The registry file cannot be read.
        """
        if agent_own is not None:
            if inline is not None or name is not None:
                who = f"agent {agent_id!r}" if agent_id else "the agent"
                given = "an inline output schema" if inline is not None else f"schema {name!r}"
                raise ConfigError(
                    f"{who} has its own output contract, which a caller cannot override; this "
                    f"run gave {given}. Drop it, or give the agent a default_output_schema "
                    "instead of an output_schema if callers should choose."
                )
            return ResolvedSchema(agent_own, "agent")
        if inline is not None:
            return ResolvedSchema(inline, "inline")
        if name is not None:
            return ResolvedSchema(self.get(name), "named")
        if agent_default is not None:
            return ResolvedSchema(agent_default, "default")
        return None
