"""Values generated from a JSON Schema: :func:`generate_value` (valid) and invalid ones.

The offline test model answers with these; so can anything that needs an example of a contract.
Generation is deterministic for a seeded ``random.Random``, bounded in depth and size, and checked
against the schema with the engine (a value the generator cannot make valid is said to be so by
the engine, not guessed at). Regex patterns are sampled from their own syntax.
"""

from __future__ import annotations

import logging
import math
import random
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Final, TypeAlias

import jsonschema_rs
from pydantic import JsonValue

from agent_contracts._tools import JsonObject
from agent_core._schema_documents import resolve_pointer
from agent_core._schema_merge import merge_schemas

__all__ = ["generate_value", "invalid_value"]

logger = logging.getLogger(__name__)

_MAX_DEPTH = 8
_NODE_BUDGET = 2_000  # past this many values, only what the schema requires is generated
_NODE_LIMIT = 20_000  # past this many, nothing more is generated (the value will be invalid)
_ATTEMPTS = 8
_MAX_TEXT = 100_000  # longest string generated: a huge minLength gets an invalid, short value
_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india")
_FORMATS: dict[str, Callable[[random.Random, int], str]] = {
    "date-time": lambda rng, hint: f"2024-0{1 + hint % 9}-1{rng.randint(0, 9)}T12:30:00Z",
    "date": lambda rng, hint: f"2024-0{1 + hint % 9}-1{rng.randint(0, 9)}",
    "time": lambda rng, hint: f"12:{10 + hint % 50}:00Z",
    "email": lambda rng, hint: f"user{hint or ''}@example.com",
    "uri": lambda rng, hint: f"https://example.com/{rng.choice(_WORDS)}{hint or ''}",
    "uri-reference": lambda rng, hint: f"/{rng.choice(_WORDS)}{hint or ''}",
    "uuid": lambda rng, hint: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
    "hostname": lambda rng, hint: f"{rng.choice(_WORDS)}{hint or ''}.example.com",
    "ipv4": lambda rng, hint: f"192.0.2.{1 + hint % 250}",
    "ipv6": lambda rng, hint: f"2001:db8::{1 + hint % 250:x}",
    "idn-email": lambda rng, hint: f"user{hint or ''}@example.com",
    "idn-hostname": lambda rng, hint: f"{rng.choice(_WORDS)}{hint or ''}.example.com",
    "iri": lambda rng, hint: f"https://example.com/{rng.choice(_WORDS)}{hint or ''}",
    "iri-reference": lambda rng, hint: f"/{rng.choice(_WORDS)}{hint or ''}",
    "json-pointer": lambda rng, hint: f"/{rng.choice(_WORDS)}/{hint}",
    "regex": lambda rng, hint: f"^{rng.choice(_WORDS)}$",
}


def _validator(schema: JsonValue) -> jsonschema_rs.Validator | None:
    """Return an offline validator for ``schema``, or ``None`` when it cannot be built."""
    if not isinstance(schema, dict | bool):
        return None
    try:
        return jsonschema_rs.validator_for(schema, validate_formats=True, offline=True)
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError, TypeError):
        return None  # an unusable schema: generation goes unchecked


def generate_value(schema: JsonValue, *, rng: random.Random | None = None) -> JsonValue:
    """Return a JSON value valid against ``schema`` (best effort; see the module's limits).

    Args:
        schema: A JSON Schema (draft-04 to 2020-12).
        rng: The randomness to use; a fresh ``random.Random(0)`` when ``None``.

    Returns:
        The first generated candidate that validates, else the first candidate.
    """
    rng = rng or random.Random(0)
    validator = _validator(schema)
    first: JsonValue = None
    for attempt in range(_ATTEMPTS):
        candidate = _Generator(schema, random.Random(rng.random()), attempt).value(schema, 0, 0)
        if validator is None or validator.is_valid(candidate):
            return candidate
        if attempt == 0:
            first = candidate
    logger.warning("test model: no generated value validates against the schema; sending one")
    return first


