"""Secrets never leave the process: one redaction for every writer (log, stdout, files, errors).

Two kinds of secret are replaced with :data:`REDACTED`:

- **the configured keys, exactly**: every API key or token a provider is built with is
  remembered (:func:`remember_secret`), whatever its shape (``gsk_...``, ``hf_...``, 32 hex
  digits, a JWT, a plain word), and each of its occurrences is replaced;
- **secrets by shape and by name**: ``sk-...`` (OpenAI, Anthropic), ``gsk_...`` (Groq),
  ``hf_...`` (Hugging Face), ``AIza...`` (Google), ``AKIA...`` (AWS), ``xox?-...`` (Slack), GitHub
  tokens, JWTs, 32 hexadecimal digits standing alone, ``Bearer <token>``, ``Authorization: Basic
  <credential>``, the password of ``https://user:password@host``, and the value of anything
  named like a key, token, password, secret or cookie (``OPENAI_API_KEY=...``, ``token=...``,
  ``"password": "..."``). A 32-digit hex value under a key named ``...id`` or ``...hash`` (a run
  id, a schema hash) is an identifier and is kept.

A text is read once by one screen (a single regular expression of every rule and remembered
secret); only a text the screen matches goes through the rules one by one, and a text with
nothing to redact is returned as it was.

JSON text is redacted as text (:func:`redact_json_bytes`), which keeps it valid JSON: a secret
inside a JSON string is replaced inside it, a value under a secret key is replaced by the string
``"[REDACTED]"``, and a secret key holding an object or array sends the document through the
structural :func:`redact` instead.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator

import jsonschema_rs
from pydantic import JsonValue

__all__ = [
    "REDACTED",
    "redact",
    "redact_json_bytes",
    "redact_json_lines",
    "redact_json_text",
    "redact_text",
    "remember_secret",
]

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""

_MARK = REDACTED.encode()
_QUOTED_MARK = b'"' + _MARK + b'"'
_MIN_SECRET = 8
"""Configured values shorter than this (``ollama``, ``none``, ``test``) are placeholders, not
secrets; replacing every occurrence of such a word would garble the output."""

_lock = threading.Lock()
_known: tuple[bytes, ...] = ()
_screen: jsonschema_rs.Validator | None = None


def remember_secret(value: str | None) -> None:
    """Remember a configured key or token, so each of its occurrences is redacted from now on.

    Providers call this with the key they are built with. Values shorter than 8 characters
    (placeholders such as ``ollama``) and ``None`` are ignored.

    Args:
        value: The secret, exactly as configured.
    """
    global _known, _screen
    if value is None or len(value.strip()) < _MIN_SECRET:
        return
    forms = {value.strip().encode("utf-8", "surrogatepass").lower()}
    forms.add(json.dumps(value.strip())[1:-1].encode().lower())  # as it appears in JSON text
    with _lock:
        _known = tuple(sorted(set(_known) | forms, key=len, reverse=True))
        _screen = None


# The rules. Each reads the lowered text; its group "s" is the secret. ----------------------------

_VALUE = rb"[^\s\"'\\,;&<>()\[\]{}]+"
_TOKEN = re.compile(_VALUE)
_SCALAR = re.compile(rb"[a-z0-9.+-]+")
_SEP = rb"(?P<q1>\\?[\"'])?[ \t]*[:=][ \t]*(?P<q2>\\?[\"'])?"

_SHAPES: tuple[tuple[bytes, re.Pattern[bytes]], ...] = tuple(
    (trigger, re.compile(pattern))
    for trigger, pattern in (
        (b"sk-", rb"(?P<s>sk-[a-z0-9_-]{16,})"),
        (b"gsk_", rb"(?P<s>gsk_[a-z0-9]{20,})"),
        (b"hf_", rb"(?P<s>hf_[a-z0-9]{20,})"),
        (b"aiza", rb"(?P<s>aiza[0-9a-z_-]{30,})"),
        (b"akia", rb"(?P<s>akia[0-9a-z]{16})"),
        (b"xox", rb"(?P<s>xox[abprs]-[a-z0-9-]{10,})"),
        (b"_", rb"(?P<s>(?:gh[pousr]|github_pat)_[a-z0-9_]{20,})"),
        (b"eyj", rb"(?P<s>eyj[a-z0-9_-]{8,}\.[a-z0-9_-]{8,}\.[a-z0-9_-]*)"),
        (b"bearer", rb"bearer[ \t]+(?!\[redacted\])(?P<s>[a-z0-9._~+/=-]{6,})"),
        (b"@", rb"://[^\s/@:\"'\\]+:(?P<s>[^\s/@\"'\\]+)@"),
        (
            b"authorization",
            rb"authorization" + _SEP + rb"(?:(?:basic|bearer|token|digest)[ \t]+)?"
            rb"(?!\[redacted\])(?P<s>[a-z0-9._~+/=-]{4,})",
        ),
    )
)
"""Secrets by shape: (a literal every match holds, the pattern)."""

_NAMES: tuple[bytes, ...] = (b"api_key", b"api-key", b"apikey", b"token", b"password", b"passwd")
_NAMES += (b"secret", b"cookie", b"credential", b"private_key", b"authorization")
_NAMED = tuple((name, re.compile(re.escape(name) + _SEP)) for name in _NAMES)
"""Assignments to anything named like a secret: the name and its separator; the value follows."""

_ID_KEY = re.compile(rb"(?:id|hash|digest|sha|etag|uuid)\\?\"[ \t]*:[ \t]*\\?\"\Z")
_ID_ENDS = (b'id":"', b'hash":"')
"""How a JSON key :data:`_ID_KEY` matches most often ends, looked for first."""
_HEX_32 = b"x" * 32
_MORE_HEX = re.compile(rb"x*")


def _hex_mask() -> bytes:
    table = bytearray()
    for byte in range(256):
        char = chr(byte)
        if char in "0123456789abcdefABCDEF":
            table.append(0x78)  # x
        elif char.isascii() and (char.isalnum() or char == "_"):
            table.append(0x61)  # a
        else:
            table.append(0x2E)  # .
    return bytes(table)


_HEX_MASK = _hex_mask()
"""Hex digits read as ``x``, other word characters as ``a``, anything else as ``.``."""


class _NeedsStructure(Exception):
    """A secret key holds an object or an array: only the structural redaction can replace it."""


def _is_word(low: bytes, at: int) -> bool:
    return 0 <= at < len(low) and (low[at : at + 1].isalnum() or low[at] == 0x5F)


def _shape_spans(low: bytes) -> Iterator[tuple[int, int, bytes]]:
    for trigger, pattern in _SHAPES:
        if trigger in low:
            for match in pattern.finditer(low):
                start, end = match.span("s")
                if match.start() == start and _is_word(low, start - 1):
                    continue  # "task-..." is not "sk-..."
                yield start, end, _MARK


def _string_end(low: bytes, start: int) -> int:
    """Return where the JSON string whose content starts at ``start`` ends (its quote)."""
    at = start
    while True:
        at = low.find(b'"', at)
        if at < 0:
            return len(low)
        backslashes = 0
        while low[at - 1 - backslashes] == 0x5C:
            backslashes += 1
        if backslashes % 2 == 0:
            return at
        at += 1


def _named_spans(low: bytes, as_json: bool) -> Iterator[tuple[int, int, bytes]]:
    for name, pattern in _NAMED:
        if name not in low:
            continue
        for match in pattern.finditer(low):
            end = match.end()
            q1, q2 = match.group("q1"), match.group("q2")
            if low.startswith(b"[redacted]", end):
                continue
            if as_json and q1 == b'"':  # a key of the document itself
                if q2 == b'"':
                    yield end, _string_end(low, end), _MARK
                elif q2 is None:
                    if low.startswith((b"{", b"["), end):
                        raise _NeedsStructure
                    value = _SCALAR.match(low, end, end + 64)
                    if value and value.group() != b"null":
                        yield end, value.end(), _QUOTED_MARK
            elif name == b"authorization":
                continue  # in text, the shape rule reads its scheme (Basic, Bearer) first
            elif q2 is not None and (len(q2) == 2 or not as_json):  # a quoted value
                close = low.find(q2, end, end + 512)
                if close > end:
                    yield end, close, _MARK
            elif q2 is None:
                value = _TOKEN.match(low, end, end + 512)
                if value:
                    yield end, value.end(), _MARK


def _hex_spans(data: bytes, low: bytes) -> Iterator[tuple[int, int, bytes]]:
    mask = data.translate(_HEX_MASK)
    at = mask.find(_HEX_32)
    while at >= 0:
        end = at + 32
        if mask[end : end + 1] == b"x":  # a longer run: find its end
            more = _MORE_HEX.match(mask, end)
            end = more.end() if more else end
        alone = end - at == 32 and mask[at - 1 : at] != b"a" and mask[end : end + 1] != b"a"
        if alone and not low.endswith(_ID_ENDS, 0, at):  # not a run id, not a schema hash
            digits = low[at:end].translate(None, b"abcdef")
            mixed = 0 < len(digits) < 32  # a key has letters and digits; 32 digits: a number
            if mixed and not _ID_KEY.search(low, max(0, at - 24), at):
                yield at, end, _MARK
        at = mask.find(_HEX_32, end)


def _known_spans(low: bytes) -> Iterator[tuple[int, int, bytes]]:
    for secret in _known:
        at = low.find(secret)
        while at >= 0:
            yield at, at + len(secret), _MARK
            at = low.find(secret, at + len(secret))


def _splice(data: bytes, spans: list[tuple[int, int, bytes]]) -> bytes:
    spans.sort()
    parts: list[bytes] = []
    done = 0
    for start, end, mark in spans:
        if end <= done or start == end:
            continue
        start = max(start, done)
        parts += (data[done:start], mark)
        done = end
    parts.append(data[done:])
    return b"".join(parts)


def _escaped(literal: bytes) -> str:
    """Return a regular expression matching ``literal`` (lowered UTF-8) exactly."""
    text = literal.decode("utf-8", "replace")
    return "".join(c if c.isalnum() or not c.isascii() else f"\\x{ord(c):02x}" for c in text)


def _screen_validator() -> jsonschema_rs.Validator:
    """Return the screen: one regular expression matching wherever any rule could match."""
    global _screen
    with _lock:
        if _screen is None:
            sources = [pattern.pattern.decode() for _, pattern in (*_SHAPES, *_NAMED)]
            sources = [re.sub(r"\(\?P<\w+>", "(?:", source) for source in sources]
            sources = [source.replace(r"(?!\[redacted\])", "") for source in sources]
            sources += [_escaped(secret) for secret in _known]
            _screen = jsonschema_rs.validator_for({"pattern": "|".join(sources)})
        return _screen


def _redact_bytes(data: bytes, *, as_json: bool) -> bytes:
    spans = _spans(data, as_json=as_json)
    return _splice(data, spans) if spans else data


def _spans(data: bytes, *, as_json: bool) -> list[tuple[int, int, bytes]]:
    low = data.lower()
    spans = list(_hex_spans(data, low))
    if _screen_validator().is_valid(low.decode("utf-8", "replace")):
        spans += [*_known_spans(low), *_shape_spans(low), *_named_spans(low, as_json)]
    return spans


def redact_text(text: str) -> str:
    """Return ``text`` with every secret replaced by :data:`REDACTED`.

    Args:
        text: Any text: an error message, a model's output, a line about to be printed.

    Returns:
        The redacted text; the same object when there was nothing to redact.
    """
    data = text.encode("utf-8", "surrogatepass")
    redacted = _redact_bytes(data, as_json=False)
    return text if redacted is data else redacted.decode("utf-8", "surrogatepass")


def redact_json_bytes(data: bytes) -> bytes:
    """Return a JSON document (UTF-8 bytes) with every secret redacted; it stays valid JSON.

    Args:
        data: A JSON document, such as a serialised event or result.

    Returns:
        The redacted document; the same object when there was nothing to redact.
    """
    try:
        return _redact_bytes(data, as_json=True)
    except _NeedsStructure:
        value = redact(json.loads(data))
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )


def redact_json_lines(data: bytes) -> bytes:
    """Return JSON lines (compact documents, each ending in a newline) with every secret redacted.

    The lines are read together, in one pass, and come out as :func:`redact_json_bytes` makes
    each of them; when a secret would reach past its line's end, or a line needs the structural
    redaction, the lines are redacted one by one instead.

    Args:
        data: The lines, such as an analytics write's events.

    Returns:
        The redacted lines; the same object when there was nothing to redact.
    """
    try:
        spans = _spans(data, as_json=True)
    except _NeedsStructure:
        spans = None
    if spans is not None and all(data.find(b"\n", start, end) < 0 for start, end, _ in spans):
        return _splice(data, spans) if spans else data
    lines = data.split(b"\n")
    tail = lines.pop()  # empty when the data ends with its newline
    out = b"".join(redact_json_bytes(line) + b"\n" for line in lines)
    return out + redact_json_bytes(tail) if tail else out


def redact_json_text(text: str) -> str:
    """Return a JSON document (text) with every secret redacted; it stays valid JSON.

    Args:
        text: A JSON document, such as a result about to be printed or written.

    Returns:
        The redacted document; the same object when there was nothing to redact.
    """
    data = text.encode("utf-8", "surrogatepass")
    redacted = redact_json_bytes(data)
    return text if redacted is data else redacted.decode("utf-8", "surrogatepass")


_SECRET_KEY = re.compile(
    r"^(?:(?:proxy_)?authorization|x_api_key|api_?key|(?:access|refresh|auth|bearer)_?token"
    r"|token|client_secret|secret|secret_?key|private_?key|password|passwd|cookie|set_cookie"
    r"|credentials?)$"
)
"""Keys (lower-cased, ``-`` read as ``_``) whose values are always redacted whole."""


def redact(value: JsonValue) -> JsonValue:
    """Return a copy of a JSON value with every secret redacted, walking its structure.

    The value of a key named like ``authorization``, ``api_key``, ``x-api-key``, ``*_token``,
    ``password``, ``secret`` or ``cookie`` (any case, ``-`` or ``_``) becomes :data:`REDACTED`
    whatever it holds, and every string (keys included) goes through :func:`redact_text`. Token
    counts such as ``input_tokens`` are left alone.

    Args:
        value: A JSON value, such as an event's ``model_dump(mode="json")``.

    Returns:
        The redacted copy; the input is not changed.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, dict):
        return {
            redact_text(key): (
                REDACTED
                if item is not None and _SECRET_KEY.match(key.strip().lower().replace("-", "_"))
                else redact(item)
            )
            for key, item in value.items()
        }
    return value
