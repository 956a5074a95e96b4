"""What a streamed run shows of the word being written: nothing, until the word is whole.

Redaction recognises a secret by its shape or as a configured key, which it can do only when the
secret is whole: ``gsk_Qw3r`` and ``Ty8uIoP4...`` in two text pieces, or a partial output whose
last string ends in the first half of a key, would each pass it. So before the command line
prints a streamed run's events, :class:`SecretEdge` holds back the word at their growing edge:

- text pieces are joined and passed on up to their last whitespace; the rest waits for the next
  whitespace, the next event of another kind or the end of the turn, and is then passed on
  whole, where the redaction sees it;
- a partial output's last string (the one that may still grow) loses its unfinished last word,
  which keeps it a prefix of the final value; a partial output that then shows nothing new is
  left out.

The final result is not held back: it is whole, and redacted as a run without ``--stream``.
"""

from __future__ import annotations

from pydantic import JsonValue

__all__ = ["EventJson", "SecretEdge", "hold_back"]

EventJson = dict[str, JsonValue]
"""A stream event in its ``to_json()`` form."""


def _whole_words(text: str) -> int:
    """Return the length of ``text`` up to and with its last whitespace (0 without any)."""
    for index in range(len(text) - 1, -1, -1):
        if text[index].isspace():
            return index + 1
    return 0


def hold_back(value: JsonValue) -> JsonValue:
    """Return a partial value without the unfinished last word of its last string.

    The last string in document order is the only one that may still grow; its characters
    after its last whitespace are left out. Nothing else changes, and ``value`` is not
    modified.
    """
    if isinstance(value, str):
        return value[: _whole_words(value)]
    if isinstance(value, dict) and value:
        last = next(reversed(value))
        return {**value, last: hold_back(value[last])}
    if isinstance(value, list) and value:
        return [*value[:-1], hold_back(value[-1])]
    return value


class SecretEdge:
    """Holds back the word a streamed run is writing until it is whole (see the module)."""

    def __init__(self) -> None:
        self._pending = ""
        self._step = 0
        self._shown: JsonValue = None
        self._shown_any = False

    def feed(self, event: EventJson) -> list[EventJson]:
        """Take the next event; return the events to show now, in order.

        Args:
            event: An event's ``to_json()`` (any but ``run_finished``).

        Returns:
            What may be shown: joined text pieces, a held-back partial output, other events
            as they are.
        """
        kind = event.get("type")
        if kind == "text_delta":
            return self._text(event)
        shown = self.flush()
        if kind == "partial_output":
            data = hold_back(event.get("data"))
            if self._shown_any and data == self._shown:
                return shown
            self._shown, self._shown_any = data, True
            return [*shown, {**event, "data": data}]
        if kind in ("run_started", "retry_started"):
            self._shown, self._shown_any = None, False
        return [*shown, event]

    def flush(self) -> list[EventJson]:
        """Return the text held back, now whole (at a turn's end and at the run's end)."""
        if not self._pending:
            return []
        text, self._pending = self._pending, ""
        return [{"type": "text_delta", "text": text, "step": self._step}]

    def _text(self, event: EventJson) -> list[EventJson]:
        step = event.get("step")
        shown = self.flush() if step != self._step else []
        self._step = step if isinstance(step, int) else self._step
        self._pending += str(event.get("text") or "")
        cut = _whole_words(self._pending)
        if cut:
            shown.append({"type": "text_delta", "text": self._pending[:cut], "step": self._step})
            self._pending = self._pending[cut:]
        return shown
