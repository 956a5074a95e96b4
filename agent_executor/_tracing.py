"""OpenTelemetry spans for runs, following the GenAI semantic conventions: :class:`TracingSink`.

Off unless OpenTelemetry is installed. Then each agent's analytics sink is wrapped in a
:class:`TracingSink`, which passes every event on and, when a tracer provider is configured
(``Agent(tracer_provider=...)``, or ``opentelemetry.trace.set_tracer_provider`` at any time,
before or after the agent was built), turns the run's events into spans as they happen; a run
that starts while no provider is configured makes no spans at all:

- ``invoke_agent {agent}``: one span a run (a tier of an escalation is a run of its own), with
  the agent, model, output mode, contract hash, status, error type, attempts, retries and
  tokens; an event on it for each attempt and retry;
- ``chat {model}``: one child span a model call, timed from its latency, with tokens and the
  stop reason;
- ``execute_tool {tool}``: one child span an input-tool call.

Attributes never carry prompts or outputs unless content capture is on (the GenAI
conventions' ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``): then each attempt's
raw output and errors go on its span event, redacted as the JSONL log is. Error messages are
always redacted.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agent_contracts._events import (
    AttemptEvent,
    ModelTurnEvent,
    RetryEvent,
    RunCompletedEvent,
    RunFailedEvent,
    RunStartedEvent,
    ToolCallEvent,
)
from agent_executor._analytics import AnalyticsSink
from agent_executor._redaction import redact

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["CAPTURE_CONTENT_ENV", "TracingSink", "tracer_for", "with_tracing"]

logger = logging.getLogger(__name__)

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Set to ``true`` to put attempts' raw outputs and errors on the spans."""

_SCOPE = "agentshape"


