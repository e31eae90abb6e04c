"""A loopback stand-in for the OpenAI Responses and Chat Completions APIs, for tests that drive
the *real* ``codex``, ``copilot`` (BYOK) and ``pi`` (a custom provider).

Only the server is fake: the CLI is the installed one. ``MockOpenAI`` listens on 127.0.0.1 and
answers every ``POST .../responses`` and ``POST .../chat/completions`` with one streamed
assistant turn (server-sent events, as each API streams them). The text is ``review`` when the
request is a ``codex review`` (its instructions ask for a review as JSON) and ``reply``
otherwise. ``script`` (a list) overrides that for the next model calls, one step each: a string
is a text answer, ``Shell(command)`` a call of the CLI's own shell tool (``exec_command`` for
Codex, ``bash`` for Copilot and Pi, found in the request's tool list), so the real CLI runs the
command, fires its hooks and sends the result back. Anything else gets ``{}``.
Each request is recorded, so a test can see what reached the model. Setting ``error`` (e.g. to
``usage_limit(resets_at)``) makes every model call fail with that status and JSON body instead.

It doubles as the HTTP(S) proxy of the CLI under test (``env()`` sets ``HTTPS_PROXY`` and the
rest to the mock, with loopback exempt): a request for any other host arrives here as a
``CONNECT`` or an absolute URL, is refused, and is listed in ``foreign`` so a test can fail on it.

Codex ignores ``OPENAI_BASE_URL``; it is pointed at the mock through a model provider in
``$CODEX_HOME/config.toml`` (``config_toml()``), with a dummy key in ``MOCK_OPENAI_KEY``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from fake_agents.loopback import LoopbackHandler

REPLY = "done"
KEY_ENV = "MOCK_OPENAI_KEY"
PROVIDER = "mockopenai"


def review_json(findings: list[dict[str, Any]], explanation: str) -> str:
    """A review result in the JSON shape ``codex review`` asks its model for."""
    return json.dumps({
        "findings": findings,
        "overall_correctness": "patch is incorrect" if findings else "patch is correct",
        "overall_explanation": explanation,
        "overall_confidence_score": 0.7,
    })


def finding(title: str, body: str, path: str, line: int, priority: int = 1) -> dict[str, Any]:
    return {"title": f"[P{priority}] {title}", "body": body, "confidence_score": 0.8, "priority": priority,
            "code_location": {"absolute_file_path": path, "line_range": {"start": line, "end": line}}}


CLEAN_REVIEW = review_json([], "The change is correct; nothing to report.")


def usage_limit(resets_at: int, plan_type: str = "plus") -> tuple[int, dict[str, Any]]:
    """The 429 the Responses API answers when a ChatGPT plan's usage limit is reached."""
    return 429, {"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
                           "plan_type": plan_type, "resets_at": resets_at}}


class Shell:
    """A script step: the model asks the CLI to run ``command`` with its shell tool."""

    def __init__(self, command: str) -> None:
        self.command = command


Step = str | Shell
SHELL_TOOLS = {"exec_command": "cmd", "shell": "command", "bash": "command"}  # tool -> argument


def _shell_tool(body: Any) -> tuple[str, str]:
    """(tool name, argument name) of the shell tool the request offers the model."""
    for tool in (body or {}).get("tools") or []:
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if name in SHELL_TOOLS:
            return name, SHELL_TOOLS[name]
    raise AssertionError("the request offers no shell tool the mock knows")


def _arguments(body: Any, step: Shell) -> tuple[str, str]:
    name, arg = _shell_tool(body)
    value: Any = step.command
    if name == "shell":
        value = ["bash", "-lc", step.command]
    return name, json.dumps({arg: value})


def _sse_call(body: Any, step: Shell, n: int) -> bytes:
    """A Responses API turn that calls the shell tool once."""
    name, args = _arguments(body, step)
    rid, cid = f"resp_mock_{n}", f"call_mock_{n}"
    item = {"type": "function_call", "id": f"fc_mock_{n}", "call_id": cid, "name": name, "arguments": args,
            "status": "completed"}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 11}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": rid, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed",
         "response": {"id": rid, "status": "completed", "output": [item], "usage": usage}},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _chat_chunks(body: Any, step: Step, n: int) -> bytes:
    """A Chat Completions stream: one text answer or one shell tool call, then ``[DONE]``."""
    model = str((body or {}).get("model") or "mock-model")
    base = {"id": f"chatcmpl-mock-{n}", "object": "chat.completion.chunk", "created": 1796000000 + n,
            "model": model}
    if isinstance(step, Shell):
        name, args = _arguments(body, step)
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": f"call_mock_{n}", "type": "function", "function": {"name": name, "arguments": args}}]}
        finish = "tool_calls"
    else:
        delta, finish = {"role": "assistant", "content": step}, "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
    ]
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


def _sse(text: str, n: int) -> bytes:
    rid, mid = f"resp_mock_{n}", f"msg_mock_{n}"
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 11}
    item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": rid, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {**item, "status": "in_progress", "content": []}},
        {"type": "response.output_text.delta", "item_id": mid, "output_index": 0, "content_index": 0,
         "delta": text},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed",
         "response": {"id": rid, "status": "completed", "output": [item], "usage": usage}},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _is_review(body: Any) -> bool:
    """True for the request ``codex review`` sends (its instructions ask for the review JSON)."""
    text = json.dumps(body) if body is not None else ""
    return "overall_correctness" in text


