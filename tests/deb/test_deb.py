"""make test-deb: the .deb on this machine, for real. Installs it with apt,
runs Debian's own nginx from /etc/nginx (the system master, no -p) with the
package's snippet included, sends a script and a browser-like request through
it to a demo origin, then purges the package and checks that nothing of it is
left and that nginx still starts. It changes the system nginx, so it is not in
`make test`; it refuses to run if the system nginx is already running or
edgeguard is already installed, and leaves /etc/nginx as it found it."""

import hashlib
import http.server
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from conftest import Origin, free_port, wait_for_port, wait_until  # noqa: E402

PID_FILE = pathlib.Path("/run/nginx.pid")
ERROR_LOG = pathlib.Path("/var/log/nginx/error.log")
TEST_CONF = pathlib.Path("/etc/nginx/conf.d/zz-edgeguard-test.conf")
CONFIG = pathlib.Path("/etc/edgeguard/edgeguard.json")
BOTS = pathlib.Path("/var/lib/edgeguard/verified-bots.json")
TIMER = "edgeguard-update-verified-bots.timer"
TIMER_LINK = pathlib.Path("/etc/systemd/system/timers.target.wants") / TIMER
RECORDED = pathlib.Path("/var/log/nginx/edgeguard-requests.log")
MULTIARCH = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True,
                           text=True).stdout.strip()
LIB = f"/usr/lib/{MULTIARCH}/lua/5.1/libedgeguard.so"
APT_ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
BAD = ("[error]", "[crit]", "[alert]", "[emerg]")

# The README's "Try it" browser request, as curl sends it there.
BROWSER = [
    "-H", "Connection: keep-alive",
    "-H", 'sec-ch-ua: "Google Chrome";v="147", "Not.A/Brand";v="8", "Chromium";v="147"',
    "-H", "sec-ch-ua-mobile: ?0", "-H", 'sec-ch-ua-platform: "macOS"',
    "-H", "User-Agent: Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 "
          "(KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36",
    "-H", "Accept: application/json, text/plain, */*",
    "-H", "Sec-Fetch-Site: same-origin", "-H", "Sec-Fetch-Mode: cors", "-H", "Sec-Fetch-Dest: empty",
    "-H", "Referer: https://shop.example/checkout",
    "-H", "Accept-Encoding: gzip, deflate, br", "-H", "Accept-Language: en-US,en;q=0.9",
    "-H", "X-Internal-User-Id: 42", "-H", "X-Edge-Debug: 1",
]


def run(*cmd, check=True, env=None):
    done = subprocess.run(list(cmd), capture_output=True, text=True, env=env)
    if check:
        assert done.returncode == 0, f"{cmd}: {done.stdout}{done.stderr}"
    return done


def say(*what):
    """The transcript `make test-deb` prints (pytest -s)."""
    print("test-deb:", *what, flush=True)


def curl(url, *args):
    """(status, body) of curl's request."""
    out = run("curl", "-s", "-o", "-", "-w", "\n%{http_code}", *args, url).stdout
    body, _, status = out.rpartition("\n")
    return int(status), body


def master_running():
    try:
        os.kill(int(PID_FILE.read_text()), 0)
        return True
    except (OSError, ValueError):
        return False


def stop_nginx():
    if master_running():
        run("nginx", "-s", "quit")
        wait_until("the system nginx to exit", lambda: not master_running())


class Lists:
    """Serves a verified bots list over HTTP on loopback, as Google publishes
    it, for the updater the timer runs."""

    def __init__(self, prefixes):
        body = json.dumps({"prefixes": [{"ipv4Prefix": p} for p in prefixes]}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/googlebot.json"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def installed():
    out = run("dpkg-query", "-W", "-f=${Status}", "edgeguard", check=False)
    return out.returncode == 0 and "not-installed" not in out.stdout


def etc_nginx():
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in pathlib.Path("/etc/nginx").rglob("*") if p.is_file() or p.is_symlink()}


