-- Rewrites the ffi.cdef block of lua/resty/edgeguard/cdefs.lua from
-- include/edgeguard.h: the same declarations without comments and
-- preprocessor lines (LuaJIT's C parser takes neither), the header's
-- integer #defines (EDGEGUARD_MAX_VARS, ...) as `static const int`, which
-- LuaJIT reads as constants (ffi.C.EDGEGUARD_MAX_VARS). `make header` runs
-- it after cbindgen; tests/lua/test_cdefs.lua checks the two still agree.
-- Among those constants, EDGEGUARD_ABI_VERSION and EDGEGUARD_VERSION_* say
-- which release the cdefs were generated from: lib.lua compares them with
-- the loaded library's and refuses another release (so the number crosses
-- the ABI once, from src/ffi/mod.rs through the header to here).

local HEADER = "include/edgeguard.h"
local CDEFS = "lua/resty/edgeguard/cdefs.lua"

local function read(path)
    local f = assert(io.open(path, "rb"))
    local s = f:read("*a")
    f:close()
    return s
end

local text = read(HEADER)
text = text:gsub("/%*.-%*/", "")
text = text:gsub("#define (EDGEGUARD_[%w_]+) (%d+)", "static const int %1 = %2;")
text = text:gsub("#ifdef __cplusplus.-#endif[^\n]*", "")
text = text:gsub("\n#[^\n]*", "\n"):gsub("^#[^\n]*", "")
text = text:gsub("[ \t]+\n", "\n"):gsub("\n\n\n+", "\n\n"):gsub("^%s+", ""):gsub("%s+$", "")

local cdefs = read(CDEFS)
local before, after = cdefs:match("^(.-ffi%.cdef%[%[\n).-(\n%]%].*)$")
assert(before, CDEFS .. " has no ffi.cdef[[ ... ]] block")
local f = assert(io.open(CDEFS, "wb"))
f:write(before, text, after)
f:close()
