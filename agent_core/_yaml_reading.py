"""Read one YAML document into a node tree and JSON data, within bounds.

The node tree is kept so that an error found in the data maps back to a line. Loaders build no
Python objects and leave timestamps as strings. libyaml's C parser is used when installed; a
document it refuses is read again by the pure-Python parser, whose messages name the line.
Aliases that expand too far, too deep nesting and huge integers are each one
:class:`~agent_contracts._errors.ConfigFileError`.
"""

from __future__ import annotations

import yaml

from agent_contracts._errors import ConfigFileError
from agent_core._json_text import MAX_JSON_DEPTH, JsonDepthError, check_depth

__all__ = ["read_yaml_node"]

_MAX_VALUES = 100_000
_TIMESTAMP = "tag:yaml.org,2002:timestamp"

_Loader = type[yaml.SafeLoader] | type[yaml.CSafeLoader]


class _JsonSafeLoader(yaml.SafeLoader):
    """``SafeLoader`` that leaves timestamps as strings, so every value is JSON data."""


_RESOLVERS = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_JsonSafeLoader.yaml_implicit_resolvers = _RESOLVERS
_FAST: type[yaml.CSafeLoader] | None = None
if getattr(yaml, "__with_libyaml__", False):

    class _JsonCSafeLoader(yaml.CSafeLoader):
        """libyaml's ``CSafeLoader`` that leaves timestamps as strings."""

    _JsonCSafeLoader.yaml_implicit_resolvers = _RESOLVERS
    _FAST = _JsonCSafeLoader


def read_yaml_node(text: str, source: str, *, what: str, mapping: bool) -> tuple[yaml.Node, object]:
    """Compose and construct the single YAML document, keeping its node tree for line numbers.

    Args:
        text: The YAML text.
        source: Where it came from, for every error.
        what: What the document should be, for the error about an empty one.
        mapping: Whether the top level must be a mapping.

    Returns:
        The node tree and the data.

    Raises:
        ConfigFileError: Invalid YAML, no document, a top level that is not a mapping, aliases
            that expand too far, nesting too deep, or a number too large to read.
    """
    if _FAST is not None:
        try:
            return _read_with(_FAST, text, source, what=what, mapping=mapping)
        except ConfigFileError as exc:
            if not exc.message.startswith("invalid YAML"):
                raise  # the same from either parser
        except (yaml.YAMLError, ValueError):
            pass
        # Read again by the pure-Python parser, whose messages name the problem and its line.
    return _read_with(_JsonSafeLoader, text, source, what=what, mapping=mapping)


def _read_with(
    loader_class: _Loader, text: str, source: str, *, what: str, mapping: bool
) -> tuple[yaml.Node, object]:
    try:
        loader = loader_class(text)
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, source) from exc
    try:
        node = loader.get_single_node()
        if node is None:
            if not mapping:
                return yaml.ScalarNode("tag:yaml.org,2002:null", ""), None
            raise ConfigFileError(f"the file is empty; {what}", source=source)
        if mapping and not isinstance(node, yaml.MappingNode):
            kind = "a list" if isinstance(node, yaml.SequenceNode) else "a single value"
            raise ConfigFileError(
                f"the top level must be a mapping of keys, not {kind}",
                source=source,
                line=node.start_mark.line + 1,
            )
        _check_expansion(node, source)
        data = loader.construct_document(node)
        check_depth(data)
    except (RecursionError, JsonDepthError) as exc:
        raise ConfigFileError(
            f"the document nests deeper than {MAX_JSON_DEPTH} levels", source=source
        ) from exc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = ", ".join(part for part in (exc.context, exc.problem) if part) or "unreadable"
        column = f" (column {mark.column + 1})" if mark is not None else ""
        raise ConfigFileError(
            f"invalid YAML: {problem}{column}",
            source=source,
            line=mark.line + 1 if mark is not None else None,
        ) from exc
    except yaml.YAMLError as exc:
        raise ConfigFileError(f"invalid YAML: {exc}", source=source) from exc
    except ValueError as exc:  # an integer past Python's 4,300-digit limit
        message = str(exc).split(";")[0]
        raise ConfigFileError(f"a value cannot be read: {message}", source=source) from exc
    finally:
        loader.dispose()
    return node, data


def _check_expansion(root: yaml.Node, source: str) -> None:
    """Refuse documents whose aliases expand to a huge or endless value."""
    sizes: dict[int, tuple[int, bool]] = {}  # values once expanded; whether an alias is inside
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> tuple[int, bool]:
        key = id(node)
        if key in sizes:
            return sizes[key][0], True  # met again: this is an alias
        if key in open_nodes:
            raise ConfigFileError(
                "an alias refers to a value that contains it; configs cannot be recursive",
                source=source,
                line=node.start_mark.line + 1,
            )
        open_nodes.add(key)
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        parts = [size(child) for child in children]
        total = 1 + sum(count for count, _ in parts)
        aliased = any(alias for _, alias in parts)
        open_nodes.discard(key)
        # A document without aliases is as large as its file (which is capped); only aliases
        # can make a small file expand without bound.
        if total > _MAX_VALUES and aliased:
            raise ConfigFileError(
                f"the document expands to more than {_MAX_VALUES:,} values through its aliases",
                source=source,
                line=node.start_mark.line + 1,
            )
        sizes[key] = (total, aliased)
        return total, aliased

    size(root)


def _reader_error(exc: yaml.reader.ReaderError, text: str, source: str) -> ConfigFileError:
    """Describe a character YAML does not allow, at its line."""
    character = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or " ")
    return ConfigFileError(
        f"invalid YAML: {exc.reason} (character #x{character:04x})",
        source=source,
        line=text.count("\n", 0, exc.position) + 1,
    )
