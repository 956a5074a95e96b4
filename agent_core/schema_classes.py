"""The classes dynamic models are made of: ``SchemaModel`` and ``SchemaRootModel``."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import (
    Any,
    ClassVar,
    Literal,
    Protocol,
    Self,
    TypeVar,
    cast,
)

import pydantic_core
from pydantic import (
    BaseModel,
    ConfigDict,
    JsonValue,
    ModelWrapValidatorHandler,
    RootModel,
    ValidationError,
    model_validator,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode
from pydantic_core import InitErrorDetails, PydanticCustomError

from agent_contracts.errors import SchemaError
from agent_core.compiled_schema import CompiledSchema, compile_schema
from agent_core.odd_keys import NOT_READ, build_with_odd_keys, dumped, surrogate_json
from agent_core.surrogates import escape_surrogates

__all__ = ["SchemaModel", "SchemaRootModel", "build_accepted"]


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

    JSON text with a lone surrogate escape (``"\\ud83d"``) is JSON; Pydantic's parser refuses
    it, so such text is read with Python's ``json`` module instead.
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
    """What both model bases share: the schema a class was built from, and what it answers.

    :meth:`agentshape_compiled`, and Pydantic's ``model_validate_json`` and
    ``model_json_schema`` answered from the designer's schema.
    """

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

        Returns:
            The compiled (sub)schema.

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
    """Base of every object-shaped model built by :func:`model_from_schema`.

    Fields are the schema's properties; undeclared properties are kept as extras. See the
    module docstring for aliases, nesting and what ``to_data`` returns.
    """

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
