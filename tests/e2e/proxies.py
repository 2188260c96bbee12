"""Real front proxies on 127.0.0.1, each in front of its own edgeguard nginx.

Used by scripts/deployment-measure.py (and through it by
tests/e2e/test_deployment.py). Every process here is a Debian package's
binary started in the foreground with a configuration written into a
scratch directory, on free loopback ports, and stopped by `stop()`:

- `Edge`: nginx-conf/nginx.conf as shipped, in block mode, with the lines a
  deployment adds (realip, `listen ... proxy_protocol`, TLS, profile
  options) and a response header naming the decision, so a client behind
  any front can read what edgeguard decided about each of its requests.
- `NginxFront`, `HaproxyHttp`, `HaproxyTcp`, `CaddyFront`: reverse proxies
  (load balancers) between the clients and an `Edge`.
- `Squid`: a forward proxy with ssl-bump, as a TLS-inspecting gateway on
  the client's side: it ends the client's TLS with a certificate of its own
  CA and makes its own TLS connection (OpenSSL's ClientHello) to the edge.
"""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from conftest import free_port, wait_for_port  # noqa: E402  (also for scripts/deployment-measure.py)
ROOT = HERE.parents[1]
LIB = ROOT / "target" / "release" / "libedgeguard.so"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
HAPROXY = shutil.which("haproxy")
CADDY = shutil.which("caddy")
SQUID = shutil.which("squid") or ("/usr/sbin/squid" if os.path.exists("/usr/sbin/squid") else None)
CERTGEN = "/usr/lib/squid/security_file_certgen"
OPENSSL = shutil.which("openssl")

# The response header the measuring edge adds: what edgeguard decided.
ACTION_HEADER = "X-Measure-Action"
# And the site rule that decided, if one did (the shipped presets pass
# favicons, robots.txt and feeds to every client unscored).
RULE_HEADER = "X-Measure-Rule"
# With `record`: the request's $request_id, the key of its recorded line.
ID_HEADER = "X-Measure-Id"
# The client address nginx settled on ($remote_addr, after realip).
CLIENT_HEADER = "X-Measure-Client"
# With graded verdicts: how sure, and why.
GRADE_HEADER = "X-Measure-Grade"
REASONS_HEADER = "X-Measure-Reasons"


# A page at the demo origin for live browsers: its subresources (a
# stylesheet, an image, a script, a fetch) are requests people make too.
MARK = "edgeguard-measure-origin"
PAGE = f"""        location = /page {{
            default_type text/html;
            return 200 '<!doctype html><title>origin</title><link rel=stylesheet href=/static/site.css>
<p>{MARK}</p><img src=/img/product-1.png alt=""><script src=/static/app.js></script>
<script>fetch("/api/cart").then(r => r.text())</script>';
        }}
"""


class Process:
    """A foreground server process with its console in `dir/console.log`."""

    def __init__(self, name, argv, ports, directory, env=None):
        self.name = name
        self.dir = pathlib.Path(directory)
        self.console = self.dir / "console.log"
        with open(self.console, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.dir,
                                         start_new_session=True)
        for port in ports:
            if not wait_for_port(port, self.proc, timeout=20.0):
                text = self.console.read_text(errors="replace")
                self.stop()
                raise RuntimeError(f"{name} did not listen on {port}:\n{text[-3000:]}")

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def scratch(prefix):
    d = pathlib.Path(tempfile.mkdtemp(prefix=f"edgeguard-{prefix}-"))
    # Workers of root-started servers run unprivileged (nobody, proxy).
    os.chmod(d, 0o755)
    return d


class Pki:
    """A CA (Squid signs its forged certificates with it) and the edge's
    certificate for 127.0.0.1 and localhost, signed by the same CA."""

    def __init__(self, directory):
        d = pathlib.Path(directory)
        self.ca, self.ca_key = d / "ca.pem", d / "ca.key"
        self.cert, self.key = d / "edge.pem", d / "edge.key"

        def run(*args):
            subprocess.run([OPENSSL, *args], check=True, capture_output=True, cwd=d)

        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=edgeguard test gateway CA", "-keyout", str(self.ca_key), "-out", str(self.ca),
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", str(self.key), "-out", str(d / "edge.csr"))
        # DNS:127.0.0.1 too: Squid matches the CONNECT's host against DNS
        # names and the common name only.
        (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:127.0.0.1\n"
                                   "extendedKeyUsage=serverAuth\n")
        run("x509", "-req", "-in", str(d / "edge.csr"), "-CA", str(self.ca), "-CAkey", str(self.ca_key),
            "-CAcreateserial", "-days", "2", "-extfile", str(d / "ext.cnf"), "-out", str(self.cert))
        for f in (self.ca, self.ca_key, self.cert, self.key):
            os.chmod(f, 0o644)


