"""agentshape's core: JSON Schema to exact Pydantic models, the output tool, prompts, extraction.

Pure logic over ``agent_contracts``; no network.
"""

from __future__ import annotations

from agent_core._compiled_schema import CompiledSchema, compile_schema
from agent_core._dialects import (
    DIALECTS,
    WRAPPER_PROPERTY,
    CompileReport,
    Dialect,
    ProviderSchema,
    compile_for_provider,
    needs_wrapping,
)
from agent_core._extract import (
    ExtractionResult,
    ExtractionStrategy,
    extract_json,
    extract_json_detailed,
    find_json_candidates,
)
from agent_core._fleet import AGENT_FILE, Fleet, load_fleet
from agent_core._gbnf_grammar import GbnfGrammar, schema_to_gbnf
from agent_core._json_paths import format_path
from agent_core._loading import (
    load_agent_config,
    parse_agent_config,
)
from agent_core._output_tool import (
    OUTPUT_TOOL_NAME,
    Contract,
    OutputTool,
    ToolNameMap,
    build_output_tool,
    json_schema_of,
    provider_tool_name,
)
from agent_core._output_validation import issues_from_pydantic, validate_output
from agent_core._partial_output import PartialJson, partial_model, partial_value
from agent_core._prompts import (
    PromptMode,
    enriched_system_prompt,
    text_retry_prompt,
    tool_not_called_prompt,
    tool_retry_prompt,
)
from agent_core._refs import (
    register_schema,
    registered_schemas,
    unregister_schema,
)
from agent_core._registry import (
    DEFAULT_REGISTRY_PATH,
    NamedSchema,
    ResolvedSchema,
    SchemaRegistry,
    check_schema_name,
)
from agent_core._schema_checks import (
    SchemaFinding,
    Severity,
    check_output_schema,
    ensure_output_schema,
)
from agent_core._schema_documents import schema_hash
from agent_core._schema_model import (
    SchemaModel,
    SchemaRootModel,
    clear_caches,
    model_from_schema,
)
from agent_core._strict_plans import CompileNote, NoteAction

__all__ = [
    "AGENT_FILE",
    "DEFAULT_REGISTRY_PATH",
    "DIALECTS",
    "OUTPUT_TOOL_NAME",
    "WRAPPER_PROPERTY",
    "CompileNote",
    "CompileReport",
    "CompiledSchema",
    "Contract",
    "Dialect",
    "ExtractionResult",
    "ExtractionStrategy",
    "Fleet",
    "GbnfGrammar",
    "NamedSchema",
    "NoteAction",
    "OutputTool",
    "PartialJson",
    "PromptMode",
    "ProviderSchema",
    "ResolvedSchema",
    "SchemaFinding",
    "SchemaModel",
    "SchemaRegistry",
    "SchemaRootModel",
    "Severity",
    "ToolNameMap",
    "build_output_tool",
    "check_output_schema",
    "check_schema_name",
    "clear_caches",
    "compile_for_provider",
    "compile_schema",
    "enriched_system_prompt",
    "ensure_output_schema",
    "extract_json",
    "extract_json_detailed",
    "find_json_candidates",
    "format_path",
    "issues_from_pydantic",
    "json_schema_of",
    "load_agent_config",
    "load_fleet",
    "model_from_schema",
    "needs_wrapping",
    "parse_agent_config",
    "partial_model",
    "partial_value",
    "provider_tool_name",
    "register_schema",
    "registered_schemas",
    "schema_hash",
    "schema_to_gbnf",
    "text_retry_prompt",
    "tool_not_called_prompt",
    "tool_retry_prompt",
    "unregister_schema",
    "validate_output",
]
