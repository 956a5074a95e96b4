"""The request-size guard: bodies past the limit are refused with 413 before they are read whole."""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_coordinator._errors import PayloadTooLarge

__all__ = ["BodyLimit"]


class BodyLimit:
    """ASGI middleware answering 413 to a body larger than ``max_bytes``.

    A ``Content-Length`` above the limit is refused at once (one within it passes as it is); a
    chunked body is counted as it arrives and refused when it passes the limit.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = next(
            (value for name, value in scope["headers"] if name == b"content-length"), None
        )
        if length is not None and length.isdigit():
            if int(length) > self.max_bytes:
                await self._refuse(send)
                return
            # The server reads no more than Content-Length says: nothing left to count.
            await self.app(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise HTTPException(
                        413, f"the request body is larger than {self.max_bytes} bytes"
                    )
            return message

        await self.app(scope, counted, send)

    async def _refuse(self, send: Send) -> None:
        error = PayloadTooLarge(
            "PayloadTooLarge", f"the request body is larger than {self.max_bytes} bytes"
        )
        payload = json.dumps(error.body().model_dump(mode="json")).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})
