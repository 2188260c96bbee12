-- resty.edgeguard.metrics over the Rust registry, outside nginx (a table
-- stands in for the lua_shared_dict): the operations of
-- tests/fixtures/metrics/*.ops driven through the exports the shim and the
-- legacy engine call, flushed where the list says, give byte for byte the
-- dict keys and the text the Lua module wrote before the registry moved to
-- Rust (*.shim.txt: without the challenge answers, which only
-- edgeguard_location_run counts). Run from the repository root
-- with EDGEGUARD_LIB pointing at the library.
package.path = "./tests/lua/?.lua;./lua/?.lua;" .. package.path
local T = require "harness"
local load_errors = require "handles.metrics"
local ffi = require "ffi"
local metrics = require "resty.edgeguard.metrics"
local config = require "handles.config"
local C = ffi.C

local lib = T.lib()
local DIR = "tests/fixtures/metrics/"

local function dec(s)
    return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

local function split(line)
    local f = {}
    for w in line:gmatch("%S+") do
        f[#f + 1] = w
    end
    return f
end

local function lines(path)
    local out = {}
    for l in T.read(path):gmatch("[^\n]+") do
        out[#out + 1] = l
    end
    return out
end

-- A stand-in for ngx.shared.DICT: incr, get, add; `fail_incr` makes incr
-- refuse (a full dict).
local function fake_dict()
    local d = { store = {} }
    function d.incr(self, k, v, init)
        if self.fail_incr then
            return nil, "no memory"
        end
        self.store[k] = (self.store[k] or init) + v
        return self.store[k]
    end
    function d.get(self, k)
        return self.store[k]
    end
    function d.add(self, k, v)
        if self.store[k] ~= nil then
            return false, "exists"
        end
        self.store[k] = v
        return true
    end
    return d
end

local function spec_of(name)
    local spec = {}
    for _, l in ipairs(lines(DIR .. name .. ".spec")) do
        local f = split(l)
        if f[1] == "engine" then
            spec.engine = f[2]
        elseif f[1] == "models" then
            local names = {}
            for i = 3, #f do
                names[#names + 1] = dec(f[i])
            end
            spec[f[2] .. "_models"] = names
        elseif f[1] == "challenge" then
            spec.challenge = true
        elseif f[1] == "bots" then
            spec.bots = {}
            for i = 2, #f do
                spec.bots[#spec.bots + 1] = dec(f[i])
            end
        end
    end
    return spec
end

local KINDS = { score = 0, decision = 1, headers = 2 }
local BOT = { verified = 1, fake = 2 }

-- The configuration of a fixture's spec: its engine, the challenge secret
-- and the verified bots fixture (whose names the spec lists).
local function config_of(spec)
    local cfg = assert(config.new(lib, {
        engine = spec.engine,
        challenge_secret = spec.challenge and "tests/fixtures/challenge/secret" or nil,
        verified_bots = spec.bots and "tests/fixtures/verified/bots.json" or nil,
    }, "test"))
    T.eq(table.concat(cfg.options.verified_bot_names or {}, " "), table.concat(spec.bots or {}, " "), "bots")
    return cfg
end

local function run(name)
    local spec = spec_of(name)
    local dict = fake_dict()
    local mx = assert(metrics.new(lib, config_of(spec), dict, spec.rust_models, spec.lua_models))
    local h = mx.handle
    local out = ffi.new("edgeguard_effects")
    local scores = ffi.new("double[64]")
    local generation = 0
    for _, l in ipairs(lines(DIR .. name .. ".ops")) do
        local f = split(l)
        local op = f[1]
        if op == "request" then
            local seen, label
            ffi.fill(out, ffi.sizeof(out))
            for i = 5, #f do
                local code = f[i]:match("^clearance=(%d+)$")
                if code then
                    out.clearance = tonumber(code)
                    seen = out
                end
                local bot, verdict = f[i]:match("^bot=(.+):(%a+)$")
                if bot then
                    label = dec(bot) -- referenced until the call: the struct points into it
                    out.bot_name.data, out.bot_name.len, out.bot = label, #label, BOT[verdict]
                    seen = out
                end
            end
            mx:request(f[2], f[3], tonumber(f[4]), seen)
        elseif op == "scores" then
            for i = 3, #f do
                scores[i - 3] = tonumber(f[i])
            end
            T.eq(lib.edgeguard_metrics_scores(h, metrics.ENGINES[f[2]], scores, #f - 2), 0, l)
        elseif op == "seconds" then
            T.eq(lib.edgeguard_metrics_engine_time(h, metrics.ENGINES[f[2]], tonumber(f[3])), 0, l)
        elseif op == "disagreement" then
            T.eq(lib.edgeguard_metrics_disagreement(h, KINDS[f[2]]), 0, l)
        elseif op == "load_errors" then
            generation = generation + 1
            T.eq(load_errors.count_load_errors(mx, "g" .. generation, tonumber(f[2])), true)
        elseif op == "flush" then
            T.eq(mx:flush(), true)
        end
    end
    local text = assert(mx:text())
    local keys = {}
    for i = 0, mx.n - 1 do
        keys[#keys + 1] = mx.keys[i] .. "\n"
    end
    return text, table.concat(keys), mx, dict
end

for _, name in ipairs{ "rust", "shadow", "screen" } do
    T.test(name .. ": the shim's text and dict keys are the Lua module's, byte for byte", function()
        local text, keys = run(name)
        -- The detection-ID series (edgeguard_reasons_total, one per ID)
        -- came after the Lua module: the rest is its text, byte for byte.
        local n_keys, n_help
        keys, n_keys = keys:gsub("edgeguard_reasons_total{[^\n]*\n", "")
        text, n_help = text:gsub("# HELP edgeguard_reasons_total [^\n]*\n# TYPE edgeguard_reasons_total counter\n", "")
        text = text:gsub("edgeguard_reasons_total{[^\n]*\n", "")
        T.eq(n_keys, tonumber(C.EDGEGUARD_DETECTION_COUNT), "a reason series per detection ID")
        T.eq(n_help, 1)
        T.eq(keys, T.read(DIR .. name .. ".keys"), "dict keys")
        local want = T.read(DIR .. name .. ".shim.txt")
        if text ~= want then
            local got_lines, want_lines = {}, {}
            for l in text:gmatch("([^\n]*)\n") do got_lines[#got_lines + 1] = l end
            for l in want:gmatch("([^\n]*)\n") do want_lines[#want_lines + 1] = l end
            for i = 1, #want_lines do
                T.eq(got_lines[i], want_lines[i], "line " .. i)
            end
        end
        T.eq(text, want, name .. ".shim.txt")
    end)
end

T.test("a refused incr stays pending for the next flush; load errors count once per generation", function()
    local dict = fake_dict()
    local mx = assert(metrics.new(lib, config_of{ engine = "rust" }, dict, { "bot" }))
    mx:request("rust", "block", 3)
    dict.fail_incr = true
    local ok, err = mx:flush()
    T.eq(ok, nil)
    T.eq(err, "edgeguard metrics: shared dict: no memory")
    dict.fail_incr = false
    T.eq(load_errors.count_load_errors(mx, "g1", 2), true)
    T.eq(load_errors.count_load_errors(mx, "g1", 2), nil, "the generation is counted")
    local text = mx:text()
    T.contains(text, 'edgeguard_requests_total{engine="rust"} 1\n')
    T.contains(text, "edgeguard_headers_stripped_total 3\n")
    T.contains(text, 'edgeguard_decisions_total{action="block"} 1\n')
    T.contains(text, "edgeguard_load_errors_total 2\n")
    -- Outside nginx (no dict): counting works, the text is all zeros.
    local bare = assert(metrics.new(lib, config_of{ engine = "lua" }, nil, nil, { "m" }))
    bare:request("lua", "pass", 0)
    T.eq(bare:flush(), true)
    T.contains(bare:text(), 'edgeguard_requests_total{engine="lua"} 0\n')
end)

T.test("a bad spec is nil and the library's error", function()
    local ok, err = metrics.new(lib, config_of{ engine = "rust" }, nil, { "ok", "\255" })
    T.eq(ok, nil)
    T.eq(err, "edgeguard_metrics_new: Rust model 1 name is not UTF-8")
end)

T.run()
