-- Writes tests/fixtures/legacy/: what the frozen legacy engine
-- (resty.edgeguard.legacy) makes of a fixed set of inputs, for
-- tests/lua/test_legacy_fixtures.lua to hold it to. Inputs and records are
-- defined in tests/lua/legacy_cases.lua; this only writes them.
--
--   make legacy-fixtures     (the same: EDGEGUARD_LIB=... luajit scripts/gen-legacy-fixtures.lua)
--
-- Regenerate only on purpose: the fixtures are the engine's behaviour, and a
-- change in them is a change of the engine (which is frozen). Run from the
-- repository root with EDGEGUARD_LIB pointing at libedgeguard.so (for
-- edgeguard_cat_hash). An optional argument names another output directory.
package.path = "./lua/?.lua;./tests/lua/?.lua;" .. package.path
local cases = require "legacy_cases"

local dir = arg[1] or "tests/fixtures/legacy"
local lib_path = assert(os.getenv("EDGEGUARD_LIB"), "set EDGEGUARD_LIB to libedgeguard.so")
local lib = assert(require("resty.edgeguard.lib").load(lib_path))

for _, file in ipairs(cases.all_records(lib)) do
    local path = dir .. "/" .. file[1]
    local f = assert(io.open(path, "wb"))
    for _, line in ipairs(file[2]) do
        f:write(line, "\n")
    end
    f:close()
    print(string.format("%-40s %5d lines", path, #file[2]))
end
