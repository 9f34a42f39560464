"""A real, local, scripted OpenAI-compatible HTTP server for tests.

It listens on 127.0.0.1 on an ephemeral port and answers what ``langchain_openai.ChatOpenAI``
(through the ``openai`` SDK) sends:

- ``POST /v1/chat/completions``: plain, streamed (``"stream": true``, server-sent events) and
  structured output (``response_format`` json_schema / json_object, or tools): the reply's text
  is the message content, a scripted tool call becomes ``tool_calls``;
- ``POST /v1/responses``: the Responses API (``use_responses_api=True``), not streamed;
- ``POST /v1/embeddings``: eight-dimensional vectors (or a scripted error status);
- ``GET /v1/models``.

Replies come from a queue, first in first out, shared by every endpoint; when the queue is empty
the server asks ``responder`` (a function of the request, see :meth:`FakeOpenAI.respond_with`)
or else answers ``default_text``. Every request is recorded in :attr:`FakeOpenAI.requests`.
The server stops when the ``with`` block (or the pytest fixture) ends, and by itself after
``timeout`` seconds whatever happens, so a stuck test cannot keep it alive::

    with FakeOpenAI() as server:
        server.reply_json({"answer": 42}).reply_status(500).reply_text("hello")
        llm = ChatOpenAI(base_url=server.base_url + "/v1", api_key="test", max_retries=0)
        ...
        assert len(server.requests) == 1
        server.requests[0].body["messages"]
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["FakeOpenAI", "RecordedRequest", "Reply"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text content, a tool call, or an HTTP error status."""

    text: str | None = None
    status: int = 200
    error_message: str = ""
    tool_name: str | None = None
    tool_arguments: str | None = None
    finish_reason: str = "stop"
    delay: float = 0.0


@dataclass
class RecordedRequest:
    """What one request carried: ``body`` is the parsed JSON (None when it was not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = field(repr=False)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages (chat completions) or input items (responses) it sent."""
        if not isinstance(self.body, dict):
            return []
        found = self.body.get("messages", self.body.get("input", []))
        return found if isinstance(found, list) else []

    @property
    def text(self) -> str:
        """Every message's text content, joined: handy for ``"Lisbon" in request.text``."""
        parts: list[str] = []
        for message in self.messages:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and isinstance(block.get("text"), str):
                        parts.append(block["text"])
        return "\n".join(parts)


class FakeOpenAI:
    """A scripted OpenAI-compatible server on 127.0.0.1 (see the module docstring)."""

    def __init__(self, *, default_text: str = "OK", timeout: float = 120.0) -> None:
        self.default_text = default_text
        self.timeout = timeout
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self.responder: Callable[[RecordedRequest], Any] | None = None
        self.errors: list[str] = []
        """Exceptions raised by ``responder`` (each was answered with HTTP 500)."""
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._deadline: threading.Timer | None = None
        self.timed_out = False

    # -- scripting ---------------------------------------------------------------------------

    def reply_text(self, text: str, *, delay: float = 0.0) -> FakeOpenAI:
        """Queue a reply whose message content is ``text`` (verbatim: may be malformed JSON)."""
        return self._queue(Reply(text=text, delay=delay))

    def reply_json(self, obj: Any, *, delay: float = 0.0) -> FakeOpenAI:
        """Queue a reply whose content is ``obj`` as JSON (what structured output expects)."""
        return self._queue(Reply(text=json.dumps(obj), delay=delay))

    def reply_status(self, status: int, message: str = "scripted failure") -> FakeOpenAI:
        """Queue an HTTP error (``500``, ``429``, ...) with an OpenAI-style error body."""
        if status < 400:
            raise ValueError("reply_status is for error statuses (>= 400)")
        return self._queue(Reply(status=status, error_message=message))

    def reply_tool_call(self, name: str, arguments: Any) -> FakeOpenAI:
        """Queue a reply that calls tool ``name`` with ``arguments`` (a dict, or a raw string)."""
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return self._queue(Reply(tool_name=name, tool_arguments=raw, finish_reason="tool_calls"))

    def respond_with(self, responder: Callable[[RecordedRequest], Any] | None) -> FakeOpenAI:
        """Answer requests that find the queue empty with ``responder(request)``: a
        :class:`Reply`, a ``str`` (the content), or anything else (sent as JSON content).
        None goes back to ``default_text``."""
        self.responder = responder
        return self

    def pending(self) -> int:
        """How many scripted replies have not been used yet."""
        with self._lock:
            return len(self._replies)

    def _queue(self, reply: Reply) -> FakeOpenAI:
        with self._lock:
            self._replies.append(reply)
        return self

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
            responder = self.responder
        if responder is None:
            return Reply(text=self.default_text)
        answer = responder(request)
        if isinstance(answer, Reply):
            return answer
        if isinstance(answer, str):
            return Reply(text=answer)
        return Reply(text=json.dumps(answer))

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-fake{next(self._ids)}"

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (append ``/v1`` for an OpenAI client's base URL)."""
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not running: call start() or use it in a with")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_base(self) -> str:
        """The base URL an OpenAI client wants: ``base_url + "/v1"``."""
        return self.base_url + "/v1"

    def start(self) -> FakeOpenAI:
        if self._server is not None:
            return self
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        self._deadline = threading.Timer(self.timeout, self._expire)
        self._deadline.daemon = True
        self._deadline.start()
        return self

    def _expire(self) -> None:
        self.timed_out = True
        self.stop()

    def stop(self) -> None:
        """Stop serving and free the port (safe to call twice, from any thread)."""
        server, self._server = self._server, None
        if self._deadline is not None and threading.current_thread() is not self._deadline:
            self._deadline.cancel()
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


# -- wire formats ---------------------------------------------------------------------------


def _usage(prompt: str, completion: str) -> dict[str, int]:
    p, c = max(1, len(prompt) // 4), max(1, len(completion) // 4)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def _chat_completion(fake: FakeOpenAI, body: dict[str, Any], reply: Reply, prompt: str) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_name is not None:
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": fake._new_id("call"),
                "type": "function",
                "function": {"name": reply.tool_name, "arguments": reply.tool_arguments},
            }
        ]
    completion = reply.text or reply.tool_arguments or ""
    return {
        "id": fake._new_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "gpt-4o-mini"),
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": _usage(prompt, completion),
    }


