"""An offline model for tests and demos: no key, no network, deterministic for a seed.

:class:`TestModel` answers a forced (or required) tool call with arguments generated from the
tool's JSON Schema, checked with ``jsonschema_rs`` before they are sent. It can be told to fail
first (``fail_first=["invalid_arguments", "text"]``): one scripted failure a turn, then valid
answers, so a run loop's re-prompting can be exercised without a real model.

Generation covers: object (properties, ``required``, ``additionalProperties``, min/max
properties), array (``items``, ``prefixItems``/tuple ``items``, min/max items, ``uniqueItems``,
``contains``), string (min/max length, ``format`` date-time/date/time/email/uri/uuid/hostname/
ipv4/ipv6, ``pattern`` for simple regexes: literals, classes, groups, alternation, quantifiers),
number and integer (inclusive and exclusive bounds, ``multipleOf``), boolean, null, ``enum``,
``const``, type lists, local ``$ref`` with ``definitions``/``$defs`` (recursion is cut short),
``anyOf``/``oneOf`` (first branch, others tried when it fails validation) and ``allOf`` (merged).

Limits: ``not``, ``if``/``then``/``else``, ``dependencies``, ``patternProperties``,
``propertyNames``, regex lookarounds and back-references, and remote ``$ref`` are not generated for.
When no candidate validates, the first one is sent anyway (and a warning logged): the run loop's
validation then reports what is wrong, exactly as it would for a real model.
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Final, Literal, TypeAlias, get_args

import jsonschema_rs
from pydantic import JsonValue

from agent_contracts.errors import ConfigError
from agent_contracts.messages import ToolCall, Usage
from agent_executor.providers.base import JsonObject, ModelTurn, ModelTurnRequest, ToolDefinition
from agent_executor.providers.profiles import TEST_PROFILE

__all__ = ["FAILURE_MODES", "FailureMode", "TestModel", "generate_value"]

logger = logging.getLogger(__name__)

FailureMode = Literal[
    "invalid_arguments",
    "text",
    "json_text",
    "no_tool_call",
    "unparseable_json",
    "wrong_tool",
    "max_tokens",
]
"""A scripted failure, consumed one a turn.

