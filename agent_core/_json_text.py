r"""JSON and text at the edges of the process: one bounded reader, writers that never raise.

Text that is legal JSON but not encodable UTF-8 (a lone surrogate such as ``"\ud800"``) is kept
as data, escaped by every writer (:func:`dump_json`, :func:`encodable`), and refused where a user
gives it. :func:`parse_json` reads JSON from outside the process: too deep nesting, huge integers,
``NaN``/``Infinity`` and invalid JSON each raise one
:class:`~agent_contracts._errors.ConfigFileError` naming the source. :func:`check_depth` applies the
same nesting bound to data read another way (YAML).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import TypeVar, cast

import jsonschema_rs
import pydantic_core
from pydantic import JsonValue

from agent_contracts._errors import ConfigFileError

__all__ = [
    "MAX_JSON_DEPTH",
    "JsonDepthError",
    "check_depth",
    "dump_json",
    "encodable",
    "encodable_data",
    "json_body",
    "parse_json",
    "read_checked_json",
    "unencodable",
    "value_problem",
]

_Data = TypeVar("_Data")

MAX_JSON_DEPTH = 200
"""Deepest nesting of arrays and objects read from outside the process; deeper documents could
exhaust the stack of recursive code, so they are refused where they are read."""


class JsonDepthError(ValueError):
    """A JSON value nests deeper than :data:`MAX_JSON_DEPTH` (raised by :func:`check_depth`)."""


def encodable(text: str) -> str:
    r"""Return ``text`` with every lone surrogate written as its ``\uXXXX`` escape.

    Applied to JSON text, the escape is JSON's own, so it reads back to the same value.

    Args:
        text: Any text.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def encodable_data(value: _Data) -> _Data:
    """Return plain data with :func:`encodable` applied to every string (keys too).

    A lone surrogate in a request body would make the SDK's UTF-8 encoding raise. Data that
    needs no change is returned as is.

    Args:
        value: Plain data (dicts, lists, strings, numbers, booleans, None).
    """
    if isinstance(value, str):
        return cast(_Data, encodable(value))
    if isinstance(value, list):
        items = [encodable_data(item) for item in value]
        changed = any(new is not old for new, old in zip(items, value, strict=True))
        return cast(_Data, items) if changed else value
    if isinstance(value, dict):
        pairs = [(encodable_data(k), encodable_data(v)) for k, v in value.items()]
        changed = any(
            nk is not k or nv is not v
            for (nk, nv), (k, v) in zip(pairs, value.items(), strict=True)
        )
        return cast(_Data, dict(pairs)) if changed else value
    return value


def json_body(value: object, *, finite: bool = False) -> bytes:
    r"""Return plain data as the UTF-8 JSON body of an HTTP request, lone surrogates escaped.

    The bytes are what the SDKs' own encoder writes (compact separators, non-ASCII as is).

    Args:
        value: Plain data (dicts, lists, strings, numbers, booleans, None).
        finite: The caller knows every float in ``value`` is finite (a body whose only float
            it checked): the written text is then not searched for ``NaN`` and ``Infinity``.

    Raises:
        TypeError: ``value`` holds an object no JSON serialiser knows.
        ValueError: ``value`` holds NaN or an infinite number (JSON cannot express them).
    """
    try:
        data = pydantic_core.to_json(value, fallback=_not_json, inf_nan_mode="constants")
    except ValueError:  # a lone surrogate or an unknown object: the exact way says which
        pass
    else:
        if finite or (b"NaN" not in data and b"Infinity" not in data):
            return data
    try:  # NaN/Infinity as a number is refused here; inside a string it is just text
        return _compact(value).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate somewhere: escape it where it is
        return _compact(encodable_data(value)).encode("utf-8")


