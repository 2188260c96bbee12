"""`make install` / `make uninstall`: the tree docs/install.md's table
lists, and an installed tree that serves through the installed snippet with
no lib_path, found by the Lua search paths LuaJIT uses by default."""

import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from conftest import CHROME, MODULES, ROOT, Nginx, bad_log_lines, free_port, get_text, send_exact, wait_until

LUAJIT = shutil.which("luajit") or "/usr/bin/luajit"
LUA_MODULES = sorted(str(p.relative_to(ROOT / "lua")) for p in (ROOT / "lua").rglob("*.lua"))
INTERNAL = [("X-Internal-User-Id", "42"), ("X-Edge-Debug", "1")]
# The frozen legacy engine (engine = "lua", shadow mode), installed with the rest.
LEGACY = [f"resty/edgeguard/legacy/{m}.lua" for m in ("engine", "catboost", "features", "headers", "driver", "shadow")]


def make(*args):
    done = subprocess.run(["make", "-s", "-C", str(ROOT), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def files_under(root):
    return {str(p.relative_to(root)): p for p in root.rglob("*") if not p.is_dir()}


def expected_tree(prefix):
    """docs/install.md's table for `make install`, under PREFIX."""
    tree = {
        f"{prefix}/bin/edgeguard": 0o755,
        f"{prefix}/bin/edgeguard-update-verified-bots": 0o755,
        f"{prefix}/lib/lua/5.1/libedgeguard.so": 0o755,
        f"{prefix}/include/edgeguard.h": 0o644,
    }
    for m in LUA_MODULES:
        tree[f"{prefix}/share/lua/5.1/{m}"] = 0o644
    for f in ("edgeguard.json", "internal-headers.txt", "models/bot.json", "models/spoof.json",
              "nginx/edgeguard.conf", "nginx/edgeguard-no-init.conf", "nginx/edgeguard-metrics.conf", "nginx/edgeguard-record.conf",
              "nginx/log-format.conf", "nginx/log-format-challenge.conf",
              "nginx/log-format-decisions.conf", "nginx/decision-vars.conf",
              "verified-bots.example.json", "challenge/page.html",
              "verified-bots-sources.json",
              *(f"challenge/locales/{p.name}" for p in (ROOT / "src/challenge/page/locales").glob("*.json"))):
        tree[f"{prefix}/share/edgeguard/{f}"] = 0o644
    for p in sorted((ROOT / "nginx-conf" / "rules").glob("*.json")):
        tree[f"{prefix}/share/edgeguard/rules/{p.name}"] = 0o644
    return {k.lstrip("/"): v for k, v in tree.items()}


def luajit_default(what):
    """LuaJIT's own default package.path or package.cpath (nginx's Lua module
    starts from the same)."""
    out = subprocess.run([LUAJIT, "-e", f"io.write(package.{what})"], env={}, capture_output=True, text=True)
    return out.stdout.split(";")


@pytest.fixture
def tmpdir_755():
    d = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-install-"))
    os.chmod(d, 0o755)  # nginx workers run as nobody
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_make_install_lays_out_the_readme_tree_and_uninstall_removes_it(tmpdir_755):
    dest = tmpdir_755
    make("install", f"DESTDIR={dest}")
    got = files_under(dest)
    want = expected_tree("/usr/local")
    assert sorted(got) == sorted(want)
    for rel, mode in want.items():
        assert got[rel].stat().st_mode & 0o777 == mode, rel
    # The installed files are the repository's.
    assert (dest / "usr/local/share/lua/5.1/resty/edgeguard.lua").read_bytes() == \
        (ROOT / "lua/resty/edgeguard.lua").read_bytes()
    assert set(LEGACY) <= set(LUA_MODULES)
    for m in LEGACY:
        assert (dest / "usr/local/share/lua/5.1" / m).read_bytes() == (ROOT / "lua" / m).read_bytes(), m
    assert (dest / "usr/local/share/edgeguard/models/bot.json").read_bytes() == \
        (ROOT / "models/bot.json").read_bytes()
    # The snippet names the config where it will be at run time (no DESTDIR).
    snippet = (dest / "usr/local/share/edgeguard/nginx/edgeguard.conf").read_text()
    assert 'config = "/usr/local/share/edgeguard/edgeguard.json"' in snippet
    no_init = (dest / "usr/local/share/edgeguard/nginx/edgeguard-no-init.conf").read_text()
    assert 'config = "/usr/local/share/edgeguard/edgeguard.json"' in no_init
    assert not [line for line in no_init.splitlines() if line.startswith("init")], "the no-init snippet has an init block"
    assert "@" not in snippet and "lib_path" not in snippet

    # Where LuaJIT looks by default is where install put them.
    assert "/usr/local/lib/lua/5.1/?.so" in luajit_default("cpath")
    assert "/usr/local/share/lua/5.1/?.lua" in luajit_default("path")

    make("uninstall", f"DESTDIR={dest}")
    assert files_under(dest) == {}
    assert not (dest / "usr/local/share/edgeguard").exists()
    assert not (dest / "usr/local/share/lua/5.1/resty/edgeguard").exists()


def test_installed_tree_serves_through_its_snippet_without_lib_path(origin, tmpdir_755):
    prefix = tmpdir_755 / "usr"
    make("install", f"PREFIX={prefix}")
    # LuaJIT's default search paths, with /usr/local moved to this PREFIX: what
    # a PREFIX=/usr/local install gets with no lua_package_path at all.
    path = ";".join(t.replace("/usr/local", str(prefix)) for t in luajit_default("path") if "/usr/local" in t)
    cpath = ";".join(t.replace("/usr/local", str(prefix)) for t in luajit_default("cpath") if "/usr/local" in t)
    port, mport = free_port(), free_port()
    nginx = Nginx(f"""
load_module {MODULES}/ndk_http_module.so;
load_module {MODULES}/ngx_http_lua_module.so;
worker_processes 1;
error_log logs/error.log info;
pid logs/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path logs/body;
    proxy_temp_path logs/proxy;
    lua_package_path "{path};;";
    lua_package_cpath "{cpath};;";
    include {prefix}/share/edgeguard/nginx/edgeguard.conf;
    server {{
        listen 127.0.0.1:{port};
        location / {{ proxy_pass http://127.0.0.1:{origin.port}; }}
    }}
    server {{
        listen 127.0.0.1:{mport};
        include {prefix}/share/edgeguard/nginx/edgeguard-metrics.conf;
        location = /lib {{
            rewrite_by_lua_block {{ }}
            content_by_lua_block {{ ngx.print(select(2, require("resty.edgeguard.lib").load())) }}
        }}
    }}
}}
""")
    nginx.start(port)
    try:
        status, loaded_from = get_text(mport, "/lib")
        assert (status, loaded_from) == (200, f"{prefix}/lib/lua/5.1/libedgeguard.so")

        status, _, _ = send_exact(port, "GET", "/api/v1/reviews?product=4157", CHROME + INTERNAL)
        assert status == 200
        seen = {n.lower(): v for n, v in origin.last_headers()}
        assert "x-internal-user-id" not in seen and "x-edge-debug" not in seen
        assert seen["x-bot-score"].startswith("bot=")
        # The shipped edgeguard.json says "log": a script is scored, not blocked,
        # and its decision line is at `error`, which a default error_log shows.
        status, _, _ = send_exact(port, "GET", "/hello", [("Host", "edge.test"), ("User-Agent", "curl/8.1.1"),
                                                          ("Accept", "*/*")])
        assert status == 200
        assert wait_until("the decision line", lambda: any(
            "[error]" in line and "edgeguard action=log grade=certain reasons=ua_library model=bot" in line
            for line in nginx.error_log.splitlines()), timeout=5)
        # The well-known preset: robots.txt passes unscored, never logged.
        status, _, _ = send_exact(port, "GET", "/robots.txt", [("Host", "edge.test"),
                                                               ("User-Agent", "curl/8.1.1"), ("Accept", "*/*")])
        assert status == 200

        status, text = get_text(mport, "/edgeguard/metrics")
        assert status == 200 and 'edgeguard_decisions_total{action="log"} 1' in text, text
    finally:
        nginx.stop()
        # The decision lines are at `error` on purpose (log_level 4): not a fault.
        bad = [line for line in bad_log_lines(nginx.error_log) if "edgeguard action=" not in line]
        nginx.cleanup()
    assert not bad, bad
