-- The Lua engine's features against the Rust extractor's, request by request.
--
-- Every request (the fixture traffic, hand-made hostile cases and a seeded
-- random mix) is written as JSON Lines and fed to `edgeguard features`, the
-- CLI that runs the Rust extractor, in the same run: nothing is stored, so
-- the test cannot go stale. Floats must be the same f32 (NaN where Rust has
-- NaN), categorical values the same bytes.
--
-- Run from the repository root with EDGEGUARD_LIB pointing at the release
-- library; the CLI is taken from the same directory (or $EDGEGUARD_BIN).
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"
local cjson = require "cjson"
local features = require "resty.edgeguard.legacy.features"
local cases = require "legacy_cases"

local LIB = assert(os.getenv("EDGEGUARD_LIB"), "set EDGEGUARD_LIB to libedgeguard.so")
local BIN = os.getenv("EDGEGUARD_BIN") or (LIB:match("^(.*)/[^/]*$") or ".") .. "/edgeguard"

local f32_box = ffi.new("float[1]")
local function f32(x)
    f32_box[0] = x
    return f32_box[0]
end

local VERSION_TEXT = { [9] = "0.9", [10] = "1.0", [11] = "1.1", [20] = "2", [30] = "3" }

local function to_json_line(req)
    local line = {
        method = req.method, uri = req.uri, client = req.client_addr,
        version = VERSION_TEXT[req.http_version],
    }
    if req.n_headers > 0 then
        line.headers = req.headers
    end
    return cjson.encode(line)
end

