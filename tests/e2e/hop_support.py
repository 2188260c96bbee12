"""Front proxies on loopback (tests/e2e/proxies.py's nginx load balancer,
HAProxy in http and tcp mode, Caddy) and a raw origin that records the request heads exactly as they arrive:
what a hop really makes of a browser's head.

Used by tests/e2e/test_hop.py and, as a script, to measure what the hops
deliver and how replay scores it:

    python3 tests/e2e/hop_support.py [--limit N] [--profile-config CONFIG]
"""

import http.client
import json
import pathlib
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from conftest import ROOT  # noqa: E402
import proxies  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "real_clients" / "corpus.jsonl"
EDGEGUARD = ROOT / "target" / "release" / "edgeguard"
# The client address the front proxies are told (X-Forwarded-For's first
# hop): a documentation address, never the loopback the test runs on.
CLIENT = "198.51.100.23"


class RawOrigin:
    """Answers every request with 200 and records its head as bytes."""

    def __init__(self):
        self.heads = []
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stopped = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        conn.settimeout(5)
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                length = 0
                chunked = False
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip() or 0)
                    if name.strip().lower() == b"transfer-encoding":
                        chunked = b"chunked" in value.lower()
                # Go's client (Caddy) sends a body it streams chunked.
                while chunked and b"0\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                if chunked:
                    buf = buf.split(b"0\r\n\r\n", 1)[1]
                while len(buf) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                buf = buf[length:]
                with self.lock:
                    self.heads.append(head)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
        except OSError:
            return
        finally:
            conn.close()

    def stop(self):
        self.stopped = True
        self.sock.close()


def parse_head(head):
    """(method, target, version, [[name, value], ...]) of a raw head."""
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = lines[0].split(" ", 2)
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append([name, value.strip()])
    return method, target, version, headers


def raw_request(record, host=None):
    """The record's head as an HTTP/1.1 request on the wire, in its order and
    letter case (an HTTP/2 record's lower-case names as the hop got them),
    with a body of its Content-Length."""
    lines = [f"{record['method']} {record['uri']} HTTP/1.1"]
    length = 0
    has_host = False
    for name, value in record["headers"]:
        if name.startswith(":"):
            continue
        if name.lower() == "host":
            has_host = True
            value = host or value
        if name.lower() == "content-length":
            length = int(value or 0)
        lines.append(f"{name}: {value}")
    if not has_host:
        lines.insert(1, f"Host: {host or 'shop.test'}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + b"x" * length


def send(port, record, timeout=5):
    """Sends the record's head to 127.0.0.1:port; returns the status."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw_request(record))
        resp = http.client.HTTPResponse(s, method=record["method"])
        resp.begin()
        resp.read()
        return resp.status


# The front proxies' own kinds (tests/e2e/proxies.py, which
# scripts/deployment-measure.py starts too).
FRONTS = {"nginx": proxies.NginxFront, "haproxy": proxies.HaproxyHttp, "caddy": proxies.CaddyFront,
          "haproxy-tcp": proxies.HaproxyTcp}


class Front:
    """A front proxy of `kind` forwarding to 127.0.0.1:upstream_port; its
    HTTP/1.1 listener is `port`."""

    def __init__(self, kind, upstream_port):
        self.kind = kind
        self.front = FRONTS[kind](upstream_port)
        self.port = self.front.h1

    def stop(self):
        self.front.stop()
        shutil.rmtree(self.front.dir, ignore_errors=True)


def corpus(label, limit=None, families=None):
    """Corpus records with `label` (every family, or `families`), the first
    `limit` of each family."""
    seen = {}
    out = []
    for line in CORPUS.open():
        r = json.loads(line)
        if r.get("label") != label or (families and r["family"] not in families):
            continue
        n = seen.get(r["family"], 0)
        if limit is not None and n >= limit:
            continue
        seen[r["family"]] = n + 1
        out.append(r)
    return out


def through(kind, records):
    """Sends each record through a `kind` front proxy into a raw origin;
    returns the heads as they arrived, as replay input lines (the client
    being the address the hop reports, the peer the hop's)."""
    origin = RawOrigin()
    front = Front(kind, origin.port)
    out = []
    lost = []
    try:
        for r in records:
            before = len(origin.heads)
            send(front.port, r)
            deadline = time.monotonic() + 2
            while len(origin.heads) == before and time.monotonic() < deadline:
                time.sleep(0.005)
            if len(origin.heads) == before:
                # The hop answered itself (Caddy answers some CORS
                # preflights): nothing reached the origin to judge.
                lost.append((r["family"], r["method"], r["uri"]))
                continue
            method, target, version, headers = parse_head(origin.heads[-1])
            out.append({
                "method": method,
                "uri": target,
                "version": version.removeprefix("HTTP/"),
                "client": CLIENT,
                "peer": "127.0.0.1",
                "headers": headers,
                "family": r["family"],
                "label": r["label"],
            })
    finally:
        front.stop()
        origin.stop()
    if lost:
        print(f"{kind}: {len(lost)} requests never reached the origin, e.g. {lost[:3]}", file=sys.stderr)
    return out


def replay_scores(lines, config):
    """The bot score replay gives each line under `config`."""
    proc = subprocess.run(
        [str(EDGEGUARD), "replay", "--config", str(config), "--ordered", "--output", "-", "--threads", "1"],
        input="".join(json.dumps(x) + "\n" for x in lines).encode(),
        capture_output=True,
        check=True,
    )
    return [json.loads(x)["scores"]["bot"] for x in proc.stdout.decode().splitlines()]


def main(argv):
    import argparse

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=int, default=None, help="records per family")
    p.add_argument("--config", default=str(ROOT / "nginx-conf" / "record.json"))
    p.add_argument("--profile-config", default=None, help="a second config (with trusted_proxies, proxy_profile)")
    p.add_argument("--dump", default=None, help="write the arrived heads (JSON Lines) to this directory")
    args = p.parse_args(argv)
    people = corpus("human", args.limit)
    scripts = corpus("automated", args.limit, families={"curl", "python-requests", "wget", "go-net-http",
                                                       "node-fetch", "python-httpx"})
    print(f"{len(people)} people heads, {len(scripts)} script heads", file=sys.stderr)
    for kind in ("direct", "nginx", "haproxy", "caddy"):
        if kind == "direct":
            lines = [dict(r, client=CLIENT, version=r["version"].removeprefix("HTTP/")) for r in people + scripts]
        else:
            lines = through(kind, people + scripts)
        if args.dump:
            pathlib.Path(args.dump, f"{kind}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        configs = [("default", args.config)]
        if args.profile_config and kind != "direct":
            configs.append((f"profile {kind}", args.profile_config.replace("{profile}", kind)))
        for name, config in configs:
            scores = replay_scores(lines, config)
            fams = {}
            for line, s in zip(lines, scores):
                fams.setdefault((line["label"], line["family"]), []).append(s)
            print(f"\n== {kind} ({name})")
            for (label, fam), ss in sorted(fams.items()):
                flagged = sum(s >= 0.0930710680 for s in ss)
                print(f"{label:9} {fam:26} n={len(ss):4} mean={sum(ss)/len(ss):.4f} "
                      f"min={min(ss):.4f} flagged={flagged}")


if __name__ == "__main__":
    main(sys.argv[1:])