def has_option(name):
    """Whether the built library's configuration knows option `name`."""
    return any(name in p.read_text(errors="replace") for p in (ROOT / "src" / "config").rglob("*.rs"))


def has_reasons():
    """Whether `vars` takes the "reasons" group ($edgeguard_reasons and
    $edgeguard_grade: graded verdicts)."""
    kinds = ROOT / "src" / "config" / "kinds.rs"
    return kinds.exists() and 'GROUPS: [&\'static str; 1] = ["reasons"]' in kinds.read_text()


class Edge:
    """The shipped nginx-conf/nginx.conf in block mode on free ports.

    `listens`: the server's listen lines, with {port} placeholders named in
    `ports` (each gets a free port); `configure`: lines added to
    configure{}; `server`: lines added at the top of the edgeguard server
    (realip, TLS). Each request's decision goes to `access.jsonl` and to the
    X-Measure-Action response header. With `record`, every request's head
    as it arrived (after the front) goes to `record.jsonl` in the corpus'
    format (nginx-conf/log-format.conf) with its `$request_id`, which the
    X-Measure-Id response header names."""

    def __init__(self, name, listens, ports, configure="", server="", tls=None, http="", record=False):
        self.name = name
        self.dir = scratch(f"edge-{name}")
        self.ports = {p: free_port() for p in ports}
        origin = free_port()
        conf = (ROOT / "nginx-conf" / "nginx.conf").read_text()
        for old, new in (('mode = "challenge"', 'mode = "block"'),
                         ("listen 127.0.0.1:8081;", f"listen 127.0.0.1:{origin};\n{PAGE}"),
                         ("server 127.0.0.1:8081;", f"server 127.0.0.1:{origin};"),
                         ("worker_processes auto;", "worker_processes 2;")):
            assert old in conf, old
            conf = conf.replace(old, new)
        if configure:
            anchor = 'mode = "block",'
            i = conf.index(anchor) + conf[conf.index(anchor):].index("\n") + 1
            conf = conf[:i] + configure + "\n" + conf[i:]
        if tls:
            anchor = 'local edgeguard = require "resty.edgeguard"\n'
            conf = conf.replace(anchor, anchor + '        require "resty.edgeguard.tls"\n')
        if record:
            anchor = 'local edgeguard = require "resty.edgeguard"\n'
            conf = conf.replace(anchor, anchor + '        require "resty.edgeguard.record"\n')
            access = 'require("resty.edgeguard").access()'
            assert access in conf
            conf = conf.replace(access, 'require("resty.edgeguard.record").capture()\n            ' + access, 1)
            fmt_text = (ROOT / "nginx-conf" / "log-format.conf").read_text()
            fmt_text = fmt_text[fmt_text.index("log_format edgeguard_json"):]
            fmt_text = fmt_text.replace("edgeguard_json", "measure_record", 1).replace(
                "'{\"time\":\"$time_iso8601\",'", "'{\"request_id\":\"$request_id\",\"time\":\"$time_iso8601\",'", 1)
            assert "$request_id" in fmt_text
            http += "\n" + fmt_text
        reasons = has_reasons()
        fields = {"client": "$remote_addr", "peer": "$realip_remote_addr", "uri": "$request_uri",
                  "protocol": "$server_protocol", "status": "$status", "ua": "$http_user_agent",
                  "action": "$edgeguard_action", "bot": "$edgeguard_bot", "rule": "$edgeguard_rule",
                  "ja4": "$measure_ja4", "tls_family": "$measure_tls_family"}
        if reasons:
            fields["reasons"] = "$edgeguard_reasons"
            fields["grade"] = "$edgeguard_grade"
            assert "vars = true," in conf
            conf = conf.replace("vars = true,", 'vars = { "reasons" },', 1)
        fmt = "{" + ",".join(f'"{k}":"{v}"' for k, v in fields.items()) + "}"
        http_lines = f"""
    log_format measure escape=json '{fmt}';
    {http}
"""
        conf = conf.replace("    upstream demo_origin {", http_lines + "    upstream demo_origin {", 1)
        listen = "        listen 127.0.0.1:8080;\n"
        assert listen in conf
        lines = "".join(f"        {line.format(**self.ports)}\n" for line in listens)
        lines += f"""
        access_log {self.dir}/access.jsonl measure;
        add_header {ACTION_HEADER} $edgeguard_action always;
        add_header {RULE_HEADER} $edgeguard_rule always;
        add_header {CLIENT_HEADER} $remote_addr always;
"""
        if reasons:
            lines += f"""        set $edgeguard_reasons "";
        set $edgeguard_grade "";
        add_header {GRADE_HEADER} $edgeguard_grade always;
        add_header {REASONS_HEADER} $edgeguard_reasons always;
"""
        if tls:
            lines += f"""
        ssl_certificate {tls.cert};
        ssl_certificate_key {tls.key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_client_hello_by_lua_block {{ require("resty.edgeguard.tls").client_hello() }}
        set_by_lua_block $measure_ja4 {{ return require("resty.edgeguard.tls").ja4() or "" }}
        set_by_lua_block $measure_tls_family {{ return require("resty.edgeguard.tls").family() or "" }}
"""
        else:
            lines += '        set $measure_ja4 "";\n        set $measure_tls_family "";\n'
        if record:
            # After the TLS lines: `set` runs in order, and these read them.
            lines += f"""
        set $edgeguard_request_headers "";
        set $edgeguard_ja4 $measure_ja4;
        set $edgeguard_tls_family $measure_tls_family;
        access_log {self.dir}/record.jsonl measure_record;
        add_header {ID_HEADER} $request_id always;
"""
        lines += "".join(f"        {line}\n" for line in server.strip().splitlines())
        conf = conf.replace(listen, lines, 1)
        prefix = self.dir / "prefix"
        (prefix / "target" / "release").mkdir(parents=True)
        (prefix / ".run").mkdir()
        for shared in ("lua", "nginx-conf", "models"):
            os.symlink(ROOT / shared, prefix / shared)
        os.symlink(LIB, prefix / "target" / "release" / "libedgeguard.so")
        os.chmod(prefix, 0o755)
        (prefix / "nginx.conf").write_text(conf)
        self.conf = conf
        self.prefix = prefix
        self.log = self.dir / "access.jsonl"
        self.log.touch()
        os.chmod(self.log, 0o666)
        first = next(iter(self.ports.values()))
        self.proc = Process(f"edge-{name}", [NGINX, "-p", f"{prefix}/", "-c", "nginx.conf", "-g", "daemon off;"],
                            [first], self.dir)

    def port(self, name):
        return self.ports[name]

    def lines(self):
        out = []
        for line in self.log.read_bytes().splitlines():
            if line.strip():
                out.append(json.loads(line.decode("utf-8", "replace")))
        return out

    def errors(self):
        path = self.prefix / ".run" / "error.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return [line for line in text.splitlines() if any(f"[{lvl}]" in line for lvl in ("error", "crit",
                                                                                            "alert", "emerg"))]

    def stop(self):
        self.proc.stop(signal.SIGQUIT)


