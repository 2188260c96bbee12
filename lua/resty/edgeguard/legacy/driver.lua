-- The legacy engine's driving code in nginx: `engine = "lua"` runs the
-- frozen Lua engine (resty.edgeguard.legacy) alone, `engine = "shadow"`
-- runs it beside the Rust engine and lets resty.edgeguard.legacy.shadow compare
-- them. It is the migration's "before" and its comparison, not the adapter:
-- resty.edgeguard loads it only when the configured engine is not "rust".
--
-- The interface is explicit. resty.edgeguard binds the adapter functions
-- this module calls (bind): rust_access, clear_listed, rust_decision (the
-- Rust engine's call, for shadow mode), act, refuse, fail, clear_found (the
-- adapter's way of acting on a result) and request (resty.edgeguard.request).
-- The functions here take the configuration in force (`st`, the adapter's
-- state) and a location (`loc`), and add to them only what the Lua engine
-- needs: st.lua (the engine), st.shadow (the judge), loc.lua_policy and
-- loc.spelling_set.

local ffi = require "ffi"
local legacy = require "resty.edgeguard.legacy"
local lheaders = require "resty.edgeguard.legacy.headers"
local shadow = require "resty.edgeguard.legacy.shadow"
local metrics = require "resty.edgeguard.metrics"

local ffi_new = ffi.new
local ffi_string = ffi.string
local ipairs = ipairs
local tonumber = tonumber

-- A monotonic clock with nanosecond resolution (ngx.now() is cached per
-- event-loop turn with millisecond resolution: useless for microseconds).
-- pcall: another module may have declared these already, identically.
pcall(ffi.cdef, "struct timespec { long tv_sec; long tv_nsec; };")
pcall(ffi.cdef, "int clock_gettime(int clk_id, struct timespec *tp);")
local C = ffi.C
local ts = ffi_new("struct timespec")
local CLOCK_MONOTONIC = 1

-- Seconds on the monotonic clock (as a double; differences are exact to
-- the nanosecond for uptimes below about 100 days).
local function clock()
    C.clock_gettime(CLOCK_MONOTONIC, ts)
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local _M = { clock = clock }

-- The metrics exports' numbers (edgeguard_engine, edgeguard_disagreement).
local RUST, LUA = metrics.ENGINES.rust, metrics.ENGINES.lua
local KINDS = { score = 0, decision = 1, headers = 2 }
-- The Lua engine's scores in its model order, for edgeguard_metrics_scores
-- (a policy binds at most 64 models).
local score_buf = ffi_new("double[64]")

-- Counting what edgeguard_access does not (it counts the Rust engine alone):
-- seconds in an engine, and the Lua engine's scores (table by name).
local function count_time(st, engine, seconds)
    st.lib.edgeguard_metrics_engine_time(st.metrics_handle, engine, seconds)
end

local function count_lua_scores(st, names, scores)
    for i = 1, #names do
        score_buf[i - 1] = scores[names[i]]
    end
    st.lib.edgeguard_metrics_scores(st.metrics_handle, LUA, score_buf, #names)
end

-- The adapter's functions (see bind).
local ad = {}

--- Binds the adapter functions listed at the top. Called once, before any
-- other function here runs on a request.
function _M.bind(adapter)
    ad = adapter
end

-- { name = path } of the resolved options' model list (the Lua engine's
-- input), or nil.
local function model_map(list)
    if not list then
        return nil
    end
    local map = {}
    for _, m in ipairs(list) do
        map[m.name] = m.path
    end
    return map
end

--- The Lua engine for the resolved options `o`. Returns the engine, or nil
-- and the list's error; and, third, the models' error when they failed but
-- the list loaded (fail open, like the Rust scorer).
function _M.load(lib, o)
    local models = model_map(o.lua_models or o.models)
    local eng, err = legacy.new{ internal_headers = o.internal_headers, models = models, lib = lib }
    if eng then
        return eng
    end
    if not models then
        return nil, err
    end
    -- Either file may be at fault; without the models, only the list is left.
    local list_only, list_err = legacy.new{ internal_headers = o.internal_headers, lib = lib }
    if not list_only then
        return nil, list_err
    end
    return list_only, nil, err
end

--- Shadow mode's judge for the configuration `st` (engine "shadow").
function _M.judge(st)
    local lib, h = st.lib, st.metrics_handle
    local counts = h and { disagreement = function(_, kind) lib.edgeguard_metrics_disagreement(h, KINDS[kind]) end }
    return shadow.new(st.scorer and st.scorer.names, st.lua.names, counts, st.primary)
end

--- What a location needs for the Lua engine: its policy bound to the Lua
-- engine's models and, from that policy (bound without the internal list),
-- `spelling_set`: the score header spellings alone, removed after the
-- engine's own strip.
function _M.location(st, cfg, loc)
    local leng = st.lua
    loc.lua_policy = cfg:policy(leng.names, leng.thresholds)
    loc.spelling_set = loc.lua_policy.strip_set
end

-- The Lua engine's request table, reused by every request of this worker.
local lreq = { headers = {}, n_headers = 0 }

-- After the Lua engine's strip: removes the client spellings of the
-- location's score header(s), found by the Rust rule on the headers nginx
-- holds now; true, or nil and an error.
local function score_spellings(r, loc)
    local set = loc.spelling_set
    if not set then
        return true
    end
    local headers, n = ad.request.headers(r)
    if not headers then
        return nil, n
    end
    local clear, nclear = set:find(headers, n)
    if not clear then
        return nil, nclear
    end
    ad.clear_found(r, headers, clear, nclear)
    return true
end

-- The Lua engine's strip of the request it read into lreq, then (unless
-- some internal entry cannot be removed, or `loc` is nil) the client
-- spellings of `loc`'s score header. Returns the entries removed and left,
-- or nil and an error.
local function lua_strip(st, r, loc)
    local removed, left = 0, 0
    local leng = st.lua
    if leng.headers then
        removed, left = leng:strip(lreq)
    end
    if loc and left == 0 then
        local ok, err = score_spellings(r, loc)
        if not ok then
            return nil, err
        end
    end
    return removed, left