def invalid_value(schema: JsonValue, valid: JsonValue) -> JsonValue:
    """Return a value that breaks ``schema`` (derived from ``valid`` when possible).

    Args:
        schema: The JSON Schema.
        valid: A value that meets it.

    Returns:
        A value the schema rejects.
    """
    candidates: list[JsonValue] = []
    if isinstance(valid, dict) and valid:
        required = schema.get("required") if isinstance(schema, dict) else None
        if isinstance(required, list) and required and required[0] in valid:
            candidates.append({k: v for k, v in valid.items() if k != required[0]})
        key, value = next(iter(valid.items()))
        candidates.append({**valid, key: 12345 if isinstance(value, str) else "wrong type"})
    candidates += [[], "not an object", None, {}]
    validator = _validator(schema)
    for candidate in candidates:
        if validator is None or not validator.is_valid(candidate):
            return candidate
    return candidates[0]  # the schema accepts anything: nothing can be invalid


class _Generator:
    """Walks a schema and builds a value; ``variant`` picks other branches and enum members."""

    def __init__(self, root: JsonValue, rng: random.Random, variant: int) -> None:
        self.root = root
        self.rng = rng
        self.variant = variant
        self.nodes = 0

    def _lavish(self, depth: int) -> bool:
        """Whether optional parts (optional properties, a first array item) are still generated."""
        return depth < _MAX_DEPTH // 2 and self.nodes < _NODE_BUDGET

    def _deep(self, depth: int) -> bool:
        """Whether to end a recursion: prefer ``null`` and branches that need no nesting."""
        return depth >= _MAX_DEPTH or self.nodes >= _NODE_BUDGET

    def value(self, schema: JsonValue, depth: int, hint: int) -> JsonValue:
        if depth > 3 * _MAX_DEPTH or self.nodes > _NODE_LIMIT:  # required recursion: give up
            return None
        self.nodes += 1
        schema = self._resolve(schema, depth)
        if not isinstance(schema, dict):
            return None if schema is False else "value"
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            kind = schema.get("type")
            fitting = [v for v in enum if not isinstance(kind, str) or _has_type(v, kind)] or enum
            pick = self.variant + hint + self.rng.randrange(len(fitting))
            return fitting[pick % len(fitting)]
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                rest = {k: v for k, v in schema.items() if k != key}
                return self.value(_merge(rest, self._pick(branches, depth)), depth, hint)
        kind = self._type(schema, depth)
        if kind == "object":
            return self._object(schema, depth, hint)
        if kind == "array":
            return self._array(schema, depth, hint)
        if kind == "string":
            return self._string(schema, hint)
        if kind in ("integer", "number"):
            return self._number(schema, kind == "integer", hint)
        if kind == "boolean":
            return (self.rng.random() < 0.5) != bool(hint % 2)
        return None

    def _resolve(self, schema: JsonValue, depth: int) -> JsonValue:
        """Inline ``$ref`` (siblings merged over it) and merge ``allOf``."""
        for _ in range(32):
            if not isinstance(schema, dict):
                return schema
            ref = schema.get("$ref")
            if isinstance(ref, str):
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = _merge(_pointer(self.root, ref), rest)
                continue
            parts = schema.get("allOf")
            if isinstance(parts, list):
                merged: JsonValue = {k: v for k, v in schema.items() if k != "allOf"}
                for part in parts:
                    merged = _merge(merged, self._resolve(part, depth))
                schema = merged
                continue
            return schema
        return {}

    def _pick(self, branches: list[JsonValue], depth: int) -> JsonValue:
        if self._deep(depth):  # end recursion with a branch that needs no nesting
            for branch in branches:
                resolved = self._resolve(branch, depth)
                if isinstance(resolved, dict) and resolved.get("type") in ("null", "string"):
                    return resolved
        return branches[self.variant % len(branches)]

    def _type(self, schema: JsonObject, depth: int) -> str:
        kind = schema.get("type")
        if isinstance(kind, list):
            options = [k for k in kind if isinstance(k, str)]
            if "null" in options and (self._deep(depth) or len(options) == 1):
                return "null"
            options = [k for k in options if k != "null"] or ["null"]
            return options[self.variant % len(options)]
        if isinstance(kind, str):
            return kind
        if any(k in schema for k in ("properties", "required", "additionalProperties")):
            return "object"
        if any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems")):
            return "array"
        if any(k in schema for k in ("minimum", "maximum", "multipleOf", "exclusiveMinimum")):
            return "number"
        return "string"

    def _object(self, schema: JsonObject, depth: int, hint: int) -> JsonObject:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        listed = schema.get("required")
        required = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
        extra = schema.get("additionalProperties", True)
        extra_schema: JsonValue = extra if isinstance(extra, dict) else {"type": "string"}
        result: JsonObject = {}
        for key, sub in properties.items():
            if key in required or self._lavish(depth):
                result[key] = self.value(sub, depth + 1, hint)
        for key in required:
            if key not in result:
                result[key] = self.value(extra_schema, depth + 1, hint)
        least = schema.get("minProperties")
        for key, sub in properties.items():
            if isinstance(least, int) and len(result) < least and key not in result:
                result[key] = self.value(sub, depth + 1, hint)
        if isinstance(least, int) and least > _NODE_LIMIT:  # cannot be generated: give up
            least = None
        while isinstance(least, int) and len(result) < least and extra is not False:
            result[f"extra_{len(result)}"] = self.value(extra_schema, depth + 1, hint)
        most = schema.get("maxProperties")
        for key in [k for k in reversed(list(result)) if k not in required]:
            if not isinstance(most, int) or len(result) <= most:
                break
            del result[key]
        return result

    def _array(self, schema: JsonObject, depth: int, hint: int) -> list[JsonValue]:
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        if isinstance(items, list):  # draft-04..2019-09 tuple form
            prefix, items = items, schema.get("additionalItems", {})
        prefix = prefix if isinstance(prefix, list) else []
        least = schema.get("minItems")
        most = schema.get("maxItems")
        count = max(least if isinstance(least, int) else 0, len(prefix), int(self._lavish(depth)))
        if isinstance(most, int):
            count = min(count, most)
        if count > _NODE_LIMIT:  # past what can be generated: an invalid value, not minutes
            count = len(prefix)
        result = []
        for index in range(count):
            sub = prefix[index] if index < len(prefix) else (items if items is not None else {})
            result.append(self.value(sub, depth + 1, hint + index))
        contains = schema.get("contains")
        if contains is not None and (not isinstance(most, int) or len(result) < most):
            result.append(self.value(contains, depth + 1, hint + count))
        return result

    def _string(self, schema: JsonObject, hint: int) -> str:
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            return _FORMATS[fmt](self.rng, hint)
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            sample = _RegexSampler(pattern, self.rng, self.variant).sample()
            if sample is not None:
                return sample
        least = schema.get("minLength")
        least = min(least, _MAX_TEXT) if isinstance(least, int) else 0
        most = schema.get("maxLength")
        most = most if isinstance(most, int) else max(least, 24)
        suffix = f" {hint}" if hint else ""
        words: list[str] = []
        while len(" ".join(words)) < min(max(least, min(most, 12)), 64):  # then "x" pads it
            words.append(self.rng.choice(_WORDS))
        text = (" ".join(words)[: max(0, most - len(suffix))] + suffix)[:most]
        return text + "x" * (least - len(text)) if len(text) < least else text

    def _number(self, schema: JsonObject, integer: bool, hint: int) -> int | float:
        low = _bound(schema, "minimum", "exclusiveMinimum")
        high = _bound(schema, "maximum", "exclusiveMaximum")
        lo = low[0] if low else (high[0] - 100 if high else 0.0)
        hi = high[0] if high else lo + 100
        step = schema.get("multipleOf")
        if not isinstance(step, int | float) or isinstance(step, bool) or step <= 0:
            step = 1 if integer else None
        if step is None:
            share = (0.25 + 0.5 * self.rng.random() + 0.01 * hint) % 1
            value = round(lo + (hi - lo) * share, 2)
            return value if _within(value, low, high) else (lo + hi) / 2
        exact = Decimal(str(step))  # multiples of 0.01 stay exact
        start = math.ceil(Decimal(str(lo)) / exact)
        options = [float((start + k) * exact) for k in range(50)]
        options = [o for o in options if o <= hi and _within(o, low, high)]
        exact_in_float = [o for o in options if (o / step).is_integer()]  # as every validator sees
        options = exact_in_float or options
        if not options:
            return int(lo) if integer else lo
        value = options[(hint + self.rng.randrange(min(len(options), 10))) % len(options)]
        if integer or (isinstance(step, int) and value.is_integer()):
            return round(value)
        return value