-- Runs the Rust extractor over every request; returns its vectors.
local function rust_vectors(reqs)
    local input = os.tmpname()
    local output = os.tmpname()
    local f = assert(io.open(input, "wb"))
    for _, req in ipairs(reqs) do
        f:write(to_json_line(req), "\n")
    end
    f:close()
    local ok = os.execute(BIN .. " features < " .. input .. " > " .. output)
    os.remove(input)
    assert(ok == 0 or ok == true, BIN .. " features failed on the generated requests")
    local vectors = {}
    for line in io.lines(output) do
        vectors[#vectors + 1] = cjson.decode(line)
    end
    os.remove(output)
    T.eq(#vectors, #reqs, "vectors printed")
    return vectors
end

local function show(v)
    if type(v) == "string" then
        local s = string.format("%q", #v > 80 and v:sub(1, 80) .. "..." or v)
        return s
    end
    return tostring(v)
end

-- Differences between the Lua and the Rust vector of one request, as text.
local function differences(floats, cats, want)
    local out = {}
    for i, name in ipairs(features.FLOAT_NAMES) do
        local got, w = floats[i], want.float[i]
        local same
        if w == cjson.null then
            same = type(got) == "number" and got ~= got
        else
            same = type(got) == "number" and got == f32(w) and got == f32(got)
        end
        if not same then
            out[#out + 1] = name .. ": lua " .. show(got) .. ", rust " .. show(w)
        end
    end
    for i, name in ipairs(features.CAT_NAMES) do
        if cats[i] ~= want.cat[i] then
            out[#out + 1] = name .. ": lua " .. show(cats[i]) .. ", rust " .. show(want.cat[i])
        end
    end
    return out
end

local function check_all(reqs, what)
    local want = rust_vectors(reqs)
    local floats, cats = {}, {}
    local bad = {}
    for i, req in ipairs(reqs) do
        features.extract(req, floats, cats)
        local diff = differences(floats, cats, want[i])
        if #diff > 0 and #bad < 10 then
            bad[#bad + 1] = what .. " #" .. i .. " " .. show(to_json_line(req)) .. "\n    "
                .. table.concat(diff, "\n    ")
        end
    end
    if #bad > 0 then
        error(#bad .. "+ requests differ:\n  " .. table.concat(bad, "\n  "), 2)
    end
    return #reqs
end

-- The requests of the fixture traffic and the hand-made hostile ones are
-- shared with the legacy engine's own fixture (legacy_cases.lua).
local request = cases.request
local fixture_requests = cases.fixture_requests
local hostile_requests = cases.hostile_requests
local CHROME_UA = cases.CHROME_UA

-- A seeded mix of names, values and request lines: many combinations no
-- hand-made case reaches, reproducible from run to run.
local function random_requests(count)
    math.randomseed(20261130)
    local rnd = math.random
    local function pick(t)
        return t[rnd(#t)]
    end
    local names = { "host", "Host", "connection", "user-agent", "User-Agent", "accept",
                    "accept-language", "accept-encoding", "cookie", "referer",
                    "upgrade-insecure-requests", "sec-ch-ua", "sec-ch-ua-mobile",
                    "sec-ch-ua-platform", "sec-ch-ua-arch", "sec-fetch-site",
                    "sec-fetch-mode", "sec-fetch-user", "sec-fetch-dest", "sec-fetch-x",
                    "te", "priority", "cache-control", "pragma", "dnt", "sec-gpc", "origin",
                    "content-type", "content-length", "x-requested-with", "if-none-match",
                    "if-modified-since", "range", "authorization", "keep-alive",
                    "accept-charset", "x-forwarded-for", "purpose", "sec-purpose",
                    "x-custom", "X_Under", "SEC-CH-UA", "Sec-Fetch-Mode" }
    local uas = { CHROME_UA, "curl/8.5.0", "", " ", "Mozilla/5.0",
                  "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
                      .. "Chrome/89.0.0.0 Mobile Safari/537.36",
                  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) CriOS/126.0 Mobile/15E148",
                  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:150.0) Gecko/20100101 Firefox/150.0",
                  "Mozilla/5.0 (iPhone; CPU iPhone OS 18_7 like Mac OS X) Version/26.4 Mobile/15E148 Safari/604.1",
                  "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) Chrome/120.0.0.0 Safari/537.36",
                  "Mozilla/5.0 (X11; Linux x86_64) Chrome/90.0 Safari/537.36",
                  "Mozilla/5.0 (compatible; bingbot/2.0)", "SPIDER", "Edg/1", "OPR/",
                  "Mozilla/5.0 (Windows NT 10.0) HeadlessChrome/131.0 Safari/537.36" }
    local values = { "", " ", "x", "?0", "?1", "? 1", '"Windows"', '"macOS"', '"Linux"',
                     '"Android"', '"Chrome OS"', '"iOS"', "Windows",
                     '"Google Chrome";v="147", "Not.A/Brand";v="8", "Chromium";v="147"',
                     '"Not;A=Brand";v="99", "Microsoft Edge";v="120"', '"Chromium"',
                     '"Brave";v="89"', "none", "same-origin", "same-site", "cross-site",
                     "navigate", "cors", "no-cors", "websocket", "document", "iframe",
                     "empty", "image", "json", " document ", "page", "en-US,en;q=0.9",
                     "de_DE", "*", ",en", "12-34", "abcdefghi", "gzip, deflate, br", " , ,",
                     "a=1; b=2", ";;", "keep-alive", "close", "text/html,*/*;q=0.8",
                     "caf\xc3\xa9", "\t", "\f", "\v", "1" }
    local uris = { "/", "", "/a/b/", "/static/app.JS?v=3", "/search?q=x&&page=2&", "/.env",
                   "/x?y#frag", "http://example.com/p/q.php?a=1", "HTTPS://h", "//a//b",
                   "/file.", "/a.tar.gz", "/a.backup12", "/a.backup123", "/a.b-c", "/x.ph%70", "/\xc3\xa9.\xc3\xa9", "?", "#", "/a?&&&" }
    local clients = { "203.0.113.7", "2001:db8::1", "unix:", "", "1.2.3", "::", "a:b",
                      "fe80::1%eth0", " 10.0.0.1", "1.2.3.4.", "256.1.1.1" }
    local versions = { 9, 10, 11, 11, 20, 20, 30 }
    local r = {}
    for _ = 1, count do
        local headers = {}
        for j = 1, rnd(0, 24) do
            local name = pick(names)
            local lname = name:lower()
            local value
            if lname == "user-agent" then
                value = pick(uas)
            elseif rnd(4) == 1 then
                value = pick(values) .. pick(values)
            else
                value = pick(values)
            end
            headers[j] = { name, value }
        end
        r[#r + 1] = request(pick({ "GET", "POST", "HEAD", "get" }), pick(uris),
                            pick(versions), pick(clients), headers)
    end
    return r
end

T.test("schema names are the Rust extractor's schema 1, in its order", function()
    -- This engine computes feature schema 1, the first columns of the
    -- Rust vector (later versions only append).
    local p = assert(io.popen(BIN .. " features --names --schema 1"))
    local names = cjson.decode(p:read("*a"))
    p:close()
    T.eq(#features.FLOAT_NAMES, #names.float, "float count")
    T.eq(#features.CAT_NAMES, #names.cat, "categorical count")
    for i, n in ipairs(names.float) do
        T.eq(features.FLOAT_NAMES[i], n, "float " .. i)
    end
    for i, n in ipairs(names.cat) do
        T.eq(features.CAT_NAMES[i], n, "categorical " .. i)
    end
end)

T.test("the comparison sees a one-ulp float and a one-byte string difference", function()
    local req = request("GET", "/x.php", 11, "1.2.3.4", { { "user-agent", CHROME_UA } })
    local want = rust_vectors({ req })[1]
    local floats, cats = features.extract(req, {}, {})
    T.eq(#differences(floats, cats, want), 0, "differences of an equal vector")
    T.eq(floats[1], f32(1.1), "http_version is the f32 1.1")
    T.ok(floats[1] ~= 1.1, "http_version is not the double 1.1")
    floats[1] = 1.1
    T.eq(#differences(floats, cats, want), 1, "double instead of f32")
    floats[1] = f32(1.1)
    cats[2] = "PHP"
    T.eq(#differences(floats, cats, want), 1, "case of uri_ext")
    floats[6] = 0 / 0
    T.eq(#differences(floats, cats, want), 2, "NaN for a number")
end)

T.test("fixture traffic: Lua vectors equal Rust vectors", function()
    local n = check_all(fixture_requests("tests/fixtures/traffic/sample.jsonl"), "sample")
    T.ok(n >= 200, "the whole fixture was read")
end)

T.test("hostile requests: Lua vectors equal Rust vectors", function()
    check_all(hostile_requests(), "hostile")
end)

T.test("seeded random requests: Lua vectors equal Rust vectors", function()
    check_all(random_requests(3000), "random")
end)

T.test("extract reuses the caller's tables and honours n_headers", function()
    local headers = { { "user-agent", "curl/8" }, { "accept", "*/*" } }
    local req = request("GET", "/", 11, "1.2.3.4", headers)
    local floats, cats = {}, {}
    local f2, c2 = features.extract(req, floats, cats)
    T.ok(f2 == floats and c2 == cats, "returns the tables it was given")
    T.eq(floats[5], 2, "header_count")
    req.n_headers = 1 -- a reused headers table with a stale entry past the end
    features.extract(req, floats, cats)
    T.eq(floats[5], 1, "header_count with n_headers = 1")
    T.eq(cats[8], "", "the stale accept is not read")
end)

T.test("misuse raises at the caller's line", function()
    local err = T.raises(function() features.extract(nil, {}, {}) end)
    T.contains(err, "test_lua_features.lua:")
    T.contains(err, "expects a request table")
    err = T.raises(function() features.extract(request("GET", "/", 11, "", {}), {}) end)
    T.contains(err, "test_lua_features.lua:")
end)

T.run()
