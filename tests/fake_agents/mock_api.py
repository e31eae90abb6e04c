"""A loopback stand-in for the Anthropic Messages API, for tests that drive the *real* ``claude``.

Only the server is fake: the CLI is the installed one. ``MockAPI`` listens on 127.0.0.1, answers
every ``POST /v1/messages`` with one assistant turn saying ``done`` (streamed as server-sent
events when the request asks for a stream), answers anything else with ``{}``, and records each
request body so a test can see what reached the model. Point the CLI at it with
``ANTHROPIC_BASE_URL=mock.url`` and a dummy ``ANTHROPIC_API_KEY``.

It doubles as the CLI's HTTP(S) proxy (``proxy_env()``, loopback exempt): a request for any other
host arrives as a ``CONNECT`` or an absolute URL, is refused, and is listed in ``foreign``.
"""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from fake_agents.loopback import LoopbackHandler

REPLY = "done"


def _events(model: str) -> list[tuple[str, dict[str, Any]]]:
    usage = {
        "input_tokens": 10,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    return [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_mock_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": REPLY}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


class MockAPI:
    """``with MockAPI() as api: ...``; ``api.url``, ``api.requests`` (path, body as JSON)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, Any]] = []
        self.foreign: list[str] = []  # requests meant for another host (through the proxy)
        mock = self

        class Handler(LoopbackHandler):
            foreign = mock.foreign

            def do_GET(self) -> None:  # noqa: N802
                if not self._foreign():
                    self._send(200, b"{}")

            def do_HEAD(self) -> None:  # noqa: N802
                if not self._foreign():
                    self._send(200, b"")

            def do_POST(self) -> None:  # noqa: N802
                if self._foreign():
                    return
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                mock.requests.append((self.path, body))
                if not self.path.split("?")[0].endswith("/v1/messages"):
                    self._send(200, b"{}")
                    return
                model = str((body or {}).get("model") or "claude-mock")
                events = _events(model)
                if isinstance(body, dict) and body.get("stream"):
                    data = "".join(f"event: {name}\ndata: {json.dumps(obj)}\n\n" for name, obj in events)
                    self._send(200, data.encode(), "text/event-stream")
                    return
                message = dict(events[0][1]["message"])
                message.update(content=[{"type": "text", "text": REPLY}], stop_reason="end_turn")
                self._send(200, json.dumps(message).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def proxy_env(self) -> dict[str, str]:
        """Environment that routes the CLI's requests for any host but loopback through this mock."""
        env = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            env[name] = self.url
        return env

    def prompts(self) -> list[str]:
        """The text of every user message the CLI sent to the model."""
        texts: list[str] = []
        for path, body in self.requests:
            if not path.split("?")[0].endswith("/v1/messages") or not isinstance(body, dict):
                continue
            for msg in body.get("messages") or []:
                content = msg.get("content")
                if isinstance(content, str):
                    texts.append(content)
                elif isinstance(content, list):
                    texts += [
                        c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"
                    ]
        return texts

    def __enter__(self) -> MockAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
