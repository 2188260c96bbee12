"""The rockspec with Debian's luarocks in a temporary tree: `luarocks --tree T
make` builds and installs it, and LuaJIT with that tree's search paths loads
resty.edgeguard and libedgeguard.so from it with no lib_path."""

import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from conftest import ROOT

LUAROCKS = shutil.which("luarocks")
LUAJIT = shutil.which("luajit") or "/usr/bin/luajit"
VERSION = next(line.split('"')[1] for line in (ROOT / "Cargo.toml").read_text().splitlines()
               if line.startswith("version = "))
ROCKSPEC = ROOT / f"lua-resty-edgeguard-{VERSION}-1.rockspec"

CHECK = """
local edgeguard = require "resty.edgeguard"
local config = assert(os.getenv("CONFIG"))
assert(edgeguard.configure{ config = config })
local _, from = require("resty.edgeguard.lib").load()
-- The frozen legacy engine (engine = "lua", shadow mode) comes with the rock.
require "resty.edgeguard.legacy.engine"
io.write(package.searchpath("resty.edgeguard", package.path), "\\n", from, "\\n",
         edgeguard.library_version(), " ", edgeguard._VERSION, "\\n",
         table.concat(edgeguard.models(), ","), "\\n",
         package.searchpath("resty.edgeguard.legacy.catboost", package.path), "\\n")
"""


def luarocks(tree, *args):
    done = subprocess.run([LUAROCKS, "--tree", str(tree), *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


@pytest.fixture
def tree():
    assert LUAROCKS, "luarocks missing: make deps-test installs it"
    d = pathlib.Path(tempfile.mkdtemp(prefix="edgeguard-rocks-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_rockspec_version_is_the_crate_version():
    assert ROCKSPEC.exists(), ROCKSPEC
    text = ROCKSPEC.read_text()
    assert f'version = "{VERSION}-1"' in text and 'package = "lua-resty-edgeguard"' in text
    subprocess.run([LUAROCKS, "lint", str(ROCKSPEC)], check=True)


def test_luarocks_make_in_a_tree_then_require_loads_the_library_from_it(tree):
    luarocks(tree, "make", ROCKSPEC.name)
    rock = tree / "lib" / "luarocks" / "rocks-5.1" / "lua-resty-edgeguard" / f"{VERSION}-1"
    assert (tree / "lib/lua/5.1/libedgeguard.so").is_file()
    assert (tree / "bin/edgeguard").is_file()
    # The tree's own search paths, then LuaJIT's defaults (lua-cjson is there).
    env = {"PATH": os.environ["PATH"],
           "LUA_PATH": luarocks(tree, "path", "--lr-path") + ";;",
           "LUA_CPATH": luarocks(tree, "path", "--lr-cpath") + ";;",
           "CONFIG": str(rock / "share/edgeguard/edgeguard.json")}
    done = subprocess.run([LUAJIT, "-e", CHECK], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    module, lib, versions, models, legacy = done.stdout.splitlines()
    assert module == str(tree / "share/lua/5.1/resty/edgeguard.lua")
    assert legacy == str(tree / "share/lua/5.1/resty/edgeguard/legacy/catboost.lua")
    assert lib == str(tree / "lib/lua/5.1/libedgeguard.so")
    assert versions == f"{VERSION} {VERSION}"
    assert models == "bot"  # the package policy: bot only (docs/install.md)

    out = subprocess.run([str(tree / "bin/edgeguard"), "version"], capture_output=True, text=True)
    assert out.stdout.strip() == f"edgeguard {VERSION}"

    luarocks(tree, "remove", "lua-resty-edgeguard")
    assert not (tree / "lib/lua/5.1/libedgeguard.so").exists()
    assert not (tree / "share/lua/5.1/resty/edgeguard.lua").exists()
    assert not (tree / "share/lua/5.1/resty/edgeguard/legacy").exists()
