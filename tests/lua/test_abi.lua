-- lib.lua refuses a library of another release than the Lua modules (what
-- an nginx reload after an upgrade hands it: the old library, still
-- mapped), with one error naming both versions and the fix, and loads one
-- of the same release. Run from the repository root with EDGEGUARD_LIB
-- pointing at the library; needs a C compiler (cc) for the stand-ins.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"

local LIB = assert(os.getenv("EDGEGUARD_LIB"), "set EDGEGUARD_LIB to libedgeguard.so")
local lib_mod = require "resty.edgeguard.lib"

local function sh(cmd)
    local p = assert(io.popen(cmd .. " 2>&1"))
    local out = p:read("*a")
    local ok = p:close()
    return ok, out
end

local dir = os.tmpname()
os.remove(dir)
assert(sh("mkdir -p " .. dir))

-- A stand-in libedgeguard.so built from `c` into dir/<name>/libedgeguard.so.
local function stand_in(name, c)
    local sub = dir .. "/" .. name
    assert(sh("mkdir -p " .. sub))
    local src = sub .. "/lib.c"
    local f = assert(io.open(src, "wb"))
    f:write("#include <stdint.h>\n", c)
    f:close()
    local ok, out = sh("cc -shared -fPIC -o " .. sub .. "/libedgeguard.so " .. src)
    assert(ok, "cc failed: " .. out)
    return sub .. "/libedgeguard.so"
end

-- lib.load(path) in a fresh luajit (nothing loaded yet) that sees no other
-- library: no EDGEGUARD_LIB, package.cpath only `cpath`. Prints the path
-- loaded or the error.
local function load_fresh(path, cpath)
    local script = os.tmpname()
    local f = assert(io.open(script, "wb"))
    f:write('package.path = "./lua/?.lua;" .. package.path\n',
            'package.cpath = ', string.format("%q", cpath or ""), '\n',
            'local lib, where = require("resty.edgeguard.lib").load(', string.format("%q", path), ')\n',
            'io.write(lib and ("LOADED " .. where) or ("ERROR " .. where))\n')
    f:close()
    local _, out = sh("env -u EDGEGUARD_LIB luajit " .. script)
    os.remove(script)
    return out
end

T.test("the modules know the release their cdefs come from", function()
    local lib = T.lib()
    T.eq(lib_mod.ABI_VERSION, tonumber(lib.edgeguard_abi_version()))
    T.eq(lib_mod.VERSION, ffi.string(lib.edgeguard_version()):match("^%d+%.%d+%.%d+"))
    T.ok(lib_mod.ABI_VERSION >= 1, "ABI version")
end)

T.test("every module's _VERSION is the release's", function()
    for _, name in ipairs{ "resty.edgeguard", "resty.edgeguard.config", "resty.edgeguard.metrics",
                           "resty.edgeguard.record", "resty.edgeguard.tls" } do
        T.eq(require(name)._VERSION, lib_mod.VERSION, name)
    end
end)

T.test("a library of the same release loads", function()
    local out = load_fresh(LIB)
    T.eq(out, "LOADED " .. LIB)
end)

T.test("a library of another release is refused: both versions and the fix", function()
    local other = stand_in("next", [[
uint32_t edgeguard_abi_version(void) { return 999; }
const char *edgeguard_version(void) { return "9.8.7"; }
]])
    local out = load_fresh(other)
    T.contains(out, "ERROR libedgeguard.so (" .. other .. ") is edgeguard 9.8.7 (C ABI 999)")
    T.contains(out, "the edgeguard Lua modules are " .. lib_mod.VERSION .. " (C ABI " .. lib_mod.ABI_VERSION .. ")")
    T.contains(out, "LuaJIT cannot unload a shared object, so a reload keeps it")
    T.contains(out, "Restart nginx (systemctl restart nginx)")
    T.contains(out, "binary upgrade")
    -- One error, not the list of paths tried.
    T.ok(not out:find("tried:", 1, true), "no path list: " .. out)
end)

T.test("the same ABI with another crate version is refused too", function()
    local other = stand_in("patch", string.format([[
uint32_t edgeguard_abi_version(void) { return %d; }
const char *edgeguard_version(void) { return "%s-next"; }
]], lib_mod.ABI_VERSION, "0.0.0"))
    local out = load_fresh(other)
    T.contains(out, "is edgeguard 0.0.0-next (C ABI " .. lib_mod.ABI_VERSION .. ")")
end)

T.test("a library older than the versioned ABI says ABI 0", function()
    local old = stand_in("old", [[
const char *edgeguard_version(void) { return "0.0.9"; }
]])
    local out = load_fresh(old)
    T.contains(out, "is edgeguard 0.0.9 (C ABI 0)")
end)

T.test("a refused library is passed over for a right one further on", function()
    local other = dir .. "/next/libedgeguard.so"
    local libdir = LIB:match("^(.*)/[^/]+$")
    local out = load_fresh(other, libdir .. "/?.so")
    T.eq(out, "LOADED " .. LIB)
end)

T.test("(the stand-ins removed)", function()
    T.ok(sh("rm -rf " .. dir))
end)

T.run()
