-- The legacy engine's test inputs and what it makes of them.
--
-- Shared by scripts/gen-legacy-fixtures.lua, which writes the outputs to
-- tests/fixtures/legacy/, and tests/lua/test_legacy_fixtures.lua, which
-- computes them again and compares; the hand-made requests and header lists
-- are also what test_lua_features.lua and test_lua_headers.lua send to the
-- Rust side. Every output is a plain table in a fixed order, so a fixture
-- line is the same bytes from run to run.
--
-- Needs the library (edgeguard_cat_hash) for scores and model digests.
package.path = "./lua/?.lua;./tests/lua/?.lua;" .. package.path
local cjson = require "cjson"
local legacy = require "resty.edgeguard.legacy.engine"
local catboost = require "resty.edgeguard.legacy.catboost"
local features = require "resty.edgeguard.legacy.features"
local lheaders = require "resty.edgeguard.legacy.headers"
local T = require "harness"

local M = {}

---------------------------------------------------------------------------
-- Requests
---------------------------------------------------------------------------

function M.request(method, uri, version, client, headers)
    return { method = method, uri = uri, http_version = version, client_addr = client,
             headers = headers, n_headers = #headers }
end
local request = M.request

-- The Rust CLI's version rule: "HTTP/" optional, times 10.
function M.scaled_version(v)
    local s = tostring(v):gsub("^%s*[Hh][Tt][Tt][Pp]/", "")
    return math.floor(tonumber(s) * 10 + 0.5)
end

-- The request of one replay-format JSON line (a fixture or corpus row).
function M.row_request(row)
    local headers = {}
    for i, h in ipairs(row.headers or {}) do
        headers[i] = { h[1], h[2] }
    end
    return request(row.method, row.uri, M.scaled_version(row.version), row.client or "", headers)
end

function M.fixture_requests(path)
    local reqs = {}
    for line in io.lines(path) do
        reqs[#reqs + 1] = M.row_request(cjson.decode(line))
    end
    return reqs
end

local CHROME_UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
    .. "(KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36"
M.CHROME_UA = CHROME_UA

-- Requests no fixture holds: empty, huge, 8-bit (UTF-8: the CLI reads JSON),
-- repeated, odd versions, odd spellings of names and whitespace.
function M.hostile_requests()
    local r = {}
    local function add(method, uri, version, client, headers)
        r[#r + 1] = request(method, uri, version, client, headers)
    end
    add("", "", 9, "", {})
    add("GET", "/", 10, "unix:", {})
    add("GET", "/", 11, "203.0.113.7", { { "", "" } })
    for _, name in ipairs({ "host", "connection", "user-agent", "accept", "accept-language",
                            "accept-encoding", "cookie", "referer", "sec-ch-ua",
                            "sec-ch-ua-mobile", "sec-ch-ua-platform", "sec-fetch-site",
                            "sec-fetch-mode", "sec-fetch-user", "sec-fetch-dest",
                            "upgrade-insecure-requests" }) do
        add("GET", "/", 20, "::1", { { name, "" } })
        add("GET", "/", 20, "::1", { { name:upper(), " \t " } })
        add("GET", "/", 30, "::1", { { "User-Agent", CHROME_UA }, { name, "\v" } })
    end
    -- Huge values.
    local big = string.rep("Chrome/1 Mobile;", 20000)
    add("GET", "/" .. string.rep("a/", 30000) .. "x.JS?" .. string.rep("a=1&", 20000), 11,
        "10.0.0.1", { { "user-agent", "Mozilla/5.0 (X11; Linux) " .. big } })
    add("GET", "/", 11, "10.0.0.1", { { "cookie", string.rep(" ;a=1", 50000) },
                                       { "Cookie", string.rep(";", 1000) } })
    add("GET", "/", 11, "10.0.0.1", { { "accept-language", string.rep(" ,", 40000) .. "en" } })
    add("GET", "/", 11, "10.0.0.1", { { "user-agent", "curl/" .. string.rep("9", 400) } })
    add("GET", "/", 11, "10.0.0.1", {
        { "user-agent", (CHROME_UA:gsub("147", "99999999999999999999")) },
        { "sec-ch-ua", '"Chromium";v="99999999999999999999", "X";v="4294967296"' } })
    add("GET", "/", 11, "10.0.0.1", {
        { "user-agent", (CHROME_UA:gsub("147", "16777217")) },
        { "sec-ch-ua", '"Chromium";v="16777217"' } })
    -- 8-bit bytes (valid UTF-8, since the CLI reads JSON strings).
    add("GÉT", "/caf\xc3\xa9/\xe2\x82\xac.p\xc3\xa9?\xc3\xa9=1", 11, "2001:db8::\xc3\xa9", {
        { "user-agent", "Mozilla/5.0 (\xc3\xa9Windows) Chr\xc3\xb4me/1 Chrome/12\xc3\xa9" },
        { "accept-language", "\xc3\xa9n-US" }, { "x-\xc3\xa9", "\xf0\x9f\x98\x80" },
        { "sec-ch-ua", '"\xc3\x89dge";v="1", "Chromium";v="12"' },
        { "sec-fetch-site", "none\xc2\xa0" } })
    -- Repeats: the first value counts; runs collapse; past 32 codes a '+'.
    local many = {}
    local names = { "host", "user-agent", "accept", "cookie", "cookie", "x-a", "sec-ch-ua",
                    "accept-language", "sec-fetch-site", "te", "dnt", "origin" }
    for i = 1, 300 do
        local name = names[(i * 7) % #names + 1]
        many[#many + 1] = { i % 3 == 0 and name:upper() or name, "v" .. i }
    end
    table.insert(many, 1, { "user-agent", CHROME_UA })
    add("GET", "/", 20, "198.51.100.1", many)
    local reversed = {}
    local chrome_order = { "priority", "cookie", "accept-language", "accept-encoding",
                           "referer", "sec-fetch-dest", "sec-fetch-user", "sec-fetch-mode",
                           "sec-fetch-site", "accept", "user-agent",
                           "upgrade-insecure-requests", "sec-ch-ua-arch",
                           "sec-ch-ua-platform", "sec-ch-ua-mobile", "sec-ch-ua",
                           "cache-control", "connection" }
    for _ = 1, 5 do
        for _, name in ipairs(chrome_order) do
            reversed[#reversed + 1] = { name, name == "user-agent" and CHROME_UA or "x" }
        end
    end
    add("GET", "/", 11, "198.51.100.1", reversed)
    -- Odd spellings.
    add("get", "HTTPS://Example.com", 11, " 192.0.2.1 ", {
        { "USER-AGENT", "  MOZILLA/5.0 (iPhone; like Mac OS X) Version/17 Safari/1  " },
        { "Sec-Ch-Ua-Full-Version-List", "x" }, { "SEC-FETCH-STORAGE-ACCESS", "active" },
        { "Accept-Language", "*;q=0.1" } })
    add("GET", "http://h?x=1#f?g", 11, "fe80::1%eth0", {
        { "user-agent", "node" }, { "sec-fetch-mode", "cors" } })
    add("GET", "/x#f?not-query", 11, "%:", { { "user-agent", "NODE" } })
    add("GET", "/.env", 11, "1.2.3", { { "user-agent", "Python/3.11 aiohttp/3.9.5" } })
    add("GET", "/file.", 11, "1.2.3.4.5", { { "user-agent", "x aiohttp/ y" } })
    add("GET", "//double//slash/x.backup123", 11, "::ffff:1.2.3.4", {
        { "user-agent", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)" } })
    add("GET", "/a.b/c.backup12", 11, "1.2.3.4", {
        { "user-agent", "Mozilla/5.0 (X11; CrOS x86_64) HeadlessChrome/ Chrome/131" },
        { "sec-ch-ua", '"HeadlessChrome";v="131", "Not)A;Brand";v="24"' },
        { "sec-ch-ua-platform", '"ChromeOS"' }, { "sec-ch-ua-mobile", " ?1 " } })
    add("GET", "/", 11, "1.2.3.4", {
        { "user-agent", "Mozilla/5.0 (Linux; Android 14) SamsungBrowser/25.0 Chrome/121.0 Mobile" },
        { "sec-ch-ua", ' , "Samsung Internet";v=25;x, "Chromium";v="121"' },
        { "sec-ch-ua-platform", '"' }, { "sec-ch-ua-mobile", "?0" } })
    add("GET", "/", 11, "1.2.3.4", {
        { "user-agent", "Mozilla/5.0 (Macintosh) Version/ Safari/605" },
        { "sec-ch-ua", '"A";x;v="7",,"B";v="9"' }, { "sec-ch-ua", '"Chromium";v="1"' } })
    -- Client hints are expected from Chromium 90 on, not before.
    for _, v in ipairs({ "89", "90", "91" }) do
        add("GET", "/", 11, "1.2.3.4", { { "user-agent", (CHROME_UA:gsub("147", v)) } })
    end
    for _, ua in ipairs({ "Mozilla/5.0 (Windows NT 10.0) Chrome/124.0 Safari/537.36 OPR/110.0",
                          "Mozilla/5.0 (Macintosh) Chrome/147 Safari/537 Edg/147",
                          "Mozilla/5.0 (iPhone) CriOS/126 Mobile/15E148 Safari/604.1",
                          "Mozilla/5.0 (Android 16; Mobile; rv:150.0) Gecko Firefox/150.0",
                          "Mozilla/5.0 (iPad) FxiOS/1 Mobile",
                          "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0 Chrome/1",
                          "Mozilla/5.0 (Linux; Android 10) EdgA/120 Chrome/120",
                          "Apache-HttpClient/4.5.14 (Java/17.0.9)", "okhttp/4.12.0",
                          "node-fetch/1.0 (+https://github.com/bitinn/node-fetch)",
                          "undici", "axios/1.7.2", "Go-http-client/2.0", "Wget/1.21.3",
                          "python-requests/2.32.3", "python-httpx/0.27.0",
                          "Python-urllib/3.11", "Java-http-client/21", "Scrapy/2.11",
                          "PostmanRuntime/7.39.0", "x Mobile", "IEMobile/9 Mobiles", "Mobile",
                          "Mozilla/5.0 (Konqueror; Linux)", "(", "()", "/", " ", "\v" }) do
        add("GET", "/", 11, "1.2.3.4", {
            { "sec-fetch-site", "same-origin" }, { "sec-fetch-mode", "navigate" },
            { "user-agent", ua }, { "sec-fetch-dest", "image" }, { "sec-ch-ua", '"X";v="1"' } })
    end
    return r
end

---------------------------------------------------------------------------
-- Header lists
---------------------------------------------------------------------------

-- Lists the parser must refuse (from src/headers/list.rs's tests, plus a few).
M.BAD_LISTS = {
    "x-ok\nx-a b\n", "x-ok\nx-a\tb\n", "x-ok\n\nx-a: b\n", "x-ok\n  x-\xc3\xa9\n",
    "x-ok\nx-a\0\n", "x-ok\nx-a\vb\n", "x-ok\nx-\"a\"\n", "\xef\xbb\xbfx-ok\n",
    "x-ok\nreferer[sic]\n", "x-ok\nx-a#b\n", "x-ok\nx-*-id\n", "x-ok\nx-**\n", "x-ok\n*x\n",
    "x-ok\n*\n", "x-ok\n  *  # everything\n", "x-ok\n" .. string.rep("a", 257) .. "\n",
    "x-ok\n" .. string.rep("a", 257) .. "*\n", string.rep("a", 1000) .. "\xff",
    "x-ok\nx-a\\b\n", "x-ok\nx-a,b\n", "x-ok\nx-\127\n", "x-ok\nx-a\rb\n", "x-ok\nx-a\fb c\n",
    "x-ok\n" .. string.rep("\"", 100) .. "\n", "", "\n\n", "# only\n  # comments\r\n",
    "\v\n", "x-ok\n\v# not a comment\n", string.rep("a", 64) .. ":", string.rep("b", 63) .. ":",
}

M.GOOD_LISTS = {
    "# internal headers\n\n\t  X-User-Id  \r\nx_user_id\nx-user-id # thrice\n"
        .. "\32  # an indented comment\nx-internal-*\r\nX_INTERNAL_*   \t# prefix\ncf-ray\n",
    "!$%&'+-.^_`|~0123456789abcXYZ\n", "x-a", "x-a\r\nx-b\r\n",
    string.rep("a", 256) .. "\n" .. string.rep("b", 256) .. "*",
    "x-a-*\nx-a-b\nX-A-B-*\n",
}

-- The list the strip fixture uses: a copy kept with the fixture, so that
-- editing the shipped list does not move the legacy engine's pinned outputs.
M.STRIP_LIST = "tests/fixtures/legacy/internal-headers.txt"

-- Internal headers slipped into request n (0 to all of them, at spread
-- positions): every spelling the list rules allow, and one nginx's
-- clear_header cannot reach (`(` is not a token character).
M.INTERNAL_EXTRA = { { "X-Internal-User-Id", "42" }, { "x_edge_debug", "1" }, { "X-User-Id", "7" },
                     { "x-user-id", "8" }, { "CF-Connecting-IP", "1.1.1.1" },
                     { "x-envoy-original-path", "/" }, { "X-Internal-(a", "9" } }

-- Request n gets n % 8 of them.
function M.slipped_in(n)
    return n % (#M.INTERNAL_EXTRA + 1)
end

function M.with_internal(headers, k)
    local out = {}
    for i, h in ipairs(headers) do
        out[i] = h
    end
    local extra = M.INTERNAL_EXTRA
    for j = 0, k - 1 do
        table.insert(out, (j * 3) % (#out + 1) + 1, extra[j + 1])
    end
    return out
end

---------------------------------------------------------------------------
-- Models
---------------------------------------------------------------------------

M.SCORED_MODELS = {
    legacy = { bot = "models/legacy/bot.json", spoof = "models/legacy/spoof.json" },
    -- Small schema-1 models on reordered subsets: a classifier and a regression.
    small = { reordered = "tests/fixtures/scorer/reordered.json",
              regression = "tests/fixtures/scorer/regression.json" },
}

-- Models the legacy CatBoost compiler reads: each CTR type, element kind,
-- NaN treatment, multi-output, the benchmark models. Not the shipped
-- models/*.json: they are retrained, and this engine refuses them anyway.
M.COMPILED_MODELS = {
    "models/legacy/bot.json", "models/legacy/spoof.json",
    "tests/fixtures/scorer/reordered.json", "tests/fixtures/scorer/regression.json",
    "tests/fixtures/catboost/binary_ctr.json", "tests/fixtures/catboost/binary_featurefreq.json",
    "tests/fixtures/catboost/multiclass_cat.json", "tests/fixtures/catboost/regression_cat.json",
    "tests/fixtures/catboost/regression_deep.json", "tests/fixtures/catboost/regression_floatmean.json",
    "benches/data/model-baseline.json", "benches/data/model-bench.json",
}

local read = T.read

-- Damaged models: name, then a function of the good model's text (the
-- binary_ctr fixture) giving the bad one.
local function sub1(from, to)
    return function(good)
        local text, n = good:gsub(from, to, 1)
        assert(n == 1, "pattern not in the model: " .. from)
        return text
    end
end
M.BAD_MODELS = {
    { "empty", function() return "" end },
    { "truncated", function(good) return good:sub(1, #good / 2) end },
    { "not-json", function() return "this is not json" end },
    { "array", function() return "[1, 2, 3]" end },
    { "empty-object", function() return "{}" end },
    { "no-trees", function() return '{"features_info": {}}' end },
    { "depthwise", function() return '{"features_info": {}, "trees": []}' end },
    { "ctr-type", function(good) return (good:gsub('"ctr_type":"Borders"', '"ctr_type":"Bogus"')) end },
    { "ctr-data-type", function(good)
        return (good:gsub('\\"type\\":\\"Counter\\"', '\\"type\\":\\"Bogus\\"'))
    end },
    { "split-index-range", sub1('"split_index":105', '"split_index":100000') },
    { "split-index-type", sub1('"split_index":105', '"split_index":"x"') },
    { "split-type", sub1('"split_type":"OnlineCtr"', '"split_type":"Oblique"') },
    { "bucket-hash-digit", sub1('"18446744073709551615"', '"1844674407370955161x"') },
    { "bucket-hash-range", sub1('"18446744073709551615"', '"99999999999999999999"') },
    { "hash-stride", sub1('"hash_stride":3', '"hash_stride":1') },
    { "leaf-values", sub1('"leaf_values":%[', '"leaf_values":[0.5,') },
    { "nan-treatment", sub1('"nan_value_treatment":"AsFalse"', '"nan_value_treatment":"Sometimes"') },
    { "scale-and-bias", sub1('"scale_and_bias":%[1,', '"scale_and_bias":["big",') },
    { "feature-index-order", sub1('"feature_index":1,', '"feature_index":0,') },
    { "borders-order", function(good)
        local text, n = good:gsub('"borders":%[([%-%d.e]+),([%-%d.e]+)', '"borders":[%2,%1', 1)
        assert(n == 1)
        return text
    end },
}
M.BAD_MODEL_BASE = "tests/fixtures/catboost/binary_ctr.json"

---------------------------------------------------------------------------
-- Output records: what the legacy engine makes of the inputs
---------------------------------------------------------------------------

-- The shortest decimal text that reads back as exactly x; NaN and the
-- infinities as JSON can hold them (null, "inf", "-inf").
local function num(x)
    if x ~= x then
        return "null"
    elseif x == math.huge then
        return '"inf"'
    elseif x == -math.huge then
        return '"-inf"'
    end
    if x == math.floor(x) and math.abs(x) < 2 ^ 53 then
        return string.format("%d", x)
    end
    for digits = 1, 17 do
        local s = string.format("%." .. digits .. "g", x)
        if tonumber(s) == x then
            return s
        end
    end
    error("no exact text for " .. tostring(x))
end
M.num = num

function M.number_of(v)
    if v == cjson.null then
        return 0 / 0
    elseif v == "inf" then
        return math.huge
    elseif v == "-inf" then
        return -math.huge
    end
    return v
end

local str = cjson.encode

-- A JSON array of the first n (default all) items, each written by `write`.
local function array(write, list, n)
    local out = {}
    for i = 1, n or #list do
        out[i] = write(list[i])
    end
    return "[" .. table.concat(out, ",") .. "]"
end

local function str_list(list, n)
    return array(str, list, n)
end

local function num_list(list, n)
    return array(num, list, n)
end

local function headers_json(headers, n)
    local out = {}
    for i = 1, n or #headers do
        out[i] = "[" .. str(headers[i][1]) .. "," .. str(headers[i][2]) .. "]"
    end
    return "[" .. table.concat(out, ",") .. "]"
end

-- Object text with keys in the given order.
local function object(pairs_list)
    local out = {}
    for i = 1, #pairs_list, 2 do
        out[#out + 1] = str(pairs_list[i]) .. ":" .. pairs_list[i + 1]
    end
    return "{" .. table.concat(out, ",") .. "}"
end
M.object = object
M.str = str

-- A stand-in for nginx's request headers, for strip() outside nginx: the
-- entries in arrival order; get_headers(0, true) keyed by raw name (repeats
-- of one raw name in a table, as lua-nginx-module does); clear_header(name)
-- removes every entry whose name equals `name` ignoring ASCII case, after
-- percent-escaping the bytes of `name` that are not token characters, as
-- lua-nginx-module 0.10.23 does (so a name such as `X-Internal-(a` stays).
local function fake_ngx(headers)
    local entries = {}
    for i, h in ipairs(headers) do
        entries[i] = { h[1], h[2] }
    end
    local cleared = {}
    local req = {}
    function req.get_headers(_, raw)
        assert(raw == true)
        local t = {}
        for _, e in ipairs(entries) do
            local name, value = e[1], e[2]
            local had = t[name]
            if had == nil then
                t[name] = value
            elseif type(had) == "table" then
                had[#had + 1] = value
            else
                t[name] = { had, value }
            end
        end
        return t
    end
    function req.clear_header(name)
        cleared[#cleared + 1] = name
        local searched = name:gsub("[^0-9A-Za-z!#$%%&'*+%-.^_`|~]", function(c)
            return string.format("%%%02X", c:byte())
        end):lower()
        local kept = {}
        for _, e in ipairs(entries) do
            if e[1]:lower() ~= searched then
                kept[#kept + 1] = e
            end
        end
        entries = kept
    end
    return { req = req }, cleared, function() return entries end
end

-- strip() with the stand-in: removed and left counts, the names its second
-- pass passed to clear_header (the first pass clears list.names, in order;
-- sorted, since the second pass walks a hash table), the internal names
-- still there after it, and the positions `count` calls internal.
function M.strip_record(list, headers)
    local ngx_was = rawget(_G, "ngx")
    local fake, cleared, entries = fake_ngx(headers)
    _G.ngx = fake
    local req = { headers = headers, n_headers = #headers }
    local ok, removed, left = pcall(lheaders.strip, list, req)
    _G.ngx = ngx_was
    assert(ok, removed)
    for i = 1, #list.names do
        assert(cleared[i] == list.names[i], "the first pass clears the list's names in order")
    end
    local second = {}
    for i = #list.names + 1, #cleared do
        second[#second + 1] = cleared[i]
    end
    table.sort(second)
    local stayed = {}
    for _, e in ipairs(entries()) do
        if lheaders.is_internal(list, e[1]) then
            stayed[#stayed + 1] = e[1]
        end
    end
    local internal = {}
    for i, h in ipairs(headers) do
        if lheaders.is_internal(list, h[1]) then
            internal[#internal + 1] = i
        end
    end
    return object({ "removed", num(removed), "left", num(left), "count", num(lheaders.count(list, req)),
                    "internal", num_list(internal), "second_pass", str_list(second),
                    "internal_left", str_list(stayed) })
end

-- The engines the request records score with.
function M.engines(lib)
    local out = {}
    for _, set in ipairs({ "legacy", "small" }) do
        out[#out + 1] = assert(legacy.new{ models = M.SCORED_MODELS[set], lib = lib })
    end
    return out
end

-- One request's record: the request, its feature vector, its scores by
-- every engine's models (names sorted), and strip() on it with internal
-- headers slipped in (number n decides how many).
function M.request_record(engines, list, req, n)
    local floats, cats = features.extract(req, {}, {})
    local score_parts = {}
    for _, eng in ipairs(engines) do
        local scores = eng:score_features(floats, cats)
        for _, name in ipairs(eng.names) do
            score_parts[#score_parts + 1] = name
            score_parts[#score_parts + 1] = num(scores[name])
        end
    end
    local k = M.slipped_in(n)
    local with = M.with_internal(req.headers, k)
    return object({
        "method", str(req.method), "uri", str(req.uri), "http_version", num(req.http_version),
        "client", str(req.client_addr), "headers", headers_json(req.headers, req.n_headers),
        "float", num_list(floats, #features.FLOAT_NAMES), "cat", str_list(cats, #features.CAT_NAMES),
        "scores", object(score_parts),
        "strip", object({ "slipped_in", num(k), "result", M.strip_record(list, with) }),
    })
end

-- The request inputs, in a fixed order. Of the real-client corpus, the
-- first request of each client, protocol and destination (`by`: its
-- labels), to keep the fixture small.
M.REQUEST_SOURCES = {
    { "tests/fixtures/traffic/legacy-sample.jsonl" },
    { "tests/fixtures/traffic/sample.jsonl" },
    { "tests/fixtures/real_clients/corpus.jsonl", by = { "client_name", "protocol", "dest" } },
}

function M.source_requests(src)
    local reqs, seen = {}, {}
    for line in io.lines(src[1]) do
        local row = cjson.decode(line)
        local key
        if src.by then
            local parts = {}
            for i, label in ipairs(src.by) do
                parts[i] = tostring(row[label])
            end
            key = table.concat(parts, "\0")
        end
        if not key or not seen[key] then
            if key then
                seen[key] = true
            end
            reqs[#reqs + 1] = M.row_request(row)
        end
    end
    return reqs
end

-- Canonical text of a compiled model: every field compile() set, tables
-- with their keys sorted, numbers exact. Scratch tables and the hash
-- function are left out.
local SCRATCH = { bins = true, bits = true, raw = true, cat_hash = true, source = true }
local function canon(v, out)
    local t = type(v)
    if t == "number" then
        out[#out + 1] = num(v)
    elseif t == "string" then
        out[#out + 1] = string.format("%q", v)
    elseif t == "boolean" or t == "nil" then
        out[#out + 1] = tostring(v)
    elseif t == "table" then
        local keys = {}
        for k in pairs(v) do
            if not SCRATCH[k] then
                keys[#keys + 1] = k
            end
        end
        table.sort(keys, function(a, b)
            if type(a) ~= type(b) then
                return type(a) < type(b)
            end
            return a < b
        end)
        out[#out + 1] = "{"
        for _, k in ipairs(keys) do
            canon(k, out)
            out[#out + 1] = "="
            canon(v[k], out)
            out[#out + 1] = ","
        end
        out[#out + 1] = "}"
    else
        error("cannot write a " .. t)
    end
end

local function count(v)
    return v and #v or 0
end

-- A compiled model's record: its kind, threshold and input names, the sizes
-- of its compiled arrays, and a digest (length and CatBoost hash) of all of it.
function M.model_record(path, cat_hash)
    local m = assert(catboost.load(path, cat_hash))
    local out = {}
    canon(m, out)
    local text = table.concat(out)
    return object({
        "path", str(path), "kind", m.kind and str(m.kind) or "null",
        "kind_error", m.kind_error and str(m.kind_error) or "null",
        "threshold", m.threshold and num(m.threshold) or "null",
        "float_names", str_list(m.float_names), "cat_names", str_list(m.cat_names),
        "dimension", num(m.dimension), "slots", num(m.slot_count), "trees", num(count(m.tree_depth)),
        "ctrs", num(count(m.ctr_proj)), "projections", num(count(m.proj_kind)),
        "tables", num(count(m.tables)), "ge_conditions", num(count(m.ge_slot)),
        "eq_conditions", num(count(m.eq_slot)), "leaves", num(count(m.leaves)),
        "digest_bytes", num(#text), "digest", num(cat_hash(text)),
    })
end

-- cjson's own words for a syntax error are its, not the engine's: cut them.
local function own_words(msg)
    return (msg:gsub("(: not a JSON model: ).*$", "%1..."))
end

function M.bad_model_records()
    local good = read(M.BAD_MODEL_BASE)
    local out = {}
    for _, case in ipairs(M.BAD_MODELS) do
        local source = "bad/" .. case[1] .. ".json"
        local model, err = catboost.from_json(source, case[2](good))
        assert(model == nil, source .. " was accepted")
        out[#out + 1] = object({ "case", str(case[1]), "error", str(own_words(err)) })
    end
    return out
end

-- legacy.new refusals: what the options were, and the message. A temporary
-- file's name is written as <tmp>.
local tmpfile = T.tmpfile

function M.engine_error_records(lib)
    local out = {}
    local function refused(case, opts, tmp)
        opts.lib = lib
        local eng, err = legacy.new(opts)
        assert(eng == nil, case .. " was accepted")
        if tmp then
            os.remove(tmp)
            err = err:gsub(tmp:gsub("%p", "%%%0"), "<tmp>")
        end
        out[#out + 1] = object({ "case", str(case), "error", str(err) })
    end
    refused("foreign-feature", { models = { x = "tests/fixtures/catboost/binary_ctr.json" } })
    refused("multi-output", { models = { m = "tests/fixtures/catboost/multiclass_cat.json" } })
    refused("missing-file", { models = { bot = "/nonexistent/bot.json" } })
    refused("empty-name", { models = { [""] = "models/legacy/bot.json" } })
    refused("control-name", { models = { ["bot\n"] = "models/legacy/bot.json" } })
    local many = {}
    for i = 1, 65 do
        many["m" .. i] = "models/legacy/bot.json"
    end
    refused("too-many", { models = many })
    refused("no-models", { models = {} })
    local legacy_bot = read("models/legacy/bot.json")
    -- A schema-2 model made here, not the shipped one: the shipped models
    -- move to newer schemas, and this case pins the refusal of any of them.
    local path = tmpfile((legacy_bot:gsub('"edgeguard.label":', '"edgeguard.schema":"2","edgeguard.label":', 1)))
    refused("schema-2", { models = { bot = path } }, path)
    path = tmpfile((legacy_bot:gsub('"edgeguard.threshold":"[^"]*"', '"edgeguard.threshold":"1.5"', 1)))
    refused("threshold-range", { models = { bot = path } }, path)
    path = tmpfile((legacy_bot:gsub('"edgeguard.threshold":"[^"]*"', '"edgeguard.threshold":"high"', 1)))
    refused("threshold-text", { models = { bot = path } }, path)
    path = tmpfile((legacy_bot:gsub('"feature_id":"ua_len"', '"feature_id":"uri_len"', 1)))
    refused("duplicate-feature", { models = { bot = path } }, path)
    path = tmpfile((legacy_bot:gsub('"feature_id":"ua_len"', '"feature_id":"method"', 1)))
    refused("kind-mismatch", { models = { bot = path } }, path)
    path = tmpfile("x-ok\nx-b*d\n")
    refused("bad-list", { internal_headers = path }, path)
    refused("missing-list", { internal_headers = "/nonexistent/list.txt" })
    return out
end

-- Header list records: accepted lists with their rules, refused ones with
-- the message (the source names the case).
function M.list_records()
    local out = {}
    local function record(kind, i, text)
        local source = "/etc/edge/" .. kind .. "-" .. i .. ".txt"
        local list, err = lheaders.parse(text, source)
        if list then
            out[#out + 1] = object({ "source", str(source), "n", num(list.n), "names", str_list(list.names),
                                     "prefixes", str_list(list.prefixes) })
        else
            out[#out + 1] = object({ "source", str(source), "error", str(err) })
        end
    end
    for i, text in ipairs(M.BAD_LISTS) do
        record("bad", i, text)
    end
    for i, text in ipairs(M.GOOD_LISTS) do
        record("good", i, text)
    end
    record("strip", 1, read(M.STRIP_LIST))
    return out
end

-- Every fixture file and its lines, in order: { file, lines }.
function M.all_records(lib)
    local cat_hash = legacy.cat_hash_function(lib)
    local list = assert(lheaders.load(M.STRIP_LIST))
    local engines = M.engines(lib)
    local requests = {}
    local n = 0
    local function add(req)
        n = n + 1
        requests[#requests + 1] = M.request_record(engines, list, req, n)
    end
    for _, src in ipairs(M.REQUEST_SOURCES) do
        for _, req in ipairs(M.source_requests(src)) do
            add(req)
        end
    end
    for _, req in ipairs(M.hostile_requests()) do
        -- The huge ones (over 16 KiB of head) are in test_lua_features.lua;
        -- here they would only make the fixture big.
        local size = #req.uri
        for _, h in ipairs(req.headers) do
            size = size + #h[1] + #h[2]
        end
        if size <= 16384 then
            add(req)
        end
    end
    local models = {}
    for _, path in ipairs(M.COMPILED_MODELS) do
        models[#models + 1] = M.model_record(path, cat_hash)
    end
    local errors = {}
    for _, r in ipairs(M.bad_model_records()) do
        errors[#errors + 1] = r
    end
    for _, r in ipairs(M.engine_error_records(lib)) do
        errors[#errors + 1] = r
    end
    return {
        { "requests.jsonl", requests },
        { "models.jsonl", models },
        { "errors.jsonl", errors },
        { "lists.jsonl", M.list_records() },
    }
end

return M