def _has_type(value: JsonValue, kind: str) -> bool:
    """Whether ``value`` has the JSON type ``kind``."""
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    python = {"string": str, "object": dict, "array": list, "boolean": bool, "null": type(None)}
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, python.get(kind, object))


def _bound(schema: JsonObject, inclusive: str, exclusive: str) -> tuple[float, bool] | None:
    """Return ``(limit, is_exclusive)`` for a bound in draft-04 or draft-06+ spelling."""
    flag = schema.get(exclusive)
    limit = schema.get(inclusive)
    if isinstance(flag, int | float) and not isinstance(flag, bool):
        return float(flag), True
    if isinstance(limit, int | float) and not isinstance(limit, bool):
        return float(limit), flag is True
    return None


def _within(value: float, low: tuple[float, bool] | None, high: tuple[float, bool] | None) -> bool:
    if low and (value < low[0] or (low[1] and value == low[0])):
        return False
    return not (high and (value > high[0] or (high[1] and value == high[0])))


def _pointer(root: JsonValue, ref: str) -> JsonValue:
    """Resolve a local ``$ref`` (``#``, ``#/definitions/x``...) with the core's pointer rules."""
    if not ref.startswith("#"):
        return {}
    found = resolve_pointer(root, ref[1:])
    return {} if found is None else found


