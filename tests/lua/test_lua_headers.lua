-- The Lua engine's header list and matching against the Rust header set.
--
-- The Rust side answers through the shim's FFI handle
-- (tests/lua/handles/header_set.lua), in the same process: every name is asked of
-- both, every list is parsed by both, and the answers must be the same: the
-- same rules, and a list refused by one is refused by the other at the same
-- line. The messages are each engine's own wording (the legacy engine's are
-- pinned by test_legacy_fixtures.lua).
--
-- Run from the repository root with EDGEGUARD_LIB pointing at the library.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"
local cjson = require "cjson"
local lheaders = require "resty.edgeguard.legacy.headers"
local header_set = require "handles.header_set"
local cases = require "legacy_cases"

local lib = T.lib()

local SHIPPED = "nginx-conf/internal-headers.txt"

local tmpfile = T.tmpfile

local header_array = T.header_array

-- How many of the headers Rust finds internal.
local function rust_count(set, headers, n)
    n = n or #headers
    local arr, keep = header_array(headers, n)
    local _, _, matched = assert(set:find(arr, n))
    assert(keep)
    return matched
end

local function rust_is_internal(set, name)
    return rust_count(set, { { name, "" } }) == 1
end

-- Names to ask about a list: every entry in several spellings, near misses
-- around each, 8-bit bytes, long names, and names that are plainly not internal.
local function probe_names(text)
    local names = { "", "-", "_", "x", "host", "user-agent", "accept-language", "cookie",
                    "x-forwarded-for", "forwarded", "\xc3\xa9", "x-\xff", "\0",
                    string.rep("a", 300), string.rep("x-internal-", 40) }
    for line in text:gmatch("[^\n]+") do
        local entry = line:match("^%s*([^%s#]+)")
        if entry then
            local body = entry:gsub("%*$", "")
            for _, v in ipairs({ body, body:upper(), body:lower(), body:gsub("-", "_"),
                                 (body:gsub("_", "-")), body .. "x", body .. "-", body .. "_",
                                 body:sub(1, -2), body:sub(2), "x" .. body, body .. "\xc3\xa9",
                                 body .. string.rep("z", 300), (body:gsub("^.", "\xc3")) }) do
                names[#names + 1] = v
            end
        end
    end
    return names
end

local function rust_parse(text, source)
    return header_set.parse(lib, text, source)
end

T.test("the shipped list: Lua and Rust agree on every probe name", function()
    local f = assert(io.open(SHIPPED, "rb"))
    local text = f:read("*a")
    f:close()
    local list = assert(lheaders.load(SHIPPED))
    local set = assert(header_set.load(lib, SHIPPED))
    T.eq(list.n, set:len(), "rules")
    local internal = 0
    local names = probe_names(text)
    for _, name in ipairs(names) do
        local want = rust_is_internal(set, name)
        T.eq(lheaders.is_internal(list, name), want, "is_internal(" .. string.format("%q", name) .. ")")
        if want then
            internal = internal + 1
        end
    end
    -- Both answers occur often: a test of agreement on "no" alone would say little.
    T.ok(internal > 300 and #names - internal > 300,
         internal .. " internal of " .. #names .. " probes")
end)

T.test("count equals what Rust's find_internal matches, on fixture traffic plus slipped-in headers", function()
    local list = assert(lheaders.load(SHIPPED))
    local set = assert(header_set.load(lib, SHIPPED))
    local extra = { { "X-Internal-User-Id", "42" }, { "x_edge_debug", "1" }, { "X-User-Id", "7" },
                    { "x-user-id", "8" }, { "CF-Connecting-IP", "1.1.1.1" },
                    { "x-envoy-original-path", "/" }, { "X-Forwarded-For", "1.2.3.4" } }
    local total, requests = 0, 0
    for line in io.lines("tests/fixtures/traffic/sample.jsonl") do
        local row = cjson.decode(line)
        local headers = {}
        for _, h in ipairs(row.headers) do
            headers[#headers + 1] = { h[1], h[2] }
        end
        requests = requests + 1
        for k = 0, requests % (#extra + 1) - 1 do
            table.insert(headers, (k * 3) % (#headers + 1) + 1, extra[k + 1])
        end
        local req = { headers = headers, n_headers = #headers }
        local want = rust_count(set, headers)
        T.eq(lheaders.count(list, req), want, "count, request " .. requests)
        total = total + want
    end
    T.ok(total > 100, total .. " internal headers in " .. requests .. " requests")
    -- n_headers bounds what is read in a reused table.
    local req = { headers = { { "x-user-id", "1" }, { "x-user-id", "2" } }, n_headers = 1 }
    T.eq(lheaders.count(list, req), 1, "count with n_headers = 1")
end)

-- Where a refusal points: "source:line" (or just the source, for a list
-- with no names at all).
local function location(err, source)
    if type(err) ~= "string" or err:sub(1, #source) ~= source then
        return nil
    end
    return err:match("^(:%d+): ", #source + 1) or ""
end

T.test("bad lists: both refuse, at the same source:line", function()
    for i, text in ipairs(cases.BAD_LISTS) do
        local source = "/etc/edge/internal-" .. i .. ".txt"
        local list, err = lheaders.parse(text, source)
        local set, rust_err = rust_parse(text, source)
        T.eq(set, nil, "Rust accepts bad list " .. i)
        T.eq(list, nil, "Lua accepts bad list " .. i .. " " .. string.format("%q", text:sub(1, 40)))
        local at = location(err, source)
        T.ok(at, "Lua message names the source: " .. tostring(err))
        T.eq(at, location(rust_err, source), "line of list " .. i)
    end
end)

T.test("good lists: both accept the same rules", function()
    for i, text in ipairs(cases.GOOD_LISTS) do
        local list, err = lheaders.parse(text, "good-" .. i)
        local set, rust_err = rust_parse(text, "good-" .. i)
        T.ok(set, "Rust refuses good list " .. i .. ": " .. tostring(rust_err))
        T.ok(list, "Lua refuses good list " .. i .. ": " .. tostring(err))
        T.eq(list.n, set:len(), "rules of list " .. i)
        for _, name in ipairs(probe_names(text)) do
            T.eq(lheaders.is_internal(list, name), rust_is_internal(set, name),
                 "list " .. i .. " is_internal(" .. string.format("%q", name) .. ")")
        end
    end
end)

T.test("seeded random lists: same verdict, line, rules and matches", function()
    math.randomseed(5)
    local pieces = { "x-", "X_", "a", "B", "-", "_", "*", "#", " ", "\t", "\r", "\n", "\n",
                     "\n", "# c", ":", "\xc3\xa9", "\0", "\v", "\f", "~", "'", "\"",
                     "user-id", "internal" }
    local accepted, refused = 0, 0
    for round = 1, 1500 do
        local parts = {}
        for j = 1, math.random(1, 12) do
            parts[j] = pieces[math.random(#pieces)]
        end
        local text = table.concat(parts)
        local list, err = lheaders.parse(text, "r")
        local set, rust_err = rust_parse(text, "r")
        local what = "round " .. round .. " " .. string.format("%q", text)
        T.eq(list == nil, set == nil, what .. " verdict")
        if set then
            accepted = accepted + 1
            T.eq(list.n, set:len(), what .. " rules")
            for _, name in ipairs(probe_names(text)) do
                T.eq(lheaders.is_internal(list, name), rust_is_internal(set, name),
                     what .. " is_internal(" .. string.format("%q", name) .. ")")
            end
        else
            refused = refused + 1
            T.eq(location(err, "r"), location(rust_err, "r"), what .. " line")
            T.ok(location(err, "r"), what .. " Lua message names the source")
        end
    end
    T.ok(accepted > 200 and refused > 200, accepted .. " accepted, " .. refused .. " refused")
end)

T.test("load names the file: missing, and refused at a line", function()
    local list, err = lheaders.load("/nonexistent/list.txt")
    T.eq(list, nil)
    T.contains(err, "/nonexistent/list.txt")
    local path = tmpfile("x-ok\n\n# comment\nx-b*d\n")
    list, err = lheaders.load(path)
    local _, rust_err = header_set.load(lib, path)
    os.remove(path)
    T.eq(list, nil)
    T.contains(err, path .. ":4: ")
    T.eq(location(err, path), location(rust_err, path), "same line as Rust")
end)

T.test("misuse raises at the caller's line", function()
    local err = T.raises(function() lheaders.load(42) end)
    T.contains(err, "test_lua_headers.lua:")
    err = T.raises(function() lheaders.parse(nil) end)
    T.contains(err, "test_lua_headers.lua:")
end)

T.run()
