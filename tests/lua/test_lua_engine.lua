-- The Lua engine against the Rust scorer on the fixture traffic
-- (tests/fixtures/traffic/legacy-sample.jsonl, legacy models): the same models, the same order, the
-- same thresholds, and for every request scores equal to 1e-9, both to the
-- Rust scorer (over the FFI) and to official CatBoost's stored predictions.
-- Run from the repository root with EDGEGUARD_LIB pointing at the library.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"
local cjson = require "cjson"

local lib = T.lib()
local lua_engine = require "resty.edgeguard.legacy.engine"
local scorer = require "handles.scorer"

-- The Lua engine computes feature schema 1: the legacy models, and the
-- fixture made with them (models/README.md: schema versions).
local SHIPPED = { bot = "models/legacy/bot.json", spoof = "models/legacy/spoof.json" }
local SMALL = { reordered = "tests/fixtures/scorer/reordered.json",
                regression = "tests/fixtures/scorer/regression.json" }

local read = T.read

local function close(got, want)
    return math.abs(got - want) <= 1e-9 * math.max(math.abs(want), 1e-300)
end

local function sigmoid(raw)
    return 1 / (1 + math.exp(-raw))
end

-- "1.1" -> 11, "2" -> 20, as nginx numbers versions.
local function version(v)
    return math.floor(tonumber((tostring(v):gsub("^HTTP/", ""))) * 10 + 0.5)
end

