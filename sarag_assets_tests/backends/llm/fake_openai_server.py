"""A real, scripted, OpenAI-compatible HTTP server for tests (stdlib only, no Dagster, no patching).

It listens on 127.0.0.1 on an ephemeral port, in a background thread, and speaks
`POST /v1/chat/completions` (and `GET /v1/models`) in the OpenAI wire format, so the real `openai`
client (and `instructor` on top of it) talks to it over real HTTP.

Tests script it in one of two ways:

- `server.enqueue(b1, b2, ...)`: each incoming chat request consumes the next behaviour, in order;
- `server.set_responder(fn)`: `fn(request_json) -> Behaviour` answers every request that finds the
  queue empty (queued behaviours always go first).

A request that finds neither gets HTTP 400 with an explanatory error, so a test that scripted too few
answers fails loudly and at once (400 is not retried by clients) instead of hanging.

Every request body is recorded, parsed, in `server.requests` (in arrival order) so tests can assert
on what the client sent.

    with FakeOpenAIServer() as server:
        server.enqueue(Behaviour.rate_limited(retry_after=1), Behaviour.tool_call({"x": 1}))
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
        ...
        assert len(server.requests) == 2
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

__all__ = ["Behaviour", "FakeOpenAIServer", "Responder"]


@dataclass(frozen=True)
class Behaviour:
    """One scripted answer. Build it with the class methods, not the constructor."""

    kind: str  # tool_call | content | answer | http_error
    payload: Any = None  # tool arguments / content text / object to answer with
    fenced: bool = False  # wrap JSON content in a ```json code fence
    tool_name: str | None = None  # override the function name (default: taken from the request)
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    error_body: Any = None
    delay_s: float = 0.0  # sleep this long before answering (to trigger client timeouts)
    prompt_tokens: int | None = None  # None: a deterministic estimate from the request size
    completion_tokens: int | None = None
    finish_reason: str | None = None  # None: "tool_calls" for tool calls, else "stop"
    as_tool_call: bool | None = None  # for invalid_json: None = a tool call iff the request offers tools

    # ---- answers -------------------------------------------------------------------------------

    @classmethod
    def tool_call(
        cls,
        arguments: Any,
        *,
        name: str | None = None,
        usage: tuple[int, int] | None = None,
        finish_reason: str | None = None,
    ) -> "Behaviour":
        """Answer with one tool call. `arguments`: a JSON-able object, or a raw string sent verbatim
        (use a string to send broken JSON). The function name is taken from the request's `tools`
        (or `tool_choice`) unless `name` is given."""
        return cls(
            "tool_call",
            arguments,
            tool_name=name,
            prompt_tokens=usage[0] if usage else None,
            completion_tokens=usage[1] if usage else None,
            finish_reason=finish_reason,
        )

    @classmethod
    def content(
        cls,
        obj_or_text: Any,
        *,
        fenced: bool = False,
        usage: tuple[int, int] | None = None,
        finish_reason: str | None = None,
    ) -> "Behaviour":
        """Answer with assistant text content. A non-string is serialized as JSON; a string is sent
        verbatim. `fenced=True` wraps it in a ```json fence with some chatter around it."""
        return cls(
            "content",
            obj_or_text,
            fenced=fenced,
            prompt_tokens=usage[0] if usage else None,
            completion_tokens=usage[1] if usage else None,
            finish_reason=finish_reason,
        )

    @classmethod
    def answer(cls, obj: Any, *, usage: tuple[int, int] | None = None) -> "Behaviour":
        """Answer `obj` in whatever shape the request asks for: a tool call if the request offers
        `tools`, fenced JSON if the messages ask for a ```json code block, else plain JSON content.
        Handy for responders and for tests run across every mode."""
        return cls(
            "answer",
            obj,
            prompt_tokens=usage[0] if usage else None,
            completion_tokens=usage[1] if usage else None,
        )

    @classmethod
    def invalid_json(cls, text: str = '{"this is": not json', *, as_tool_call: bool | None = None) -> "Behaviour":
        """Answer with text that is not JSON at all (as a tool call's arguments if the request offers
        tools, unless `as_tool_call` says otherwise). For schema-invalid but well-formed JSON use
        `answer`/`tool_call`/`content` with the wrong object."""
        return cls("invalid_json", text, as_tool_call=as_tool_call)

    # ---- failures ------------------------------------------------------------------------------

    @classmethod
    def http_error(
        cls,
        status: int,
        *,
        message: str | None = None,
        retry_after: float | str | None = None,
        headers: dict[str, str] | None = None,
    ) -> "Behaviour":
        """Answer with an HTTP error status and an OpenAI-style error body."""
        hdrs = dict(headers or {})
        if retry_after is not None:
            hdrs["Retry-After"] = str(retry_after)
        body = {
            "error": {
                "message": message or f"fake server error {status}",
                "type": "rate_limit_error" if status == 429 else ("server_error" if status >= 500 else "invalid_request_error"),
                "param": None,
                "code": None,
            }
        }
        return cls("http_error", status=status, headers=tuple(hdrs.items()), error_body=body)

    @classmethod
    def rate_limited(cls, retry_after: float | str | None = 1) -> "Behaviour":
        return cls.http_error(429, message="Rate limit reached", retry_after=retry_after)

    @classmethod
    def server_error(cls, status: int = 500) -> "Behaviour":
        return cls.http_error(status)

    # ---- modifiers -----------------------------------------------------------------------------

    def after(self, seconds: float) -> "Behaviour":
        """The same behaviour, delivered after sleeping `seconds` (a client with a shorter timeout
        gives up first)."""
        return _replace(self, delay_s=seconds)

    @classmethod
    def slow(cls, seconds: float, then: "Behaviour | None" = None) -> "Behaviour":
        """Sleep `seconds`, then deliver `then` (default: an empty JSON object as content)."""
        return (then or cls.content({})).after(seconds)


def _replace(b: Behaviour, **changes: Any) -> Behaviour:
    from dataclasses import replace

    return replace(b, **changes)


Responder = Callable[[dict[str, Any]], Behaviour]


@dataclass
class _State:
    queue: deque = field(default_factory=deque)
    responder: Responder | None = None
    requests: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0  # chat requests being answered right now
    most_in_flight: int = 0
    stop: threading.Event = field(default_factory=threading.Event)


def user_text(request: dict[str, Any]) -> str:
    """Everything the request's user messages say (where the conversation data is)."""
    return "\n".join(str(m.get("content") or "") for m in request["messages"] if m["role"] == "user")


