-- The legacy engine against committed fixtures of its own outputs
-- (tests/fixtures/legacy/, written by scripts/gen-legacy-fixtures.lua from
-- the inputs in legacy_cases.lua): feature vectors and categorical bytes
-- exactly, scores of the legacy and the small schema-1 models to 1e-9
-- relative, strip() results, compiled model digests, and its own error
-- messages for bad models, options and header lists, word for word.
--
-- The engine is frozen: a difference here is a change of its behaviour.
-- Run from the repository root with EDGEGUARD_LIB pointing at the library.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local cjson = require "cjson"
local cases = require "legacy_cases"
local features = require "resty.edgeguard.legacy.features"
local lheaders = require "resty.edgeguard.legacy.headers"

local lib = T.lib()
local DIR = "tests/fixtures/legacy/"

local function lines(name)
    local out = {}
    for line in io.lines(DIR .. name) do
        out[#out + 1] = line
    end
    return out
end

-- Scores agree when within 1e-9 relative (shadow mode's tolerance too).
local function close(got, want)
    return math.abs(got - want) <= 1e-9 * math.max(math.abs(got), math.abs(want))
end

local function show(v)
    if type(v) == "string" then
        return string.format("%q", #v > 80 and v:sub(1, 80) .. "..." or v)
    end
    return tostring(v)
end

-- Differences between two decoded JSON values, as "path: got x, want y".
local function diff(got, want, path, out)
    if type(got) == "table" and type(want) == "table" then
        local keys = {}
        for k in pairs(want) do keys[k] = true end
        for k in pairs(got) do keys[k] = true end
        for k in pairs(keys) do
            diff(got[k], want[k], path .. "." .. tostring(k), out)
        end
    elseif got ~= want then
        out[#out + 1] = path .. ": got " .. show(got) .. ", want " .. show(want)
    end
    return out
end

local function fail_if(bad, what)
    if #bad > 0 then
        local shown = {}
        for i = 1, math.min(#bad, 10) do shown[i] = bad[i] end
        error(string.format("%s: %d differences\n  %s", what, #bad, table.concat(shown, "\n  ")), 2)
    end
end

local REQUESTS = lines("requests.jsonl")

T.test("the fixture exercises what it pins", function()
    T.ok(#REQUESTS >= 600, #REQUESTS .. " fixture requests")
    local threshold = cases.engines(lib)[1].thresholds.bot
    local left, second, flagged, passed = 0, 0, 0, 0
    for _, line in ipairs(REQUESTS) do
        local rec = cjson.decode(line)
        local r = rec.strip.result
        left = left + (r.left > 0 and 1 or 0)
        second = second + (#r.second_pass > 0 and 1 or 0)
        if rec.scores.bot >= threshold then flagged = flagged + 1 else passed = passed + 1 end
    end
    -- strip()'s three outcomes, and bot scores on both sides of the threshold.
    T.ok(left > 20 and second > 100, left .. " requests left internal headers, " .. second .. " needed a second pass")
    T.ok(flagged > 50 and passed > 50, flagged .. " flagged, " .. passed .. " passed")
end)

-- Float features must be the same double (NaN where the fixture has null).
local function float_diffs(got, want, at, bad)
    for i = 1, #features.FLOAT_NAMES do
        local g, w = cases.number_of(got[i]), cases.number_of(want[i])
        if not (g == w or (g ~= g and w ~= w)) then
            bad[#bad + 1] = at .. " " .. features.FLOAT_NAMES[i] .. ": got " .. tostring(g) .. ", want " .. tostring(w)
        end
    end
    return bad
end

T.test("every request: same feature vector, scores to 1e-9, same strip() result", function()
    local engines = cases.engines(lib)
    local list = assert(lheaders.load(cases.STRIP_LIST))
    local bad, scores, exact = {}, 0, 0
    for n, line in ipairs(REQUESTS) do
        local want = cjson.decode(line)
        local headers = {}
        for i, h in ipairs(want.headers) do headers[i] = { h[1], h[2] } end
        local req = cases.request(want.method, want.uri, want.http_version, want.client, headers)
        local got = cjson.decode(cases.request_record(engines, list, req, n))
        local at = "request " .. n
        T.eq(got.strip.slipped_in, want.strip.slipped_in, at .. " internal headers slipped in")
        diff(got.strip.result, want.strip.result, at .. " strip", bad)
        float_diffs(got.float, want.float, at, bad)
        diff(got.cat, want.cat, at .. " cat", bad)
        for name, w in pairs(want.scores) do
            local g = got.scores[name]
            scores = scores + 1
            if g == w then
                exact = exact + 1
            elseif not (g and close(g, w)) then
                bad[#bad + 1] = string.format("%s %s: got %.17g, want %.17g", at, name, g or 0 / 0, w)
            end
        end
        T.eq(#want.float, #features.FLOAT_NAMES, at .. " floats in the fixture")
    end
    fail_if(bad, "requests")
    print(string.format("     %d requests, %d scores (%d bit-identical)", #REQUESTS, scores, exact))
end)

T.test("compiled models: same kind, threshold, names, sizes and digest", function()
    local cat_hash = require("resty.edgeguard.legacy.engine").cat_hash_function(lib)
    local want = lines("models.jsonl")
    T.eq(#want, #cases.COMPILED_MODELS, "one record per model")
    local bad = {}
    for i, path in ipairs(cases.COMPILED_MODELS) do
        diff(cjson.decode(cases.model_record(path, cat_hash)), cjson.decode(want[i]), path, bad)
    end
    fail_if(bad, "models")
end)

-- The legacy engine's own words: each names the file and the field, line
-- or model; none is required to be the Rust engine's.
T.test("error messages for bad models, options and lists, word for word", function()
    local want = lines("errors.jsonl")
    local got = cases.bad_model_records()
    for _, r in ipairs(cases.engine_error_records(lib)) do
        got[#got + 1] = r
    end
    T.eq(#got, #want, "one record per case")
    for i = 1, #want do
        T.eq(got[i], want[i], "error case " .. i)
    end
    local lists = lines("lists.jsonl")
    local got_lists = cases.list_records()
    T.eq(#got_lists, #lists, "one record per list")
    for i = 1, #lists do
        T.eq(got_lists[i], lists[i], "list case " .. i)
    end
    -- Each model message names the file and the JSON field; each list
    -- message the source and the line.
    for i = 1, #cases.BAD_MODELS do
        local r = cjson.decode(want[i])
        T.contains(r.error, "bad/" .. r.case .. ".json: ", "file of " .. r.case)
    end
    for i = 1, #cases.BAD_LISTS do
        local r = cjson.decode(lists[i])
        T.ok(r.error:find(r.source, 1, true) == 1, "source of list " .. i)
    end
end)

T.test("the comparisons catch a one-ulp feature, a 1e-8 score and a changed word", function()
    local rec = cjson.decode(REQUESTS[1])
    T.ok(not close(rec.scores.bot * (1 + 1e-8), rec.scores.bot), "1e-8 relative is a difference")
    T.ok(close(rec.scores.bot * (1 + 1e-12), rec.scores.bot), "1e-12 relative is not")
    local floats = {}
    for i, v in ipairs(rec.float) do floats[i] = v end
    local ulp = floats[1] * (1 + 2 ^ -52)
    T.ok(ulp ~= floats[1], "the first feature is a number")
    floats[1] = ulp
    T.eq(#float_diffs(floats, rec.float, "r", {}), 1, "one ulp")
    floats[1] = cjson.null
    T.eq(#float_diffs(floats, rec.float, "r", {}), 1, "NaN for a number")
    T.eq(#float_diffs(rec.float, rec.float, "r", {}), 0, "the same vector")
    local other = cjson.decode(REQUESTS[1])
    other.cat[4] = other.cat[4] .. "x"
    other.strip.result.removed = other.strip.result.removed + 1
    T.eq(#diff(other, rec, "r", {}), 2, "a changed string and a changed count")
end)

T.run()