end

--- The Lua engine's strip of the current request outside access() (the
-- primary engine is "lua"): `loc`'s score header spellings too, unless nil
-- (a subrequest keeps its parent's). Returns the entries removed and left,
-- or nil and an error.
function _M.strip_request(st, r, loc)
    if st.lua.headers then
        st.lua:read_request(lreq)
    end
    return lua_strip(st, r, loc)
end

--- score() with the Lua engine primary: the reused table of scores.
function _M.score(st)
    st.lua:read_request(lreq)
    return st.lua:score_request(lreq)
end

-- edgeguard_policy_text's request (method, URI, client address only), out
-- struct and text buffer, reused; the buffer grows (rarely) to the largest
-- need seen.
local text_req = ffi_new("edgeguard_request[1]")
local text_out = ffi_new("edgeguard_text[1]")
local text_cap, text_buf = 0, nil

-- The texts of policy `p`'s last decide_table() of lreq (`scored`: it had
-- scores), as Rust formats them: the edgeguard_text and the buffer its
-- spans point into, or nil and an error.
local function decision_text(p, scored)
    local method, uri, client = lreq.method, lreq.uri, lreq.client_addr
    local need = p.text_room + #method + #uri + #client
    if need > text_cap then
        text_cap = need * 2
        text_buf = ffi_new("uint8_t[?]", text_cap)
    end
    local q = text_req[0]
    q.method.data, q.method.len = method, #method
    q.uri.data, q.uri.len = uri, #uri
    q.client_addr.data, q.client_addr.len = client, #client
    local lib = p.lib
    local rc = lib.edgeguard_policy_text(p.handle, scored and p.scores or nil, scored and p.n or 0, p.out, text_req,
                                         text_buf, text_cap, text_out)
    if rc ~= 0 then
        return nil, "edgeguard_policy_text: " .. ffi_string(lib.edgeguard_result_text(rc))
    end
    return text_out[0], text_buf
end

