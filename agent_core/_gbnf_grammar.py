"""A JSON Schema as a GBNF grammar for llama.cpp's servers: :func:`schema_to_gbnf`.

The grammar accepts every instance the schema accepts (properties in the schema's order) and
rejects what breaks a keyword it carries. A keyword it cannot carry (``uniqueItems``, ``pattern``
beyond the subset of :mod:`agent_core._gbnf_patterns`, number ranges...) is left out and named in
the result's notes; agentshape's validation still enforces it. The same schema always gives the
same text.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from pydantic import JsonValue

from agent_core._gbnf_patterns import pattern_to_gbnf
from agent_core._json_values import _json_key, json_type
from agent_core._schema_walk import child_path, fragment_keys, resolve_local_ref

__all__ = ["GbnfGrammar", "schema_to_gbnf"]


@dataclass(frozen=True)
class GbnfGrammar:
    """A schema's grammar and what it leaves to validation."""

    text: str
    """The GBNF text; its start rule is ``root``."""
    notes: tuple[str, ...]
    """What the grammar does not carry, one note a keyword at its JSON path
    (``$.properties.tags: uniqueItems is not in the grammar``), in the order compiled."""


_TYPES = ("object", "array", "string", "number", "boolean", "null")

GRAMMAR_FORMATS = frozenset({"date", "time", "date-time", "uuid"})
"""The string formats llama.cpp's grammar produces exactly."""