def tool_name(request: dict[str, Any]) -> str:
    """The function the request asks the model to call ("tool" when it names none)."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        fn = choice.get("function") or {}
        if fn.get("name"):
            return fn["name"]
        if choice.get("name"):
            return choice["name"]
    for tool in request.get("tools") or []:
        fn = tool.get("function") or {}
        if fn.get("name"):
            return fn["name"]
        if tool.get("name"):
            return tool["name"]
    return "tool"


def _asks_for_code_fence(request: dict[str, Any]) -> bool:
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        if isinstance(content, str) and "```json" in content:
            return True
    return False


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _fence(text: str) -> str:
    return f"Here is the result:\n```json\n{text}\n```\nHope this helps."


def build_completion(behaviour: Behaviour, request: dict[str, Any], number: int) -> dict[str, Any]:
    """The OpenAI `chat.completion` object for a successful behaviour."""
    kind = behaviour.kind
    payload = behaviour.payload
    if kind == "answer":
        if request.get("tools"):
            kind = "tool_call"
        else:
            kind = "content"
            behaviour = _replace(behaviour, fenced=_asks_for_code_fence(request))
    elif kind == "invalid_json":
        wants_tool = bool(request.get("tools")) if behaviour.as_tool_call is None else behaviour.as_tool_call
        kind = "tool_call" if wants_tool else "content"

    message: dict[str, Any] = {"role": "assistant", "content": None}
    if kind == "tool_call":
        arguments = payload if isinstance(payload, str) else json.dumps(payload)
        message["tool_calls"] = [
            {
                "id": f"call_fake_{number}",
                "type": "function",
                "function": {"name": behaviour.tool_name or tool_name(request), "arguments": arguments},
            }
        ]
        produced = arguments
        finish_reason = behaviour.finish_reason or "tool_calls"
    else:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        if behaviour.fenced:
            text = _fence(text)
        message["content"] = text
        produced = text
        finish_reason = behaviour.finish_reason or "stop"

    prompt_tokens = (
        behaviour.prompt_tokens
        if behaviour.prompt_tokens is not None
        else _estimate_tokens(json.dumps(request.get("messages") or []))
    )
    completion_tokens = (
        behaviour.completion_tokens if behaviour.completion_tokens is not None else _estimate_tokens(produced)
    )
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or "fake-model",
        "system_fingerprint": "fake",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _make_handler(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "FakeOpenAI/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
            return

        def _send_json(self, status: int, body: Any, headers: tuple[tuple[str, str], ...] = ()) -> None:
            data = json.dumps(body).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to answer

        def _path(self) -> str:
            return self.path.split("?", 1)[0].rstrip("/")

        def do_GET(self) -> None:  # noqa: N802
            if self._path() == "/v1/models":
                self._send_json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "sarag-tests"}]})
            else:
                self._send_json(404, {"error": {"message": f"no route GET {self.path}", "type": "invalid_request_error"}})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self._path() != "/v1/chat/completions":
                self._send_json(404, {"error": {"message": f"no route POST {self.path}", "type": "invalid_request_error"}})
                return
            try:
                request = json.loads(raw or b"{}")
            except json.JSONDecodeError as exc:
                self._send_json(400, {"error": {"message": f"request body is not JSON: {exc}", "type": "invalid_request_error"}})
                return

            with state.lock:
                state.requests.append(request)
                number = len(state.requests)
                behaviour = state.queue.popleft() if state.queue else None
                responder = state.responder
                state.in_flight += 1
                state.most_in_flight = max(state.most_in_flight, state.in_flight)
            try:
                self._answer(request, number, behaviour, responder)
            finally:
                with state.lock:
                    state.in_flight -= 1

        def _answer(self, request: dict[str, Any], number: int, behaviour: Behaviour | None,
                    responder: Responder | None) -> None:
            if behaviour is None and responder is not None:
                try:
                    behaviour = responder(request)
                except Exception as exc:  # a broken responder should fail the test visibly
                    self._send_json(400, {"error": {"message": f"FakeOpenAIServer responder raised {exc!r}", "type": "invalid_request_error"}})
                    return
            if behaviour is None:
                self._send_json(
                    400,
                    {"error": {"message": f"FakeOpenAIServer: no behaviour scripted for request #{number}", "type": "invalid_request_error"}},
                )
                return

            if behaviour.delay_s > 0:
                state.stop.wait(behaviour.delay_s)  # close() wakes sleepers early

            if behaviour.kind == "http_error":
                self._send_json(behaviour.status, behaviour.error_body, behaviour.headers)
                return
            self._send_json(200, build_completion(behaviour, request, number), behaviour.headers)

    return Handler


class FakeOpenAIServer:
    """A scripted OpenAI-compatible server on 127.0.0.1:<ephemeral port>, serving from a daemon
    thread. Use as a context manager, or call `close()`."""

    def __init__(self) -> None:
        self._state = _State()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self._state))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai-server", daemon=True
        )
        self._thread.start()
        self._closed = False

    # ---- addresses -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """What to give the openai client as `base_url` (ends in `/v1`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ---- scripting -----------------------------------------------------------------------------

    def enqueue(self, *behaviours: Behaviour) -> "FakeOpenAIServer":
        with self._state.lock:
            self._state.queue.extend(behaviours)
        return self

    def set_responder(self, fn: Responder | None) -> "FakeOpenAIServer":
        with self._state.lock:
            self._state.responder = fn
        return self

    def reset(self) -> None:
        """Forget queued behaviours, the responder and the recorded requests."""
        with self._state.lock:
            self._state.queue.clear()
            self._state.responder = None
            self._state.requests.clear()
            self._state.most_in_flight = 0

    @property
    def pending(self) -> int:
        """Queued behaviours not consumed yet."""
        with self._state.lock:
            return len(self._state.queue)

    # ---- inspection ----------------------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every chat-completion request body received, parsed, in arrival order (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def most_in_flight(self) -> int:
        """The most chat requests that were being answered at the same moment."""
        with self._state.lock:
            return self._state.most_in_flight

    # ---- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._state.stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "FakeOpenAIServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
