"""An agent's YAML file, read with a version and written back with one schema changed.

The dashboard's editor saves an agent's output (or parameters) schema into the agent's
``agent.yml``. The file is edited with ruamel.yaml's round-trip mode, so its comments, key order
and quoting survive; only the schema's subtree changes, member by member, so comments inside the
parts of the schema that did not change survive too.

``POST /agents``, ``PATCH /agents/{name}`` and ``DELETE /agents/{name}`` create, change and
remove a whole file the same way: a change sets only the keys it names, each where the file
already spells that field (``output.schema`` in a ``kb.agent/1`` file, ``output_schema`` in a
blueprint), so the rest of the file, comments included, is left as it was.

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

from agent_contracts._config_forms import field_spellings

__all__ = [
    "SCHEMA_FIELDS",
    "FileChanged",
    "SchemaField",
    "create_agent_file",
    "delete_agent_file",
    "file_version",
    "patch_agent_file",
    "read_agent_file",
    "restore_agent_file",
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
    """Return ``node``, or a copy of it (no anchors) when another place uses it too."""
    if id(node) in taken:
        node = copy.deepcopy(node)
        for part in _containers(node):
            part.yaml_set_anchor(None)  # the copy is this field's own node, not a second &name
    taken.add(id(node))
    return node


def _merge(old: object, new: JsonValue, taken: set[int]) -> object:
    """Return ``new`` built into ``old``: unchanged members keep their node, order and comments."""
    # A node shared through a YAML alias (or already changed here) is in ``taken``: it is
    # copied before it changes, so the save never edits another place in passing.
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
    """Return every mapping and sequence reachable from ``node``, each once."""
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


def create_agent_file(path: Path, body: Mapping[str, JsonValue]) -> str:
    """Write a new agent file holding ``body`` as YAML, keys in the order given.

    Args:
        path: The new ``<fleet>/<id>/agent.yml``; its folder is made when missing.
        body: The agent's config, in either config form (checked by the caller's fleet load).

    Returns:
        The file's text.

    Raises:
        FileExistsError: The file exists already.
        OSError: The folder or file cannot be written.
    """
    out = io.StringIO()
    _yaml().dump(dict(body), out)
    text = out.getvalue()
    with _lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as file:
            file.write(text)
    return text


def patch_agent_file(
    path: Path, changes: Mapping[str, JsonValue], version: str | None
) -> tuple[str, bytes]:
    """Set the keys of ``changes`` in an agent file, keeping the rest of it as it is.

    A key is written where the file already spells that field, else at the spelling of the
    file's form; a ``null`` value removes the field (and a section it leaves empty).

    Args:
        path: The agent's ``agent.yml``.
        changes: Blueprint-form keys and their new values.
        version: The version the change was made against; ``None`` changes the file as it is.

    Returns:
        The file's new text, and its bytes before the change (to restore it).

    Raises:
        FileChanged: The file is no longer ``version``.
        ValueError: The file is not a YAML mapping ruamel.yaml can round-trip.
        OSError: The file cannot be read or written.
    """
    with _lock:
        data = path.read_bytes()
        now = file_version(data)
        if version is not None and now != version:
            raise FileChanged(path, now)
        handler = _yaml()
        try:
            root = handler.load(data.decode("utf-8"))
        except (YAMLError, UnicodeDecodeError) as error:
            raise ValueError(f"{path} is not YAML ruamel.yaml can keep: {error}") from error
        if not isinstance(root, CommentedMap):
            raise ValueError(f"{path} does not hold a YAML mapping")
        for key, value in changes.items():
            _set(root, _key_spelling(root, key), value)
        out = io.StringIO()
        handler.dump(root, out)
        text = out.getvalue()
        _replace(path, text.encode("utf-8"))
        return text, data


def restore_agent_file(path: Path, data: bytes | None) -> None:
    """Put an agent file back as it was before a change; ``None`` removes a created one.

    Raises:
        OSError: The file cannot be written or removed.
    """
    with _lock:
        if data is not None:
            _replace(path, data)
            return
        path.unlink(missing_ok=True)
        _remove_empty(path.parent)


def delete_agent_file(path: Path, version: str | None) -> None:
    """Remove an agent file, and its folder when nothing else is in it.

    Args:
        path: The agent's ``agent.yml``.
        version: The version the deletion was decided on; ``None`` removes it as it is.

    Raises:
        FileChanged: The file is no longer ``version``.
        OSError: The file cannot be read or removed.
    """
    with _lock:
        if version is not None:
            now = file_version(path.read_bytes())
            if now != version:
                raise FileChanged(path, now)
        path.unlink()
        _remove_empty(path.parent)


def _remove_empty(folder: Path) -> None:
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def _key_spelling(root: CommentedMap, key: str) -> tuple[str, ...]:
    spellings = field_spellings(key)
    for spelling in spellings:
        node: object = root
        for part in spelling:
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is not None:
            return spelling
    file_form = any(part in root for part in _FILE_FORM_KEYS)
    return spellings[-1] if file_form else spellings[0]


def _set(root: CommentedMap, spelling: tuple[str, ...], value: JsonValue) -> None:
    """Set (or, for ``None``, remove) the node at ``spelling``, making sections on the way."""
    parents = [root]
    for part in spelling[:-1]:
        child = parents[-1].get(part)
        if not isinstance(child, CommentedMap):
            if value is None:
                return
            child = CommentedMap()
            parents[-1][part] = child
        parents.append(child)
    last = spelling[-1]
    if value is None:
        parents[-1].pop(last, None)
        # A section the removal left empty goes too (``output: {}`` would read as a choice).
        for depth in range(len(parents) - 1, 0, -1):
            if parents[depth]:
                break
            del parents[depth - 1][spelling[depth - 1]]
        return
    if last not in parents[-1]:
        parents[-1][last] = value
        return
    # A node this field shares with another (an anchor and its alias) is copied, not changed.
    elsewhere = {id(node) for node in _containers(root, skip=(parents[-1], last))}
    parents[-1][last] = _merge(parents[-1][last], value, elsewhere)


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
