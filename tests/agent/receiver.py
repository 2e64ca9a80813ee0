"""A loopback profile store for the agent's tests: an HTTP server on 127.0.0.1 that takes OTLP
profiles (POST .../v1development/profiles) and Pyroscope pushes (POST
.../push.v1.PusherService/Push), answers each path from a script of fault modes, and keeps every
request it got. It stops by itself: after `max_requests` requests or `max_seconds` seconds.

Fault modes, taken in order per path (then "ok" for ever):
  ok                 200
  status:N           N with an empty body
  status:N:after=S   N with Retry-After: S
  reset              the connection is closed without an answer
  stall:S            the answer comes after S seconds (the agent's --send-timeout is shorter)
"""
import http.server
import socket
import ssl
import threading
import time

OTLP_PATH = "/v1development/profiles"
PUSH_PATH = "/push.v1.PusherService/Push"


class Request:
    def __init__(self, path, headers, body, status, at):
        self.path = path
        self.headers = headers
        self.body = body
        self.status = status  # what the receiver answered (0: reset or stalled)
        self.at = at


class Receiver:
    def __init__(self, scripts=None, max_requests=10000, max_seconds=300, port=0, tls=None):
        """tls: (certificate file, key file) to serve https instead of http."""
        self.scripts = {k: list(v) for k, v in (scripts or {}).items()}
        self.requests = []
        self.lock = threading.Lock()
        self.max_requests = max_requests
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                kind = "otlp" if self.path.endswith(OTLP_PATH) else (
                    "push" if self.path.endswith(PUSH_PATH) else None)
                with receiver.lock:
                    script = receiver.scripts.get(kind, [])
                    mode = script.pop(0) if script else "ok"
                    done = len(receiver.requests) + 1 >= receiver.max_requests
                status = 0
                if kind is None:
                    mode = "status:404"
                if mode == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.close_connection = True
                elif mode.startswith("stall:"):
                    time.sleep(float(mode.split(":")[1]))
                    self.close_connection = True
                else:
                    status, retry_after = 200, None
                    if mode.startswith("status:"):
                        parts = mode.split(":")
                        status = int(parts[1])
                        if len(parts) > 2 and parts[2].startswith("after="):
                            retry_after = parts[2][len("after="):]
                    self.send_response(status)
                    if retry_after is not None:
                        self.send_header("Retry-After", retry_after)
                    ctype = "application/proto" if kind == "push" else "application/x-protobuf"
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                with receiver.lock:
                    receiver.requests.append(Request(self.path, dict(self.headers.items()), body,
                                                     status, time.time()))
                if done:
                    threading.Thread(target=receiver.stop, daemon=True).start()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.url = "https://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.timer = threading.Timer(max_seconds, self.stop)
        self.timer.daemon = True

    def start(self):
        self.thread.start()
        self.timer.start()
        return self

    def stop(self):
        self.timer.cancel()
        self.server.shutdown()
        self.server.server_close()

    def accepted(self, kind):
        path = OTLP_PATH if kind == "otlp" else PUSH_PATH
        with self.lock:
            return [r for r in self.requests if r.path.endswith(path) and r.status == 200]

    def all(self):
        with self.lock:
            return list(self.requests)