def _not_json(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def unencodable(text: str) -> str | None:
    """Say where ``text`` holds a character UTF-8 cannot encode, or return ``None``.

    Undecodable bytes are named as the byte: ``byte 0xe9 at character 4``.

    Args:
        text: Text given by a user (a command-line argument, a task).
    """
    for index, character in enumerate(text):
        if "\ud800" <= character <= "\udfff":
            byte = ord(character) - 0xDC00
            shown = f"byte 0x{byte:02x}" if 0x80 <= byte <= 0xFF else "a lone surrogate"
            return f"{shown} at character {index + 1}"
    return None


def _finite(value: object) -> object:
    """Return ``value`` with every NaN or infinite float replaced by ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_finite(item) for item in value]
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    return value


def dump_json(
    value: object, *, indent: int | None = None, compact: bool = False, sort_keys: bool = False
) -> str:
    r"""Return ``value`` as JSON text that is valid JSON and always encodes as UTF-8.

    Non-ASCII text is written as is; a lone surrogate as its ``\uXXXX`` escape; a NaN or
    infinite number (which JSON cannot express) as ``null``.

    Args:
        value: The JSON value (plain data: dicts, lists, strings, numbers, booleans, None).
        indent: Indent nested values by this many spaces (one line when ``None``).
        compact: Leave out the spaces after ``,`` and ``:``.
        sort_keys: Write object keys in sorted order.

    Raises:
        TypeError: ``value`` holds something that is not JSON data.
    """
    separators = (",", ":") if compact else None
    try:
        text = json.dumps(
            value,
            ensure_ascii=False,
            allow_nan=False,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )
    except ValueError:
        text = json.dumps(
            _finite(value),
            ensure_ascii=False,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )
    return encodable(text)


def check_depth(value: object, *, limit: int = MAX_JSON_DEPTH) -> None:
    """Check that ``value`` nests arrays and objects at most ``limit`` deep, without recursing.

    Args:
        value: Plain data (lists, dicts and scalars).
        limit: The deepest nesting allowed.

    Raises:
        JsonDepthError: It nests deeper.
    """
    problem = _problem(value, limit, numbers=False)
    if problem is not None:
        raise JsonDepthError(problem.removeprefix("it "))


def value_problem(value: object, *, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Say why parsed data cannot be used as JSON, or return ``None`` when it can.

    Finds nesting past ``limit`` and ``NaN``/``Infinity`` in data parsed by someone else.

    Args:
        value: Plain data (lists, dicts and scalars).
        limit: The deepest nesting allowed.
    """
    return _problem(value, limit, numbers=True)


_OVERFLOW_SCREEN: jsonschema_rs.Validator | None = None


def read_checked_json(text: str) -> tuple[JsonValue] | None:
    """Parse JSON text that :func:`value_problem` would find nothing wrong with, without a walk.

    Pydantic's parser refuses ``NaN``/``Infinity`` and, by its recursion limit, too deep
    nesting; a screen for long exponents and digit runs rules out numbers too large for a float.

    Args:
        text: The JSON text.

    Returns:
        ``(value,)``; or ``None`` for text it cannot vouch for (not JSON, too deep, a non-JSON
        number, an escaped lone surrogate, a long exponent), to be read the exact way, which
        names the problem.
    """
    global _OVERFLOW_SCREEN
    if _OVERFLOW_SCREEN is None:
        screen = {"pattern": "[0-9][eE][+]?[0-9]{3}|[0-9]{300}"}
        _OVERFLOW_SCREEN = jsonschema_rs.validator_for(screen)
    if _OVERFLOW_SCREEN.is_valid(text):
        return None
    try:
        wrapped = pydantic_core.from_json(f"[{text}]", allow_inf_nan=False)
    except ValueError:
        return None
    return (wrapped[0],) if len(wrapped) == 1 else None


def _problem(value: object, limit: int, *, numbers: bool) -> str | None:
    """Walk ``value`` without recursing: nesting past ``limit``, and (``numbers``) NaN/Infinity."""
    if _clean(value, 0, limit, numbers):
        return None
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if numbers and isinstance(item, float) and not math.isfinite(item):
            return f"it holds {item!r}, which is not a JSON number"
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = list(item)
        else:
            continue
        if depth + 1 > limit:
            return f"it nests deeper than {limit} levels"
        stack.extend((child, depth + 1) for child in children)
    return None


def _clean(value: object, depth: int, limit: int, numbers: bool) -> bool:
    """Tell whether ``value`` (at ``depth``) certainly has no problem :func:`_problem` finds."""
    cls = value.__class__
    if cls is dict:
        children: Iterable[object] = cast("dict[object, object]", value).values()
    elif cls is list:
        children = cast("list[object]", value)
    elif cls is float:
        return not numbers or math.isfinite(cast(float, value))
    else:
        return cls is str or cls is int or cls is bool or value is None
    if depth >= limit:
        return False
    for child in children:
        kind = child.__class__
        if kind is str or kind is int or kind is bool or child is None:
            continue
        if not _clean(child, depth + 1, limit, numbers):
            return False
    return True


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:20]}{'...' if len(text) > 20 else ''} is too large")
    return number


def parse_json(text: str | bytes, *, source: str, line: int | None = None) -> JsonValue:
    """Read JSON given from outside the process, within bounds, or raise one clear error.

    Args:
        text: The JSON text (bytes must be UTF-8).
        source: Where it came from, for the error (a file, ``--param x``, ``task line 3``).
        line: The line of ``source`` the text starts on, when it is one line of a file.

    Returns:
        The value.

    Raises:
        ConfigFileError: The text is not valid JSON (line and column given), not UTF-8, nests
            deeper than :data:`MAX_JSON_DEPTH`, holds ``NaN``/``Infinity`` or a number too large
            to read (an integer past 4,300 digits, a float past the largest double).
    """
    try:
        value: JsonValue = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
        check_depth(value)
    except json.JSONDecodeError as exc:
        if line is not None and exc.lineno == 1:  # one line of a file: the file's line number
            where = f"column {exc.colno}"
        else:
            line = None if line is None else line + exc.lineno - 1
            where = f"line {exc.lineno}, column {exc.colno}"
        message = f"not valid JSON: {exc.msg} ({where})"
        raise ConfigFileError(message, source=source, line=line) from None
    except UnicodeDecodeError as exc:
        raise ConfigFileError(
            f"not UTF-8 text (byte {exc.start} cannot be decoded)", source=source, line=line
        ) from None
    except (RecursionError, JsonDepthError):
        raise ConfigFileError(
            f"not usable JSON: it nests deeper than {MAX_JSON_DEPTH} levels",
            source=source,
            line=line,
        ) from None
    except ValueError as exc:  # an integer past the digit limit, NaN, a float overflow
        message = str(exc).split(";")[0]
        raise ConfigFileError(f"not usable JSON: {message}", source=source, line=line) from None
    return value
