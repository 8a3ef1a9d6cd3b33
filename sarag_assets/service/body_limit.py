"""A cap on request bodies, applied while they arrive: FastAPI reads a body whole, then parses and
validates it on the event loop, where a 10 MB body held up every other request (health checks too)."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(HTTPException):
    def __init__(self, max_bytes: int):
        super().__init__(413, f"the request body is larger than {max_bytes:,} bytes (setting max_request_bytes)")


class BodyLimit:
    """Refuses a body over `max_bytes` with a 413 (raised to the app's HTTPException handler) when the
    app first reads it: at once for a declared Content-Length, else when the bytes received pass it."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        received = 0

        async def limited() -> Message:
            nonlocal received
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise BodyTooLarge(self.max_bytes)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, limited, send)
