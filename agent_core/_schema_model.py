"""JSON Schema to an exact, dynamic Pydantic model.

``model_from_schema(schema)`` returns a model class that accepts exactly the values the schema
accepts: no coercion, every keyword enforced by one call into the compiled engine, and a valid
value kept as given (never changed or copied). An object schema gives a :class:`SchemaModel`
with a field per property (nested object schemas become nested classes); any other root gives a
:class:`SchemaRootModel` whose ``root`` holds the value. A property name that is not a Python
identifier or clashes with Pydantic gets a field name such as ``a_b`` or ``json_`` and keeps its
JSON name as the alias.

Invalid data raises Pydantic's ``ValidationError`` with one ``json_schema`` error per problem
(``ctx["path"]`` is the JSON path). Nested classes and Pydantic's validators are built on first
use; models and compiled schemas are cached (:func:`clear_caches` empties them).
"""

from __future__ import annotations

import copy
import hashlib
import keyword
import re
import threading
import unicodedata
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    NamedTuple,
    Optional,
    Protocol,
    Self,
    TypeVar,
    cast,
)
from urllib.parse import unquote, urljoin

import pydantic_core
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    JsonValue,
    ModelWrapValidatorHandler,
    RootModel,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from agent_contracts._errors import SchemaError
from agent_core._caches import SchemaCache, clear_caches, schema_cache
from agent_core._compiled_schema import CompiledSchema, compile_canonical, compile_schema
from agent_core._odd_keys import NOT_READ, build_with_odd_keys, dumped, surrogate_json
from agent_core._refs import lookup_schema
from agent_core._schema_documents import (
    canonical_json,
    resolve_pointer,
    schema_hash,
    validation_vocabulary,
)
from agent_core._surrogates import escape_surrogates

__all__ = [
    "CompiledSchema",
    "SchemaModel",
    "SchemaRootModel",
    "build_accepted",
    "clear_caches",
    "compile_schema",
    "model_from_schema",
    "schema_hash",
]

_MODEL_CACHE_SIZE = 256


# --- building models ----------------------------------------------------------------------------


def _allowed_types(conjuncts: list[_Node]) -> set[str] | None:
    """Return the JSON types all conjuncts allow, or None when none of them says."""
    allowed: set[str] | None = None
    for each in conjuncts:
        declared = each.schema.get("type")
        names = [declared] if isinstance(declared, str) else declared
        if isinstance(names, list):
            kinds = {name for name in names if isinstance(name, str)}
            allowed = kinds if allowed is None else allowed & kinds
    return allowed


class _Node(NamedTuple):
    """A schema object and where it sits (``doc`` is None for the root document)."""

    schema: Mapping[str, JsonValue]
    doc: str | None
    pointer: str

    @property
    def location(self) -> str:
        return f"#{self.pointer}" if self.doc is None else f"{self.doc}#{self.pointer}"


