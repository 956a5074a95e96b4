"""Schema load time: what an agentshape Agent needs built, against datamodel-code-generator.

Every JSONSchemaBench schema (/work/shared/conformance/jsonschemabench, or
$AGENTSHAPE_CONFORMANCE_DIR/jsonschemabench) is loaded cold, then a second time (cached), the
way an ``Agent`` with that output schema loads it: the config-time checks, the compiled
validator, the model class, and the ``submit_result`` tool compiled for OpenAI's strict
dialect (``resolve_contract`` + ``tool_definition``). The model class alone
(``model_from_schema``) is timed too, for reference.
"Cold" means right after ``clear_caches()``: no cache can answer (the clearing itself is not
timed).
datamodel-code-generator (Pydantic v2 output, formatters off, which is its fastest setting) is
slow, so it runs on a deterministic sample: every k-th schema. For each sampled schema it
generates the code and executes it as a fresh module, which is what loading a model takes there.

    .venv/bin/python bench/schema_load.py [--quick]

Prints medians, then
    model_vs_datamodel_codegen: R  (the model class alone, cold, over the same sample)
    load_vs_datamodel_codegen: R   (what an Agent needs, cold median / datamodel-code-generator
                                    median, both over the sampled schemas that both could load)
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import statistics
import sys
import time
import types
import warnings
from collections.abc import Callable
from pathlib import Path

from pydantic import JsonValue

from agent_contracts import AgentConfig
from agent_core import clear_caches, model_from_schema
from agent_core._contract import resolve_contract

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = Path(
    os.environ.get("AGENTSHAPE_CONFORMANCE_DIR") or ROOT.parent / "shared" / "conformance"
)


def bench_schemas() -> list[tuple[str, JsonValue]]:
    """Return every (id, schema) of JSONSchemaBench, files and lines in order."""
    folder = CONFORMANCE / "jsonschemabench"
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        sys.exit(f"error: no JSONSchemaBench *.jsonl in {folder}")
    schemas = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                schemas.append((record["id"], record["schema"]))
    return schemas


def fresh(schema: JsonValue) -> JsonValue:
    """Return a deep copy of ``schema``."""
    copy: JsonValue = json.loads(json.dumps(schema))
    return copy


def timed(load: Callable[[JsonValue], None], schema: JsonValue) -> float | None:
    """Return the seconds ``load(schema)`` took, or ``None`` when it raised.

    The garbage collector is paused during the call, as ``timeit`` does, so a collection that
    the previous loads' garbage triggers is not charged to this one.
    """
    gc.disable()
    start = time.perf_counter()
    try:
        load(schema)
    except Exception:
        return None
    finally:
        elapsed = time.perf_counter() - start
        gc.enable()
    return elapsed


_CONFIG = AgentConfig.model_validate({"id": "bench", "system_prompt": "Answer."})


def agentshape_load(schema: JsonValue) -> None:
    """Build what an Agent with ``schema`` as its output schema needs before its first run."""
    assert isinstance(schema, dict | bool)
    contract = resolve_contract(_CONFIG, output_type=None, inline=schema, named=None, lenient=False)
    assert contract is not None
    contract.tool_definition("openai")


def model_load(schema: JsonValue) -> None:
    """Build agentshape's model class alone for ``schema``."""
    assert isinstance(schema, dict | bool)
    model_from_schema(schema)


_modules = 0


def codegen_load(schema: JsonValue) -> None:
    """Generate Pydantic v2 code for ``schema`` with datamodel-code-generator and execute it."""
    from datamodel_code_generator import InputFileType, generate
    from datamodel_code_generator.enums import DataModelType

    global _modules
    code = generate(
        json.dumps(schema),
        input_file_type=InputFileType.JsonSchema,
        output_model_type=DataModelType.PydanticV2BaseModel,
        formatters=[],
        disable_timestamp=True,
    )
    assert isinstance(code, str)
    _modules += 1
    module = types.ModuleType(f"_dmcg_bench_{_modules}")
    sys.modules[module.__name__] = module
    try:
        exec(compile(code, module.__name__, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]


def milliseconds(values: list[float]) -> str:
    """Return ``median X ms (p90 Y ms)`` for ``values`` in seconds."""
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"median {statistics.median(ordered) * 1000:.3f} ms (p90 {p90 * 1000:.3f} ms)"


def main() -> int:
    """Run the benchmark and print medians and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer schemas (a smoke run)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)  # schema warnings (unknown keywords...) are not the point
    schemas = bench_schemas()
    if args.quick:
        schemas = schemas[::10]
    step = max(1, len(schemas) // (20 if args.quick else 100))

    agentshape_load({"type": "object", "properties": {"warm": {"type": "string"}}})
    codegen_load({"type": "object", "properties": {"warm": {"type": "string"}}})

    cold: dict[str, float] = {}
    cached: dict[str, float] = {}
    model_cold: dict[str, float] = {}
    failed: list[str] = []
    theirs: dict[str, float] = {}
    sampled = their_failures = 0
    for index, (schema_id, schema) in enumerate(schemas):
        copy = fresh(schema)
        clear_caches()
        seconds = timed(agentshape_load, copy)
        if seconds is None:
            failed.append(schema_id)
        else:
            cold[schema_id] = seconds
            cached[schema_id] = timed(agentshape_load, fresh(copy)) or 0.0
        if index % step == 0:  # interleaved, so machine load affects both tools alike
            sampled += 1
            clear_caches()
            model_seconds = timed(model_load, fresh(schema))
            if model_seconds is not None:
                model_cold[schema_id] = model_seconds
            seconds = timed(codegen_load, schema)
            if seconds is None:
                their_failures += 1
            else:
                theirs[schema_id] = seconds
    both = [schema_id for schema_id in theirs if schema_id in cold]

    print(f"schemas: {len(schemas)} JSONSchemaBench schemas; agentshape refused {len(failed)}")
    print(f"agentshape cold load: {milliseconds(list(cold.values()))} over {len(cold)} schemas")
    print(f"agentshape cached load: {milliseconds(list(cached.values()))} over {len(cached)}")
    print(
        f"datamodel-code-generator sample: every {step}th schema, {sampled} schemas, "
        f"{their_failures} it could not load, {len(both)} loaded by both"
    )
    ours_sample = [cold[schema_id] for schema_id in both]
    theirs_sample = [theirs[schema_id] for schema_id in both]
    model_sample = [model_cold[schema_id] for schema_id in both if schema_id in model_cold]
    print(f"agentshape cold load on the sample: {milliseconds(ours_sample)}")
    print(f"agentshape model class alone on the sample: {milliseconds(model_sample)}")
    print(f"datamodel-code-generator load on the sample: {milliseconds(theirs_sample)}")
    theirs_median = statistics.median(theirs_sample)
    print(f"model_vs_datamodel_codegen: {statistics.median(model_sample) / theirs_median:.4f}")
    print(f"load_vs_datamodel_codegen: {statistics.median(ours_sample) / theirs_median:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
