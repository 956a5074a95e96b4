r"""The JSON response of routes whose bodies carry a model's text.

A model may answer with text UTF-8 cannot carry (a lone surrogate, ``"\ud83d"``, half a cut
emoji), which the library keeps as data. FastAPI's own JSON writers refuse it and the request
would end in a 500; this response writes it as its ``\uXXXX`` escape by the library's policy
(:func:`~agent_core._json_text.dump_json`), so a client reads back the value the model gave.
"""

from __future__ import annotations

import pydantic_core
from fastapi.responses import JSONResponse

from agent_core._json_text import dump_json

__all__ = ["ModelTextResponse"]


class ModelTextResponse(JSONResponse):
    """A JSON response that writes a lone surrogate as its escape instead of failing."""

    def render(self, content: object) -> bytes:
        """Return ``content`` as compact UTF-8 JSON, lone surrogates escaped."""
        try:
            return pydantic_core.to_json(content)
        except ValueError:  # a lone surrogate: Pydantic refuses it, the library escapes it
            return dump_json(content, compact=True).encode("utf-8")