class _Deferred:
    """Annotation metadata for a nested model type that is only built when Pydantic needs it.

    Creating Pydantic classes is the slow part of loading a schema.
    """

    __slots__ = ("_factory", "_lock", "_resolved", "nullable")

    def __init__(
        self, factory: Callable[[], object], nullable: bool, lock: threading.RLock
    ) -> None:
        self._factory = factory
        self._resolved: object = None
        self._lock = lock
        self.nullable = nullable

    def resolve(self) -> object:
        """Return the field type, creating the nested classes it needs on first call."""
        with self._lock:
            if self._resolved is None:
                inner = self._factory()
                self._resolved = cast(Any, Optional)[inner] if self.nullable else inner
            return self._resolved

    def __get_pydantic_core_schema__(
        self, source: object, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """Give Pydantic the schema of the real field type."""
        return handler.generate_schema(self.resolve())


class _Builder:
    """Builds the model classes for one compiled schema."""

    def __init__(self, compiled: CompiledSchema, name: str) -> None:
        self.compiled = compiled
        self.draft = compiled.draft
        self.names: set[str] = set()
        self.memo: dict[int, type[SchemaModel]] = {}
        self.arrays: list[int] = []
        self.lock = threading.RLock()
        self.root_name = self.class_name(name if name.isidentifier() else _pascal(name))
        root_id = compiled.schema.get("$id") if isinstance(compiled.schema, dict) else None
        self.base = root_id if isinstance(root_id, str) else ""
        schema = compiled.schema
        # Without the validation vocabulary, ``type`` constrains nothing: every value stays plain.
        self.typed = not isinstance(schema, dict) or validation_vocabulary(schema)

    def class_name(self, hint: str) -> str:
        """Reserve and return a class name based on ``hint``, unique within this build."""
        candidate, number = hint, 1
        while candidate in self.names:
            number += 1
            candidate = f"{hint}{number}"
        self.names.add(candidate)
        return candidate

    def deref(self, node: _Node, ref: str) -> _Node | None:
        """Follow a ``$ref`` this builder understands (JSON pointers, registered documents)."""
        uri, _, fragment = ref.partition("#")
        pointer = unquote(fragment)
        if pointer and not pointer.startswith("/"):
            return None
        doc = node.doc
        document: object = self.compiled.schema if doc is None else lookup_schema(doc)
        if uri:
            base = doc or self.base
            doc = urljoin(base, uri)
            document = lookup_schema(doc)
            if document is None and doc == urljoin(base, ""):
                doc, document = None, self.compiled.schema
        target = resolve_pointer(cast(JsonValue, document), pointer)
        return _Node(target, doc, pointer) if isinstance(target, Mapping) else None

    def conjuncts(self, node: _Node) -> list[_Node] | None:
        """Return the schemas every value here must satisfy (``$ref`` targets and ``allOf``)."""
        found: list[_Node] = []
        seen: set[int] = set()
        pending = [node]
        while pending:
            current = pending.pop(0)
            if id(current.schema) in seen:
                continue
            seen.add(id(current.schema))
            ref = current.schema.get("$ref")
            if isinstance(ref, str):
                target = self.deref(current, ref)
                if target is None:
                    return None
                if self.draft < 2019:
                    pending.insert(0, target)
                    continue
                pending.append(target)
            found.append(current)
            members = current.schema.get("allOf")
            for index, member in enumerate(members if isinstance(members, list) else []):
                if isinstance(member, Mapping):
                    pending.append(_Node(member, current.doc, f"{current.pointer}/allOf/{index}"))
        return found

    def annotation(
        self, schema: JsonValue, doc: str | None, pointer: str, hint: str
    ) -> _Deferred | None:
        """Return the (deferred) field type for a subschema, or None for a plain JSON value."""
        if not isinstance(schema, Mapping) or not self.typed:
            return None
        conjuncts = self.conjuncts(_Node(schema, doc, pointer))
        allowed = _allowed_types(conjuncts) if conjuncts else None
        if not conjuncts or allowed is None:
            return None
        nullable = "null" in allowed
        if allowed - {"null"} == {"object"}:
            if not any(isinstance(each.schema.get("properties"), Mapping) for each in conjuncts):
                return None  # a free-form object (a map) stays a plain dict
            found = conjuncts
            return _Deferred(
                lambda: self.object_class(found, hint, pointer, root=False), nullable, self.lock
            )
        if allowed - {"null"} == {"array"}:
            element = self.element(conjuncts, hint)
            if element is not None:
                return _Deferred(lambda: cast(Any, list)[element.resolve()], nullable, self.lock)
        return None

    def element(self, conjuncts: list[_Node], hint: str) -> _Deferred | None:
        """Return the item type of an array whose items all have one known shape.

        An array whose items lead back to itself through arrays alone (``{"type": "array",
        "items": {"$ref": "#"}}``) holds only arrays (and nulls), never an object: its values
        stay plain JSON. Recursion that passes through an object is built lazily there.
        """
        key = id(conjuncts[0].schema)
        if key in self.arrays:
            return None
        self.arrays.append(key)
        try:
            for each in conjuncts:
                items = each.schema.get("items")
                if isinstance(items, Mapping) and not (
                    self.draft >= 2020 and "prefixItems" in each.schema
                ):
                    pointer = f"{each.pointer}/items"
                    return self.annotation(items, each.doc, pointer, f"{hint}Item")
            return None
        finally:
            self.arrays.pop()

    def object_class(
        self, conjuncts: list[_Node], hint: str, pointer: str, *, root: bool
    ) -> type[SchemaModel]:
        """Return the model class for an object schema, creating it (once) if needed."""
        primary = conjuncts[0]
        known = self.memo.get(id(primary.schema))
        if known is not None:
            return known
        if root:
            name = self.root_name
        elif primary.pointer != pointer or primary.doc is not None:
            name = self.class_name(_pascal(primary.pointer.rsplit("/", 1)[-1] or "Model"))
        elif hint == self.root_name:
            name = self.class_name(f"{hint}Object")
        else:
            name = self.class_name(hint)
        properties: dict[str, tuple[JsonValue, str | None, str]] = {}
        required: set[str] = set()
        for each in conjuncts:
            declared = each.schema.get("properties")
            for prop, sub in declared.items() if isinstance(declared, Mapping) else ():
                spot = f"{each.pointer}/properties/{_escape(prop)}"
                properties.setdefault(prop, (sub, each.doc, spot))
            listed = each.schema.get("required")
            if isinstance(listed, list):
                required.update(item for item in listed if isinstance(item, str))
        field_names = _field_names(list(properties))
        fields: dict[str, Any] = {}
        for prop, (sub, doc, spot) in properties.items():
            deferred = self.annotation(sub, doc, spot, f"{name}{_pascal(prop)}")
            annotation = _Json if deferred is None else Annotated[object, deferred]
            if field_names[prop] == prop:
                default: Any = ... if prop in required else None
            else:
                default = Field(alias=prop) if prop in required else Field(None, alias=prop)
            fields[field_names[prop]] = (annotation, default)
        description = primary.schema.get("description")
        model = cast(
            type[SchemaModel],
            create_model(
                name,
                __base__=_CheckedModel if root else SchemaModel,
                __module__=__name__,
                __doc__=description if isinstance(description, str) else None,
                **fields,
            ),
        )
        model.__agentshape_schema__ = self.compiled.schema if root else dict(primary.schema)
        model.__agentshape_location__ = "#" if root else primary.location
        model.__agentshape_root__ = self.compiled
        self.memo[id(primary.schema)] = model
        return model

    def build(self) -> type[SchemaModel] | type[SchemaRootModel]:
        """Create the root class; nested classes are created when Pydantic first needs them."""
        schema = self.compiled.schema
        conjuncts = self.conjuncts(_Node(schema, None, "")) if isinstance(schema, Mapping) else None
        if self.typed and conjuncts and _allowed_types(conjuncts) == {"object"}:
            return self.object_class(conjuncts, self.root_name, "", root=True)
        deferred = self.annotation(schema, None, "", self.root_name)
        model = cast(
            type[SchemaRootModel],
            create_model(
                self.root_name,
                __base__=_CheckedRootModel,
                __module__=__name__,
                root=(cast(Any, _Json if deferred is None else Annotated[object, deferred]), ...),
            ),
        )
        model.__agentshape_schema__ = schema
        model.__agentshape_root__ = self.compiled
        return model


_models: SchemaCache[tuple[str, str, bool], type[SchemaModel] | type[SchemaRootModel]]
_models = schema_cache("agent_core.models", _MODEL_CACHE_SIZE)


def model_from_schema(
    schema: Mapping[str, JsonValue] | bool,
    *,
    name: str = "Output",
    lenient: bool = False,
    source: str | None = None,
) -> type[SchemaModel] | type[SchemaRootModel]:
    """Return a Pydantic model class that accepts exactly the values ``schema`` accepts.

    The class is a :class:`SchemaModel` for an object schema (``"type": "object"``) and a
    :class:`SchemaRootModel` otherwise; the same schema, name and ``lenient`` give the same class.

    Args:
        schema: The JSON Schema (Draft-7 unless its ``$schema`` says otherwise).
        name: The root class name; nested classes are named after it (``OutputIssuesItem``) or
            after their definition (``#/definitions/comment`` gives ``Comment``).
        lenient: When True, ``format`` is not asserted.
        source: Where the schema came from, used in error messages.

    Returns:
        The model class.

    Raises:
        InvalidSchemaError: If the schema is not valid under its draft's meta-schema (``.path``
            names the fault) or has an invalid regular expression.
        SchemaReferenceError: If a ``$ref`` does not resolve.
    """
    text = canonical_json(schema, source=source)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    key = (digest, name, lenient)
    cached = _models.get(key)
    root = cached.__agentshape_root__ if cached is not None else None
    if cached is not None and root is not None and root.fresh:
        return cached
    compiled = compile_canonical(schema, text, digest, lenient=lenient, source=source)
    model = _Builder(compiled, name).build()
    _models.put(key, model)
    return model


_Json: object = object
"""The field type of a JSON value kept exactly as given: the engine has already validated it,
and Pydantic treats ``object`` as "anything", so it neither checks nor converts the value (and
serializes it by its runtime type)."""


_checking: ContextVar[bool] = ContextVar("agentshape_checking", default=False)


_ExtraValues = Literal["allow", "ignore", "forbid"]


def _pydantic_error(title: str, compiled: CompiledSchema, data: object) -> ValidationError:
    """Build Pydantic's ``ValidationError`` listing every schema problem with ``data``."""
    details: list[InitErrorDetails] = []
    for parts, value, issue in compiled.explain(cast(JsonValue, data)):
        ctx: dict[str, object] = {"message": issue.message, "path": issue.path}
        if issue.keyword is not None:
            ctx["keyword"] = issue.keyword
        if issue.schema_path is not None:
            ctx["schema_path"] = issue.schema_path
        details.append(
            InitErrorDetails(
                type=PydanticCustomError("json_schema", "{message}", ctx),
                loc=tuple(
                    escape_surrogates(part) if isinstance(part, str) else part for part in parts
                ),
                input=value,
            )
        )
    return ValidationError.from_exception_data(title, details)


def _plain(data: object) -> object:
    """Return ``data`` with any agentshape model inside it turned back into JSON data."""
    if isinstance(data, SchemaModel | SchemaRootModel):
        return data.to_data()
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(data, dict):
        return {key: _plain(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_plain(value) for value in data]
    return data


def _check(cls: type[SchemaModel] | type[SchemaRootModel], data: object) -> None:
    """Raise Pydantic's ``ValidationError`` unless ``data`` satisfies the class's schema."""
    compiled = cls.agentshape_compiled()
    if compiled.is_valid(cast(JsonValue, data)):
        return
    plain = _plain(data)
    if plain is data or not compiled.is_valid(cast(JsonValue, plain)):
        raise _pydantic_error(cls.__name__, compiled, plain)


def _enforce(
    cls: type[SchemaModel] | type[SchemaRootModel],
    data: object,
    handler: Callable[[object], object],
) -> object:
    """Validate ``data`` with the engine once, then build the model without re-checking."""
    if _checking.get() or isinstance(data, cls):
        return handler(data)
    _check(cls, data)
    token = _checking.set(True)
    try:
        return handler(data)
    except ValidationError as error:
        if not any(item["type"] == "string_unicode" for item in error.errors()):
            raise
        return build_with_odd_keys(data, handler)  # a lone surrogate in an object key
    finally:
        _checking.reset(token)


def build_accepted(cls: type[BaseModel], data: object) -> BaseModel:
    """Build ``cls`` from data its own compiled schema has just accepted, without checking again.

    A run judges the output with the contract's compiled schema before building the output
    object; checking it once more while building would validate a large output twice.

    Args:
        cls: A class built by ``model_from_schema`` (any other Pydantic class is validated as
            usual).
        data: The accepted value.

    Returns:
        The instance.

    Raises:
        pydantic.ValidationError: The value cannot be built (Pydantic's own checks).
    """
    token = _checking.set(issubclass(cls, SchemaModel | SchemaRootModel))
    try:
        return cls.model_validate(data)
    finally:
        _checking.reset(token)


def _parse_json(title: str, json_data: str | bytes | bytearray) -> object:
    r"""Parse JSON text strictly (no NaN or Infinity), as Pydantic's ``json_invalid`` error.

    Pydantic refuses a lone surrogate escape (``"\\ud83d"``), which is JSON: such text is read
    with Python's ``json`` instead.
    """
    try:
        return pydantic_core.from_json(json_data, allow_inf_nan=False)
    except ValueError as error:
        loaded = surrogate_json(json_data)
        if loaded is not NOT_READ:
            return loaded
        raise ValidationError.from_exception_data(
            title,
            [
                InitErrorDetails(
                    type="json_invalid", loc=(), input=json_data, ctx={"error": str(error)}
                )
            ],
        ) from error


def _schema_document(schema: JsonValue) -> dict[str, Any]:
    """Return a copy of a schema as a JSON Schema object (booleans become their object form)."""
    if schema is True:
        return {}
    if schema is False:
        return {"not": {}}
    return cast(dict[str, Any], copy.deepcopy(schema))


class _Validating(Protocol):
    """A model class: what :meth:`_SchemaBacked.model_validate_json` calls."""

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: _ExtraValues | None = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self: ...


_V = TypeVar("_V", bound=_Validating)


class _SchemaBacked:
    """What both model bases share: the schema a class was built from, and what it answers."""

    __agentshape_schema__: ClassVar[JsonValue] = True
    """The designer's (sub)schema this class was built from."""
    __agentshape_location__: ClassVar[str] = "#"
    """Where the schema sits: ``#`` for a root, ``#/pointer`` (or ``uri#/pointer``) if nested;
    root models are never nested."""
    __agentshape_root__: ClassVar[CompiledSchema | None] = None
    """The compiled root schema of the model this class belongs to."""

    @classmethod
    def agentshape_compiled(cls, lenient: bool | None = None) -> CompiledSchema:
        """Return the compiled schema that validates this class's values.

        Args:
            lenient: Override whether formats are asserted; ``None`` keeps the model's setting.

        Raises:
            SchemaError: If the class was not built by :func:`model_from_schema`.
        """
        return _compiled_for(cls, lenient)

    @classmethod
    def model_validate_json(
        cls: type[_V],
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        extra: _ExtraValues | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> _V:
        """Parse JSON text (NaN and Infinity refused), validate it and build the model.

        Raises:
            pydantic.ValidationError: For text that is not JSON, or listing every problem.
        """
        return cls.model_validate(
            _parse_json(cls.__name__, json_data),
            strict=strict,
            extra=extra,
            context=context,
            by_alias=by_alias,
            by_name=by_name,
        )

    @classmethod
    def model_json_schema(
        cls,
        by_alias: bool | None = None,
        ref_template: str = "#/$defs/{model}",
        schema_generator: type[GenerateJsonSchema] = GenerateJsonSchema,
        mode: JsonSchemaMode = "validation",
        *,
        union_format: Literal["any_of", "primitive_type_array"] = "any_of",
    ) -> dict[str, Any]:
        """Return a copy of the designer's schema (the arguments are accepted and ignored)."""
        return _schema_document(cls.__agentshape_schema__)


class SchemaModel(_SchemaBacked, BaseModel):
    """Base of every object-shaped model built by :func:`model_from_schema`."""

    model_config = ConfigDict(
        extra="allow",
        protected_namespaces=(),
        serialize_by_alias=True,
        validate_by_alias=True,
        validate_by_name=False,
        defer_build=True,
    )

    def to_data(self) -> JsonValue:
        """Return the validated value exactly as it was given (absent properties stay absent).

        Returns:
            The JSON value; a new object, so changing it does not change the model.
        """
        try:
            return cast(JsonValue, self.model_dump(by_alias=True, exclude_unset=True))
        except ValueError:  # a key with a lone surrogate, which Pydantic's serializer refuses
            return cast(JsonValue, dumped(self))

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: _ExtraValues | None = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        """Validate ``obj`` against the schema and build the model.

        Raises:
            pydantic.ValidationError: Listing every problem (path and message) when invalid.
        """
        if cls.__agentshape_location__ != "#":
            _check(cls, obj)
        return super().model_validate(
            obj,
            strict=strict,
            extra=extra,
            from_attributes=from_attributes,
            context=context,
            by_alias=by_alias,
            by_name=by_name,
        )

    @classmethod
    def model_validate_strings(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: _ExtraValues | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        """Validate like :meth:`model_validate`: strings are never coerced to other types.

        Raises:
            pydantic.ValidationError: Listing every problem when invalid.
        """
        return cls.model_validate(
            obj, strict=strict, extra=extra, context=context, by_alias=by_alias, by_name=by_name
        )


class SchemaRootModel(_SchemaBacked, RootModel[JsonValue]):
    """Base of models whose root is not an object schema (arrays, scalars, unions...).

    The value is in ``root``; :meth:`to_data` returns it unchanged.
    """

    model_config = ConfigDict(defer_build=True)

    def to_data(self) -> JsonValue:
        """Return the validated value exactly as it was given.

        Returns:
            The JSON value; a new object, so changing it does not change the model.
        """
        try:
            return cast(JsonValue, self.model_dump(by_alias=True, exclude_unset=True))
        except ValueError:  # a key with a lone surrogate, which Pydantic's serializer refuses
            return cast(JsonValue, dumped(self))


class _CheckedModel(SchemaModel):
    """A root object model: every validation goes through the compiled schema first."""

    @model_validator(mode="wrap")
    @classmethod
    def _agentshape_check(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        return cast(Self, _enforce(cls, data, handler))


class _CheckedRootModel(SchemaRootModel):
    """A root model for a non-object schema, checked by the compiled schema first."""

    @model_validator(mode="wrap")
    @classmethod
    def _agentshape_check(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        return cast(Self, _enforce(cls, data, handler))


def _compiled_for(cls: type[_SchemaBacked], lenient: bool | None) -> CompiledSchema:
    """Return the compiled schema for a generated class (its subschema when nested)."""
    root = cls.__agentshape_root__
    if root is None:
        raise SchemaError(f"{cls.__name__} was not built by model_from_schema and has no schema")
    if lenient is not None and lenient != root.lenient:
        root = compile_schema(cast(Mapping[str, JsonValue], root.schema), lenient=lenient)
    return root.at(cls.__agentshape_location__)


_RESERVED = frozenset(dir(SchemaModel)) | frozenset(dir(SchemaRootModel)) | {"Config"}


_NON_WORD = re.compile(r"\W")


_ALPHANUMERIC_RUNS = re.compile(r"[0-9A-Za-z]+")


def _usable(key: str) -> bool:
    """Whether a property name can be a field name as it is."""
    return (
        key.isidentifier()
        and not keyword.iskeyword(key)
        and not key.startswith("_")
        and key not in _RESERVED
        and unicodedata.normalize("NFKC", key) == key
    )


def _field_names(keys: list[str]) -> dict[str, str]:
    """Map each property name to a unique, safe field name (itself whenever possible)."""
    names = {key: key for key in keys if _usable(key)}
    taken = set(names.values())
    for key in keys:
        if key in names:
            continue
        base = _NON_WORD.sub("_", unicodedata.normalize("NFKC", key))
        if not base or base[0].isdigit() or base[0] == "_":
            base = f"f_{base}"
        candidate = base
        while not _usable(candidate) or candidate in taken:
            candidate += "_"
        names[key] = candidate
        taken.add(candidate)
    return names


def _pascal(text: str) -> str:
    """Return ``text`` as a PascalCase identifier fragment (``line-items`` -> ``LineItems``)."""
    words = _ALPHANUMERIC_RUNS.findall(text)
    joined = "".join(word[:1].upper() + word[1:] for word in words)
    return joined if joined and not joined[0].isdigit() else f"N{joined}"


def _escape(key: str) -> str:
    """Escape a key for use in a JSON pointer."""
    return key.replace("~", "~0").replace("/", "~1")