# Keywords that constrain an instance; any other key is an annotation or unknown, and
# validation ignores those too.
_VALIDATION = frozenset(
    {
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "items",
        "prefixItems",
        "additionalItems",
        "maxItems",
        "minItems",
        "uniqueItems",
        "contains",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "properties",
        "patternProperties",
        "additionalProperties",
        "dependencies",
        "dependentRequired",
        "dependentSchemas",
        "propertyNames",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "$ref",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_NEVER = (
    "multipleOf",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "propertyNames",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
)
# A keyword whose meaning depends on others in the same schema object. Two schemas are put
# together only where each such keyword keeps the neighbours it was written beside
# (``properties`` and ``additionalProperties`` are put together by :func:`_conjoin` itself).
_READS = {
    "additionalItems": ("items",),
    "items": ("prefixItems",),
    "then": ("if",),
    "else": ("if",),
}
_OBJECT_SHAPE = ("properties", "additionalProperties", "patternProperties")
_LOWER_BOUNDS = ("minItems", "minLength", "minProperties", "minContains", "exclusiveMinimum")
_UPPER_BOUNDS = ("maxItems", "maxLength", "maxProperties", "maxContains", "exclusiveMaximum")
_CONDITIONAL = ("if", "then", "else")
# The keywords of an ``if`` whose failing can be written as a union of schemas.
_IF_KEYS = frozenset(("type", "const", "enum", "properties", "required"))
_CHOICE = frozenset(("type", "const", "enum"))  # an if's property schema read as values
_MAX_INLINED = 16  # put-together schemas inside each other, so a cycle of $refs ends
# The alternatives ``if``/``then``/``else`` may split one schema into; more (many
# conditionals side by side) and they are left to validation, to keep the grammar small.
_MAX_CASES = 64
_SPELLED = 4  # the members an object's rule spells out after one, before naming the rest
_MAX_SPLIT = 3  # the properties an if tests but does not require, split absent and present
_RANGE = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_OBJECT_KEYS = frozenset(("properties", "required", "additionalProperties", "patternProperties"))
_ARRAY_KEYS = frozenset(("items", "prefixItems", "additionalItems", "minItems", "maxItems"))
_STRING_KEYS = frozenset(("minLength", "maxLength", "format", "pattern"))
_NUMBER_KEYS = frozenset(_RANGE)

# The JSON text rules every grammar ends with. Whitespace is bounded so that a model cannot
# spend its tokens on blanks.
_BASE_RULES = {
    "ws": '| " " | "\\n" [ \\t]{0,20}',
    "char": '[^"\\\\\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": '"\\"" char* "\\""',
    "integer": '"-"? ("0" | [1-9] [0-9]*)',
    "number": 'integer ("." [0-9]+)? ([eE] [-+]? [0-9]+)?',
    "boolean": '"true" | "false"',
    "null": '"null"',
    "value": "any-object | any-array | string | number | boolean | null",
    "any-object": '"{" ws (string ws ":" ws value ws ("," ws string ws ":" ws value ws)*)? "}"',
    "any-array": '"[" ws (value ws ("," ws value ws)*)? "]"',
    "digit2": "[0-9]{2}",
    "date": '[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])',
    "time": '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" ([0-5] [0-9] | "60") '
    '("." [0-9]+)? ([zZ] | [-+] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])',
    "date-time": "date [tT] time",
    "uuid": '[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} '
    '"-" [0-9a-fA-F]{12}',
}


def schema_to_gbnf(
    schema: JsonValue, *, declared_only: bool = False, compact: bool = False
) -> GbnfGrammar:
    """Compile ``schema`` to a GBNF grammar whose ``root`` is one JSON value of the schema.

    Args:
        schema: A JSON Schema document (any draft); ``$ref`` is followed within the document
            only.
        declared_only: An object that declares ``properties`` and does not say
            ``additionalProperties`` takes only its declared properties, as llama.cpp's own
            converter writes it. The grammar then accepts fewer instances than the schema
            (never one the schema rejects): for decoding, where a small model let loose on
            undeclared keys can write them until its token limit.
        compact: Between tokens, at most one space (no line breaks or indents), as
            llama-cpp-python's own converter allows: fewer output tokens, and a small model
            kept from the pretty-printed layouts it loses its way in.

    Returns:
        The grammar and the notes on what it does not carry.
    """
    return _Compiler(schema, declared_only=declared_only, compact=compact).compile()


def _literal(text: str) -> str:
    """Return ``text`` as a GBNF string literal."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _class_char(char: str) -> str:
    """Return ``char`` as it is written inside a GBNF character class."""
    if char in "]\\[":
        return "\\" + char
    if char in "-^":  # llama.cpp's parser knows no escape for these: spelled by code
        return f"\\x{ord(char):02X}"
    if ord(char) < 0x20 or ord(char) == 0x7F:
        return f"\\x{ord(char):02X}"
    return char


def _json_text(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _repeat(item: str, low: int, high: int | None) -> str:
    """Return ``item`` repeated ``low`` to ``high`` (``None``: unbounded) times."""
    if high is not None and high <= 0:
        return ""
    if (low, high) == (0, None):
        return f"{item}*"
    if (low, high) == (1, None):
        return f"{item}+"
    if (low, high) == (0, 1):
        return f"{item}?"
    if (low, high) == (1, 1):
        return item
    if high is None:
        return f"{item}{{{low},}}"
    if low == high:
        return f"{item}{{{low}}}"
    return f"{item}{{{low},{high}}}"


def _same_length(low: str, high: str) -> list[str]:
    """Return sequences matching the digit strings from ``low`` to ``high``, both one length."""
    if not low:
        return [""]
    if low == high:
        return [_literal(low)]
    rest = len(low) - 1
    if low[0] == high[0]:
        return [f"{_literal(low[0])} {tail}".strip() for tail in _same_length(low[1:], high[1:])]
    if low[1:] == "0" * rest and high[1:] == "9" * rest:
        return [f"[{low[0]}-{high[0]}] {_repeat('[0-9]', rest, rest)}".strip()]
    parts = [f"{_literal(low[0])} {t}".strip() for t in _same_length(low[1:], "9" * rest)]
    first, last = int(low[0]) + 1, int(high[0]) - 1
    if first <= last:
        digits = f"[{first}-{last}]" if first < last else _literal(str(first))
        parts.append(f"{digits} {_repeat('[0-9]', rest, rest)}".strip())
    parts += [f"{_literal(high[0])} {t}".strip() for t in _same_length("0" * rest, high[1:])]
    return parts


def _magnitudes(low: int, high: int | None) -> list[str]:
    """Return sequences matching the unsigned integers from ``low`` to ``high`` (or above)."""
    top = high if high is not None else 10 ** len(str(low)) - 1
    parts: list[str] = []
    for width in range(len(str(low)), len(str(top)) + 1):
        start = max(low, 10 ** (width - 1) if width > 1 else 0)
        end = min(top, 10**width - 1)
        if start <= end:
            parts += _same_length(str(start), str(end))
    if high is None:
        parts.append(f"[1-9] {_repeat('[0-9]', len(str(low)), None)}")
    return parts


def _integer_range(low: int | None, high: int | None) -> str:
    """Return an expression matching the JSON integers from ``low`` to ``high`` (``None``: open)."""
    parts: list[str] = []
    if low is None or low < 0:
        # Negative numbers: "-" and a magnitude from max(1, -high) to -low.
        top = None if low is None else -low
        bottom = 1 if high is None or high >= 0 else -high
        if top is None or bottom <= top:
            parts.append('"-" (' + " | ".join(_magnitudes(bottom, top)) + ")")
    if high is None or high >= 0:
        parts += _magnitudes(max(low or 0, 0), high)
    return "(" + " | ".join(parts) + ")"


@dataclass
class _Compiler:
    root: JsonValue
    rules: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # rule body -> rule name
    refs: dict[str, str] = field(default_factory=dict)  # JSON pointer -> rule name
    notes: list[str] = field(default_factory=list)
    depth: int = 0
    declared_only: bool = False
    compact: bool = False

    def compile(self) -> GbnfGrammar:
        body = self.value(self.root, "$")
        lines = [f"root ::= {body}"]
        lines += [f"{name} ::= {rule}" for name, rule in self.rules.items()]
        needed = self._base_closure(" ".join(lines))
        base = {**_BASE_RULES, "ws": '" "?'} if self.compact else _BASE_RULES
        lines += [f"{name} ::= {rule}" for name, rule in base.items() if name in needed]
        return GbnfGrammar(text="\n".join(lines) + "\n", notes=tuple(dict.fromkeys(self.notes)))

    def _base_closure(self, text: str) -> set[str]:
        needed: set[str] = set()
        pending = [text]
        while pending:
            words = set(re.findall(r"(?<![\w\"\\\[-])[a-z][a-z0-9-]*", pending.pop()))
            for name in sorted(words & _BASE_RULES.keys() - needed):
                needed.add(name)
                pending.append(_BASE_RULES[name])
        return needed

    def note(self, path: str, text: str) -> None:
        self.notes.append(f"{path}: {text}")

    def rule(self, hint: str, body: str) -> str:
        """Return the name of a rule with ``body``, made once per body."""
        if body in self.names:
            return self.names[body]
        base = re.sub(r"[^a-z0-9]+", "-", hint.lower()).strip("-") or "node"
        name, count = base, 1
        while name in self.rules or name in _BASE_RULES or name == "root":
            count += 1
            name = f"{base}-{count}"
        self.rules[name] = body
        self.names[body] = name
        return name

    def value(self, node: JsonValue, path: str) -> str:
        """Return an expression matching the instances of ``node``."""
        if node is True or node == {}:
            return "value"
        if not isinstance(node, dict):
            self.note(path, "a false (or non-object) schema is not in the grammar")
            return "value"
        checked = {key for key in node if key in _VALIDATION}
        for key in _NEVER:
            if key in node:
                if key == "not" and _excluded_strings(node) is not None:
                    continue  # string() writes it
                if key == "patternProperties" and node.get("additionalProperties") is False:
                    self.note(
                        path,
                        "patternProperties is not in the grammar (nor, beside "
                        "it, additionalProperties false)",
                    )
                else:
                    self.note(path, f"{key} is not in the grammar")
        if ("if" in node) != ("then" in node or "else" in node):
            # An if without then or else, or those without an if, constrain nothing.
            node = {key: item for key, item in node.items() if key not in _CONDITIONAL}
            checked -= set(_CONDITIONAL)
            if not node:
                return "value"
        if "$ref" in node:
            self._beside(node, path, "$ref", checked - {"$ref"})
            return self.ref(node["$ref"], path)
        conditionals, rest = _conditionals(node, path)
        if conditionals:
            return self.conditional(rest, conditionals, path)
        all_of = node.get("allOf")
        if isinstance(all_of, list) and all_of:
            rest = {key: item for key, item in node.items() if key != "allOf"}
            merged = self.merged([rest, *all_of])
            if merged is not None:
                return self.inlined(merged, path)
            self.note(path, "allOf is not in the grammar")
            if not checked - {"allOf"} - set(_NEVER):
                return self.value(all_of[0], child_path(child_path(path, "allOf"), 0))
            node = rest
        for choice in ("anyOf", "oneOf"):
            branches = node.get(choice)
            if isinstance(branches, list) and branches:
                if choice == "oneOf":
                    self.note(
                        path,
                        "oneOf is read as anyOf (that only one branch matches "
                        "is not in the grammar)",
                    )
                siblings = {
                    key: item for key, item in node.items() if key in _VALIDATION and key != choice
                }
                paths = [
                    child_path(child_path(path, choice), index) for index in range(len(branches))
                ]
                # Each branch with the keywords beside it, where they can be put together.
                parts = [
                    self.merged([siblings, branch]) if siblings else branch for branch in branches
                ]
                if all(part is not None for part in parts):
                    alternatives = [
                        self.inlined(part, at) if siblings else self.value(part, at)
                        for part, at in zip(parts, paths, strict=True)
                    ]
                else:
                    self._beside(node, path, choice, checked - {"anyOf", "oneOf"})
                    alternatives = [
                        self.value(branch, at) for branch, at in zip(branches, paths, strict=True)
                    ]
                return "(" + " | ".join(dict.fromkeys(alternatives)) + ")"
        if "const" in node or "enum" in node:
            return self.choices(node, path, checked)
        return self.typed(node, path)

    def inlined(self, node: JsonValue, path: str) -> str:
        """Return :meth:`value` of a schema put together from others, to a bounded depth."""
        self.depth += 1
        try:
            return self.value(node, path) if self.depth <= _MAX_INLINED else "value"
        finally:
            self.depth -= 1

    def merged(self, parts: list[JsonValue]) -> dict[str, JsonValue] | None:
        """Return one schema that means all of ``parts``, or ``None`` where that is unsafe.

        Keywords apply each on its own, so schemas with different keywords are put together
        by taking them all, and one keyword in several parts as :func:`_conjoin` says; a
        same-document ``$ref`` part is replaced by its target. Parts that give one keyword
        values that cannot be put together, or split a keyword from the one it reads
        (``items`` from ``prefixItems``...), are not put together, nor parts no value meets.
        """
        merged = self.conjoined(parts)
        return None if merged is None or _empty(merged) else merged

    def conjoined(self, parts: list[JsonValue]) -> dict[str, JsonValue] | None:
        """Return :meth:`merged`'s schema, even where plainly no value meets it."""
        if self.depth >= _MAX_INLINED:
            return None
        merged: dict[str, JsonValue] = {}
        for index, part in enumerate(parts):
            if part is True:
                continue
            if not isinstance(part, dict):
                return None
            if "$ref" in part:
                ref = part["$ref"]
                found = resolve_local_ref(self.root, ref) if isinstance(ref, str) else None
                if found is None or set(part) & _VALIDATION != {"$ref"}:
                    return None
                part = found[0]
                if not isinstance(part, dict) or "$ref" in part:
                    return None
            if "allOf" in part and index:
                return None
            together = _conjoin(merged, part)
            if together is None:
                return None
            merged = together
        return merged

    def conditional(
        self, base: dict[str, JsonValue], conditionals: list[_Conditional], path: str
    ) -> str:
        """Return an expression for ``base`` under its ``if``/``then``/``else`` conditionals.

        Each conditional splits every case so far: one case where its ``if`` holds, with
        ``then``, and one for each way the ``if`` can fail, with ``else``; together the cases
        take exactly the schema's instances. A conditional that cannot be split so is left
        to validation and noted.
        """
        all_of = base.get("allOf")
        if isinstance(all_of, list) and all_of:
            # Put together first, so that the cases see the properties the allOf declares.
            rest = {key: item for key, item in base.items() if key != "allOf"}
            base = self.merged([rest, *all_of]) or base
        cases = [base]
        for item, at in conditionals:
            split: list[dict[str, JsonValue]] | None = []
            for case in cases:
                more = self.cases(case, item)
                if more is None or split is None:
                    split = None
                    break
                split += more
            if split is None or len(split) > _MAX_CASES:
                for key in _CONDITIONAL:
                    if key in item:
                        self.note(at, f"{key} is not in the grammar")
                continue
            cases = split
        if not cases:
            self.note(path, "no value fits; the grammar cannot say so")
            return self.value(base, path)
        alternatives = list(dict.fromkeys(self.inlined(case, path) for case in cases))
        return alternatives[0] if len(alternatives) == 1 else "(" + " | ".join(alternatives) + ")"

    def cases(
        self, base: dict[str, JsonValue], item: dict[str, JsonValue]
    ) -> list[dict[str, JsonValue]] | None:
        """Return ``base`` split by one conditional ``item``, or ``None`` if it cannot be.

        The cases no value meets are left out.
        """
        test = self.target(item["if"])
        then, other = item.get("then", True), item.get("else", True)
        choices: list[list[JsonValue]]
        if test is True or test == {}:
            choices = [[then]]
        elif test is False:
            choices = [[other]]
        else:
            holds = self.holds(test, base)
            fails = self.fails(test, base)
            if holds is None or fails is None:
                return None
            choices = [*([case, then] for case in holds), *([fail, other] for fail in fails)]
        out = []
        for parts in choices:
            if any(part is False for part in parts):
                continue  # a then or else of false: no value takes this way
            case = self.conjoined([base, *parts])
            if case is None:
                return None
            if not _empty(case):
                out.append(case)
        return out

    def holds(
        self, test: JsonValue, base: dict[str, JsonValue]
    ) -> list[dict[str, JsonValue]] | None:
        """Return schemas whose union is exactly the values (of ``base``) ``test`` accepts.

        A property the ``if`` tests but does not require is one case absent and one present,
        so that cases of several ``if``s on one property exclude each other. A property the
        ``if`` limits to values, of a property ``base`` limits to a few values (an ``enum``, a
        boolean...), becomes the ``enum`` of those left, or absent if none is. Returns
        ``None`` where the ``if`` has other keywords.
        """
        if not isinstance(test, dict) or not set(test) & _VALIDATION <= _IF_KEYS:
            return None
        holds = {key: item for key, item in test.items() if key in _VALIDATION}
        properties = test.get("properties", {})
        required = test.get("required", [])
        if not isinstance(properties, dict) or not isinstance(required, list):
            return None
        narrowed: dict[str, JsonValue] = {}
        for name, sub in properties.items():
            sub = self.target(sub)
            values = self.values_of(self.declared(base, name))
            if values is not None and isinstance(sub, dict) and set(sub) & _VALIDATION <= _CHOICE:
                kept = [value for value in values if _has_value(sub, value)]
                narrowed[name] = {"enum": kept} if kept else False
            else:
                narrowed[name] = sub
        if properties:
            holds["properties"] = narrowed
        cases = [holds]
        optional = [
            name
            for name, sub in narrowed.items()
            if name not in required and sub is not False and not _trivial(sub)
        ]
        if len(optional) > _MAX_SPLIT:
            return cases
        for name in optional:
            split: list[dict[str, JsonValue]] = []
            for case in cases:
                tested = case["properties"]
                names = case.get("required", [])
                if not isinstance(tested, dict) or not isinstance(names, list):
                    return None
                split.append({**case, "properties": {**tested, name: False}})
                split.append({**case, "required": [*names, name]})
            cases = split
        return cases

    def fails(
        self, test: JsonValue, base: dict[str, JsonValue]
    ) -> list[dict[str, JsonValue]] | None:
        """Return schemas whose union is exactly the values (of ``base``) ``test`` rejects.

        An ``if`` is a conjunction (a type or values, required names, each property's
        schema), so it fails one way per part: another type or value, a required name absent,
        a property present with a value its schema rejects. Returns ``None`` where one of
        those cannot be written as a schema the grammar carries (a number out of a range, a
        string of another length...).
        """
        if not isinstance(test, dict) or not set(test) & _VALIDATION <= _IF_KEYS:
            return None
        fails: list[dict[str, JsonValue]] = []
        if set(test) & _CHOICE:
            own = self.rejected({key: test[key] for key in _CHOICE if key in test}, base)
            if own is None:
                return None
            fails += [schema for schema in own if isinstance(schema, dict)]
        required = test.get("required", [])
        properties = test.get("properties", {})
        if not isinstance(required, list) or not isinstance(properties, dict):
            return None
        for name in required:
            if not isinstance(name, str):
                return None
            # Properties only apply to objects: a non-object meets a required name.
            fails.append({"type": "object", "properties": {name: False}})
        for name, sub in properties.items():
            sub = self.target(sub)
            if sub is True or (isinstance(sub, dict) and not set(sub) & _VALIDATION):
                continue
            if sub is False:
                fails.append({"type": "object", "required": [name]})
                continue
            rejected = self.rejected(sub, self.declared(base, name))
            if rejected is None:
                return None
            fails += [
                {"type": "object", "required": [name], "properties": {name: schema}}
                for schema in rejected
            ]
        return fails

    def rejected(self, test: JsonValue, universe: JsonValue) -> list[JsonValue] | None:
        """Return schemas whose union is exactly the values of ``universe`` ``test`` rejects.

        ``test`` is a ``type``, ``const`` or ``enum`` schema; ``None`` where its complement is
        not a schema the grammar carries (the numbers that are not integers...).
        """
        if not isinstance(test, dict) or not set(test) & _VALIDATION <= _CHOICE:
            return None
        values = self.values_of(universe)
        if values is not None:
            left = [value for value in values if not _has_value(test, value)]
            return [{"enum": left}] if left else []
        if set(test) & _VALIDATION == {"type"}:
            others = _other_types(test["type"])
            if others is None:
                return None
            return [{"type": others}] if others else []
        # Strings only (a const or enum of them): the other types, and the strings but
        # those, which the grammar writes as a string schema with a not.
        chosen = _chosen_strings(test)
        if chosen is None:
            return None
        strings: list[JsonValue] = list(chosen)
        return [
            {"type": [kind for kind in _TYPES if kind != "string"]},
            {"type": "string", "not": {"enum": strings}} if strings else {"type": "string"},
        ]

    def declared(self, node: dict[str, JsonValue], name: str) -> JsonValue:
        """Return the schema ``node`` gives property ``name`` (``True`` where unknown)."""
        if "patternProperties" in node:
            return True
        properties = node.get("properties")
        extra = node.get("additionalProperties", True)
        return properties.get(name, extra) if isinstance(properties, dict) else extra

    def values_of(self, node: JsonValue, depth: int = 0) -> list[JsonValue] | None:
        """Return values that include every instance of ``node``, or ``None`` if unbounded."""
        node = self.target(node)
        if node is False:
            return []
        if not isinstance(node, dict) or depth > _MAX_INLINED:
            return None
        types = _type_list(node.get("type")) if "type" in node else None
        values: list[JsonValue] | None = None
        if "const" in node:
            values = [node["const"]]
        elif isinstance(node.get("enum"), list):
            values = list(node["enum"])  # type: ignore[arg-type]
        elif types and set(types) <= {"boolean", "null"}:
            values = [
                v for t, v in (("boolean", True), ("boolean", False), ("null", None)) if t in types
            ]
        all_of = node.get("allOf")
        parts = [self.target(part) for part in all_of] if isinstance(all_of, list) else []
        if values is None:
            # Each part's values include the allOf's: the first part that has them.
            found = (self.values_of(part, depth + 1) for part in parts)
            values = next((part for part in found if part is not None), None)
        if values is None:
            return None
        checks = [node, *(part for part in parts if isinstance(part, dict))]
        return [v for v in values if all(_has_value(check, v) for check in checks)]

    def target(self, node: JsonValue) -> JsonValue:
        """Return ``node``, or the schema a ``$ref``-only ``node`` points to (``None`` if none)."""
        for _ in range(_MAX_INLINED):
            if not isinstance(node, dict) or set(node) & _VALIDATION != {"$ref"}:
                return node
            ref = node["$ref"]
            found = resolve_local_ref(self.root, ref) if isinstance(ref, str) else None
            if found is None:
                return None
            node = found[0]
        return None

    def _beside(self, node: dict[str, JsonValue], path: str, first: str, keys: set[str]) -> None:
        beside = sorted(keys - set(_NEVER))
        if beside:
            verb = "is" if len(beside) == 1 else "are"
            self.note(path, f"{', '.join(beside)} beside {first} {verb} not in the grammar")

    def ref(self, ref: JsonValue, path: str) -> str:
        found = resolve_local_ref(self.root, ref) if isinstance(ref, str) else None
        if found is None:
            self.note(path, f"$ref {ref!r} leaves the document; it is not in the grammar")
            return "value"
        target, pointer = found
        if pointer in self.refs:
            return self.refs[pointer]
        keys = fragment_keys(pointer)
        name = self.rule("ref-" + (keys[-1] if keys else "root"), f"<{pointer}>")
        self.refs[pointer] = name
        target_path = "$"
        for key in keys:
            target_path = child_path(target_path, key)
        body = self.value(target, target_path)
        del self.names[f"<{pointer}>"]
        self.rules[name] = body
        return name

    def choices(self, node: dict[str, JsonValue], path: str, checked: set[str]) -> str:
        enum = node.get("enum")
        values: list[JsonValue] = list(enum) if isinstance(enum, list) else []
        if "const" in node:
            values = [node["const"]] if enum is None or node["const"] in values else []
        types = node.get("type")
        if types is not None:
            allowed = {types} if isinstance(types, str) else set(_strings(types))
            values = [
                v
                for v in values
                if json_type(v) in allowed or (json_type(v) == "integer" and "number" in allowed)
            ]
        self._beside(
            node, path, "enum" if "enum" in node else "const", checked - {"enum", "const", "type"}
        )
        literals = list(dict.fromkeys(_literal(_json_text(v)) for v in values))
        if not literals:
            self.note(path, "no value fits; the grammar cannot say so")
            return "value"
        return "(" + " | ".join(literals) + ")"

    def typed(self, node: dict[str, JsonValue], path: str) -> str:
        declared = node.get("type")
        if isinstance(declared, str):
            types = [declared]
        elif isinstance(declared, list):
            types = _strings(declared)
        else:
            keys = node.keys()
            if not keys & (_OBJECT_KEYS | _ARRAY_KEYS | _STRING_KEYS | _NUMBER_KEYS):
                return "value"
            types = list(_TYPES)
        if "number" in types and "integer" in types:
            types.remove("integer")
        if "object" in types and _no_object(node):
            types.remove("object")
        parts = [self.of_type(t, node, path) for t in types]
        if not parts:
            self.note(path, "no value fits; the grammar cannot say so")
            return "value"
        return parts[0] if len(parts) == 1 else "(" + " | ".join(dict.fromkeys(parts)) + ")"

    def of_type(self, kind: str, node: dict[str, JsonValue], path: str) -> str:
        if kind == "object":
            return self.object(node, path)
        if kind == "array":
            return self.array(node, path)
        if kind == "string":
            return self.string(node, path)
        if kind == "integer":
            return self.integer(node, path)
        if kind == "number":
            if node.keys() & _NUMBER_KEYS:
                ranges = sorted(node.keys() & _NUMBER_KEYS)
                self.note(path, f"{', '.join(ranges)} on a number is not in the grammar")
            return "number"
        if kind in ("boolean", "null"):
            return kind
        self.note(path, f"type {kind!r} is not in the grammar")
        return "value"

    def integer(self, node: dict[str, JsonValue], path: str) -> str:
        low: int | None = None
        high: int | None = None
        for key in _RANGE:
            bound = node.get(key)
            if isinstance(bound, bool) or not isinstance(bound, int | float):
                continue
            if not math.isfinite(bound):
                continue
            if key == "minimum":
                exclusive = node.get("exclusiveMinimum") is True  # draft 4's spelling
                value = math.floor(bound) + 1 if exclusive else math.ceil(bound)
                low = value if low is None else max(low, value)
            elif key == "exclusiveMinimum":
                value = math.floor(bound) + 1
                low = value if low is None else max(low, value)
            elif key == "maximum":
                exclusive = node.get("exclusiveMaximum") is True
                value = math.ceil(bound) - 1 if exclusive else math.floor(bound)
                high = value if high is None else min(high, value)
            else:
                value = math.ceil(bound) - 1
                high = value if high is None else min(high, value)
        if low is None and high is None:
            return "integer"
        if low is not None and high is not None and low > high:
            self.note(path, "no integer is in range; the grammar cannot say so")
            return "integer"
        hint = f"int-{low if low is not None else 'min'}-{high if high is not None else 'max'}"
        return self.rule(hint.replace("-" + "-", "-neg-"), _integer_range(low, high))

    def string(self, node: dict[str, JsonValue], path: str) -> str:
        excluded = _excluded_strings(node)
        if excluded is not None:
            return self.other_string(excluded) if excluded else "string"
        fmt = node.get("format")
        lengths = [key for key in ("minLength", "maxLength") if key in node]
        pattern = node.get("pattern")
        if pattern is not None:
            expr = pattern_to_gbnf(pattern) if isinstance(pattern, str) else None
            if expr is None:
                self.note(path, "pattern is not in the grammar")
            else:
                beside = [*lengths, *(["format"] if fmt is not None else [])]
                if beside:
                    self.note(
                        path,
                        f"{' and '.join(beside)} beside pattern "
                        f"{'are' if len(beside) > 1 else 'is'} not in the grammar",
                    )
                return self.rule("pattern-string", f'"\\"" {expr} "\\""')
        if isinstance(fmt, str) and fmt in GRAMMAR_FORMATS:
            if lengths:
                self.note(
                    path,
                    f"{' and '.join(lengths)} beside format {fmt!r} "
                    f"{'are' if len(lengths) > 1 else 'is'} not in the grammar",
                )
            return self.rule(f"{fmt}-string", f'"\\"" {fmt} "\\""')
        if fmt is not None:
            self.note(path, f"format {fmt!r} is not in the grammar")
        low = node.get("minLength")
        high = node.get("maxLength")
        low = low if isinstance(low, int) and not isinstance(low, bool) else 0
        high = high if isinstance(high, int) and not isinstance(high, bool) else None
        if low == 0 and high is None:
            return "string"
        chars = _repeat("char", low, high)
        return self.rule(
            f"string-{low}-{high if high is not None else 'max'}",
            f'"\\"" {chars} "\\""'.replace("  ", " "),
        )

    def array(self, node: dict[str, JsonValue], path: str) -> str:
        items = node.get("items")
        prefix_nodes: list[JsonValue] = []
        rest: JsonValue = True
        if isinstance(items, list):  # drafts 4 to 7: a tuple, then additionalItems
            prefix_nodes, rest = items, node.get("additionalItems", True)
            prefix_key = "items"
        else:
            prefix = node.get("prefixItems")
            prefix_nodes = prefix if isinstance(prefix, list) else []
            rest = items if items is not None else True
            prefix_key = "prefixItems"
        rest_key = "additionalItems" if prefix_key == "items" else "items"
        prefix_exprs = [
            self.value(item, child_path(child_path(path, prefix_key), index))
            for index, item in enumerate(prefix_nodes)
        ]
        rest_expr = None if rest is False else self.value(rest, child_path(path, rest_key))
        low = node.get("minItems")
        high = node.get("maxItems")
        low = low if isinstance(low, int) and not isinstance(low, bool) else 0
        high = high if isinstance(high, int) and not isinstance(high, bool) else None
        if not prefix_exprs and rest_expr == "value" and low == 0 and high is None:
            return "any-array"
        body = f'"[" ws {self._elements(prefix_exprs, rest_expr, low, high, 0)} "]"'
        return self.rule("array", re.sub(r" +", " ", body))

    def _elements(
        self, prefix: list[str], rest: str | None, low: int, high: int | None, index: int
    ) -> str:
        """Return the elements from position ``index`` on, each followed by its blanks."""
        sep = '"," ws ' if index else ""
        if high is not None and index >= high:
            return ""
        if index >= len(prefix):
            if rest is None:
                return ""
            need = max(low - index, 0)
            left = None if high is None else high - index
            if index == 0:
                more = _repeat(
                    f'("," ws {rest} ws)', max(need - 1, 0), None if left is None else left - 1
                )
                body = f"{rest} ws {more}".strip()
                return body if need else f"({body})?"
            return _repeat(f'("," ws {rest} ws)', need, left)
        part = f"{sep}{prefix[index]} ws {self._elements(prefix, rest, low, high, index + 1)}"
        return part.strip() if index < low else f"({part.strip()})?"

    def object(self, node: dict[str, JsonValue], path: str) -> str:
        properties = node.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required_list = node.get("required")
        required = (
            [r for r in required_list if isinstance(r, str)]
            if isinstance(required_list, list)
            else []
        )
        # Unsaid, extra keys are allowed, unless declared_only narrows them to none.
        open_default = not properties or not self.declared_only
        extra: JsonValue = node.get("additionalProperties", open_default)
        if "patternProperties" in node:
            extra = True  # which keys the patterns take is not in the grammar
        members: list[tuple[str, str, bool]] = []
        for name, sub in properties.items():
            if sub is False:
                continue
            expr = self.value(sub, child_path(child_path(path, "properties"), name))
            members.append((name, expr, name in required))
        extra_expr = (
            None if extra is False else self.value(extra, child_path(path, "additionalProperties"))
        )
        for name in required:
            if name not in properties:
                members.append((name, extra_expr or "value", True))
        if not members and extra_expr == "value" and False not in properties.values():
            return "any-object"
        pairs = [
            self.rule(f"{name}-kv", f'{_literal(_json_text(name))} ws ":" ws {expr} ws')
            for name, expr, _ in members
        ]
        extra_pair = None
        if extra_expr is not None:
            key = self.excluding(list(properties) + [n for n, _, _ in members])
            extra_pair = self.rule("extra-kv", f'{key} ws ":" ws {extra_expr} ws')
        flags = [needed for _, _, needed in members]
        tail = f' ("," ws {extra_pair})*' if extra_pair else ""

        # after(i): the members from i on, each with its comma. A long one is a rule of its
        # own, so that each start below refers to it instead of spelling it out: the grammar
        # grows with the members, not with their square.
        afters = [tail.strip()]
        for index in range(len(pairs) - 1, 0, -1):
            part = f'"," ws {pairs[index]}' if flags[index] else f'("," ws {pairs[index]})?'
            rest = f"{part} {afters[-1]}".strip()
            afters.append(self.rule("rest", rest) if len(pairs) - index > _SPELLED else rest)

        def after(index: int) -> str:
            return afters[len(pairs) - index]

        # start(i): the members from i on when none has been written yet, so the first one
        # written takes no comma.
        start = f"({extra_pair}{tail})?" if extra_pair else ""
        for index in range(len(pairs) - 1, -1, -1):
            first = re.sub(r" +", " ", f"{pairs[index]} {after(index + 1)}".strip())
            if flags[index]:
                start = first
            elif start:
                # The rest is named only here, where an alternative refers to it.
                later = start if re.fullmatch(r"[a-z0-9-]+", start) else self.rule("members", start)
                start = f"{first} | {later}"
            else:
                start = f"({first})?"
        if "|" in start:
            start = f"({start})"
        body = f'"{{" ws {start} "}}"'.replace("  ", " ")
        return self.rule("object", re.sub(r" +", " ", body))

    def other_string(self, values: list[str]) -> str:
        r"""Return a rule matching a JSON string whose value is none of ``values``.

        Every spelling counts: an escape that writes a character of a value (``\/``,
        ``\u0061``) is read as that character. The values hold no character beyond U+FFFF.
        """
        trie = _Trie()
        for value in sorted(set(values)):
            node = trie
            for char in value:
                node = node.children.setdefault(char, _Trie())
            node.ends_name = True

        def rest_of(node: _Trie, prefix: str) -> str:
            children = sorted(node.children)
            raw = "".join(_class_char(c) for c in children if c not in '"\\' and ord(c) >= 0x20)
            escapes = "".join(_class_char(e) for e, c in _ESCAPED.items() if c not in children)
            other = [f'[^"\\\\\\x00-\\x1F{raw}]']
            if escapes:
                other.append(f'"\\\\" [{escapes}]')
            hex_other = _hex_not([f"{ord(c):04X}" for c in children], 4)
            if hex_other is not None:
                other.append(f'"\\\\u" {hex_other}')
            alternatives = [] if node.ends_name else ['"\\""']
            alternatives.append(f'({" | ".join(other)}) char* "\\""')
            for char in children:
                spellings = [_literal(f"\\{e}") for e, c in _ESCAPED.items() if c == char]
                if char not in '"\\' and ord(char) >= 0x20:
                    spellings.insert(0, _literal(char))
                code = " ".join(_hex_digit(d) for d in f"{ord(char):04X}")
                spellings.append(f'"\\\\u" {code}')
                name = self.rule(
                    f"string-not-{prefix + char}", rest_of(node.children[char], prefix + char)
                )
                alternatives.append(f"({' | '.join(spellings)}) {name}")
            return " | ".join(alternatives)

        return self.rule("other-string", f'"\\"" ({rest_of(trie, "")})')

    def excluding(self, names: list[str]) -> str:
        """Return a rule matching a JSON string key that is none of ``names``."""
        names = sorted(set(names))
        if not names:
            return "string"
        trie = _Trie()
        for name in names:
            node = trie
            for char in name:
                node = node.children.setdefault(char, _Trie())
            node.ends_name = True

        def rest_of(node: _Trie, prefix: str) -> str:
            children = sorted(node.children)
            others = "".join(_class_char(c) for c in children)
            alternatives = []
            if not node.ends_name:
                alternatives.append('"\\""')
            other = f'[^"\\\\\\x00-\\x1F{others}]'
            alternatives.append(
                f'({other} | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{{4}})) char* "\\""'
            )
            for char in children:
                name = self.rule(
                    f"key-not-{prefix + char}", rest_of(node.children[char], prefix + char)
                )
                alternatives.append(f"{_literal(char)} {name}")
            return " | ".join(alternatives)

        return self.rule("other-key", f'"\\"" ({rest_of(trie, "")})')


@dataclass
class _Trie:
    """The declared property names, a character a level."""

    children: dict[str, _Trie] = field(default_factory=dict)
    ends_name: bool = False


def _strings(value: JsonValue) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


_Conditional = tuple[dict[str, JsonValue], str]
"""A schema object's ``if`` with ``then`` or ``else``, and its JSON path."""


def _conditionals(
    node: dict[str, JsonValue], path: str
) -> tuple[list[_Conditional], dict[str, JsonValue]]:
    """Return the conditionals of ``node``, and ``node`` without them.

    They are its own ``if`` and those of ``allOf`` branches that hold nothing else.
    """
    found: list[_Conditional] = []
    rest = dict(node)
    if "if" in node and ("then" in node or "else" in node):
        found.append(({key: node[key] for key in _CONDITIONAL if key in node}, path))
        rest = {key: item for key, item in node.items() if key not in _CONDITIONAL}
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        kept: list[JsonValue] = []
        for index, item in enumerate(all_of):
            if not isinstance(item, dict) or not set(item) & _VALIDATION <= set(_CONDITIONAL):
                kept.append(item)
            elif "if" in item and ("then" in item or "else" in item):
                found.append((item, child_path(child_path(path, "allOf"), index)))
            # else an if alone, or then/else alone: they constrain nothing.
        if len(kept) != len(all_of) and found:
            rest = {key: item for key, item in rest.items() if key != "allOf"}
            if kept:
                rest["allOf"] = kept
    return found, rest


def _same(left: JsonValue, right: JsonValue) -> bool:
    """Whether two JSON values are equal as JSON Schema compares them (``1`` is ``1.0``)."""
    return _json_key(left) == _json_key(right)


def _type_list(value: JsonValue) -> list[str] | None:
    """Return a ``type`` keyword's types, or ``None`` where it is not a type or a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [item for item in value if isinstance(item, str)]
    return None


def _has_value(node: dict[str, JsonValue], value: JsonValue) -> bool:
    """Whether ``value`` meets ``node``'s ``type``, ``const``, ``enum`` and ``not`` of strings."""
    types = _type_list(node.get("type"))
    kind = json_type(value)
    if types is not None and kind not in types and not (kind == "integer" and "number" in types):
        return False
    if "const" in node and not _same(node["const"], value):
        return False
    excluded = node.get("not")
    strings = _chosen_strings(excluded) if isinstance(excluded, dict) else None
    if strings is not None and any(_same(string, value) for string in strings):
        return False
    enum = node.get("enum")
    return not isinstance(enum, list) or any(_same(item, value) for item in enum)


def _other_types(value: JsonValue) -> JsonValue:
    """Return the types ``type: value`` rejects, or ``None`` where no ``type`` can say so.

    The numbers that are not integers have no type of their own.
    """
    types = _type_list(value)
    if types is None or ("integer" in types and "number" not in types):
        return None
    others: list[JsonValue] = [kind for kind in _TYPES if kind not in types]
    return others[0] if len(others) == 1 else others


def _meet_types(left: JsonValue, right: JsonValue) -> JsonValue:
    """Return the types both ``type`` keywords allow (``[]`` for none), ``None`` if unreadable."""
    first, second = _type_list(left), _type_list(right)
    if first is None or second is None:
        return None
    both: list[str] = []
    for kind in first:
        if kind in second:
            both.append(kind)
        elif {kind, *second} >= {"integer", "number"} and kind in ("integer", "number"):
            both.append("integer")  # an integer is a number
    kinds: list[JsonValue] = list(dict.fromkeys(both))
    return kinds[0] if len(kinds) == 1 else kinds


def _trivial(node: JsonValue) -> bool:
    """Whether ``node`` takes every value: ``true``, or annotations only."""
    return node is True or (isinstance(node, dict) and not set(node) & _VALIDATION)


def _both(left: JsonValue, right: JsonValue) -> JsonValue:
    """Return a schema meaning both subschemas (``false`` where plainly none meets both)."""
    if _trivial(left):
        return right
    if _trivial(right):
        return left
    if _same(left, right):
        return left
    parts = [*_parts(left), *_parts(right)]
    if any(part is False for part in parts) or _disjoint(parts):
        return False
    return {"allOf": parts}


def _parts(node: JsonValue) -> list[JsonValue]:
    """Return the schemas an ``allOf``-only schema puts together, or ``[node]``."""
    if isinstance(node, dict) and set(node) == {"allOf"} and isinstance(node["allOf"], list):
        return list(node["allOf"])
    return [node]


def _disjoint(parts: list[JsonValue]) -> bool:
    """Whether no value meets all ``parts``.

    As their ``type``, ``const``, ``enum`` and ``not`` of strings show.
    """
    checks = [part for part in parts if isinstance(part, dict)]
    types: JsonValue = [*_TYPES, "integer"]
    for check in checks:
        if "type" in check and types is not None:
            types = _meet_types(types, check["type"])
    if types == []:
        return True
    for check in checks:
        enum = check.get("enum")
        values = [check["const"]] if "const" in check else enum if isinstance(enum, list) else None
        if values is not None and not any(
            all(_has_value(other, value) for other in checks) for value in values
        ):
            return True
    return False


def _number(value: JsonValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _conjoin(
    left: dict[str, JsonValue], right: dict[str, JsonValue]
) -> dict[str, JsonValue] | None:
    """Return one schema meaning both (their validation keywords), or ``None`` where unsafe.

    A keyword in one only is taken as it is. In both: ``required`` names and ``type``s are
    put together, bounds take the narrower, ``enum``s the values in both, ``items`` schemas
    both; ``properties`` and ``additionalProperties`` are put together name by name (a
    property one side does not declare meets that side's ``additionalProperties``). Any
    other keyword must be equal in both, except one the grammar leaves out anyway (``not``,
    ``multipleOf``...): one value is kept, for the note.
    """
    for key, neighbours in _READS.items():
        for other in neighbours:
            for one, two in ((left, right), (right, left)):
                if (
                    key in one
                    and other in two
                    and (other not in one or not _same(one[other], two[other]))
                ):
                    return None
    out = {key: item for key, item in left.items() if key in _VALIDATION}
    shaped = any(key in left for key in _OBJECT_SHAPE) and any(
        key in right for key in _OBJECT_SHAPE
    )
    if shaped:
        if "patternProperties" in left or "patternProperties" in right:
            # Which names the patterns take is not known here.
            if any(not _same(left.get(key), right.get(key)) for key in _OBJECT_SHAPE):
                return None
        else:
            shape = _object_shape(left, right)
            if shape is None:
                return None
            out.update(shape)
    for key, item in right.items():
        if key not in _VALIDATION or (shaped and key in _OBJECT_SHAPE):
            continue
        if key not in out or _same(out[key], item):
            out[key] = item
            continue
        together = _keyword_both(key, out[key], item, left, right)
        if together is not None:
            out[key] = together
        elif key not in _NEVER or key in ("patternProperties", "not"):
            return None
        # else the grammar leaves the keyword out and notes it, whichever value it keeps.
    return _without_excluded(out)


def _without_excluded(node: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """Return ``node`` with a ``not`` of strings applied to its ``const``/``enum`` values.

    So that the values are written as literals, not left beside a ``not``.
    """
    excluded = node.get("not")
    strings = _chosen_strings(excluded) if isinstance(excluded, dict) else None
    if strings is None or not ("const" in node or "enum" in node):
        return node
    out = {key: item for key, item in node.items() if key != "not"}
    values = [out["const"]] if "const" in out else out["enum"]
    if isinstance(values, list):
        kept = [v for v in values if not any(_same(v, string) for string in strings)]
        out["enum"] = kept  # beside a const: the const if it is kept, else nothing
    return out


def _keyword_both(
    key: str,
    first: JsonValue,
    second: JsonValue,
    left: dict[str, JsonValue],
    right: dict[str, JsonValue],
) -> JsonValue:
    """Return one value of ``key`` meaning both values, or ``None`` where there is none."""
    if key == "required" and isinstance(first, list) and isinstance(second, list):
        return list(dict.fromkeys([*first, *second]))
    if key == "not":
        # Neither a nor b is not (a or b); strings excluded by both are one enum.
        strings = [
            _chosen_strings(side) if isinstance(side, dict) else None for side in (first, second)
        ]
        if strings[0] is not None and strings[1] is not None:
            return {"enum": list(dict.fromkeys([*strings[0], *strings[1]]))}
        return {"anyOf": [first, second]}
    if key == "type":
        return _meet_types(first, second)
    if key == "enum" and isinstance(first, list) and isinstance(second, list):
        return [item for item in first if any(_same(item, other) for other in second)]
    if key == "uniqueItems" and isinstance(first, bool) and isinstance(second, bool):
        return first or second
    if key == "items" and "prefixItems" not in left and "prefixItems" not in right:
        if not isinstance(first, list) and not isinstance(second, list):
            return _both(first, second)
        return None
    draft4 = any(
        isinstance(side.get(bound), bool)
        for side in (left, right)
        for bound in ("exclusiveMinimum", "exclusiveMaximum")
    )
    if not _number(first) or not _number(second) or (draft4 and key in (*_RANGE,)):
        return None
    if key in _LOWER_BOUNDS or key == "minimum":
        return max(first, second)  # type: ignore[type-var]
    if key in _UPPER_BOUNDS or key == "maximum":
        return min(first, second)  # type: ignore[type-var]
    return None


def _object_shape(
    left: dict[str, JsonValue], right: dict[str, JsonValue]
) -> dict[str, JsonValue] | None:
    """Return ``properties`` and ``additionalProperties`` meaning both sides' (no patterns)."""
    first = left.get("properties", {})
    second = right.get("properties", {})
    if not isinstance(first, dict) or not isinstance(second, dict):
        return None
    first_extra = left.get("additionalProperties", True)
    second_extra = right.get("additionalProperties", True)
    shape: dict[str, JsonValue] = {}
    if "properties" in left or "properties" in right:
        names = [*first, *(name for name in second if name not in first)]
        shape["properties"] = {
            name: _both(first.get(name, first_extra), second.get(name, second_extra))
            for name in names
        }
    if "additionalProperties" in left or "additionalProperties" in right:
        shape["additionalProperties"] = _both(first_extra, second_extra)
    return shape


def _empty(node: dict[str, JsonValue]) -> bool:
    """Whether plainly no value meets ``node``.

    That is: no type, no value, or a required name that an object's schema forbids.
    """
    if node.get("type") == []:
        return True
    enum = node.get("enum")
    if isinstance(enum, list) and (
        not enum or ("const" in node and not any(_same(node["const"], v) for v in enum))
    ):
        return True
    return _type_list(node.get("type")) == ["object"] and _no_object(node)


def _no_object(node: dict[str, JsonValue]) -> bool:
    """Whether ``node`` requires a name its properties forbid, so that no object meets it."""
    if "patternProperties" in node:
        return False
    properties = node.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    extra = node.get("additionalProperties", True)
    required = node.get("required")
    return isinstance(required, list) and any(
        isinstance(name, str) and properties.get(name, extra) is False for name in required
    )


# JSON's one-letter escapes, and the character each writes.
_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = "0123456789ABCDEF"


def _hex_digit(digit: str) -> str:
    """Return a GBNF expression for one hex digit, either case."""
    return f"[{digit}{digit.lower()}]" if digit.isalpha() else _literal(digit)


def _hex_not(codes: list[str], width: int) -> str | None:
    """Return an expression for ``width`` hex digits (either case) spelling none of ``codes``.

    ``None`` when there are none such.
    """
    if width == 0:
        return None
    firsts = sorted({code[0] for code in codes})
    others = "".join(d + (d.lower() if d.isalpha() else "") for d in _HEX if d not in firsts)
    after = _repeat("[0-9a-fA-F]", width - 1, width - 1)
    parts = [f"[{others}] {after}".strip()] if others else []
    for first in firsts:
        rest = _hex_not([code[1:] for code in codes if code[0] == first], width - 1)
        if rest is not None:
            parts.append(f"{_hex_digit(first)} {rest}")
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else "(" + " | ".join(parts) + ")"


def _chosen_strings(node: dict[str, JsonValue]) -> list[str] | None:
    """Return the values of a ``const``/``enum`` schema that takes strings only, else ``None``.

    Also ``None`` for a value with a character beyond U+FFFF, which JSON escapes in two.
    """
    if not set(node) & _VALIDATION <= _CHOICE or ("const" in node) == ("enum" in node):
        return None
    values = [node["const"]] if "const" in node else node["enum"]
    if not isinstance(values, list):
        return None
    kept = [value for value in values if _has_value(node, value)]
    strings = [value for value in kept if isinstance(value, str)]
    if len(strings) != len(kept) or any(ord(c) > 0xFFFF for v in strings for c in v):
        return None
    return strings


def _excluded_strings(node: dict[str, JsonValue]) -> list[str] | None:
    """Return the strings a string schema's ``not`` excludes, where the grammar can write it.

    That is a schema of ``type: string`` and a ``not`` of string ``const``/``enum`` values
    only, nothing else.
    """
    test = node.get("not")
    if set(node) & _VALIDATION != {"type", "not"} or node["type"] != "string":
        return None
    if not isinstance(test, dict):
        return None
    return _chosen_strings(test)