``invalid_arguments``: the tool is called with JSON that breaks its schema; ``text``: a prose
reply with no tool call and no JSON; ``json_text``: a valid answer written as JSON in the text
instead of a tool call; ``no_tool_call``: an empty reply; ``unparseable_json``: the tool is called
with arguments that are not JSON; ``wrong_tool``: a tool that was not offered is called;
``max_tokens``: the arguments are cut off and the stop reason is ``max_tokens``.
"""

FAILURE_MODES: Final[tuple[str, ...]] = get_args(FailureMode)
"""Every :data:`FailureMode`."""

WRONG_TOOL_NAME: Final = "not_an_offered_tool"
"""The tool name a ``wrong_tool`` failure calls."""

_Maker: TypeAlias = Callable[[], str]

_MAX_DEPTH = 8
_NODE_BUDGET = 2_000  # past this many values, only what the schema requires is generated
_NODE_LIMIT = 20_000  # past this many, nothing more is generated (the value will be invalid)
_REGEX_CLASSES: Final = {
    "d": "0123456789",
    "w": "abcxyz_019",
    "s": " ",
    "D": "ab",
    "W": "-.",
    "S": "a",
}
_ATTEMPTS = 8
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


class TestModel:
    """A deterministic offline provider (``name == "test"``).

    A turn calls a tool when one is forced (``tool_choice`` names it), or when tools are offered
    and either ``output_tool`` is among them or a tool is required; it also calls each of
    ``call_tools`` once, the first time it is offered. Otherwise it answers text: ``text``, or JSON
    generated from ``response_format`` when native structured output is asked for.
    """

    __test__ = False  # not a pytest test class
    supports_tools = True
    """The test model takes tools."""
    profile = TEST_PROFILE
    """Neutral tools; every output mode is answered."""

    def __init__(
        self,
        *,
        seed: int = 0,
        fail_first: Sequence[str] = (),
        text: str = "This is the test model's answer.",
        call_tools: Sequence[str] = (),
        output_tool: str = "submit_result",
        model: str = "test",
    ) -> None:
        """Create the model.

        Args:
            seed: Makes the generated values differ; the same seed and conversation give the same
                answer.
            fail_first: Scripted failures (see :data:`FailureMode`), used one a turn before the
                model answers validly.
            text: The reply when no tool is called.
            call_tools: Input tools to call once each, when first offered, before answering.
            output_tool: The tool that carries the answer, called when offered.
            model: The model name reported in turns.

        Raises:
            ConfigError: A failure mode is not one of :data:`FAILURE_MODES`.
        """
        unknown = [mode for mode in fail_first if mode not in FAILURE_MODES]
        if unknown:
            raise ConfigError(
                f"test: unknown failure mode(s) {unknown}; known: {', '.join(FAILURE_MODES)}"
            )
        self.name = "test"
        self.model = model
        self.seed = seed
        self.text = text
        self.call_tools = tuple(call_tools)
        self.output_tool = output_tool
        self._failures: deque[str] = deque(fail_first)

    @property
    def pending_failures(self) -> list[str]:
        """The scripted failures not used yet."""
        return list(self._failures)

    async def request(self, turn: ModelTurnRequest) -> ModelTurn:
        """Answer one turn offline.

        Args:
            turn: The conversation, tools and settings for this call.

        Returns:
            A valid answer, or the next scripted failure.
        """
        rng = random.Random(f"{self.seed}:{len(turn.messages)}")
        failure = self._failures.popleft() if self._failures else None
        targets = self._targets(turn)
        if failure is None:
            result = self._valid(turn, targets, rng)
        else:
            result = self._failure(failure, turn, targets[0] if targets else None, rng)
        words = sum(len(message.content.split()) for message in turn.messages)
        produced = len(result.text) + sum(len(call.raw_arguments) for call in result.tool_calls)
        return result.model_copy(
            update={
                "provider": self.name,
                "model": self.model,
                "usage": Usage(input_tokens=words, output_tokens=produced // 4 + 1, requests=1),
                "raw": {"test_model": {"seed": self.seed, "failure": failure}},
            }
        )

    def _targets(self, turn: ModelTurnRequest) -> list[ToolDefinition]:
        """Return the tools this turn calls (empty for a text answer)."""
        choice = turn.tool_choice
        if not turn.tools or choice.mode == "none":
            return []
        if choice.mode == "tool" and choice.tool_name is not None:
            forced = turn.tool(choice.tool_name)
            return [forced] if forced is not None else []
        called = {call.name for message in turn.messages for call in message.tool_calls}
        pending = [
            tool for name in self.call_tools if name not in called and (tool := turn.tool(name))
        ]
        if pending:
            return pending
        output = turn.tool(self.output_tool)
        if output is not None:
            return [output]
        return [turn.tools[0]] if choice.mode == "required" else []

    def _valid(
        self, turn: ModelTurnRequest, targets: list[ToolDefinition], rng: random.Random
    ) -> ModelTurn:
        if targets:
            calls = [
                _call(turn, index, tool.name, generate_value(tool.parameters, rng=rng))
                for index, tool in enumerate(targets)
            ]
            return ModelTurn(tool_calls=calls, stop_reason="tool_use")
        schema = _answer_schema(turn)
        if schema is not None:
            return ModelTurn(text=json.dumps(generate_value(schema, rng=rng)))
        return ModelTurn(text=self.text)

    def _failure(
        self,
        failure: str,
        turn: ModelTurnRequest,
        target: ToolDefinition | None,
        rng: random.Random,
    ) -> ModelTurn:
        schema = target.parameters if target is not None else _answer_schema(turn)
        if failure == "text":
            return ModelTurn(text="I looked into it, and I'd rather explain it in words.")
        if failure == "no_tool_call":
            return ModelTurn()
        valid = generate_value(schema, rng=rng) if schema is not None else {}
        if failure == "json_text":
            return ModelTurn(text=f"Here is the result:\n```json\n{json.dumps(valid)}\n```")
        if failure == "wrong_tool":
            return ModelTurn(
                tool_calls=[_call(turn, 0, WRONG_TOOL_NAME, valid)], stop_reason="tool_use"
            )
        if failure == "invalid_arguments":
            invalid = _invalid_value(schema, valid) if schema is not None else "not valid"
            if target is None:
                return ModelTurn(text=json.dumps(invalid))
            return ModelTurn(
                tool_calls=[_call(turn, 0, target.name, invalid)], stop_reason="tool_use"
            )
        broken = json.dumps(valid)[: max(1, len(json.dumps(valid)) // 2)]
        if broken and broken[0] not in "{[":
            broken = '{"' + broken
        stop = "max_tokens" if failure == "max_tokens" else "tool_use"
        if target is None:
            return ModelTurn(text=broken, stop_reason=stop if stop == "max_tokens" else "end_turn")
        try:
            json.loads(broken)
            error = "arguments are not valid JSON"
        except ValueError as exc:
            error = f"arguments are not valid JSON: {exc}"
        call = ToolCall(
            id=_call_id(turn, 0), name=target.name, raw_arguments=broken, parse_error=error
        )
        return ModelTurn(tool_calls=[call], stop_reason=stop)


_PROMPTED_SCHEMA = re.compile(r"## Required Output Format.*?```json\n(.*?)\n```", re.DOTALL)


def _answer_schema(turn: ModelTurnRequest) -> JsonValue | None:
    """Return the schema a text answer must match.

    Native ``response_format`` first, else the schema the system prompt's "Required Output
    Format" section shows (prompted mode, read the way a model would), else ``None``.
    """
    if turn.response_format is not None:
        return turn.response_format.json_schema
    for message in turn.messages:
        if message.role == "system":
            found = _PROMPTED_SCHEMA.findall(message.content)
            if found:
                try:
                    schema: JsonValue = json.loads(found[-1])
                except ValueError:
                    return None
                return schema
    return None


def _call_id(turn: ModelTurnRequest, index: int) -> str:
    return f"call_test_{len(turn.messages)}_{index}"


def _call(turn: ModelTurnRequest, index: int, name: str, arguments: JsonValue) -> ToolCall:
    return ToolCall(
        id=_call_id(turn, index),
        name=name,
        arguments=arguments,
        raw_arguments=json.dumps(arguments),
    )


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


def _invalid_value(schema: JsonValue, valid: JsonValue) -> JsonValue:
    """Return a value that breaks ``schema`` (derived from ``valid`` when possible)."""
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
        least = least if isinstance(least, int) else 0
        most = schema.get("maxLength")
        most = most if isinstance(most, int) else max(least, 24)
        suffix = f" {hint}" if hint else ""
        words: list[str] = []
        while len(" ".join(words)) < max(least, min(most, 12)):
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
    """Resolve a local ``$ref`` (``#``, ``#/definitions/x``...); anything else is ``{}``."""
    if not ref.startswith("#"):
        return {}
    node = root
    for part in ref[1:].split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return {}
    return node


def _merge(base: JsonValue, extra: JsonValue) -> JsonValue:
    """Merge two schemas for generation: properties and ``required`` unite, bounds tighten."""
    if not isinstance(base, dict) or not isinstance(extra, dict):
        return extra if isinstance(base, dict) and not base else base
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


class _Unsupported(Exception):
    """A regex feature the sampler does not generate for."""


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
            out.append("".join(atom() for _ in range(count)))
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