class NginxFront:
    """An nginx load balancer as docs/deployment.md's front: HTTP/1.1 and h2c
    (prior knowledge) in, HTTP/1.1 keep-alive to the edge, X-Real-IP,
    X-Forwarded-For and -Proto set."""

    name = "nginx"

    def __init__(self, edge_port):
        self.dir = scratch("front-nginx")
        self.h1, self.h2 = free_port(), free_port()
        (self.dir / "logs").mkdir()
        conf = f"""
worker_processes 1;
error_log logs/error.log warn;
pid logs/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path logs/body;
    proxy_temp_path logs/proxy;
    fastcgi_temp_path logs/fastcgi;
    uwsgi_temp_path logs/uwsgi;
    scgi_temp_path logs/scgi;
    upstream edge {{
        server 127.0.0.1:{edge_port};
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{self.h1};
        listen 127.0.0.1:{self.h2} http2;
        location / {{
            proxy_pass http://edge;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }}
    }}
}}
"""
        (self.dir / "nginx.conf").write_text(conf)
        self.proc = Process("front-nginx", [NGINX, "-p", f"{self.dir}/", "-c", "nginx.conf", "-g", "daemon off;"],
                            [self.h1, self.h2], self.dir)

    def stop(self):
        self.proc.stop(signal.SIGQUIT)


HAPROXY_DEFAULTS = """
global
    maxconn 2000
defaults
    timeout connect 5s
    timeout client 30s
    timeout server 30s
"""


class HaproxyHttp:
    """HAProxy `mode http` with `option forwardfor`: HTTP/1.1 and h2c in."""

    name = "haproxy-http"

    def __init__(self, edge_port):
        self.dir = scratch("front-haproxy-http")
        self.h1, self.h2 = free_port(), free_port()
        conf = HAPROXY_DEFAULTS + f"""
    mode http
    option forwardfor
frontend fe
    bind 127.0.0.1:{self.h1}
    bind 127.0.0.1:{self.h2} proto h2
    default_backend edge
backend edge
    server edge 127.0.0.1:{edge_port}
"""
        (self.dir / "haproxy.cfg").write_text(conf)
        self.proc = Process("front-haproxy-http", [HAPROXY, "-db", "-f", str(self.dir / "haproxy.cfg")],
                            [self.h1, self.h2], self.dir)

    def stop(self):
        self.proc.stop(signal.SIGUSR1)


