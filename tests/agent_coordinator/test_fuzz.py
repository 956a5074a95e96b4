"""Property-based fuzzing of the OpenAPI document with schemathesis, over real HTTP.

Every operation gets generated requests; no answer may be a 5xx, and every answer must match the
status codes, content types and body schemas the document declares. The check that every
schema-valid request is accepted is left out: rules the document cannot state (a start needs an
agent, parameters must meet the agent's own ``parameters_schema``) refuse some of them with 422,
by design. (schemathesis's pytest plugin does not load under this pytest, so the operations are
driven with hypothesis directly.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent_coordinator.harness import Service

schemathesis = pytest.importorskip("schemathesis", reason="fuzzing needs schemathesis (dev extra)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402


def test_the_api_never_fails_and_answers_as_documented(tmp_path: Path) -> None:
    service = Service(tmp_path, str(tmp_path / "fuzz.db"), workers=2)
    try:
        schema = schemathesis.openapi.from_url(f"{service.url}/openapi.json")
        operations = [
            result.ok()
            for result in schema.get_all_operations()
            if not result.ok().path.endswith("/events")
        ]
        assert len(operations) >= 15
        for operation in operations:

            @given(case=operation.as_strategy())
            @settings(
                max_examples=12,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: object) -> None:
                case.call_and_validate(  # type: ignore[attr-defined]
                    base_url=service.url, excluded_checks=[positive_data_acceptance]
                )

            check()
    finally:
        service.close()