def _merge(base: JsonValue, extra: JsonValue) -> JsonValue:
    """Merge two schemas for generation, as the core merges ``allOf`` where it can.

    Where the core cannot merge, properties and ``required`` unite, bounds tighten and ``extra``
    wins elsewhere: the generator still needs one schema to aim at.
    """
    if not isinstance(base, dict) or not isinstance(extra, dict):
        return extra if isinstance(base, dict) and not base else base
    combined, _ = merge_schemas(base, extra)
    if combined is not None:
        return combined
    merged = dict(base)
    for key, value in extra.items():
        old = merged.get(key)
        if key == "properties" and isinstance(old, dict) and isinstance(value, dict):
            merged[key] = {**old, **value}
        elif key == "required" and isinstance(old, list) and isinstance(value, list):
            merged[key] = list(dict.fromkeys([*old, *value]))
        elif key in ("minimum", "minLength", "minItems") and isinstance(old, int | float):
            merged[key] = max(old, value) if isinstance(value, int | float) else old
        elif key in ("maximum", "maxLength", "maxItems") and isinstance(old, int | float):
            merged[key] = min(old, value) if isinstance(value, int | float) else old
        else:
            merged[key] = value
    return merged


_Maker: TypeAlias = Callable[[], str]

_REGEX_CLASSES: Final = {
    "d": "0123456789",
    "w": "abcxyz_019",
    "s": " ",
    "D": "ab",
    "W": "-.",
    "S": "a",
}


class _Unsupported(Exception):
    """A regex feature the sampler does not generate for."""


_MAX_REPEAT: Final = 1_000
_MAX_SAMPLE: Final = 10_000