def tracer_for(provider: TracerProvider | None) -> Tracer | None:
    """Return a tracer from ``provider``, else from the configured global one, else ``None``.

    Called when a run starts, so a global provider set after the agent was built is used.

    Args:
        provider: A tracer provider given by the caller, or ``None``.

    Returns:
        The tracer; ``None`` when OpenTelemetry is not installed or no provider is configured
        (the API's default proxy provider counts as none).
    """
    if provider is not None:
        return provider.get_tracer(_SCOPE)
    if importlib.util.find_spec("opentelemetry") is None:
        return None
    from opentelemetry import trace

    # Until a provider is set, the API hands out its proxy, which would make non-recording
    # spans: skipping them keeps an untraced run free of span work.
    configured = trace.get_tracer_provider()
    if isinstance(configured, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return configured.get_tracer(_SCOPE)


def with_tracing(
    sink: AnalyticsSink, provider: TracerProvider | None, env: Mapping[str, str]
) -> AnalyticsSink:
    """Return ``sink`` wrapped in a :class:`TracingSink` when tracing is possible, else ``sink``.

    Tracing is possible when ``provider`` is given or OpenTelemetry is installed (a global
    provider may be set later; each run looks it up when it starts).

    Args:
        sink: The agent's analytics sink.
        provider: A tracer provider given by the caller, or ``None`` for the global one.
        env: The environment (:data:`CAPTURE_CONTENT_ENV`).
    """
    if provider is None and importlib.util.find_spec("opentelemetry") is None:
        return sink
    capture = env.get(CAPTURE_CONTENT_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return TracingSink(sink, provider, capture_content=capture)


def _model(model: str | None) -> dict[str, Any]:
    """The GenAI attributes of a model string: ``openai:gpt-4.1`` is provider and model."""
    if not model:
        return {}
    provider, colon, name = model.partition(":")
    if not colon:
        return {"gen_ai.request.model": model}
    return {"gen_ai.provider.name": provider, "gen_ai.request.model": name}


def _ns(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)


class TracingSink:
    """An analytics sink that passes events on and records them as OpenTelemetry spans.

    The tracer is looked up when each run starts (:func:`tracer_for`); a run that starts with
    no provider configured is not recorded.

    Args:
        inner: The sink every event is passed to first.
        provider: The tracer provider spans are made with, or ``None`` for the global one.
        capture_content: Put attempts' raw outputs and errors on the spans (redacted).
    """

    def __init__(
        self,
        inner: AnalyticsSink,
        provider: TracerProvider | None = None,
        *,
        capture_content: bool = False,
    ):
        self.inner = inner
        self.provider = provider
        self.capture_content = capture_content
        self._runs: dict[str, tuple[Span, Tracer]] = {}

    def emit(self, event: BaseModel) -> None:
        """Pass ``event`` on, then record it; tracing never breaks a run (failures are logged)."""
        self.inner.emit(event)
        try:
            self._record(event)
        except Exception:
            logger.warning("tracing failed; span dropped", exc_info=True)

    def _record(self, event: BaseModel) -> None:
        if isinstance(event, RunStartedEvent):
            self._start_run(event)
            return
        traced = self._runs.get(getattr(event, "run_id", ""))
        if traced is None:
            return
        run, tracer = traced
        if isinstance(event, ModelTurnEvent):
            self._model_turn(run, tracer, event)
        elif isinstance(event, ToolCallEvent):
            self._tool_call(run, tracer, event)
        elif isinstance(event, AttemptEvent):
            self._attempt(run, event)
        elif isinstance(event, RetryEvent):
            run.add_event(
                "agentshape.retry",
                {"agentshape.retry.number": event.number, "agentshape.retry.reason": event.reason},
                timestamp=_ns(event.ts),
            )
        elif isinstance(event, RunCompletedEvent | RunFailedEvent):
            self._end_run(run, event)

    def _start_run(self, event: RunStartedEvent) -> None:
        tracer = tracer_for(self.provider)
        if tracer is None:
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": event.agent_id,
            "gen_ai.agent.id": event.agent_id,
            "agentshape.run.id": event.run_id,
            "agentshape.max_retries": event.max_retries,
        }
        attributes.update(_model(event.model))
        optional = {
            "agentshape.output_mode": event.output_mode,
            "agentshape.contract.hash": event.schema_hash,
            "agentshape.contract.schema_name": event.schema_name,
        }
        attributes.update({key: value for key, value in optional.items() if value is not None})
        span = tracer.start_span(
            f"invoke_agent {event.agent_id}", start_time=_ns(event.ts), attributes=attributes
        )
        self._runs[event.run_id] = (span, tracer)

    def _child(
        self,
        run: Span,
        tracer: Tracer,
        name: str,
        start: int,
        end: int,
        attributes: dict[str, Any],
    ) -> Span:
        from opentelemetry import trace

        span = tracer.start_span(
            name,
            context=trace.set_span_in_context(run),
            kind=trace.SpanKind.CLIENT if name.startswith("chat") else trace.SpanKind.INTERNAL,
            start_time=start,
            attributes=attributes,
        )
        span.end(end_time=end)
        return span

    def _model_turn(self, run: Span, tracer: Tracer, event: ModelTurnEvent) -> None:
        end = _ns(event.ts)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": event.usage.input_tokens,
            "gen_ai.usage.output_tokens": event.usage.output_tokens,
            "agentshape.step": event.step,
        }
        attributes.update(_model(event.model))
        if event.stop_reason:
            attributes["gen_ai.response.finish_reasons"] = [event.stop_reason]
        if event.tool_calls:
            attributes["agentshape.tool_calls"] = list(event.tool_calls)
        start = end - int(event.latency_ms * 1_000_000)
        name = attributes.get("gen_ai.request.model", "model")
        self._child(run, tracer, f"chat {name}", start, end, attributes)

    def _tool_call(self, run: Span, tracer: Tracer, event: ToolCallEvent) -> None:
        from opentelemetry.trace import Status, StatusCode

        end = _ns(event.ts)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool,
        }
        if event.is_error:
            attributes["error.type"] = "tool_error"
        span = self._child(
            run,
            tracer,
            f"execute_tool {event.tool}",
            end - int(event.duration_ms * 1_000_000),
            end,
            attributes,
        )
        if event.is_error:
            span.set_status(Status(StatusCode.ERROR))

    def _attempt(self, run: Span, event: AttemptEvent) -> None:
        attributes: dict[str, Any] = {
            "agentshape.attempt.number": event.number,
            "agentshape.attempt.mode": event.mode,
            "agentshape.attempt.valid": not event.errors,
            "agentshape.attempt.error_count": len(event.errors),
            "agentshape.attempt.recovered_by_extraction": event.recovered_by_extraction,
        }
        if self.capture_content:
            attributes["agentshape.attempt.raw_output"] = str(redact(event.raw_output))
            attributes["agentshape.attempt.errors"] = [str(redact(str(e))) for e in event.errors]
        run.add_event("agentshape.attempt", attributes, timestamp=_ns(event.ts))

    def _end_run(self, run: Span, event: RunCompletedEvent | RunFailedEvent) -> None:
        from opentelemetry.trace import Status, StatusCode

        self._runs.pop(event.run_id, None)
        run.set_attributes(
            {
                "agentshape.status": "completed"
                if isinstance(event, RunCompletedEvent)
                else "failed",
                "agentshape.attempts": event.attempts,
                "agentshape.retry_count": event.retries,
                "gen_ai.usage.input_tokens": event.usage.input_tokens,
                "gen_ai.usage.output_tokens": event.usage.output_tokens,
            }
        )
        if isinstance(event, RunCompletedEvent) and event.model:
            run.set_attribute("gen_ai.response.model", _model(event.model)["gen_ai.request.model"])
        if isinstance(event, RunFailedEvent):
            run.set_attribute("error.type", event.error_type)
            run.set_status(Status(StatusCode.ERROR, str(redact(event.message))))
        run.end(end_time=_ns(event.ts))