class HaproxyTcp:
    """HAProxy `mode tcp` sending PROXY protocol v2 to the edge's
    `proxy_protocol` listeners: one plain (HTTP/1.1), one h2c, one TLS (the
    client's own TLS reaches nginx)."""

    name = "haproxy-tcp"

    def __init__(self, edge_plain, edge_h2=None, edge_tls=None):
        self.dir = scratch("front-haproxy-tcp")
        self.h1, self.h2, self.tls = free_port(), edge_h2 and free_port(), edge_tls and free_port()
        conf = HAPROXY_DEFAULTS + "    mode tcp\n"
        for name, port, dest in (("plain", self.h1, edge_plain), ("h2c", self.h2, edge_h2),
                                 ("tls", self.tls, edge_tls)):
            if dest is None:
                continue
            conf += f"""
frontend fe_{name}
    bind 127.0.0.1:{port}
    default_backend be_{name}
backend be_{name}
    server edge 127.0.0.1:{dest} send-proxy-v2
"""
        (self.dir / "haproxy.cfg").write_text(conf)
        self.proc = Process("front-haproxy-tcp", [HAPROXY, "-db", "-f", str(self.dir / "haproxy.cfg")],
                            [p for p in (self.h1, self.h2, self.tls) if p], self.dir)

    def stop(self):
        self.proc.stop(signal.SIGUSR1)


class CaddyFront:
    """Caddy's `reverse_proxy`, HTTP/1.1 and h2c on one port, for any Host
    (a site address naming a host answers other hosts with an empty 200)."""

    name = "caddy"

    def __init__(self, edge_port):
        self.dir = scratch("front-caddy")
        self.h1 = free_port()
        self.h2 = self.h1
        conf = f"""{{
    admin off
    auto_https off
    servers {{
        protocols h1 h2c
    }}
}}
http://:{self.h1} {{
    bind 127.0.0.1
    reverse_proxy 127.0.0.1:{edge_port}
}}
"""
        (self.dir / "Caddyfile").write_text(conf)
        env = dict(os.environ, HOME=str(self.dir), XDG_DATA_HOME=str(self.dir / "data"),
                   XDG_CONFIG_HOME=str(self.dir / "config"))
        self.proc = Process("front-caddy", [CADDY, "run", "--adapter", "caddyfile", "--config",
                                            str(self.dir / "Caddyfile")], [self.h1], self.dir, env=env)

    def stop(self):
        self.proc.stop(signal.SIGTERM)


class Squid:
    """Squid as a TLS-inspecting forward proxy: CONNECT, ssl-bump with the
    test CA, its own TLS to the destination (trusting the same CA)."""

    name = "squid"

    def __init__(self, pki):
        self.dir = scratch("front-squid")
        self.port = free_port()
        db = self.dir / "ssl_db"
        subprocess.run([CERTGEN, "-c", "-s", str(db), "-M", "4MB"], check=True, capture_output=True)
        shutil.chown(db, "proxy", "proxy")
        for p in db.rglob("*"):
            shutil.chown(p, "proxy", "proxy")
        logs = self.dir / "logs"
        logs.mkdir()
        shutil.chown(logs, "proxy", "proxy")
        conf = f"""
http_port 127.0.0.1:{self.port} ssl-bump tls-cert={pki.ca} tls-key={pki.ca_key} generate-host-certificates=on dynamic_cert_mem_cache_size=4MB
sslcrtd_program {CERTGEN} -s {db} -M 4MB
sslcrtd_children 2 startup=1 idle=1
acl step1 at_step SslBump1
ssl_bump peek step1
ssl_bump bump all
tls_outgoing_options cafile={pki.ca}
acl loopback src 127.0.0.0/8
http_access allow loopback
http_access deny all
cache deny all
cache_mem 8 MB
pid_filename {logs}/squid.pid
cache_log {logs}/cache.log
access_log {logs}/access.log
coredump_dir {logs}
shutdown_lifetime 1 seconds
max_filedescriptors 4096
"""
        (self.dir / "squid.conf").write_text(conf)
        self.proc = Process("squid", [SQUID, "-N", "-f", str(self.dir / "squid.conf")], [self.port], self.dir)

    def stop(self):
        self.proc.stop(signal.SIGTERM)


def available():
    """The missing binaries, by name."""
    need = {"haproxy": HAPROXY, "caddy": CADDY, "squid": SQUID, "openssl": OPENSSL}
    missing = [name for name, path in need.items() if not path]
    if SQUID and not os.path.exists(CERTGEN):
        missing.append("squid-openssl (security_file_certgen)")
    return missing
