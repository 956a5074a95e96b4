"""An agent's YAML file, read with a version and written back with one schema changed.

The dashboard's editor saves an agent's output (or parameters) schema into the agent's
``agent.yml``. The file is edited with ruamel.yaml's round-trip mode, so its comments, key order
and quoting survive; only the schema's subtree changes, member by member, so comments inside the
parts of the schema that did not change survive too.

A file's *version* is the SHA-256 of its bytes. The editor sends back the version it loaded; when
the file on disk no longer has it (someone edited it meanwhile), the save is refused with
:class:`FileChanged` instead of overwriting their edit.
"""

from __future__ import annotations

import copy
import hashlib
import io
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import JsonValue
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

__all__ = [
    "SCHEMA_FIELDS",
    "FileChanged",
    "SchemaField",
    "file_version",
    "read_agent_file",
    "write_schema",
]

SchemaField = Literal["output_schema", "parameters_schema", "default_output_schema"]
"""The schema fields of an agent config the editor can change."""

SCHEMA_FIELDS: dict[SchemaField, tuple[tuple[str, ...], ...]] = {
    "output_schema": (("output", "schema"), ("output_schema",)),
    "parameters_schema": (("parameters_schema",),),
    "default_output_schema": (("default_output_schema",),),
}
"""Where each field may be written in a file, the file form's spelling first."""

_FILE_FORM_KEYS = ("schema", "llm", "context", "limits", "output")
_lock = threading.Lock()
_Node = TypeVar("_Node", CommentedMap, CommentedSeq)


class FileChanged(Exception):
    """The file on disk is not the version the editor loaded.

    Attributes:
        path: The file.
        version: Its version now.
    """

    def __init__(self, path: Path, version: str) -> None:
        super().__init__(f"{path} changed on disk since it was loaded")
        self.path = path
        self.version = version


def file_version(data: bytes) -> str:
    """Return the version of a file's content (``sha256:`` and the hex digest)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read_agent_file(path: Path) -> tuple[str, str]:
    """Return an agent file's text and version.

    Raises:
        OSError: The file cannot be read.
        UnicodeDecodeError: It is not UTF-8.
    """
    data = path.read_bytes()
    return data.decode("utf-8"), file_version(data)


def _yaml() -> YAML:
    handler = YAML()  # round-trip
    handler.preserve_quotes = True
    handler.width = 4096  # never re-wrap a long line
    return handler


def _same_scalar(old: object, new: object) -> bool:
    return isinstance(old, bool) == isinstance(new, bool) and old == new


def _unshared(node: _Node, taken: set[int]) -> _Node:
    """Return ``node``, or a copy of it (no anchors) when another place uses it too.

    ``taken`` holds the nodes used elsewhere in the file and those this save has already
    changed; the returned node is added to it.
    """
    if id(node) in taken:
        node = copy.deepcopy(node)
        for part in _containers(node):
            part.yaml_set_anchor(None)  # the copy is this field's own node, not a second &name
    taken.add(id(node))
    return node


def _merge(old: object, new: JsonValue, taken: set[int]) -> object:
    """Return ``new`` built into ``old``: unchanged members keep their node, order and comments.

    A node in ``taken`` (shared with another field through a YAML alias, or already changed by
    this merge) is copied before it is changed, so the save never edits another place in place.
    """
    if isinstance(old, CommentedMap) and isinstance(new, dict):
        old = _unshared(old, taken)
        for key in [key for key in old if key not in new]:
            del old[key]
        for key, value in new.items():
            old[key] = _merge(old[key], value, taken) if key in old else value
        return old
    if isinstance(old, CommentedSeq) and isinstance(new, list):
        old = _unshared(old, taken)
        del old[len(new) :]
        for index, value in enumerate(new):
            if index < len(old):
                old[index] = _merge(old[index], value, taken)
            else:
                old.append(value)
        return old
    if not isinstance(new, dict | list) and _same_scalar(old, new):
        return old
    return new


def _containers(
    node: object, skip: tuple[object, object] | None = None
) -> list[CommentedMap | CommentedSeq]:
    """Return every mapping and sequence reachable from ``node``, each once.

    Args:
        node: Where to start.
        skip: A ``(mapping, key)`` slot not to follow.
    """
    found: dict[int, CommentedMap | CommentedSeq] = {}
    todo = [node]
    while todo:
        item = todo.pop()
        if not isinstance(item, CommentedMap | CommentedSeq) or id(item) in found:
            continue
        found[id(item)] = item
        if isinstance(item, CommentedMap):
            todo += [
                value
                for key, value in item.items()
                if skip is None or item is not skip[0] or key != skip[1]
            ]
        else:
            todo += list(item)
    return list(found.values())


def _spelling(root: Mapping[str, object], field: SchemaField) -> tuple[str, ...]:
    spellings = SCHEMA_FIELDS[field]
    for spelling in spellings:
        node: object = root
        for key in spelling:
            node = node.get(key) if isinstance(node, Mapping) else None
        if node is not None:
            return spelling
    file_form = any(key in root for key in _FILE_FORM_KEYS)
    return spellings[0] if file_form or len(spellings) == 1 else spellings[-1]


def write_schema(path: Path, field: SchemaField, schema: JsonValue, version: str) -> str:
    """Write ``schema`` as the agent's ``field`` in its file, if the file is still ``version``.

    Args:
        path: The agent's ``agent.yml``.
        field: Which schema.
        schema: The new schema (already checked by the caller).
        version: The version the editor loaded.

    Returns:
        The file's new text (its version is :func:`file_version` of it).

    Raises:
        FileChanged: The file is no longer ``version``.
        ValueError: The file is not a YAML mapping ruamel.yaml can round-trip.
        OSError: The file cannot be read or written.
    """
    with _lock:
        data = path.read_bytes()
        now = file_version(data)
        if now != version:
            raise FileChanged(path, now)
        handler = _yaml()
        try:
            root = handler.load(data.decode("utf-8"))
        except YAMLError as error:
            raise ValueError(f"{path} is not YAML ruamel.yaml can keep: {error}") from error
        if not isinstance(root, CommentedMap):
            raise ValueError(f"{path} does not hold a YAML mapping")
        spelling = _spelling(root, field)
        parent = root
        for key in spelling[:-1]:
            child = parent.get(key)
            if not isinstance(child, CommentedMap):
                child = CommentedMap()
                parent[key] = child
            parent = child
        last = spelling[-1]
        if last in parent:
            # Nodes the rest of the file also uses (through an anchor and its aliases) are
            # copied before they change, so saving one field never changes another.
            elsewhere = {id(node) for node in _containers(root, skip=(parent, last))}
            parent[last] = _merge(parent[last], schema, elsewhere)
        else:
            parent[last] = schema
        out = io.StringIO()
        handler.dump(root, out)
        text = out.getvalue()
        _replace(path, text.encode("utf-8"))
        return text


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file beside it, then a rename)."""
    mode = path.stat().st_mode & 0o777
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