-- Each fixture line as the engine's request table and as an
-- edgeguard_request for the Rust scorer (keeping its strings alive).
local function fixture(path)
    local rows = {}
    for line in io.lines(path) do
        local row = cjson.decode(line)
        local headers = {}
        local c_headers = ffi.new("edgeguard_header[?]", math.max(#row.headers, 1))
        for i, h in ipairs(row.headers) do
            headers[i] = { h[1], h[2] }
            c_headers[i - 1].key.data, c_headers[i - 1].key.len = h[1], #h[1]
            c_headers[i - 1].value.data, c_headers[i - 1].value.len = h[2], #h[2]
        end
        local req = { method = row.method, uri = row.uri, http_version = version(row.version),
                      client_addr = row.client, headers = headers, n_headers = #headers }
        local c_req = ffi.new("edgeguard_request")
        c_req.method.data, c_req.method.len = row.method, #row.method
        c_req.uri.data, c_req.uri.len = row.uri, #row.uri
        c_req.client_addr.data, c_req.client_addr.len = row.client, #row.client
        c_req.http_version = req.http_version
        c_req.headers, c_req.headers_len = c_headers, #row.headers
        rows[#rows + 1] = { row = row, req = req, c_req = c_req, c_headers = c_headers }
    end
    return rows
end

local ROWS = fixture("tests/fixtures/traffic/legacy-sample.jsonl")
-- The small schema-1 models of tests/fixtures/scorer/ were made on the
-- current fixture's requests (tests/fixtures/scorer/train.py).
local SAMPLE_ROWS = fixture("tests/fixtures/traffic/sample.jsonl")

-- The CLI's feature vector of a fixture line, as the engine's tables.
local function cli_vector(row)
    local floats, cats = {}, {}
    for i, v in ipairs(row.features.float) do
        floats[i] = v == cjson.null and 0 / 0 or v
    end
    for i, s in ipairs(row.features.cat) do
        cats[i] = s
    end
    return floats, cats
end

-- The Rust scorer of { name = path }, in the order the configuration
-- resolves (it owns the model order).
local function rust_scorer(models)
    local cfg = assert(require("handles.config").new(lib, { models = models }, "test"))
    return scorer.load(lib, cfg.options.models)
end

local function engines(models)
    local eng = assert(lua_engine.new{ models = models, lib = lib })
    local rust = assert(rust_scorer(models))
    return eng, rust
end

T.test("same models, order and thresholds as the Rust scorer", function()
    local eng, rust = engines(SHIPPED)
    T.eq(#eng.names, 2)
    for i, name in ipairs(rust.names) do
        T.eq(eng.names[i], name, "model " .. i)
        T.eq(eng.thresholds[name], rust.thresholds[name], name .. " threshold")
        T.ok(type(eng.thresholds[name]) == "number", name .. " has a threshold")
    end
    local small = engines(SMALL)
    T.eq(small.names[1], "regression")
    T.eq(small.names[2], "reordered")
    T.eq(small.thresholds.reordered, 0.625)
    T.eq(small.thresholds.regression, nil)
    T.eq(eng.headers, nil)
end)

T.test("shipped models: every fixture request scores as the Rust scorer and CatBoost", function()
    T.ok(#ROWS >= 100, "fixture has its requests")
    local eng, rust = engines(SHIPPED)
    local flagged_lua, flagged_rust = { bot = 0, spoof = 0 }, { bot = 0, spoof = 0 }
    local exact = 0
    for n, r in ipairs(ROWS) do
        local want = assert(rust:score(r.c_req))
        local got = eng:score_request(r.req)
        for _, name in ipairs(eng.names) do
            local official = sigmoid(r.row.expected_raw[name])
            if not close(got[name], want[name]) then
                error(string.format("line %d %s: Lua %.17g != Rust %.17g", n, name, got[name], want[name]))
            end
            if not close(got[name], official) then
                error(string.format("line %d %s: Lua %.17g != CatBoost %.17g", n, name, got[name], official))
            end
            if got[name] == want[name] then
                exact = exact + 1
            end
            local threshold = eng.thresholds[name]
            flagged_lua[name] = flagged_lua[name] + (got[name] >= threshold and 1 or 0)
            flagged_rust[name] = flagged_rust[name] + (want[name] >= rust.thresholds[name] and 1 or 0)
        end
    end
    for _, name in ipairs(eng.names) do
        T.eq(flagged_lua[name], flagged_rust[name], name .. " requests over the threshold")
        -- Scores vary: the models flag some requests and pass others.
        T.ok(flagged_lua[name] > 0 and flagged_lua[name] < #ROWS, name .. " flags some, not all")
    end
    print(string.format("     %d requests x 2 models equal to 1e-9 (%d scores bit-identical); "
        .. "bot flags %d, spoof flags %d", #ROWS, exact, flagged_lua.bot, flagged_lua.spoof))
end)

-- Shadow mode's own judge (resty.edgeguard.legacy.shadow, its documented
-- REL_TOLERANCE) on the two engines, request by request: the real-client
-- corpus (every line) and the fixture traffic, with internal headers
-- slipped in so that the header counts are compared too.
T.test("shadow judge: the engines never disagree on the corpus and the fixture traffic", function()
    local cases = require "legacy_cases"
    local shadow = require "resty.edgeguard.legacy.shadow"
    local header_set = require "handles.header_set"
    local lheaders = require "resty.edgeguard.legacy.headers"
    local logged = {}
    local ngx_was = rawget(_G, "ngx")
    _G.ngx = { WARN = 5, now = function() return os.time() end, var = {},
               log = function(_, msg) logged[#logged + 1] = msg end }
    local eng, rust = engines(SHIPPED)
    local list = assert(lheaders.load(cases.STRIP_LIST))
    local set = assert(header_set.load(lib, cases.STRIP_LIST))
    local counted = {}
    local judge = shadow.new(rust.names, eng.names,
        { disagreement = function(_, kind) counted[kind] = (counted[kind] or 0) + 1 end }, "rust")
    local function action(scores, thresholds)
        for _, name in ipairs(eng.names) do
            if scores[name] >= thresholds[name] then
                return "block"
            end
        end
        return "pass"
    end
    local rows = fixture("tests/fixtures/real_clients/corpus.jsonl")
    for _, r in ipairs(ROWS) do rows[#rows + 1] = r end
    local disagreed, blocked = 0, 0
    for n, r in ipairs(rows) do
        local rs = assert(rust:score(r.c_req))
        local ls = eng:score_request(r.req)
        local ra, la = action(rs, rust.thresholds), action(ls, eng.thresholds)
        local headers = cases.with_internal(r.req.headers, cases.slipped_in(n))
        local arr, keep = T.header_array(headers)
        local _, _, rcount = assert(set:find(arr, #headers))
        assert(keep)
        local lcount = lheaders.count(list, { headers = headers, n_headers = #headers })
        disagreed = disagreed + judge:compare(rs, ls, ra, la, rcount, lcount)
        blocked = blocked + (la == "block" and 1 or 0)
    end
    _G.ngx = ngx_was
    T.eq(disagreed, 0, "disagreements: " .. table.concat(logged, "\n"))
    T.eq(next(counted), nil, "nothing counted")
    T.ok(#rows >= 2000 and blocked > 100 and blocked < #rows - 100,
        #rows .. " requests, " .. blocked .. " blocked by the legacy models")
    -- The judge is not blind: a score moved by 1e-8 relative is a disagreement.
    _G.ngx = { WARN = 5, now = function() return os.time() + 10 end, var = {}, log = function() end }
    local rs = assert(rust:score(rows[1].c_req))
    local moved = { bot = rs.bot * (1 + 1e-8), spoof = rs.spoof }
    T.eq(judge:compare(rs, moved, "pass", "pass", 0, 0), 1, "a 1e-8 score difference")
    _G.ngx = ngx_was
    print(string.format("     %d requests: 0 score, decision or header-count disagreements", #rows))
end)

T.test("scores from the CLI's feature vectors equal scores from the requests", function()
    local eng = engines(SHIPPED)
    for n, r in ipairs(ROWS) do
        local from_req = eng:score_request(r.req)
        local bot, spoof = from_req.bot, from_req.spoof
        local floats, cats = cli_vector(r.row)
        local from_cli = eng:score_features(floats, cats)
        T.eq(from_cli.bot, bot, "line " .. n .. " bot")
        T.eq(from_cli.spoof, spoof, "line " .. n .. " spoof")
    end
end)

T.test("models on reordered schema subsets: classifier and regression", function()
    local eng, rust = engines(SMALL)
    local expected = cjson.decode(read("tests/fixtures/scorer/expected.json"))
    T.eq(eng.models.reordered.kind, "probability")
    T.eq(eng.models.regression.kind, "raw")
    T.eq(#expected.reordered, #SAMPLE_ROWS)
    for n, r in ipairs(SAMPLE_ROWS) do
        local want = assert(rust:score(r.c_req))
        local got = eng:score_request(r.req)
        for name, link in pairs({ reordered = sigmoid, regression = function(x) return x end }) do
            local official = link(expected[name][n])
            T.ok(close(got[name], want[name]), string.format("line %d %s: Lua %.17g, Rust %.17g",
                n, name, got[name], want[name]))
            T.ok(close(got[name], official), string.format("line %d %s: Lua %.17g, CatBoost %.17g",
                n, name, got[name], official))
        end
    end
end)

T.test("the engine reuses its tables across requests", function()
    local eng = engines(SHIPPED)
    local a = eng:score_request(ROWS[1].req)
    local b = eng:score_request(ROWS[2].req)
    T.ok(a == b, "one scores table")
    local f1, c1 = eng:features(ROWS[1].req)
    local f2, c2 = eng:features(ROWS[2].req)
    T.ok(f1 == f2 and c1 == c2, "one pair of feature tables")
end)

T.test("models the scorer cannot use are refused naming model, file and feature", function()
    local ok, err = lua_engine.new{ models = { x = "tests/fixtures/catboost/binary_ctr.json" }, lib = lib }
    T.eq(ok, nil)
    T.contains(err, "model `x`: tests/fixtures/catboost/binary_ctr.json: float feature 0 `rtt_ms` "
        .. "is not in the feature schema")
    ok, err = lua_engine.new{ models = { m = "tests/fixtures/catboost/multiclass_cat.json" }, lib = lib }
    T.eq(ok, nil)
    T.contains(err, "model `m`: tests/fixtures/catboost/multiclass_cat.json: the model has 3 outputs")
    ok, err = lua_engine.new{ models = { bot = "/nonexistent/bot.json" }, lib = lib }
    T.eq(ok, nil)
    T.contains(err, "model `bot`: /nonexistent/bot.json: cannot open")
    ok, err = lua_engine.new{ models = { [""] = "models/bot.json" }, lib = lib }
    T.eq(ok, nil)
    T.contains(err, "model 0 has an empty name")
    -- The shipped models are schema 4, which this engine does not compute.
    ok, err = lua_engine.new{ models = { bot = "models/bot.json" }, lib = lib }
    T.eq(ok, nil)
    T.contains(err, 'model `bot`: models/bot.json: model_info["edgeguard.schema"] = "4": '
        .. "the Lua engine reads feature schema 1 only")
    -- A threshold outside [0, 1] for a classifier: both engines refuse the
    -- model, each in its own words (the legacy ones are pinned by
    -- test_legacy_fixtures.lua).
    local text = read("models/legacy/bot.json"):gsub('"edgeguard.threshold":"[^"]*"', '"edgeguard.threshold":"1.5"', 1)
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
    ok, err = lua_engine.new{ models = { bot = path }, lib = lib }
    local rust_ok, rust_err = rust_scorer({ bot = path })
    os.remove(path)
    T.eq(ok, nil)
    T.contains(err, "model `bot`: " .. path .. ': model_info["edgeguard.threshold"] = "1.5": ')
    T.eq(rust_ok, nil, "the Rust scorer refuses it too: " .. tostring(rust_err))
end)

local tmpfile = T.tmpfile

-- The header list the engine holds counts what the Rust header set finds on
-- the same requests (the list's own rules are tested in test_lua_headers.lua).
T.test("internal header list: loaded, counted as the Rust header set, bad lists refused", function()
    local list_path = "nginx-conf/internal-headers.txt"
    local eng = assert(lua_engine.new{ internal_headers = list_path, models = SHIPPED, lib = lib })
    T.ok(eng.headers and eng.headers.n > 10, "the shipped list is loaded")
    local header_set = require "handles.header_set"
    local set = assert(header_set.load(lib, list_path))
    local lheaders = require "resty.edgeguard.legacy.headers"
    -- Fixture requests plus internal headers in every spelling the rules allow.
    local extra = { { "X-Real-IP", "1.2.3.4" }, { "x_internal_user_id", "7" }, { "X-INTERNAL-USER-ID", "8" } }
    local total = 0
    for _, r in ipairs(ROWS) do
        local headers = {}
        for i, h in ipairs(r.req.headers) do headers[i] = h end
        for _, h in ipairs(extra) do headers[#headers + 1] = h end
        local req = { headers = headers, n_headers = #headers }
        local arr = ffi.new("edgeguard_header[?]", #headers)
        for i, h in ipairs(headers) do
            arr[i - 1].key.data, arr[i - 1].key.len = h[1], #h[1]
            arr[i - 1].value.data, arr[i - 1].value.len = h[2], #h[2]
        end
        local n = lheaders.count(eng.headers, req)
        local _, _, matched = assert(set:find(arr, #headers))
        T.eq(n, matched, "internal headers of a fixture request")
        total = total + n
    end
    T.ok(total >= #ROWS * 3, "the added internal headers are counted")

    local bad = tmpfile("x-ok\nx-b*d\n")
    local ok, err = lua_engine.new{ internal_headers = bad, models = SHIPPED, lib = lib }
    os.remove(bad)
    T.eq(ok, nil)
    T.contains(err, bad .. ":2")
    ok, err = lua_engine.new{ internal_headers = "/nonexistent/list.txt" }
    T.eq(ok, nil)
    T.contains(err, "/nonexistent/list.txt")
    -- Headers only: no models, nothing to score.
    local only = assert(lua_engine.new{ internal_headers = list_path })
    T.eq(#only.names, 0)
    T.eq(next(only:score_request(ROWS[1].req)), nil, "no scores without models")
end)

T.test("misuse raises at the caller's line", function()
    T.contains(T.raises(function() lua_engine.new("x") end), "test_lua_engine.lua:")
    T.contains(T.raises(function() lua_engine.new{ model = {} } end), "unknown option 'model'")
    T.contains(T.raises(function() lua_engine.new{ models = "bot.json" } end), "'models' must be a table")
    T.contains(T.raises(function() lua_engine.new{ models = { bot = 1 } } end), "file paths (strings)")
    T.contains(T.raises(function() lua_engine.new{ internal_headers = 7 } end), "'internal_headers' must be a string")
end)

-- Not a benchmark (that is make bench-e2e): the two engines side by side on
-- the same requests, printed for orientation, never asserted.
T.test("Lua and Rust scoring time side by side (printed, not asserted)", function()
    local eng, rust = engines(SHIPPED)
    local rounds = 20
    local function time(fn)
        local t0 = os.clock()
        for _ = 1, rounds do
            for _, r in ipairs(ROWS) do
                fn(r)
            end
        end
        return (os.clock() - t0) / (rounds * #ROWS)
    end
    time(function(r) eng:score_request(r.req) end) -- warm the JIT
    local lua_t = time(function(r) eng:score_request(r.req) end)
    local rust_t = time(function(r) rust:score(r.c_req) end)
    print(string.format("     per request: Lua engine %.1f us, Rust scorer over FFI %.1f us (ratio %.1f)",
        lua_t * 1e6, rust_t * 1e6, lua_t / rust_t))
end)

T.run()
