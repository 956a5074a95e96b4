r"""Recover the JSON value a model wrote inside a free-text reply, and never invent one.

``extract_json`` finds *candidates* in the reply, ranks them, and returns the best one that the
caller accepts; ``extract_json_detailed`` also says how it was found and which repairs it needed.

Where candidates come from, in rank order:

1. **The whole reply** (``whole_reply``). The stripped reply parsed as one value, first as strict
   JSON, then with the repairs below. Any JSON value counts here, scalars included, and when it
   parses nothing else is looked at: an inner object of a reply that is itself one JSON value is
   part of that value, not an answer.
2. **Delimited blocks** (``fenced_block``, ``tagged_block``). Markdown code fences of ``````` or
   ``~~~`` with any info string (a closing fence may share the value's last line; an unterminated
   final fence runs to the end of the reply), and the answer tags ``<json>``, ``<output>``,
   ``<answer>``, ``<result>``, ``<response>``, ``<final_answer>``, ``<final>``, ``<data>``. A block
   whose whole content is one value is a candidate; a scalar counts only in a tag or in a fence
   tagged ``json``/``jsonc``/``json5`` or untagged (``true`` in a ```` ```bash ```` fence is code).
   Objects and arrays embedded in a block's prose rank with the block.
3. **Embedded values** (``embedded``). Objects and arrays that start at ``{`` or ``[`` in prose,
   and JSON-encoded strings that start ``"{`` or ``"[``. A bare scalar in prose ("the answer is
   42") is never taken: prose is full of numbers and words, and nothing marks one as the answer.

Among candidates of the same rank the **last** wins (a model states its final answer last). A
candidate that lies inside another one (a tag inside a JSON string) is dropped.

Selection. With a ``schema`` (validated by :func:`agent_core.compiled_schema.compile_schema`: its
draft from ``$schema``, formats asserted, ``$ref`` to registered documents only) or an
``is_valid`` callable, the best-ranked candidate that is valid wins, and an object that echoes the
schema back (equal to it, or a ``properties`` map of subschemas naming the schema's own properties
beside ``type``/``$schema``/``required``) is never an answer. Without either, the best-ranked
candidate wins, except that an embedded value in prose must look like JSON: an object with at least
one member, or an array holding a string, object or array (``[1]`` and ``[ ]`` in prose are
footnotes and checkboxes far more often than answers).

Repairs, each applied only where the text has exactly one reading: trailing commas; single-quoted
and typographic (“ ” ‘ ’) strings; Python ``True``/``False``/``None``; ``//``, ``/* */`` and ``#``
comments; unquoted identifier keys; raw control characters and unknown escapes (``\d``) inside
strings, kept as written; a JSON string holding JSON (``"{\"a\": 1}"``), decoded once; and
closing brackets missing at the very end of the reply or block, only after a complete string,
literal or bracket (a number at the very end may have been cut, so it is not closed). Never
repaired: a reply cut inside a string, key or literal or after ``,``/``:``, missing or doubled
commas, mismatched brackets, ``NaN``/``Infinity``, unquoted string values, nesting deeper than
256. Such a reply raises :class:`NoJSONFoundError` whose message says why.

``strict_json_only=True`` follows seed 001 ("fail if any non-JSON text present"): the stripped
reply must be exactly one RFC 8259 JSON document, so no fences, no prose, no repairs and no
decoding of a JSON string; with a schema it must also be valid.

Scanning is linear. A parse that breaks after it has read a ``"key"``, a ``key:`` or an item
(``{"status": done, "files": ["a"]}``) resumes only after the brackets it had open are balanced
again (double-quoted strings skipped whole), so nothing nested in a broken value, before or after
the break, is returned as if it were the answer (a stray closing bracket does split a value, and
its pieces are read as they stand). Braces that never looked like JSON (``{name}``, a lone
`` `{` ``) are stepped over where they break. A value cut off by the end of the reply ends the
scan. Blocks of one kind never overlap. Input that is pathological rather than prose is refused
outright: nesting deeper than :data:`MAX_DEPTH`, or more than 20,000 fences, tags and places where
an object or array could start. The lenient parser itself is :mod:`agent_core.lenient_json`.

To get every validation error of the best candidate (say, for a re-prompt) when none is valid,
take the first of :func:`find_json_candidates` and validate it yourself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Final

from pydantic import JsonValue

from agent_contracts.errors import NoJSONFoundError
from agent_core.compiled_schema import compile_schema
from agent_core.extract_sites import (
    ExtractionResult,
    ExtractionStrategy,
    _Candidate,
    _collect,
    _Diagnostics,
)
from agent_core.lenient_json import (
    MAX_DEPTH,
    STRICT_DECODER,
    decode_inner,
    depth_ok,
)

__all__ = [
    "DECODED_REPAIR",
    "MAX_DEPTH",
    "ExtractionResult",
    "ExtractionStrategy",
    "extract_json",
    "extract_json_detailed",
    "find_json_candidates",
]

DECODED_REPAIR: Final = "decoded a JSON string holding JSON"
"""The repair named when a JSON string holding JSON is read as the JSON it holds."""


_REFUSAL_RE: Final = re.compile(
    r"\b(?:I\s+(?:can[’']?t|cannot|can\s+not|won[’']t|will\s+not|am\s+(?:unable|not\s+able|sorry))"
    r"|I[’']m\s+(?:unable|not\s+able|sorry)|Sorry,|As\s+an\s+AI)\b",
    re.I,
)


def _alternatives(candidate: _Candidate) -> Iterator[ExtractionResult]:
    """Yield the readings of a candidate to try, best first."""
    result = candidate.result
    if isinstance(result.value, str):
        decoded = decode_inner(result.value)
        if decoded is not None:
            yield replace(
                result, value=decoded, repairs=tuple(sorted({*result.repairs, DECODED_REPAIR}))
            )
    if candidate.scalar_ok or isinstance(result.value, (dict, list)):
        yield result


def _looks_like_json(value: JsonValue) -> bool:
    if isinstance(value, dict):
        return bool(value)
    if isinstance(value, list):
        return any(isinstance(item, (str, dict, list)) for item in value)
    return False


def _is_schema_echo(value: JsonValue, schema: Mapping[str, JsonValue]) -> bool:
    """Whether ``value`` is the schema (or a look-alike of it) written back as the answer."""
    if not isinstance(value, dict):
        return False
    if value == dict(schema):
        return True
    props = value.get("properties")
    schema_props = schema.get("properties")
    if not isinstance(props, dict) or not props or not isinstance(schema_props, Mapping):
        return False
    if "properties" in schema_props or not any(k in value for k in ("type", "$schema", "required")):
        return False
    return set(props) <= set(schema_props) and all(isinstance(v, dict) for v in props.values())


def _schema_check(schema: Mapping[str, JsonValue] | bool) -> Callable[[JsonValue], str | None]:
    """Compile ``schema`` into a function returning ``None`` for a valid value, else why not.

    The schema is compiled by :func:`agent_core.compiled_schema.compile_schema`, so it is read and
    checked exactly as everywhere else in agentshape; "why not" is the first of its issues.

    Raises:
        SchemaReferenceError: A ``$ref`` in the schema does not resolve (only registered
            documents do; nothing is fetched).
        InvalidSchemaError: The schema is not a valid JSON Schema.
    """
    if isinstance(schema, bool):
        return lambda _value: None if schema else "the schema is false, so no value is valid"
    compiled = compile_schema(schema)

    def check(value: JsonValue) -> str | None:
        if compiled.is_valid(value):
            return None
        try:
            issues = compiled.issues(value)
        except (ValueError, TypeError, OverflowError) as exc:
            return f"$: cannot be validated ({exc})"
        return str(issues[0]) if issues else "$: not valid under the schema"

    return check


def _no_json_message(text: str, diagnostics: _Diagnostics) -> str:
    if not text.strip():
        return "the reply is empty"
    if diagnostics.hopeless:
        return f"{diagnostics.hopeless}; it is refused rather than scanned further"
    if diagnostics.truncated is not None:
        failure = diagnostics.truncated
        return f"the reply looks cut off: {failure.reason}; an incomplete value is never guessed at"
    if diagnostics.filtered:
        sample = json.dumps(diagnostics.filtered[0])[:40]
        return (
            f"the reply holds only bracketed prose such as {sample}, "
            "which is not taken as JSON without a schema"
        )
    if _REFUSAL_RE.search(text[:4000]):
        return "the reply looks like a refusal and holds no JSON value"
    if diagnostics.broken is not None:
        failure = diagnostics.broken
        return (
            f"no complete JSON value in the reply: the text at offset {failure.pos} "
            f"({text[failure.pos : failure.pos + 20]!r}) breaks it: {failure.reason}"
        )
    return (
        "no JSON object or array in the reply "
        "(a number or word inside prose is not taken as the answer)"
    )


def find_json_candidates(text: str, *, strict_json_only: bool = False) -> list[ExtractionResult]:
    """Return every reading of a JSON value in ``text`` that extraction would consider, best first.

    ``extract_json(text, is_valid=f)`` returns the first of these, schema echoes aside, for which
    ``f`` is true; a caller can use the list to report why the best one is not valid. A JSON string
    holding JSON is listed decoded, then as the string where a scalar counts.

    Args:
        text: The model's reply.
        strict_json_only: Consider only the whole reply as strict JSON (see the module docstring).

    Returns:
        The candidates, best first; empty when the reply holds none.
    """
    if strict_json_only:
        try:
            return [_strict_whole(text)]
        except NoJSONFoundError:
            return []
    candidates, _ = _collect(text)
    return [reading for candidate in candidates for reading in _alternatives(candidate)]


def _strict_whole(text: str) -> ExtractionResult:
    stripped = text.strip()
    if not stripped:
        raise NoJSONFoundError("the reply is empty", text=text)
    try:
        value = STRICT_DECODER.decode(stripped)
    except RecursionError:
        raise NoJSONFoundError(
            f"strict_json_only: the reply nests deeper than {MAX_DEPTH}", text=text
        ) from None
    except ValueError as exc:
        raise NoJSONFoundError(
            f"strict_json_only: the reply is not exactly one JSON document ({exc})", text=text
        ) from None
    if not depth_ok(value):
        raise NoJSONFoundError(
            f"strict_json_only: the reply nests deeper than {MAX_DEPTH}", text=text
        )
    start = len(text) - len(text.lstrip())
    return ExtractionResult(value, "whole_reply", (), start, start + len(stripped))


def extract_json_detailed(
    text: str,
    schema: Mapping[str, JsonValue] | bool | None = None,
    *,
    strict_json_only: bool = False,
    is_valid: Callable[[JsonValue], bool] | None = None,
) -> ExtractionResult:
    """Return the JSON value the reply holds, with where it was found and the repairs it needed.

    The rules are in the module docstring: candidates are ranked whole reply, then delimited
    blocks, then values embedded in prose, the last of a rank first; with a schema or ``is_valid``
    the best valid candidate that is not an echo of the schema wins.

    Args:
        text: The model's reply.
        schema: A JSON Schema the value must satisfy (validated offline with formats asserted), or
            ``True``/``False``; ``None`` for no schema.
        strict_json_only: The stripped reply must be exactly one strict JSON document.
        is_valid: The caller's own test of a value; used instead of validating against ``schema``
            (the schema then only serves to recognise an echo of it). Its exceptions propagate.

    Returns:
        The chosen value and how it was found.

    Raises:
        NoJSONFoundError: No complete, acceptable JSON value is in the reply; the message says why
            (empty reply, cut off inside a string, a refusal, no candidate valid, ...).
        InvalidSchemaError: ``schema`` is not a valid JSON Schema.
        SchemaReferenceError: A ``$ref`` in ``schema`` does not resolve (only registered
            documents do; nothing is fetched).
    """
    check: Callable[[JsonValue], str | None] | None = None
    if is_valid is not None:
        test = is_valid

        def check(value: JsonValue) -> str | None:
            return None if test(value) else "$: rejected by is_valid"

    elif schema is not None:
        check = _schema_check(schema)
    echo_of = schema if isinstance(schema, Mapping) else None
    if strict_json_only:
        result = _strict_whole(text)
        if echo_of is not None and _is_schema_echo(result.value, echo_of):
            raise NoJSONFoundError(
                "strict_json_only: the reply repeats the schema back instead of answering",
                text=text,
            )
        error = check(result.value) if check is not None else None
        if error is not None:
            raise NoJSONFoundError(
                f"strict_json_only: the reply is JSON but not valid: {error}", text=text
            )
        return result
    candidates, diagnostics = _collect(text)
    tried, echoes, first_error = 0, 0, ""
    for candidate in candidates:
        for reading in _alternatives(candidate):
            if check is None:
                if candidate.rank == 2 and not _looks_like_json(reading.value):
                    diagnostics.filtered.append(reading.value)
                    continue
                return reading
            if echo_of is not None and _is_schema_echo(reading.value, echo_of):
                echoes += 1
                continue
            tried += 1
            error = check(reading.value)
            if error is None:
                return reading
            first_error = first_error or error
    if tried:
        raise NoJSONFoundError(
            f"the reply holds {tried} JSON value{'s' if tried > 1 else ''} but none is valid; "
            f"the best one fails with {first_error}",
            text=text,
        )
    if echoes:
        raise NoJSONFoundError(
            "the reply only repeats the schema back; it holds no answer", text=text
        )
    raise NoJSONFoundError(_no_json_message(text, diagnostics), text=text)


def extract_json(
    text: str,
    schema: Mapping[str, JsonValue] | bool | None = None,
    *,
    strict_json_only: bool = False,
    is_valid: Callable[[JsonValue], bool] | None = None,
) -> JsonValue:
    """Return the JSON value a model's free-text reply holds.

    Same rules and arguments as :func:`extract_json_detailed`, returning only the value.

    Args:
        text: The model's reply.
        schema: A JSON Schema the value must satisfy, ``True``/``False``, or ``None``.
        strict_json_only: The stripped reply must be exactly one strict JSON document.
        is_valid: The caller's own test of a value, used instead of the schema.

    Returns:
        The chosen JSON value.

    Raises:
        NoJSONFoundError: No complete, acceptable JSON value is in the reply; the message says why.
        InvalidSchemaError: ``schema`` is not a valid JSON Schema.
        SchemaReferenceError: A ``$ref`` in ``schema`` does not resolve (only registered
            documents do; nothing is fetched).
    """
    return extract_json_detailed(
        text, schema, strict_json_only=strict_json_only, is_valid=is_valid
    ).value