class MockOpenAI:
    """``with MockOpenAI() as api: ...``; ``api.url``, ``api.requests``, ``api.foreign``."""

    def __init__(self, reply: str = REPLY, review: str = CLEAN_REVIEW) -> None:
        self.reply, self.review = reply, review
        self.script: list[Step] = []  # the next model calls' answers, one step each
        self.error: tuple[int, dict[str, Any]] | None = None  # (status, JSON body) for every model call
        self.requests: list[tuple[str, str, Any]] = []  # (method, path, body as JSON or None)
        self.foreign: list[str] = []  # requests meant for another host (through the proxy)
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        mock = self

        class Handler(LoopbackHandler):
            protocol_version = "HTTP/1.1"

            foreign = mock.foreign

            def _body(self) -> Any:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return None

            def do_GET(self) -> None:  # noqa: N802
                if not self._foreign():
                    mock._record(self.command, self.path, None)
                    self._send(200, b"{}")

            def do_POST(self) -> None:  # noqa: N802
                if self._foreign():
                    return
                body = self._body()
                n = mock._record(self.command, self.path, body)
                path = self.path.split("?")[0]
                chat = path.endswith("/chat/completions")
                if not (chat or path.endswith("/responses")):
                    self._send(200, b"{}")
                    return
                if mock.error is not None:
                    status, error = mock.error
                    self._send(status, json.dumps(error).encode())
                    return
                step = mock._next(body)
                if chat:
                    self._send(200, _chat_chunks(body, step, n), "text/event-stream")
                elif isinstance(step, Shell):
                    self._send(200, _sse_call(body, step, n), "text/event-stream")
                else:
                    self._send(200, _sse(step, n), "text/event-stream")

        return Handler

    def _next(self, body: Any) -> Step:
        with self._lock:
            if self.script:
                return self.script.pop(0)
        return self.review if _is_review(body) else self.reply

    def _record(self, method: str, path: str, body: Any) -> int:
        with self._lock:
            self.requests.append((method, path, body))
            return len(self.requests)

    @property
    def url(self) -> str:
        """The provider's base URL (the Responses API is ``<url>/responses``)."""
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def origin(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def config_toml(self) -> str:
        """A ``$CODEX_HOME/config.toml`` that sends every model call to this mock, never retrying."""
        return (
            "check_for_update_on_startup = false\n"
            f'model_provider = "{PROVIDER}"\n'
            "\n"
            f"[model_providers.{PROVIDER}]\n"
            'name = "Mock OpenAI"\n'
            f'base_url = "{self.url}"\n'
            f'env_key = "{KEY_ENV}"\n'
            'wire_api = "responses"\n'
            "supports_websockets = false\n"
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
            "\n"
            "# codex's own traffic that is not a model call (plugin marketplace, analytics): off\n"
            "[features]\n"
            "plugins = false\n"
            "\n"
            "[analytics]\n"
            "enabled = false\n"
        )

    def use_for_codex(self, home: Path, monkeypatch: Any, head: str = "") -> None:
        """Point the real codex of a test at this mock: ``home`` as ``$CODEX_HOME`` with
        ``config_toml()`` (after ``head``), the dummy key and the proxy in the environment."""
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(head + self.config_toml())
        monkeypatch.setenv("CODEX_HOME", str(home))
        for name, value in self.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def env(self) -> dict[str, str]:
        """Environment for the CLI: the dummy key, and this mock as the proxy for any other host."""
        env = {KEY_ENV: "sk-mock-" + "x" * 20, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            env[name] = self.origin
        return env

    def model_requests(self) -> list[Any]:
        return [body for method, path, body in self.requests
                if method == "POST" and path.split("?")[0].endswith(("/responses", "/chat/completions"))]

    def prompts(self) -> list[str]:
        """The text of every user message the CLI sent to the model."""
        texts: list[str] = []
        for body in self.model_requests():
            if not isinstance(body, dict):
                continue
            for item in (body.get("input") or []) + (body.get("messages") or []):
                if not isinstance(item, dict) or item.get("role") != "user":
                    continue
                content = item.get("content")
                if isinstance(content, str):
                    texts.append(content)
                elif isinstance(content, list):
                    texts += [c.get("text", "") for c in content
                              if isinstance(c, dict) and c.get("type") in ("input_text", "text")]
        return texts

    def tool_results(self) -> list[str]:
        """The text of every tool result the CLI sent back to the model (either API)."""
        out: list[str] = []
        for body in self.model_requests():
            for item in (body or {}).get("input") or []:
                if isinstance(item, dict) and item.get("type") == "function_call_output":
                    output = item.get("output")
                    out.append(output if isinstance(output, str) else json.dumps(output))
            for msg in (body or {}).get("messages") or []:
                if isinstance(msg, dict) and msg.get("role") == "tool":
                    content = msg.get("content")
                    out.append(content if isinstance(content, str) else json.dumps(content))
        return out

    def __enter__(self) -> MockOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

