r"""The JSON response of routes whose bodies carry a model's text.

A model may answer with text UTF-8 cannot carry (a lone surrogate, ``"\ud83d"``, half a cut
emoji), which the library keeps as data. FastAPI's own JSON writers refuse it and the request
would end in a 500; this response writes it as its ``\uXXXX`` escape by the library's policy
(:func:`~agent_core._json_text.dump_json`), so a client reads back the value the model gave.

:func:`model_response` writes a body model the handler built itself in one pass: FastAPI would
dump it, validate the dump against the route's response model and dump that again, a cost per
``POST /runs`` that grows with the answer.
"""

from __future__ import annotations

import pydantic_core
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.responses import Response

from agent_core._json_text import dump_json

__all__ = ["ModelTextResponse", "model_response"]


class ModelTextResponse(JSONResponse):
    """A JSON response that writes a lone surrogate as its escape instead of failing."""

    def render(self, content: object) -> bytes:
        """Return ``content`` as compact UTF-8 JSON, lone surrogates escaped."""
        try:
            return pydantic_core.to_json(content)
        except ValueError:  # a lone surrogate: Pydantic refuses it, the library escapes it
            return dump_json(content, compact=True).encode("utf-8")


def model_response(body: BaseModel, status_code: int) -> Response:
    """Return ``body`` as a compact JSON response, encoded once, lone surrogates escaped.

    Args:
        body: A response body the handler built (and so validated) itself.
        status_code: The response's HTTP status.

    Returns:
        The response, as FastAPI would write ``body`` for a route whose response model is its
        class.
    """
    try:
        content = pydantic_core.to_json(body, by_alias=True)
    except ValueError:  # a lone surrogate: Pydantic refuses it, the library escapes it
        dumped = body.model_dump(mode="json", by_alias=True)
        content = dump_json(dumped, compact=True).encode("utf-8")
    return Response(content, status_code=status_code, media_type="application/json")