def _chat_chunks(fake: FakeOpenAI, body: dict[str, Any], reply: Reply, prompt: str) -> list[Any]:
    base = {
        "id": fake._new_id("chatcmpl"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "gpt-4o-mini"),
        "system_fingerprint": "fp_fake",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if reply.tool_name is not None:
        call = {
            "index": 0,
            "id": fake._new_id("call"),
            "type": "function",
            "function": {"name": reply.tool_name, "arguments": reply.tool_arguments},
        }
        chunks.append(chunk({"tool_calls": [call]}))
    else:
        text = reply.text or ""
        pieces = [text[i : i + 8] for i in range(0, len(text), 8)] or [""]
        chunks.extend(chunk({"content": piece}) for piece in pieces)
    chunks.append(chunk({}, reply.finish_reason))
    options = body.get("stream_options") or {}
    if isinstance(options, dict) and options.get("include_usage"):
        completion = reply.text or reply.tool_arguments or ""
        chunks.append({**base, "choices": [], "usage": _usage(prompt, completion)})
    return chunks


def _response(fake: FakeOpenAI, body: dict[str, Any], reply: Reply, prompt: str) -> Any:
    if reply.tool_name is not None:
        output: dict[str, Any] = {
            "type": "function_call",
            "id": fake._new_id("fc"),
            "call_id": fake._new_id("call"),
            "name": reply.tool_name,
            "arguments": reply.tool_arguments,
            "status": "completed",
        }
    else:
        output = {
            "type": "message",
            "id": fake._new_id("msg"),
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": reply.text or "", "annotations": []}],
        }
    usage = _usage(prompt, reply.text or reply.tool_arguments or "")
    return {
        "id": fake._new_id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": body.get("model", "gpt-4o-mini"),
        "output": [output],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _embeddings(body: dict[str, Any]) -> Any:
    """Eight-dimensional vectors, one per input, from the text's bytes (same text, same
    vector)."""
    inputs = body.get("input", [])
    texts = [inputs] if isinstance(inputs, str) else list(inputs)
    data = []
    for index, text in enumerate(texts):
        raw = (str(text).encode() or b"\0") * 8
        vector = [((raw[i] % 17) + 1) / 17.0 for i in range(8)]
        data.append({"object": "embedding", "index": index, "embedding": vector})
    usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
    return {"object": "list", "data": data, "model": body.get("model", "fake"), "usage": usage}


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            return

        def _send_json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status >= 400:
                self.send_header("x-should-retry", "false")
            self.end_headers()
            self.wfile.write(data)

        def _read(self) -> RecordedRequest:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = None
            recorded = RecordedRequest(
                method=self.command,
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw=raw,
            )
            fake._record(recorded)
            return recorded

        def do_GET(self) -> None:
            self._read()
            if self.path.rstrip("/") == "/v1/models":
                models = [{"id": "gpt-4o-mini", "object": "model", "owned_by": "fake"}]
                self._send_json(200, {"object": "list", "data": models})
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            request = self._read()
            path = self.path.split("?")[0].rstrip("/")
            if path not in {"/v1/chat/completions", "/v1/responses", "/v1/embeddings"}:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            body = request.body if isinstance(request.body, dict) else {}
            try:
                reply = fake._next_reply(request)
            except Exception as exc:  # a broken responder: answer 500 and keep the reason
                fake.errors.append(f"{type(exc).__name__}: {exc}")
                reply = Reply(status=500, error_message=f"responder failed: {exc}")
            if reply.delay:
                time.sleep(reply.delay)
            if reply.status >= 400:
                error = {
                    "message": reply.error_message,
                    "type": "server_error" if reply.status >= 500 else "invalid_request_error",
                    "param": None,
                    "code": None,
                }
                self._send_json(reply.status, {"error": error})
                return
            prompt = request.text
            if path == "/v1/embeddings":
                self._send_json(200, _embeddings(body))
            elif path == "/v1/responses":
                self._send_json(200, _response(fake, body, reply, prompt))
            elif body.get("stream"):
                self._send_events(_chat_chunks(fake, body, reply, prompt))
            else:
                self._send_json(200, _chat_completion(fake, body, reply, prompt))

        def _send_events(self, chunks: list[Any]) -> None:
            data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
            data += b"data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
