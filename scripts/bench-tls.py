#!/usr/bin/env python3
"""What JA4 costs per TLS handshake in nginx (`make bench-tls`).

One nginx worker serves three TLS servers, identical but for the client-hello
phase: none; an empty ssl_client_hello_by_lua_block (the cost of the Lua
phase itself); resty.edgeguard.tls.client_hello() (that phase plus reading
the ClientHello, JA4, and storing it on the connection). A Python client
makes full handshakes (no session reuse, TLS 1.3, P-256 key) in rounds,
interleaving the three, and the script reads the worker's CPU time from
/proc before and after each batch: worker CPU per handshake is the number
that holds on a busy machine; handshakes per second are printed too.

    scripts/bench-tls.py [--rounds 7] [--handshakes 1000]
"""
import argparse
import os
import pathlib
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
LIB = ROOT / "target" / "release" / "libedgeguard.so"
MODULES = "/usr/lib/nginx/modules"
HOOKS = {
    "no client-hello phase": "",
    "empty ssl_client_hello_by_lua_block": "ssl_client_hello_by_lua_block { local _ = 1 }",
    "edgeguard tls.client_hello()": 'ssl_client_hello_by_lua_block { require("resty.edgeguard.tls").client_hello() }',
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def conf(ports):
    servers = "\n".join(f"""
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        ssl_session_tickets off;
        {hook}
        location / {{ return 204; }}
    }}""" for port, hook in zip(ports, HOOKS.values()))
    return f"""
load_module {MODULES}/ndk_http_module.so;
load_module {MODULES}/ngx_http_lua_module.so;
worker_processes 1;
error_log logs/error.log warn;
pid logs/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    lua_package_path "{ROOT}/lua/?.lua;;";
    init_by_lua_block {{
        require("resty.edgeguard.lib").load("{LIB}")
        require "resty.edgeguard.tls"
    }}
    {servers}
}}
"""


def worker_cpu(pid):
    """CPU time a process has run, in seconds (schedstat: nanoseconds, not
    /proc/PID/stat's 10 ms ticks)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def handshakes(port, n):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    for _ in range(n):
        with socket.create_connection(("127.0.0.1", port)) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                s.do_handshake()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--handshakes", type=int, default=1000)
    args = ap.parse_args()
    prefix = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-bench-tls-"))
    os.chmod(prefix, 0o755)
    (prefix / "logs").mkdir()
    ports = [free_port() for _ in HOOKS]
    (prefix / "nginx.conf").write_text(conf(ports))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "1", "-subj", "/CN=localhost", "-keyout", prefix / "key.pem", "-out", prefix / "cert.pem"],
                   check=True, capture_output=True)
    nginx = subprocess.Popen(["nginx", "-p", f"{prefix}/", "-c", "nginx.conf", "-g", "daemon off;"])
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", ports[-1]), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        workers = subprocess.run(["pgrep", "-P", str(nginx.pid)], capture_output=True, text=True).stdout.split()
        assert len(workers) == 1, workers
        worker = int(workers[0])
        for port in ports:  # warm: Lua code cache, the library's scratch
            handshakes(port, 50)
        cpu = {name: [] for name in HOOKS}
        rate = {name: [] for name in HOOKS}
        for r in range(args.rounds):
            order = list(zip(HOOKS, ports))
            if r % 2:
                order.reverse()
            for name, port in order:
                c0, t0 = worker_cpu(worker), time.perf_counter()
                handshakes(port, args.handshakes)
                c1, t1 = worker_cpu(worker), time.perf_counter()
                cpu[name].append((c1 - c0) / args.handshakes * 1e6)
                rate[name].append(args.handshakes / (t1 - t0))
        log = (prefix / "logs" / "error.log").read_text()
        assert "[error]" not in log and "[crit]" not in log, log
    finally:
        nginx.send_signal(signal.SIGQUIT)
        nginx.wait(timeout=10)
    base = statistics.median(cpu["no client-hello phase"])
    base_rate = statistics.median(rate["no client-hello phase"])
    print(f"{args.rounds} rounds x {args.handshakes} full TLS 1.3 handshakes per server, interleaved; medians")
    print()
    print("| client-hello phase | worker CPU per handshake (µs) | vs none | handshakes/s (Python client) | vs none |")
    print("|---|---:|---:|---:|---:|")
    for name in HOOKS:
        c, h = statistics.median(cpu[name]), statistics.median(rate[name])
        print(f"| {name} | {c:.1f} ({min(cpu[name]):.1f}–{max(cpu[name]):.1f}) | {c / base:.3f} | {h:.0f} | {h / base_rate:.3f} |")
    print()
    eg = statistics.median(cpu["edgeguard tls.client_hello()"]) - statistics.median(cpu["empty ssl_client_hello_by_lua_block"])
    print(f"edgeguard's own part (tls.client_hello() minus the empty phase): {eg:.1f} µs of worker CPU per handshake")


main()
