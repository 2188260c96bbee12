-- The legacy engine's interface to the shim: `engine = "lua"` runs the
-- frozen Lua engine (resty.edgeguard.legacy.engine) alone, `engine =
-- "shadow"` runs it beside the Rust engine and lets
-- resty.edgeguard.legacy.shadow compare them. resty.edgeguard loads this
-- module only when the configured engine is not "rust".
--
-- The interface (what resty.edgeguard calls; nothing of the shim is handed
-- in, the state it passes is data):
--
--   load(lib, options)         -> engine | nil, err (the list's, or the models' refusal)
--   judge(st)                  -> shadow mode's judge (st.shadow)
--   location(st, cfg)          -> the Lua engine's location handle for cfg
--   run(st, loc, r, job)       -> effects, headers | nil, err, engine label
--   score(st)                  -> the Lua engine's scores of the request
--
-- `st` is the configuration in force: st.lib, st.lua (this engine),
-- st.names (the Rust models'), st.metrics (its handle), st.primary, st.shadow. `loc`
-- is a location: loc.engine ("lua" or "shadow"), loc.rust and loc.lua (the
-- Rust engine's and this engine's location handles). run() produces the
-- same effects the Rust engine does (an edgeguard_effects, and the header
-- array its clear list indexes), which the shim applies: the Lua engine
-- strips and scores, and a location bound to its models (given its scores
-- and its strip count) turns that into the decision, the texts and the
-- exit, in Rust, as for the Rust engine.

local ffi = require "ffi"
local legacy = require "resty.edgeguard.legacy.engine"
local lheaders = require "resty.edgeguard.legacy.headers"
local shadow = require "resty.edgeguard.legacy.shadow"
local metrics = require "resty.edgeguard.metrics"
local gate = require "resty.edgeguard.gate"
require "resty.edgeguard.cdefs"

local C = ffi.C
local ffi_new = ffi.new
local ffi_string = ffi.string
local ipairs = ipairs
local tonumber = tonumber

-- A monotonic clock with nanosecond resolution (ngx.now() is cached per
-- event-loop turn with millisecond resolution: useless for microseconds).
-- pcall: another module may have declared these already, identically.
pcall(ffi.cdef, "struct timespec { long tv_sec; long tv_nsec; };")
pcall(ffi.cdef, "int clock_gettime(int clk_id, struct timespec *tp);")
local ts = ffi_new("struct timespec")
local CLOCK_MONOTONIC = 1

-- Seconds on the monotonic clock (as a double; differences are exact to
-- the nanosecond for uptimes below about 100 days).
local function clock()
    C.clock_gettime(CLOCK_MONOTONIC, ts)
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local _M = { clock = clock }

local RUST, LUA = metrics.ENGINES.rust, metrics.ENGINES.lua
local JOB_ACCESS = C.EDGEGUARD_JOB_ACCESS
-- The Lua engine's scores in its model order, and what it did to the
-- request, for edgeguard_location_run (reused).
local score_buf = ffi_new("double[?]", C.EDGEGUARD_MAX_MODELS)
local given = ffi_new("edgeguard_given[1]")
-- The Rust engine's scores by name, for shadow mode's comparison (reused).
local rust_scores = {}
local location_out = ffi_new("edgeguard_location *[1]")
local errbuf = ffi_new("char[?]", C.EDGEGUARD_ERRBUF_LEN)

-- The Lua engine for the resolved options `o`. Returns the engine, or nil
-- and the list's error; and, third, the models' error when they failed but
-- the list loaded.
local function load(lib, o)
    local models
    for _, m in ipairs(o.lua_models or o.models or {}) do
        models = models or {}
        models[m.name] = m.path
    end
    local eng, err = legacy.new{ internal_headers = o.internal_headers, models = models, lib = lib }
    if eng or not models then
        return eng, err
    end
    -- Either file may be at fault; without the models, only the list is left.
    local list_only, list_err = legacy.new{ internal_headers = o.internal_headers, lib = lib }
    if not list_only then
        return nil, list_err
    end
    return list_only, nil, err
end

--- The Lua engine for the resolved options `o`, or nil and an error: its
-- list or its models did not load. Its models are held to the policy
-- Rust's are (src/load/parts.rs, whose words this refusal uses).
function _M.load(lib, o)
    local eng, list_err, model_err = load(lib, o)
    if model_err then
        return nil, "models not loaded, so this configuration is refused (on a reload, nginx keeps "
            .. "the running workers and their models): " .. (o.engine == "shadow" and "lua engine: " or "")
            .. model_err
    end
    return eng, list_err
end

--- Shadow mode's judge for the configuration `st` (engine "shadow").
function _M.judge(st)
    local lib, h = st.lib, st.metrics and st.metrics.handle
    local counts = h and {
        disagreement = function(_, kind)
            lib.edgeguard_metrics_disagreement(h, C["EDGEGUARD_DISAGREEMENT_" .. kind:upper()])
        end,
    }
    return shadow.new(st.names, st.lua.names, counts, st.primary)
end

--- The Lua engine's location for the configuration `cfg`: bound to its
-- models (their own thresholds), given its scores; it strips only the
-- score header's spellings (the engine strips the internal headers).
function _M.location(st, cfg)
    local lib, names, own = st.lib, st.lua.names, st.lua.thresholds
    local n = #names
    local c_names = ffi_new("const char *[?]", n + 1)
    local c_own = ffi_new("double[?]", n + 1)
    for i = 1, n do
        c_names[i - 1] = names[i] -- `names` keeps the strings alive
        c_own[i - 1] = own and own[names[i]] or 0 / 0
    end
    local rc = lib.edgeguard_location_new(cfg.handle, nil, c_names, c_own, n, nil, location_out, errbuf,
                                          C.EDGEGUARD_ERRBUF_LEN)
    if rc ~= 0 then
        error("edgeguard: " .. ffi.string(errbuf), 2)
    end
    return ffi.gc(location_out[0], function(p) lib.edgeguard_location_free(p) end)
end

-- The Lua engine's request table, reused by every request of this worker.
local lreq = { headers = {}, n_headers = 0 }

-- The Lua engine's scores of lreq (nil without models), counted.
local function lua_scores(st)
    local leng = st.lua
    if #leng.names == 0 then
        return nil
    end
    return leng:score_request(lreq)
end

-- Hands `scores` (nil: none), `removed` and `left` to the Lua location's
-- run of `job` on the current request (its headers read again after the
-- engine's strip). Returns the effects and the headers, or nil and an error.
local function decide(st, loc, r, job, scores, removed, left, counts)
    local g = given[0]
    local names = st.lua.names
    if scores then
        for i = 1, #names do
            score_buf[i - 1] = scores[names[i]] or 0 / 0
        end
    end
    g.scores, g.scores_len = scores and score_buf or nil, scores and #names or 0
    g.removed, g.unremovable = removed, left
    local req, headers = gate.current(r)
    if not req then
        return nil, headers
    end
    local e, err = gate.run(st.lib, loc.lua, counts, req, given, job, "lua")
    if not e then
        return nil, err
    end
    return e, headers
end

-- The Lua engine's strip of lreq (read from the current request).
local function lua_strip(st)
    local leng = st.lua
    if not leng.headers then
        return 0, 0
    end
    return leng:strip(lreq)
end

-- engine = "lua": the Lua engine strips and scores, its location decides
-- (and counts the request under "lua"); this counts the engine's time and
-- scores.
local function run_lua(st, loc, r, job)
    local mx = st.metrics
    local t0 = mx and clock()
    local leng = st.lua
    if job == JOB_ACCESS or leng.headers then
        leng:read_request(lreq)
    end
    local scores = job == JOB_ACCESS and lua_scores(st) or nil
    local removed, left = lua_strip(st)
    if mx and job == JOB_ACCESS then
        st.lib.edgeguard_metrics_engine_time(mx.handle, LUA, clock() - t0)
        if scores then
            for i = 1, #leng.names do
                score_buf[i - 1] = scores[leng.names[i]]
            end
            st.lib.edgeguard_metrics_scores(mx.handle, LUA, score_buf, #leng.names)
        end
    end
    return decide(st, loc, r, job, scores, removed, left, mx and mx.handle)
end

-- Shadow mode: both engines on every request, the primary's effects
-- applied, the disagreements judged; this counts both engines and the
-- request.
local function run_shadow(st, loc, r)
    local mx, lib = st.metrics, st.lib
    local primary = st.primary
    -- Both engines read and score what the client sent, before any strip.
    local t0 = mx and clock()
    local req, headers = gate.current(r)
    if not req then
        return nil, headers
    end
    local re, err = gate.run(lib, loc.rust, nil, req, nil, JOB_ACCESS, "rust")
    if not re then
        return nil, err
    end
    local rs = nil
    if re.scores_len > 0 then
        for i, name in ipairs(st.names) do
            rust_scores[name] = re.scores[i - 1]
        end
        rs = rust_scores
    end
    local t1 = mx and clock()
    local leng = st.lua
    leng:read_request(lreq)
    local ls = lua_scores(st)
    local lcount = leng.headers and lheaders.count(leng.headers, lreq) or 0
    local t2 = mx and clock()
    -- Strip with the primary only: the Rust engine's strip is its effects'
    -- clear list; the Lua engine's is done here.
    local removed, left = 0, 0
    if primary == "lua" then
        removed, left = lua_strip(st)
    end
    local le, lua_headers = decide(st, loc, r, JOB_ACCESS, ls, removed, left, nil)
    if not le then
        return nil, lua_headers
    end
    if mx then
        local t3 = clock()
        local rust_time = primary == "rust" and (t1 - t0) + (t3 - t2) or t1 - t0
        lib.edgeguard_metrics_engine_time(mx.handle, RUST, rust_time)
        lib.edgeguard_metrics_engine_time(mx.handle, LUA, primary == "rust" and t2 - t1 or t3 - t1)
        if rs then
            lib.edgeguard_metrics_scores(mx.handle, RUST, re.scores, re.scores_len)
        end
        if ls then
            for i = 1, #leng.names do
                score_buf[i - 1] = ls[leng.names[i]]
            end
            lib.edgeguard_metrics_scores(mx.handle, LUA, score_buf, #leng.names)
        end
    end
    local ra = ffi_string(re.action_name.data, re.action_name.len)
    local la = ffi_string(le.action_name.data, le.action_name.len)
    st.shadow:compare(rs, ls, ra, la, tonumber(re.matched), lcount)
    local e = primary == "rust" and re or le
    if mx then
        -- The primary's outcome, with the Rust engine's view of the
        -- clearance cookie and the bot claim.
        lib.edgeguard_metrics_request(mx.handle, metrics.ENGINES.shadow, e.action, e.removed, re)
    end
    if primary == "rust" then
        return re, headers
    end
    return le, lua_headers
end

--- Runs `job` (an edgeguard_job) on the current request `r` for a
-- location whose engine is "lua" or "shadow" (a strip job: the primary
-- engine's). Returns the effects to apply and the header array their clear
-- list indexes; or nil, an error and the engine label to count it under.
function _M.run(st, loc, r, job)
    local e, headers
    if job == JOB_ACCESS and loc.engine == "shadow" then
        e, headers = run_shadow(st, loc, r)
        return e, headers, "shadow"
    end
    e, headers = run_lua(st, loc, r, job)
    return e, headers, "lua"
end

--- score() with the Lua engine primary: the reused table of scores.
function _M.score(st)
    st.lua:read_request(lreq)
    return st.lua:score_request(lreq)
end

return _M
