-- A minimal test runner for luajit: register with test(name, fn), then run().
-- Prints one line per test and the closing "N passed, N failed" line.

package.path = "./lua/?.lua;./tests/lua/?.lua;" .. package.path

local M = {}
local tests = {}

function M.test(name, fn)
    tests[#tests + 1] = { name = name, fn = fn }
end

local function show(v)
    if type(v) == "string" then
        return string.format("%q", v)
    end
    return tostring(v)
end

function M.eq(got, want, what)
    if got ~= want then
        error((what or "value") .. ": expected " .. show(want) .. ", got " .. show(got), 2)
    end
end

function M.ok(cond, what)
    if not cond then
        error((what or "condition") .. " does not hold", 2)
    end
end

function M.contains(haystack, needle, what)
    if type(haystack) ~= "string" or not haystack:find(needle, 1, true) then
        error((what or "text") .. ": " .. show(haystack) .. " does not contain " .. show(needle), 2)
    end
end

-- Runs fn, which must raise; returns the error message.
function M.raises(fn, what)
    local ok, err = pcall(fn)
    if ok then
        error((what or "call") .. " did not raise", 2)
    end
    return tostring(err)
end

-- Shared fixtures of the test files.

-- The library under test: EDGEGUARD_LIB's path and the loaded library.
function M.lib()
    local path = assert(os.getenv("EDGEGUARD_LIB"), "set EDGEGUARD_LIB to libedgeguard.so")
    return assert(require("resty.edgeguard.lib").load(path)), path
end

function M.read(path)
    local f = assert(io.open(path, "rb"))
    local text = f:read("*a")
    f:close()
    return text
end

-- A temporary file holding `text`; returns its path.
function M.tmpfile(text)
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
    return path
end

-- An edgeguard_header array viewing the first n (default all) { name, value }
-- pairs of `list`. Returns the list too: the caller keeps it alive while the
-- array points into its strings.
function M.header_array(list, n)
    local ffi = require "ffi"
    require "resty.edgeguard.cdefs"
    n = n or #list
    local arr = ffi.new("edgeguard_header[?]", math.max(n, 1))
    for i = 1, n do
        local kv = list[i]
        arr[i - 1].key.data, arr[i - 1].key.len = kv[1], #kv[1]
        arr[i - 1].value.data, arr[i - 1].value.len = kv[2], #kv[2]
    end
    return arr, list
end

function M.run()
    local passed, failed = 0, 0
    for _, t in ipairs(tests) do
        local ok, err = xpcall(t.fn, debug.traceback)
        if ok then
            passed = passed + 1
            print("ok   " .. t.name)
        else
            failed = failed + 1
            print("FAIL " .. t.name .. "\n" .. tostring(err))
        end
    end
    print(string.format("%d passed, %d failed", passed, failed))
    os.exit(failed == 0 and 0 or 1)
end

return M
