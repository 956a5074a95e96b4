"""Checking a schema as ``agentshape list`` checks an agent's: :func:`check_schema`.

The ``POST /agents/validate-schema`` route and the editor's schema check both call it.
"""

from __future__ import annotations

from agent_contracts._errors import InvalidSchemaError, SchemaReferenceError
from agent_coordinator._service.bodies import SchemaCheck, SchemaFindingView, ValidateSchemaRequest
from agent_core._compiled_schema import compile_schema
from agent_core._schema_checks import check_output_schema
from agent_core._schema_model import model_from_schema

__all__ = ["check_schema"]


def check_schema(request: ValidateSchemaRequest) -> SchemaCheck:
    """Check a schema as ``agentshape list`` checks an agent's.

    An output schema gets the fleet's output checks and must build a model; an input schema
    must compile. Schema errors are findings, never raised.

    Args:
        request: The schema and its kind (``output`` or ``input``).

    Returns:
        Every error and warning with its path; ``valid`` is false when any is an error.
    """
    schema = request.schema_
    findings: list[SchemaFindingView] = []
    if request.kind == "output":
        findings = [
            SchemaFindingView(
                path=f.path, severity=f.severity, message=f.message, keyword=f.keyword
            )
            for f in check_output_schema(schema, source="request")
        ]
    elif not isinstance(schema, dict | bool):
        findings = [
            SchemaFindingView(
                path="$",
                severity="error",
                message=f"a JSON Schema is an object or a boolean, not {type(schema).__name__}",
            )
        ]
    if not any(f.severity == "error" for f in findings) and isinstance(schema, dict | bool):
        try:
            if request.kind == "output":
                model_from_schema(schema, name="Output", source="request")
            else:
                compile_schema(schema, source="request")
        except InvalidSchemaError as error:
            findings.append(
                SchemaFindingView(path=error.path, severity="error", message=error.message)
            )
        except SchemaReferenceError as error:
            findings.append(SchemaFindingView(path="$", severity="error", message=error.message))
    return SchemaCheck(valid=not any(f.severity == "error" for f in findings), findings=findings)