def new_log_lines(offset):
    with open(ERROR_LOG, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace").splitlines()


@pytest.fixture
def system():
    assert os.geteuid() == 0, "make test-deb installs a package: run it as root"
    assert not master_running(), "the system nginx is running; stop it first (this test starts and stops it)"
    assert not installed(), "edgeguard is installed; this test would purge it"
    assert not TEST_CONF.exists()
    debs = sorted((ROOT / "target" / "deb").glob("edgeguard_*.deb"))
    assert len(debs) == 1, f"make deb first: {debs}"
    before = etc_nginx()
    origin = Origin()
    try:
        yield debs[0], origin
    finally:
        origin.stop()
        stop_nginx()
        TEST_CONF.unlink(missing_ok=True)
        for left in ("/etc/edgeguard/challenge-secret", "/etc/edgeguard/next.json", RECORDED):
            pathlib.Path(left).unlink(missing_ok=True)
        if installed():
            run("apt-get", "purge", "-y", "-qq", "edgeguard", env=APT_ENV, check=False)
    assert etc_nginx() == before, "/etc/nginx differs from before the test"


def test_deb_installs_serves_with_system_nginx_and_purges(system):
    deb, origin = system
    log_start = ERROR_LOG.stat().st_size if ERROR_LOG.exists() else 0

    # Install with apt, as an operator would; its dependencies are nginx's Lua module.
    run("apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=300", f"./{deb.relative_to(ROOT)}",
        env=APT_ENV)
    say("installed", run("dpkg-query", "-W", "-f=${Package} ${Version} ${Status}", "edgeguard").stdout)
    files = [p for p in run("dpkg-query", "-L", "edgeguard").stdout.split("\n") if p not in ("", "/.")]
    for path in ("/usr/share/lua/5.1/resty/edgeguard.lua", "/usr/share/lua/5.1/resty/edgeguard/lib.lua", LIB,
                 "/usr/share/lua/5.1/resty/edgeguard/legacy/engine.lua",
                 "/usr/share/lua/5.1/resty/edgeguard/legacy/catboost.lua",
                 "/usr/share/lua/5.1/resty/edgeguard/legacy/driver.lua",
                 "/usr/bin/edgeguard", "/usr/bin/edgeguard-update-verified-bots",
                 "/usr/share/edgeguard/verified-bots.example.json",
                 "/usr/share/edgeguard/verified-bots-sources.json", "/usr/share/edgeguard/rules/feeds.json",
                 "/usr/share/edgeguard/models/bot.json", "/usr/share/edgeguard/models/spoof.json",
                 "/etc/nginx/snippets/edgeguard.conf", "/etc/nginx/snippets/edgeguard-record.conf",
                 "/etc/edgeguard/internal-headers.txt", str(CONFIG),
                 "/lib/systemd/system/edgeguard-update-verified-bots.service", f"/lib/systemd/system/{TIMER}"):
        assert path in files, path
    conffiles = run("dpkg-query", "-W", "-f=${Conffiles}", "edgeguard").stdout
    assert sorted(line.split()[0] for line in conffiles.strip().splitlines()) == [
        "/etc/edgeguard/edgeguard.json", "/etc/edgeguard/internal-headers.txt",
        "/etc/nginx/snippets/edgeguard-metrics.conf", "/etc/nginx/snippets/edgeguard-record.conf",
        "/etc/nginx/snippets/edgeguard.conf"]

    # The recommended policy, as shipped (docs/install.md): bot only,
    # verified bots, the well-known and feeds presets, log mode at `error`.
    conf = json.loads(CONFIG.read_text())
    assert conf == {
        "internal_headers": "internal-headers.txt",
        "models": {"bot": "/usr/share/edgeguard/models/bot.json"},
        "mode": "log", "log_level": 4, "verified_bots": str(BOTS),
        "rules": ["preset:well-known", "preset:feeds"]}, conf
    assert BOTS.read_bytes() == pathlib.Path("/usr/share/edgeguard/verified-bots.example.json").read_bytes()
    # Debian's error_log has no level (error): the lines at 4 (ngx.ERR) show.
    assert re.search(r"^\s*error_log /var/log/nginx/error\.log;", pathlib.Path("/etc/nginx/nginx.conf").read_text(),
                     re.M)
    # The timer is enabled (systemd need not run here: the link is what boot reads) and its units are valid.
    assert TIMER_LINK.is_symlink() and os.readlink(TIMER_LINK).endswith(TIMER), TIMER_LINK
    run("systemd-analyze", "verify", f"/lib/systemd/system/{TIMER}",
        "/lib/systemd/system/edgeguard-update-verified-bots.service")
    say("policy: bot only, verified bots", str(BOTS), "(the example until the timer runs), presets",
        conf["rules"], "mode log at log_level 4; timer enabled, units verified")
    assert run("edgeguard", "version").stdout.startswith("edgeguard ")
    # Installed but inactive: the system configuration does not mention it.
    assert "edgeguard" not in run("nginx", "-T").stdout
    say(f"{len(files)} paths, {len(conffiles.strip().splitlines())} conffiles; nginx -T before the include: no edgeguard")

    # Included: http{} gets the snippet, a test server the metrics location.
    port = free_port()
    TEST_CONF.write_text(f"""# written by edgeguard's make test-deb; removed when it ends
include snippets/edgeguard.conf;
include /usr/share/edgeguard/nginx/log-format-challenge.conf;
server {{
    listen 127.0.0.1:{port};
    include snippets/edgeguard-metrics.conf;
    include snippets/edgeguard-record.conf;
    location = /edgeguard/lib {{
        allow 127.0.0.1;
        deny all;
        rewrite_by_lua_block {{ }}
        content_by_lua_block {{ ngx.print(select(2, require("resty.edgeguard.lib").load())) }}
    }}
    location / {{
        proxy_pass http://127.0.0.1:{origin.port};
    }}
}}
""")
    run("nginx", "-t")
    run("nginx")  # the system master: /etc/nginx/nginx.conf, /run/nginx.pid, workers as www-data
    assert wait_for_port(port), "the system nginx does not listen"
    base = f"http://127.0.0.1:{port}"

    # No lib_path and no lua_package_path: Debian's default paths find both.
    assert curl(base + "/edgeguard/lib") == (200, LIB)
    say(f"system nginx (pid {PID_FILE.read_text().strip()}) on :{port}, library loaded from {LIB}")

    # As shipped ("mode": "log"): a script is scored and passes, and its
    # decision line is in Debian's error log at its default level.
    status, _ = curl(base + "/hello")
    assert status == 200
    seen = {n.lower(): v for n, v in origin.last_headers()}
    assert seen["x-bot-score"].startswith("bot=") and "spoof" not in seen["x-bot-score"]
    decided = lambda: [line for line in new_log_lines(log_start)  # noqa: E731
                       if "[error]" in line and 'edgeguard action=log grade=certain reasons=ua_library model=bot' in line and 'uri="/hello"' in line]
    assert wait_until("the decision line in /var/log/nginx/error.log", decided, timeout=5)
    say(f"mode log: curl /hello -> {status}, origin saw X-Bot-Score: {seen['x-bot-score']}; "
        f"error.log: {decided()[0].split('edgeguard ', 1)[1][:80]}")

    # The timer's command, with the list served here instead of Google's:
    # writes the file edgeguard.json names, and a reload trusts 127.0.0.1.
    googlebot = ["-A", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"]
    curl(base + "/crawl", *googlebot)
    assert wait_until("a fake claim", lambda: any('uri="/crawl"' in line and "verdict=fake" in line
                                                  for line in new_log_lines(log_start)), timeout=5)
    unit = pathlib.Path("/lib/systemd/system/edgeguard-update-verified-bots.service").read_text()
    cmd = shlex.split(re.search(r"^ExecStart=(.*)$", unit, re.M).group(1))
    lists = Lists(["127.0.0.0/8"])
    try:
        sources = pathlib.Path("/tmp/edgeguard-test-deb-sources.json")
        sources.write_text(json.dumps({"bots": [{"name": "Googlebot", "tokens": ["Googlebot"],
                                                 "category": "search", "url": lists.url}]}))
        run(*cmd, "--sources", str(sources))
        sources.unlink()
    finally:
        lists.stop()
    assert pathlib.Path(cmd[cmd.index("--output") + 1]) == BOTS
    run("nginx", "-s", "reload")
    assert wait_until("the refreshed list", lambda: curl(base + "/crawl2", *googlebot) and any(
        'uri="/crawl2"' in line and "verdict=verified" in line for line in new_log_lines(log_start)), timeout=10)
    say("the timer's ExecStart wrote", str(BOTS), "; after a reload Googlebot from 127.0.0.1 is verified")

    # The operator switches to block in the conffile and reloads.
    conf = json.loads(CONFIG.read_text())
    conf["mode"] = "block"
    CONFIG.write_text(json.dumps(conf, indent=2) + "\n")
    run("nginx", "-s", "reload")
    # For a moment after a reload, old workers still serve the old mode.
    wait_until("the reload to block scripts", lambda: curl(base + "/hello")[0] == 403)
    for _ in range(5):
        assert curl(base + "/hello")[0] == 403
    say("mode block after editing the conffile and nginx -s reload: curl /hello -> 403")

    # The well-known preset: ACME's HTTP-01 path and robots.txt pass in block mode.
    for path in ("/.well-known/acme-challenge/Yn9k", "/robots.txt"):
        assert curl(base + path)[0] == 200, path
    say("mode block: curl /.well-known/acme-challenge/… and /robots.txt -> 200 (preset well-known)")

    # A browser-like request passes; the origin gets the scores, not the internal headers.
    n = len(origin.requests)
    status, _ = curl(base + "/api/v1/reviews?product=4157", *BROWSER)
    assert status == 200
    assert len(origin.requests) == n + 1
    seen = {n.lower(): v for n, v in origin.last_headers()}
    assert "x-internal-user-id" not in seen and "x-edge-debug" not in seen, seen
    assert seen["x-bot-score"].startswith("bot=") and "spoof" not in seen["x-bot-score"]
    assert seen["accept-language"] == "en-US,en;q=0.9"
    say(f"browser-like request -> {status}; origin got X-Bot-Score: {seen['x-bot-score']}, "
        "no X-Internal-User-Id, no X-Edge-Debug")

    def blocked():
        status, text = curl(base + "/edgeguard/metrics")
        assert status == 200
        line = [v for v in text.splitlines() if v.startswith('edgeguard_decisions_total{action="block"}')]
        return float(line[0].split()[-1]) if line else 0

    # The other workers add theirs within a second (metrics.lua's flush timer).
    assert wait_until("6 blocks in the metrics", lambda: blocked() >= 6, timeout=5)
    say(f"/edgeguard/metrics: edgeguard_decisions_total{{action=\"block\"}} {blocked():g}")

    stop_nginx()
    # The decision lines are at `error` on purpose (log_level 4).
    bad = [line for line in new_log_lines(log_start) if any(b in line for b in BAD)
           and "edgeguard action=" not in line]
    assert not bad, bad
    say("nginx stopped; no [error]/[crit]/[alert]/[emerg] in /var/log/nginx/error.log but the decision lines")
    TEST_CONF.unlink()

    # Replay the recording (docs/install.md, day 2), and the switch to challenge
    # with the guide's own commands (--compare).
    recorded = RECORDED.read_text().splitlines()
    assert len(recorded) >= 10, recorded
    done = run("edgeguard", "replay", "--config", str(CONFIG), "--no-progress", str(RECORDED))
    say("replay of", RECORDED, "->", " ".join(done.stderr.split("\n")[3:5]).strip()[:200])
    flagged = [json.loads(line) for line in run("edgeguard", "replay", "--config", str(CONFIG), "--no-progress",
                                                "--output", "-", str(RECORDED)).stdout.splitlines()]
    assert any(r.get("flagged") == "bot" for r in flagged), flagged[:3]
    CONFIG.write_bytes(pathlib.Path("/usr/share/edgeguard/edgeguard.json").read_bytes())  # back to "log"
    guide = pathlib.Path(ROOT / "docs" / "install.md").read_text()
    secret = pathlib.Path("/etc/edgeguard/challenge-secret")
    secret.write_text(os.urandom(32).hex() + "\n")
    sed = re.search(r"^(sed -e .*?/etc/edgeguard/next\.json)$", guide.replace("\\\n", " "), re.M).group(1)
    run("sh", "-c", sed)
    nxt = json.loads(pathlib.Path("/etc/edgeguard/next.json").read_text())
    assert nxt["mode"] == "challenge" and nxt["challenge_secret"] == "challenge-secret", nxt
    done = run("edgeguard", "replay", "--config", str(CONFIG), "--compare", "/etc/edgeguard/next.json",
               "--no-progress", str(RECORDED))
    assert "decision flips" in done.stderr, done.stderr
    say("the guide's challenge config, replayed with --compare:",
        [l for l in done.stderr.splitlines() if "decision flips" in l][0].strip())
    pathlib.Path("/etc/edgeguard/next.json").unlink()
    secret.unlink()
    RECORDED.unlink()

    # Purge: every file of the package is gone, and its own directories.
    run("apt-get", "purge", "-y", "-qq", "edgeguard", env=APT_ENV)
    assert not installed()
    assert run("dpkg-query", "-W", "-f=${Status}", "edgeguard", check=False).stdout in ("", "unknown ok not-installed")
    left = [p for p in files if p and os.path.lexists(p) and not (
        os.path.isdir(p) and run("dpkg-query", "-S", p, check=False).returncode == 0)]
    assert left == [], left
    assert not TIMER_LINK.exists() and not TIMER_LINK.is_symlink(), TIMER_LINK
    for d in ("/etc/edgeguard", "/usr/share/edgeguard", "/usr/share/lua/5.1/resty/edgeguard", "/usr/share/doc/edgeguard",
              "/var/lib/edgeguard",
              f"/usr/lib/{MULTIARCH}/lua/5.1/libedgeguard.so"):
        assert not os.path.lexists(d), d
    say(f"purged: dpkg knows no edgeguard; none of its {len(files)} paths left but directories other packages own")

    # nginx still starts on its own configuration and serves its default site.
    log_start = ERROR_LOG.stat().st_size
    run("nginx", "-t")
    run("nginx")
    assert wait_for_port(80), "the system nginx does not start after the purge"
    status, body = curl("http://127.0.0.1/")
    assert status == 200 and "nginx" in body
    say(f"after the purge: nginx -t ok, system nginx serves its default site (:80 -> {status})")
    stop_nginx()
    time.sleep(0.1)
    bad = [line for line in new_log_lines(log_start) if any(b in line for b in BAD)]
    assert not bad, bad


def build_next_deb(work):
    """The .deb of the next patch version (N+1), built from a copy of this
    checkout with Cargo.toml's version, the header's and the cdefs' bumped
    (what `make header` writes for them), into `work`. The copy shares
    target/release (cargo reuses the dependencies; the crate is rebuilt under
    its own hash), so it takes one release build of the crate."""
    src = work / "src"
    src.mkdir()
    run("sh", "-c", f"tar -C '{ROOT}' --exclude=./target --exclude=./.git --exclude=./.run -cf - . "
                    f"| tar -C '{src}' -xf -")
    (src / "target").mkdir()
    (src / "target" / "release").symlink_to(ROOT / "target" / "release")
    version = run("sed", "-n", 's/^version = "\\(.*\\)"/\\1/p', str(ROOT / "Cargo.toml")).stdout.splitlines()[0]
    major, minor, patch = (int(x) for x in version.split("."))
    nxt = f"{major}.{minor}.{patch + 1}"

    def bump(path, old, new, count=1):
        text = path.read_text()
        assert text.count(old) >= count, (path, old)
        path.write_text(text.replace(old, new, count))

    bump(src / "Cargo.toml", f'version = "{version}"', f'version = "{nxt}"')
    bump(src / "Cargo.lock", f'name = "edgeguard"\nversion = "{version}"', f'name = "edgeguard"\nversion = "{nxt}"')
    bump(src / "src" / "ffi" / "mod.rs", f"pub const EDGEGUARD_VERSION_PATCH: u32 = {patch};",
         f"pub const EDGEGUARD_VERSION_PATCH: u32 = {patch + 1};")
    bump(src / "include" / "edgeguard.h", f"#define EDGEGUARD_VERSION_PATCH {patch}",
         f"#define EDGEGUARD_VERSION_PATCH {patch + 1}")
    bump(src / "lua" / "resty" / "edgeguard" / "cdefs.lua", f"static const int EDGEGUARD_VERSION_PATCH = {patch};",
         f"static const int EDGEGUARD_VERSION_PATCH = {patch + 1};")
    env = dict(os.environ, CARGO_TARGET_DIR=str(ROOT / "target"), DEB_MAINTAINER="edgeguard test-deb <root@localhost>")
    # The crate's outputs without a hash in their names (the cdylib, in
    # deps/ too, and everything cargo copies up into target/release/) are
    # overwritten by N+1's, and cargo would take them for this checkout's
    # (their mtimes are newer than its sources): kept aside and put back,
    # mtimes included, whatever happens.
    release = ROOT / "target" / "release"
    kept = [p for p in release.iterdir() if p.is_file()] + [release / "deps" / "libedgeguard.so"]
    keep = work / "keep"
    keep.mkdir()
    for i, p in enumerate(kept):
        shutil.copy2(p, keep / str(i))
    started = time.monotonic()
    try:
        run("make", "-s", "-C", str(src), "deb", env=env)
    finally:
        for i, p in enumerate(kept):
            p.unlink(missing_ok=True)
            shutil.copy2(keep / str(i), p)
    # This checkout's own build is back.
    assert run(str(release / "edgeguard"), "version").stdout.split()[1] == version
    out = run("python3", "-c", "import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); "
              "lib.edgeguard_version.restype = ctypes.c_char_p; print(lib.edgeguard_version().decode())",
              str(release / "libedgeguard.so")).stdout.strip()
    assert out == version, out
    debs = sorted((src / "target" / "deb").glob(f"edgeguard_{nxt}-1_*.deb"))
    assert len(debs) == 1, debs
    say(f"built N+1 ({nxt}) in {time.monotonic() - started:.0f} s: {debs[0].name}")
    return debs[0], version, nxt


def test_deb_upgrade_reload_is_refused_and_restart_serves_the_new_release(system, tmp_path):
    """Install N, serve; upgrade the package to N+1 (another version); `nginx
    -s reload` is refused with one error naming both versions and the fix, the
    old workers keep serving N; a restart serves N+1 (docs/install.md,
    "Upgrading")."""
    deb, origin = system
    started = time.monotonic()
    os.chmod(tmp_path, 0o755)
    next_deb, version, nxt = build_next_deb(tmp_path)
    log_start = ERROR_LOG.stat().st_size if ERROR_LOG.exists() else 0

    run("apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=300", f"./{deb.relative_to(ROOT)}", env=APT_ENV)
    port = free_port()
    TEST_CONF.write_text(f"""# written by edgeguard's make test-deb; removed when it ends
include snippets/edgeguard.conf;
server {{
    listen 127.0.0.1:{port};
    location = /edgeguard/version {{
        allow 127.0.0.1;
        deny all;
        rewrite_by_lua_block {{ }}
        content_by_lua_block {{ ngx.print(require("resty.edgeguard").library_version()) }}
    }}
    location / {{
        proxy_pass http://127.0.0.1:{origin.port};
    }}
}}
""")
    run("nginx", "-t")
    run("nginx")
    assert wait_for_port(port), "the system nginx does not listen"
    base = f"http://127.0.0.1:{port}"
    assert curl(base + "/edgeguard/version") == (200, version)
    assert curl(base + "/hello")[0] == 200
    say(f"N = {version} installed and serving on :{port}")

    # The upgrade, then the reload an operator (or a logrotate hook) does.
    run("apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=300", str(next_deb), env=APT_ENV)
    assert run("dpkg-query", "-W", "-f=${Version}", "edgeguard").stdout == f"{nxt}-1"
    offset = ERROR_LOG.stat().st_size
    run("nginx", "-s", "reload")
    want = f"is edgeguard {version} (C ABI "
    line = wait_until("the reload refused in error.log", lambda: next(
        (l for l in new_log_lines(offset) if want in l and f"the edgeguard Lua modules are {nxt}" in l), None))
    assert "Restart nginx (systemctl restart nginx)" in line and "binary upgrade" in line, line
    say("nginx -s reload after the upgrade:", line[line.index("libedgeguard.so"):][:160] + " ...")
    # The old master and workers serve N, unchanged.
    for _ in range(5):
        assert curl(base + "/edgeguard/version") == (200, version)
        assert curl(base + "/hello")[0] == 200
    say(f"the running workers keep serving {version}")

    # A restart: a new master loads N+1's library.
    stop_nginx()
    run("nginx")
    assert wait_for_port(port), "the system nginx does not restart"
    assert curl(base + "/edgeguard/version") == (200, nxt)
    assert curl(base + "/hello")[0] == 200
    say(f"after a restart: serving {nxt}")
    stop_nginx()
    bad = [l for l in new_log_lines(log_start) if any(b in l for b in BAD) and want not in l]
    assert not bad, bad
    TEST_CONF.unlink()
    run("apt-get", "purge", "-y", "-qq", "edgeguard", env=APT_ENV)
    say(f"upgrade case: {time.monotonic() - started:.0f} s (N+1 build included)")