-- The Lua engine's decision by the location's policy for it, without
-- acting, as act()'s arguments: "pass", "allow", "log", "block" or
-- "unavailable"; the status of a blocked request; the texts (Rust's, from
-- the scores and the decision) and their buffer. Or nil and an error.
local function decide(loc, scores, r)
    local addr, len
    if loc.allow then
        addr, len = ad.request.binary_addr(r)
    end
    local p = loc.lua_policy
    local action, err, _, status = p:decide_table(scores, addr, len)
    if not action then
        return nil, err
    end
    local text, buf = decision_text(p, scores ~= nil)
    if not text then
        return nil, buf
    end
    return action, status, text, buf
end

local function run_lua(st, loc, r)
    local mx = st.metrics
    local t0 = mx and clock()
    local leng = st.lua
    leng:read_request(lreq)
    local scores
    if #leng.names > 0 then
        scores = leng:score_request(lreq)
    end
    local removed, left = lua_strip(st, r, loc)
    if not removed then
        return ad.fail("lua", left)
    end
    if mx then
        count_time(st, LUA, clock() - t0)
        if scores then
            count_lua_scores(st, leng.names, scores)
        end
    end
    if left > 0 then
        return ad.refuse("lua", removed, left)
    end
    local action, status, text, buf = decide(loc, scores, r)
    if mx and action then
        mx:request("lua", action, removed)
    end
    return ad.act(loc, "lua", scores, leng.names, r, lreq, action, status, text, buf)
end

-- Shadow mode: both engines on every request (resty.edgeguard.legacy.shadow judges).
local function run_shadow(st, loc, r)
    local mx = st.metrics
    local scorer, leng = st.scorer, st.lua
    local primary = st.primary

    -- Both engines read and score what the client sent, before any strip.
    -- edgeguard_access counts nothing here (no handle): this function
    -- counts both engines and the request.
    local t0 = mx and clock()
    local req, headers, out, rs = ad.rust_access(loc, r, nil)
    if not req then
        return ad.fail("shadow", headers)
    end
    -- What both engines count: the list's entries.
    local rcount = tonumber(out.matched)
    local t1 = mx and clock()

    leng:read_request(lreq)
    local ls
    if #leng.names > 0 then
        ls = leng:score_request(lreq)
    end
    local lcount = leng.headers and lheaders.count(leng.headers, lreq) or 0
    local t2 = mx and clock()

    -- Strip with the primary only.
    local removed, left = 0
    if primary == "rust" then
        left = tonumber(out.unremovable)
        if left == 0 then
            ad.clear_listed(r, headers, out)
            removed = rcount
        end
    else
        removed, left = lua_strip(st, r, loc)
        if not removed then
            return ad.fail("shadow", left)
        end
    end
    if mx then
        local t3 = clock()
        if primary == "rust" then
            count_time(st, RUST, (t1 - t0) + (t3 - t2))
            count_time(st, LUA, t2 - t1)
        else
            count_time(st, RUST, t1 - t0)
            count_time(st, LUA, t3 - t1)
        end
        if rs then
            st.lib.edgeguard_metrics_scores(st.metrics_handle, RUST, scorer.out, scorer.n)
        end
        if ls then
            count_lua_scores(st, leng.names, ls)
        end
    end

    local ra, rstatus, rtext, rbuf = ad.rust_decision(out)
    local la, lstatus, ltext, lbuf = decide(loc, ls, r)
    st.shadow:compare(rs, ls, ra, la, rcount, lcount)

    if left > 0 then
        return ad.refuse("shadow", removed, left)
    end
    -- The primary's action, and the Rust engine's view of the clearance
    -- cookie and the bot claim (what act() reads too).
    local action = primary == "rust" and ra or la
    if mx and action then
        mx:request("shadow", action, removed, out)
    end
    if primary == "rust" then
        return ad.act(loc, "shadow", rs, scorer and scorer.names, r, req, ra, rstatus, rtext, rbuf)
    end
    return ad.act(loc, "shadow", ls, leng.names, r, lreq, la, lstatus, ltext, lbuf)
end

--- access() for a location whose engine is "lua" or "shadow": the action.
function _M.run(st, loc, r)
    if loc.engine == "lua" then
        return run_lua(st, loc, r)
    end
    return run_shadow(st, loc, r)
end

return _M
