"""What the security tests share: an origin that records the raw bytes it
receives, the shipped list's rule in Python, and clients that send exact
bytes over HTTP/1.1 (a raw socket) and h2c (the `h2` package's framing, with
its header checks off, so that names nginx must judge reach nginx as sent).

The origin is the truth: a test passes on what arrived there, never on what
edgeguard says it removed.
"""

import socket
import socketserver
import threading

import h2.config
import h2.connection
import h2.events

from conftest import ROOT, Nginx, bad_log_lines, free_port, nginx_preamble, wait_for_port

LIST = ROOT / "nginx-conf" / "internal-headers.txt"
LIB = ROOT / "target" / "release" / "libedgeguard.so"
MODELS = f'models = {{ bot = "{ROOT}/models/bot.json", spoof = "{ROOT}/models/spoof.json" }},'


def load_rules(path=LIST):
    """The list's (exact names, prefixes), folded as edgeguard folds them."""
    exact, prefixes = set(), []
    for line in path.read_bytes().splitlines():
        name = line.split(b"#", 1)[0].strip()
        if not name:
            continue
        if name.endswith(b"*"):
            prefixes.append(fold(name[:-1]))
        else:
            exact.add(fold(name))
    return exact, prefixes


def fold(name):
    """ASCII case folded, `_` read as `-` (src/headers/matcher.rs); 8-bit bytes kept."""
    return bytes(b + 32 if 65 <= b <= 90 else (45 if b == 95 else b) for b in name)


RULES = load_rules()


def is_internal(name, rules=RULES):
    exact, prefixes = rules
    f = fold(name)
    return f in exact or any(f.startswith(p) for p in prefixes)


def head_fields(head):
    """[(name, value)] of a raw request head (bytes), the request line left out."""
    out = []
    for line in head.split(b"\r\n")[1:]:
        if not line:
            continue
        name, _, value = line.partition(b":")
        out.append((name, value.strip()))
    return out


class RawOrigin:
    """Answers 200 to every request with the request head it received, and
    keeps every head (auth_request's subrequests included)."""

    def __init__(self):
        self.heads = []
        self.lock = threading.Lock()
        origin = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                data = b""
                self.request.settimeout(10)
                while b"\r\n\r\n" not in data:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head = data.split(b"\r\n\r\n", 1)[0] + b"\r\n"
                with origin.lock:
                    origin.heads.append(head)
                self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                                     b"Content-Length: %d\r\n\r\n" % len(head) + head)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self):
        with self.lock:
            heads, self.heads = self.heads, []
        return heads

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def h1(port, target, lines, host=b"edge.test"):
    """One HTTP/1.1 request with exactly these header lines (bytes); returns
    (status, {lowercased name: value} as text, body)."""
    req = b"GET " + target.encode() + b" HTTP/1.1\r\nHost: " + host + b"\r\n"
    req += b"".join(line + b"\r\n" for line in lines) + b"Connection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(req)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *rest = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in rest:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


H2_CONFIG = h2.config.H2Configuration(client_side=True, header_encoding=None, validate_outbound_headers=False,
                                      normalize_outbound_headers=False, validate_inbound_headers=False)


def h2c(port, target, fields, authority=b"edge.test"):
    """One h2c request (prior knowledge) with exactly these header fields
    (bytes pairs) after the pseudo-headers. Returns (status, headers, body);
    status is "reset" when nginx reset the stream or closed the connection."""
    conn = h2.connection.H2Connection(config=H2_CONFIG)
    conn.initiate_connection()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(conn.data_to_send())
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", authority),
                                (b":path", target.encode()), *fields], end_stream=True)
        s.sendall(conn.data_to_send())
        status, headers, body = None, {}, b""
        while True:
            data = s.recv(65536)
            if not data:
                return "reset", headers, body
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived):
                    for k, v in ev.headers:
                        headers[k.decode().lower()] = v.decode("latin-1")
                    status = int(headers[":status"])
                elif isinstance(ev, h2.events.DataReceived):
                    body += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                    return "reset", headers, body
                elif isinstance(ev, h2.events.StreamEnded):
                    return status, headers, body
            s.sendall(conn.data_to_send())


def nginx_conf(http_body, init="", configure="", workers=1, http_extra=""):
    """An nginx.conf whose http{} holds edgeguard's configure() and `http_body`."""
    return nginx_preamble(workers, 512) + f"""
    {http_extra}
    init_by_lua_block {{
        assert(require("resty.edgeguard").configure{{
            lib_path = "{LIB}",
            {configure}
        }})
        {init}
    }}
    init_worker_by_lua_block {{ require("resty.edgeguard").init_worker() }}
    {http_body}
}}
"""


class Edge:
    """A started nginx; `stop()` checks its error log for [error] and worse."""

    def __init__(self, conf, port):
        self.nginx = Nginx(conf)
        self.nginx.start(port)
        self.mark = 0

    def new_log(self):
        """The error log written since the previous call."""
        text = self.nginx.error_log
        new, self.mark = text[self.mark:], len(text)
        return new

    def stop(self, allowed=()):
        """`allowed`: substrings of [error] lines the test provoked on purpose."""
        self.nginx.stop()
        bad = [line for line in bad_log_lines(self.nginx.error_log) if not any(a in line for a in allowed)]
        self.nginx.cleanup()
        assert not bad, "error log has errors:\n" + "\n".join(bad)


__all__ = ["RawOrigin", "Edge", "h1", "h2c", "nginx_conf", "is_internal", "head_fields", "fold", "free_port",
           "wait_for_port", "MODELS", "LIST"]
