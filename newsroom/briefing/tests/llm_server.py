"""A local OpenAI-compatible chat server for tests (127.0.0.1, port 0).

Each scenario is a path prefix: POST /<scenario>/v1/chat/completions.
  good       streams `reply` in small chunks, then [DONE]
  error      streams part of `reply`, then an error chunk
  cut        streams part of `reply`, then closes the connection
  malformed  streams one line that is not JSON
  silent     sends nothing until the test ends (the client must time out)
  http500    answers 500 with a JSON error
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _chunk(text: str) -> bytes:
    body = {
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]
    }
    return f"data: {json.dumps(body)}\n\n".encode()


class ChatServer:
    def __init__(self) -> None:
        self.reply = ""
        self.requests: list[dict] = []
        self.release = threading.Event()
        server = self
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(server))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, scenario: str) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/{scenario}/v1"

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    @staticmethod
    def _handler(server: ChatServer):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                server.requests.append(
                    {
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": json.loads(self.rfile.read(length) or b"{}"),
                    }
                )
                scenario = self.path.strip("/").split("/")[0]
                if scenario == "silent":
                    server.release.wait(30)
                    return
                if scenario == "http500":
                    body = b'{"error": {"message": "model not loaded"}}'
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                reply = server.reply
                pieces = [reply[i : i + 7] for i in range(0, len(reply), 7)]
                if scenario == "malformed":
                    self.wfile.write(b"data: {this is not json\n\n")
                    return
                if scenario in ("error", "cut"):
                    pieces = pieces[: max(1, len(pieces) // 3)]
                for piece in pieces:
                    self.wfile.write(_chunk(piece))
                    self.wfile.flush()
                if scenario == "error":
                    err = {"error": {"message": "out of memory while generating"}}
                    self.wfile.write(f"data: {json.dumps(err)}\n\n".encode())
                    return
                if scenario == "cut":
                    return  # the connection closes without [DONE]
                done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(
                    f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode()
                )

        return Handler
