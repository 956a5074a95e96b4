"""Where JSON may sit in a reply: code fences, answer tags and embedded brackets."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final, Literal

from pydantic import JsonValue

from agent_core.lenient_json import (
    HopelessInput,
    LenientParser,
    ParseFailure,
    decode_inner,
    parse_block,
    skip_balanced,
)

__all__ = ["ExtractionResult", "ExtractionStrategy"]


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
    """Yield each object, array or quoted string starting ``"{``/``"["`` found in prose.

    ``known`` is a failure already met parsing from a start offset, so it is not parsed again;
    after ``budget`` parse attempts the reply is given up on.
    """
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
