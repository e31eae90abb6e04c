"""The part both loopback mocks share: a request handler that answers JSON and refuses, and
records, any request meant for another host (the mock is also the CLI's proxy, so a real CLI
that tries to reach the network is caught, not let through)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler


class LoopbackHandler(BaseHTTPRequestHandler):
    """Subclasses set ``foreign`` to the list that collects refused requests."""

    foreign: list[str]

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _foreign(self) -> bool:
        """Refuse (403) and record a proxied request for another host; False for our own."""
        if self.command == "CONNECT" or self.path.startswith(("http://", "https://", "ws://", "wss://")):
            self.foreign.append(f"{self.command} {self.path}")
            self.close_connection = True
            self._send(403, b"")
            return True
        return False

    def do_CONNECT(self) -> None:  # noqa: N802 - http.server's naming
        self._foreign()
