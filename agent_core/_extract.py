r"""Recover the JSON value a model wrote inside a free-text reply, and never invent one.

``extract_json`` finds candidates in the reply, ranks them and returns the best one the caller
accepts; ``extract_json_detailed`` also says how it was found and which repairs it needed.
Candidates, in rank order: the whole reply (any JSON value; when it parses nothing else is looked
at), delimited blocks (code fences and answer tags such as ``<json>``), and objects or arrays
embedded in prose. A bare scalar in prose ("the answer is 42") is never taken: nothing marks it
as the answer. Within a rank the last candidate wins (a model states its final answer last).

With a ``schema`` or ``is_valid`` the best valid candidate wins, and a schema echoed back is
never an answer. Repairs (trailing commas, single quotes, comments, Python literals, closing
brackets missing at the end...) apply only where the text has exactly one reading; a reply
nothing can be read from raises :class:`NoJSONFoundError` saying why. ``strict_json_only=True``
takes only a reply that is exactly one RFC 8259 document.

Scanning is linear: a parse that breaks resumes only after the brackets it had open are
balanced, so nothing nested in a broken value is returned as the answer.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from pydantic import JsonValue

from agent_contracts._errors import NoJSONFoundError
from agent_core._compiled_schema import compile_schema
from agent_core._lenient_json import (
    MAX_DEPTH,
    STRICT_DECODER,
    HopelessInput,
    LenientParser,
    ParseFailure,
    decode_inner,
    depth_ok,
    parse_block,
    skip_balanced,
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
    """Compile ``schema`` into a function returning ``None`` for a valid value, else why not."""
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

    Args:
        text: The model's reply.
        schema: A JSON Schema the value must satisfy (validated offline with formats asserted), or
            ``True``/``False``; ``None`` for no schema.
        strict_json_only: The stripped reply must be exactly one strict JSON document.
        is_valid: The caller's own test of a value; used instead of validating against ``schema``
            (the schema then only serves to recognise an echo of it). Its exceptions propagate.

    Returns:
        The value found, where it sat in the reply and the repairs it needed.

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


ExtractionStrategy = Literal["whole_reply", "fenced_block", "tagged_block", "embedded"]
"""Where a value was found: the whole reply, a code fence, an answer tag, or inside prose."""


@dataclass(frozen=True)
class ExtractionResult:
    """One JSON value found in a reply, and how it was found.

    Attributes:
        value: The JSON value.
        strategy: Where it was found (see :data:`ExtractionStrategy`).
        repairs: The repairs applied to read it, in a stable order; empty for strict JSON.
        start: Offset in the reply where the value's text starts.
        end: Offset in the reply just past the value's text.
    """

    value: JsonValue
    strategy: ExtractionStrategy
    repairs: tuple[str, ...]
    start: int
    end: int

    @property
    def recovered(self) -> bool:
        """Whether reading the value took more than parsing the whole reply as strict JSON."""
        return self.strategy != "whole_reply" or bool(self.repairs)


_FENCE_OPEN_RE: Final = re.compile(r"^[ \t]*+(`{3,}+|~{3,}+)([^\n]*)$", re.M)


_FENCE_CLOSE_RE: Final = {
    "`": re.compile(r"(?<!`)(`{3,}+)[ \t\r]*+$", re.M),
    "~": re.compile(r"(?<!~)(~{3,}+)[ \t\r]*+$", re.M),
}


_SCALAR_FENCE_LANGS: Final = frozenset({"", "json", "jsonc", "json5"})


_TAG_OPEN_RE: Final = re.compile(
    r"<(json|output|answer|result|response|final_answer|final|data)(?:\s[^<>]*+)?>", re.I
)


_EMBEDDED_START_RE: Final = re.compile(r'[{\[]|"(?=[{\[])')


_MAX_SITES: Final = 20_000


@dataclass
class _Candidate:
    result: ExtractionResult
    rank: int
    scalar_ok: bool


@dataclass
class _Diagnostics:
    """What went wrong while scanning, for the error message."""

    hopeless: str = ""
    truncated: ParseFailure | None = None
    broken: ParseFailure | None = None
    filtered: list[JsonValue] = field(default_factory=list)

    def note(self, failure: ParseFailure, offset: int) -> None:
        shifted = ParseFailure(failure.pos + offset, failure.reason, truncated=failure.truncated)
        if failure.truncated:
            self.truncated = shifted
        elif self.broken is None:
            self.broken = shifted


def _fences(text: str) -> Iterator[tuple[int, int, bool]]:
    """Yield ``(content start, content end, scalar allowed)`` for each code fence."""
    pos = 0
    while (opener := _FENCE_OPEN_RE.search(text, pos)) is not None:
        run, info = opener.group(1), opener.group(2).strip()
        if run[0] == "`" and "`" in info:
            pos = opener.end()
            continue
        lang = info.split()[0].lower() if info else ""
        content = min(opener.end() + 1, len(text))
        closer_re, search = _FENCE_CLOSE_RE[run[0]], content
        while (closer := closer_re.search(text, search)) is not None:
            if len(closer.group(1)) >= len(run):
                break
            search = closer.end()
        if closer is None:
            yield content, len(text), lang in _SCALAR_FENCE_LANGS
            return
        line_start = text.rfind("\n", 0, closer.start()) + 1
        bare = text[line_start : closer.start()].strip() == ""
        stop = max(content, line_start if bare else closer.start())
        yield content, stop, lang in _SCALAR_FENCE_LANGS
        pos = closer.end()


def _tags(text: str) -> Iterator[tuple[int, int]]:
    """Yield ``(content start, content end)`` for each answer tag; tags of one name never nest."""
    resume: dict[str, int] = {}
    for opener in _TAG_OPEN_RE.finditer(text):
        name = opener.group(1).lower()
        if opener.start() < resume.get(name, 0):
            continue
        closer = re.compile(rf"</{name}\s*>", re.I).search(text, opener.end())
        if closer is None:
            resume[name] = len(text) + 1
            continue
        resume[name] = closer.end()
        yield opener.end(), closer.start()


def _embedded(
    text: str,
    skip: list[tuple[int, int]],
    known: tuple[int, ParseFailure] | None,
    diagnostics: _Diagnostics,
    budget: int,
) -> Iterator[tuple[JsonValue, int, int, tuple[str, ...]]]:
    """Yield each object, array or quoted string starting ``"{``/``"["`` found in prose."""
    skip_starts = [start for start, _ in skip]
    pos = 0
    while (match := _EMBEDDED_START_RE.search(text, pos)) is not None:
        start = match.start()
        inside = bisect.bisect_right(skip_starts, start) - 1
        if inside >= 0 and start < skip[inside][1]:
            pos = skip[inside][1]
            continue
        budget -= 1
        if budget < 0:
            raise HopelessInput(
                f"the reply has more than {_MAX_SITES} places where JSON could start"
            )
        parser = LenientParser(text)
        try:
            if known is not None and known[0] == start:
                raise known[1]
            value, stop = parser.value(start)
        except ParseFailure as failure:
            diagnostics.note(failure, 0)
            if failure.truncated:
                return
            if failure.committed:
                pos = skip_balanced(text, failure.scan_from, failure.depth)
            pos = max(pos, failure.pos, start + 1)
            continue
        yield value, start, stop, tuple(sorted(parser.repairs))
        pos = stop


def _collect(text: str) -> tuple[list[_Candidate], _Diagnostics]:
    """Find every candidate in ``text``, nested ones removed, in rank order (best first)."""
    diagnostics = _Diagnostics()
    try:
        return _collect_candidates(text, diagnostics), diagnostics
    except HopelessInput as hopeless:
        diagnostics.hopeless = str(hopeless)
        return [], diagnostics


def _collect_candidates(text: str, diagnostics: _Diagnostics) -> list[_Candidate]:
    known: tuple[int, ParseFailure] | None = None
    try:
        value, start, stop, repairs = parse_block(text, 0)
    except ParseFailure as failure:
        first = len(text) - len(text.lstrip())
        if text[first : first + 1] in ("{", "[") and not failure.trailing:
            known = (first, failure)
            diagnostics.note(failure, 0)
    else:
        whole = ExtractionResult(value, "whole_reply", repairs, start, stop)
        return [_Candidate(whole, 0, True)]
    regions: list[tuple[int, int, ExtractionStrategy, bool]] = [
        (s, e, "fenced_block", ok) for s, e, ok in _fences(text)
    ]
    regions += [(s, e, "tagged_block", True) for s, e in _tags(text)]
    if len(regions) > _MAX_SITES:
        raise HopelessInput(f"the reply has more than {_MAX_SITES} code fences and tags")
    regions.sort(key=lambda region: (region[0], -region[1]))
    found: list[_Candidate] = []
    for region_start, region_stop, strategy, scalar_ok in regions:
        if not text[region_start:region_stop].strip():
            continue
        try:
            value, start, stop, repairs = parse_block(text[region_start:region_stop], region_start)
        except ParseFailure as failure:
            diagnostics.note(failure, region_start)
            continue
        result = ExtractionResult(value, strategy, repairs, start, stop)
        found.append(_Candidate(result, 1, scalar_ok))
    merged: list[tuple[int, int, ExtractionStrategy]] = []
    for region_start, region_stop, strategy, _ in regions:
        if merged and region_start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], region_stop), last[2])
        else:
            merged.append((region_start, region_stop, strategy))
    merged_starts = [region[0] for region in merged]
    spans = sorted((c.result.start, c.result.end) for c in found)
    for value, start, stop, repairs in _embedded(
        text, spans, known, diagnostics, _MAX_SITES - len(regions)
    ):
        if isinstance(value, str) and decode_inner(value) is None:
            continue
        strategy, rank = "embedded", 2
        index = bisect.bisect_right(merged_starts, start) - 1
        if index >= 0 and stop <= merged[index][1]:
            strategy, rank = merged[index][2], 1
        found.append(
            _Candidate(ExtractionResult(value, strategy, repairs, start, stop), rank, False)
        )
    found.sort(key=lambda c: (c.result.start, -c.result.end, c.rank))
    kept: list[_Candidate] = []
    reach = -1
    for candidate in found:
        if candidate.result.end <= reach:
            continue
        kept.append(candidate)
        reach = candidate.result.end
    kept.sort(key=lambda c: (c.rank, -c.result.start))
    return kept
