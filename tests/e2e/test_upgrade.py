"""An upgrade followed by a reload, as `apt upgrade` + `nginx -s reload`
does it: the Lua modules on disk are the new release's while the master still
has the old libedgeguard.so mapped (LuaJIT cannot unload it). The reload is
refused with one error naming both versions and the fix, and the running
workers keep serving and deciding; a master started on the mismatched pair
refuses to start with the same error; one started on a matching pair serves.
(tests/deb/test_deb.py runs the same with two real packages.)

The new release is simulated by rewriting the copied cdefs.lua's version
constants, which is what a release with another header would ship.
"""

import os
import re
import shutil
import signal

from conftest import CHROME, LIB, ROOT, TEST_LIST, Nginx, edge_conf, free_port, send_exact, wait_until

BOT = ROOT / "models" / "bot.json"
CURL = [("Host", "edge.test"), ("User-Agent", "curl/8.5.0"), ("Accept", "*/*")]


def release_of(cdefs):
    text = cdefs.read_text()
    num = lambda name: int(re.search(rf"static const int {name} = (\d+);", text).group(1))
    return (num("EDGEGUARD_ABI_VERSION"),
            f'{num("EDGEGUARD_VERSION_MAJOR")}.{num("EDGEGUARD_VERSION_MINOR")}.{num("EDGEGUARD_VERSION_PATCH")}')


def test_a_reload_after_an_upgrade_is_refused_and_the_old_workers_serve(origin, tmp_path):
    os.chmod(tmp_path, 0o755)
    lua, lib = tmp_path / "lua", tmp_path / "lib" / "libedgeguard.so"
    shutil.copytree(ROOT / "lua", lua)
    lib.parent.mkdir()
    shutil.copy(LIB, lib)
    cdefs = lua / "resty" / "edgeguard" / "cdefs.lua"
    abi, version = release_of(cdefs)
    port = free_port()
    conf = edge_conf(port, origin.port, TEST_LIST, configure=f'models = {{ bot = "{BOT}" }}, mode = "block",',
                     access='require("resty.edgeguard").access()')
    conf = conf.replace(f'lua_package_path "{ROOT}/lua/?.lua;;";', f'lua_package_path "{lua}/?.lua;;";')
    conf = conf.replace(f'lib_path = "{LIB}"', f'lib_path = "{lib}"')
    assert str(lua) in conf and str(lib) in conf
    nginx = Nginx(conf)
    nginx.start(port)
    try:
        assert send_exact(port, "GET", "/", CHROME)[0] == 200
        assert send_exact(port, "GET", "/", CURL)[0] == 403

        # The upgrade: new Lua modules (another ABI and version), a new
        # library file (dpkg renames it into place: a new inode).
        new_abi, new_version = abi + 1, "0.99.0"
        text = cdefs.read_text()
        for name, value in (("EDGEGUARD_ABI_VERSION", new_abi), ("EDGEGUARD_VERSION_MINOR", 99),
                            ("EDGEGUARD_VERSION_MAJOR", 0), ("EDGEGUARD_VERSION_PATCH", 0)):
            text = re.sub(rf"static const int {name} = \d+;", f"static const int {name} = {value};", text)
        cdefs.write_text(text)
        shutil.copy(LIB, lib.with_suffix(".new"))
        os.replace(lib.with_suffix(".new"), lib)

        offset = len(nginx.error_log)
        os.kill(nginx.proc.pid, signal.SIGHUP)
        want = (f"libedgeguard.so ({lib}) is edgeguard {version} (C ABI {abi}), but the edgeguard Lua modules "
                f"are {new_version} (C ABI {new_abi})")
        line = wait_until("the reload refused", lambda: next(
            (l for l in nginx.error_log[offset:].splitlines() if want in l), None))
        assert "Restart nginx (systemctl restart nginx)" in line and "binary upgrade" in line, line
        assert "[emerg]" in line or "[error]" in line, line
        # The old workers keep serving and deciding.
        for _ in range(5):
            assert send_exact(port, "GET", "/", CHROME)[0] == 200
            assert send_exact(port, "GET", "/", CURL)[0] == 403
    finally:
        nginx.stop()

    # A master started on the mismatched pair (the old library, the new
    # modules) refuses to start, with the same error.
    again = Nginx(conf, prefix=nginx.prefix)
    assert not again.start(port, expect_failure=True)
    code, out = again.exit_output()
    assert code != 0 and want in out + again.error_log, out
    again.stop()

    # A matching pair starts and serves.
    shutil.copytree(ROOT / "lua", lua, dirs_exist_ok=True)
    fresh = Nginx(conf, prefix=nginx.prefix)
    fresh.start(port)
    try:
        assert send_exact(port, "GET", "/", CHROME)[0] == 200
        assert send_exact(port, "GET", "/", CURL)[0] == 403
    finally:
        fresh.stop()
        fresh.cleanup()