class _RegexSampler:
    """Builds a short string matching a simple regex (``None`` when the regex is too fancy)."""

    def __init__(self, pattern: str, rng: random.Random, stretch: int) -> None:
        self.pattern = pattern
        self.rng = rng
        self.stretch = stretch  # later attempts repeat more and take other alternatives
        self.pos = 0

    def sample(self) -> str | None:
        try:
            text = self._alternation()
            if self.pos != len(self.pattern):
                raise _Unsupported(self.pattern)
            return text
        except (_Unsupported, IndexError, ValueError):
            return None

    def _peek(self) -> str:
        return self.pattern[self.pos] if self.pos < len(self.pattern) else ""

    def _alternation(self) -> str:
        options = [self._sequence()]
        while self._peek() == "|":
            self.pos += 1
            options.append(self._sequence())
        return options[self.stretch % len(options)]

    def _sequence(self) -> str:
        out = []
        while self._peek() not in ("", "|", ")"):
            atom = self._atom()
            low, high = self._quantifier()
            count = low + self.stretch if high is None else min(max(low, 1) + self.stretch, high)
            if count > _MAX_REPEAT:  # a{1000000000} would take gigabytes: not sampled
                raise _Unsupported("a repeat count too large to sample")
            out.append("".join(atom() for _ in range(count)))
            if sum(len(part) for part in out) > _MAX_SAMPLE:
                raise _Unsupported("a sample too long")
        return "".join(out)

    def _quantifier(self) -> tuple[int, int | None]:
        char = self._peek()
        if char in ("?", "*", "+"):
            self.pos += 1
            low, high = {"?": (0, 1), "*": (0, None), "+": (1, None)}[char]
        elif char == "{" and self.pattern.find("}", self.pos) > self.pos:
            end = self.pattern.index("}", self.pos)
            body = self.pattern[self.pos + 1 : end]
            first, comma, second = body.partition(",")
            low = int(first)
            high = low if not comma else (int(second) if second else None)
            self.pos = end + 1
        else:
            return 1, 1
        if self._peek() in ("?", "+"):
            self.pos += 1
        return low, high if high is not None else None

    def _atom(self) -> _Maker:
        char = self._peek()
        self.pos += 1
        if char == "(":
            if self._peek() == "?":
                if self.pattern.startswith("?:", self.pos):
                    self.pos += 2
                elif self.pattern.startswith(
                    ("?<", "?P<"), self.pos
                ) and not self.pattern.startswith(("?<=", "?<!"), self.pos):
                    self.pos = self.pattern.index(">", self.pos) + 1
                else:
                    raise _Unsupported("lookaround")
            text = self._alternation()
            if self._peek() != ")":
                raise _Unsupported("unbalanced group")
            self.pos += 1
            return lambda: text
        if char == "[":
            return self._class()
        if char == ".":
            return lambda: self.rng.choice("abc")
        if char in ("^", "$"):
            return lambda: ""
        if char == "\\":
            return self._escape()
        return lambda: char

    def _escape(self) -> _Maker:
        char = self._peek()
        self.pos += 1
        if char in _REGEX_CLASSES:
            chars = _REGEX_CLASSES[char]
            return lambda: self.rng.choice(chars)
        if char in ("b", "B"):
            return lambda: ""
        if char.isdigit():
            raise _Unsupported("back-reference")
        if char == "u":
            code = self.pattern[self.pos : self.pos + 4]
            self.pos += 4
            return lambda: chr(int(code, 16))
        literal = {"n": "\n", "t": "\t", "r": "\r"}.get(char, char)
        return lambda: literal

    def _class(self) -> _Maker:
        negated = self._peek() == "^"
        self.pos += negated
        chars: list[str] = []
        first = True
        while self._peek() != "]" or first:
            first = False
            char = self._peek()
            self.pos += 1
            if not char:
                raise _Unsupported("unterminated class")
            if char == "\\":
                code = self._peek()
                self.pos += 1
                chars.extend(_REGEX_CLASSES.get(code, {"n": "\n", "t": "\t"}.get(code, code)))
            elif self._peek() == "-" and self.pattern[self.pos + 1] != "]":
                end = self.pattern[self.pos + 1]
                self.pos += 2
                chars.extend(chr(c) for c in range(ord(char), ord(end) + 1))
            else:
                chars.append(char)
        self.pos += 1
        if negated:
            chars = [c for c in "abcxyzABC019_-" if c not in chars]
        if not chars:
            raise _Unsupported("empty class")
        pool = "".join(chars)
        return lambda: self.rng.choice(pool)
