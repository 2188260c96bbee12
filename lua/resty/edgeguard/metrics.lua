-- edgeguard's Prometheus metrics, correct across nginx workers.
--
-- Storage: one `lua_shared_dict` (configure option `metrics_dict`), shared
-- by every worker. A request does not touch it: each worker adds into a
-- plain Lua array of pending deltas (one slot per series, laid out once at
-- configure), and a timer (ngx.timer.every, started by init_worker) adds
-- the non-zero slots into the dict once per FLUSH_SECONDS. So the text a
-- scrape returns lags by at most FLUSH_SECONDS for other workers' requests
-- (the scraping worker flushes its own first); a worker that is killed
-- loses at most that much, and a graceful exit flushes.
--
-- Histograms keep one counter per bucket (not cumulative) and a sum; the
-- exposition adds buckets up and takes _count from the +Inf bucket, so an
-- observation costs two slot updates.

local ffi = require "ffi"

local concat = table.concat
local format = string.format
local gsub = string.gsub
local ipairs = ipairs
local setmetatable = setmetatable
local tonumber = tonumber

local _M = { _VERSION = "0.1.0" }
local mt = { __index = _M }

_M.FLUSH_SECONDS = 1

-- Probabilities; raw-score models land in the outer buckets.
local SCORE_BUCKETS = { 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1 }
-- Seconds per request inside an engine: a Rust call is microseconds, a
-- Lua engine tens of microseconds, a stall milliseconds.
local SECONDS_BUCKETS = { 1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
                          1e-3, 2.5e-3, 1e-2, 0.1 }
_M.SCORE_BUCKETS = SCORE_BUCKETS
_M.SECONDS_BUCKETS = SECONDS_BUCKETS

-- "refused": a 400 for internal headers nginx's Lua API cannot remove.
-- "cleared", "challenge", "verified", "answer": the challenge and the
-- verified bots (README "Challenge mode", "Verified bots").
_M.ACTIONS = { "pass", "allow", "log", "block", "unavailable", "error", "refused",
               "cleared", "challenge", "verified", "answer" }
_M.CHALLENGE_RESULTS = { "served", "solved", "failed" }
_M.DISAGREEMENTS = { "score", "decision", "headers" }

-- A monotonic clock with nanosecond resolution (ngx.now() is cached per
-- event-loop turn with millisecond resolution: useless for microseconds).
-- pcall: another module may have declared these already, identically.
pcall(ffi.cdef, "struct timespec { long tv_sec; long tv_nsec; };")
pcall(ffi.cdef, "int clock_gettime(int clk_id, struct timespec *tp);")
local C = ffi.C
local ts = ffi.new("struct timespec")
local CLOCK_MONOTONIC = 1

--- Seconds on the monotonic clock (as a double; differences are exact to
-- the nanosecond for uptimes below about 100 days).
function _M.clock()
    C.clock_gettime(CLOCK_MONOTONIC, ts)
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local function labels_text(pairs_list)
    local parts = {}
    for i = 1, #pairs_list, 2 do
        -- The exposition format's escapes for label values: \\, \", \n.
        local v = gsub(pairs_list[i + 1], '[\\"\n]', { ["\\"] = "\\\\", ['"'] = '\\"', ["\n"] = "\\n" })
        parts[#parts + 1] = format('%s="%s"', pairs_list[i], v)
    end
    return concat(parts, ",")
end

-- Families in exposition order: name, type, help.
local FAMILIES = {
    { "edgeguard_requests_total", "counter", "Requests handled by edgeguard.access, by engine setting." },
    { "edgeguard_headers_stripped_total", "counter",
      "Internal header entries removed from requests (by the acting engine)." },
    { "edgeguard_decisions_total", "counter", "Decisions of edgeguard.access, by action." },
    { "edgeguard_score", "histogram", "Scores per model and engine." },
    { "edgeguard_engine_seconds", "histogram",
      "Time spent in an engine per request (reading, scoring, stripping), monotonic clock." },
    { "edgeguard_shadow_disagreements_total", "counter",
      "Shadow mode: requests where the engines disagreed, by kind." },
    { "edgeguard_load_errors_total", "counter",
      "Models that failed to load, counted once per configuration generation." },
    { "edgeguard_challenges_total", "counter",
      "Challenge pages served, answers solved and failed." },
    { "edgeguard_challenge_failures_total", "counter", "Failed challenge answers, by reason." },
    { "edgeguard_clearances_total", "counter",
      "Clearance cookies seen: accepted, or rejected by reason." },
    { "edgeguard_verified_bots_total", "counter",
      "Requests claiming a verified bot: from its prefixes (verified) or not (fake)." },
}

--- A metrics set over the dict `dict` (an ngx.shared.DICT, or nil outside
-- nginx: recording still works, nothing is stored). `spec`:
--   request_engines  list of engine labels of edgeguard_requests_total
--   models           { [engine] = { model names } } for edgeguard_score
--   engines          list of engines timed in edgeguard_engine_seconds
--   clearances       clearance code -> name (from Rust), when a challenge
--                    is configured: the challenge and clearance series
--   bots             verified bot names, when verified_bots is configured
function _M.new(dict, spec)
    local self = {
        dict = dict,
        keys = {},      -- slot -> dict key
        pending = {},   -- slot -> delta not yet in the dict
        series = {},    -- family name -> list of { labels, slot } (or histogram info)
        requests = {},  -- engine label -> slot
        decisions = {}, -- action -> slot
        disagree = {},  -- kind -> slot
        score_slots = {}, -- engine -> model -> first slot (buckets..., +Inf, sum)
        seconds_slots = {}, -- engine -> first slot
    }
    local function slot(key)
        local i = #self.keys + 1
        self.keys[i] = key
        self.pending[i] = 0
        return i
    end
    local function counter(family, labels)
        local lt = labels and labels_text(labels) or ""
        local s = slot(family .. "{" .. lt .. "}")
        local list = self.series[family] or {}
        self.series[family] = list
        list[#list + 1] = { lt, s }
        return s
    end
    local function histogram(family, labels, bounds)
        local lt = labels_text(labels)
        local first = slot(family .. "{" .. lt .. "}:1")
        for b = 2, #bounds + 1 do
            slot(family .. "{" .. lt .. "}:" .. b)
        end
        slot(family .. "{" .. lt .. "}:sum")
        local list = self.series[family] or {}
        self.series[family] = list
        list[#list + 1] = { lt, first, bounds }
        return first
    end

    for _, e in ipairs(spec.request_engines) do
        self.requests[e] = counter("edgeguard_requests_total", { "engine", e })
    end
    self.stripped = counter("edgeguard_headers_stripped_total")
    for _, a in ipairs(_M.ACTIONS) do
        self.decisions[a] = counter("edgeguard_decisions_total", { "action", a })
    end
    for _, e in ipairs(spec.engines) do
        self.score_slots[e] = {}
        for _, name in ipairs(spec.models[e] or {}) do
            self.score_slots[e][name] = histogram("edgeguard_score", { "model", name, "engine", e },
                                             SCORE_BUCKETS)
        end
    end
    for _, e in ipairs(spec.engines) do
        self.seconds_slots[e] = histogram("edgeguard_engine_seconds", { "engine", e }, SECONDS_BUCKETS)
    end
    for _, k in ipairs(_M.DISAGREEMENTS) do
        self.disagree[k] = counter("edgeguard_shadow_disagreements_total", { "kind", k })
    end
    self.load_errors = counter("edgeguard_load_errors_total")
    if spec.clearances then
        self.challenges, self.failures, self.clearances = {}, {}, {}
        for _, r in ipairs(_M.CHALLENGE_RESULTS) do
            self.challenges[r] = counter("edgeguard_challenges_total", { "result", r })
        end
        -- 0 (no cookie) is not counted; "accepted" is code 1, the rest are
        -- reasons, "work" only for answers.
        for code = 1, #spec.clearances do
            local name = spec.clearances[code]
            if name ~= "work" then
                self.clearances[code] = counter("edgeguard_clearances_total", { "result", name })
            end
            if code > 1 then
                self.failures[code] = counter("edgeguard_challenge_failures_total", { "reason", name })
            end
        end
    end
    if spec.bots then
        self.bots = {}
        for _, name in ipairs(spec.bots) do
            self.bots[name] = {
                verified = counter("edgeguard_verified_bots_total", { "bot", name, "result", "verified" }),
                fake = counter("edgeguard_verified_bots_total", { "bot", name, "result", "fake" }),
            }
        end
    end
    return setmetatable(self, mt)
end

-- Adds v to the bucket of `bounds` holding v, and to the sum.
local function observe(pending, first, bounds, v)
    local nb = #bounds
    local b = nb + 1
    for i = 1, nb do
        if v <= bounds[i] then
            b = i
            break
        end
    end
    local s = first + b - 1
    pending[s] = pending[s] + 1
    s = first + nb + 1
    pending[s] = pending[s] + v
end

--- One request handled: its engine setting, action and removed entries.
function _M.request(self, engine, action, removed)
    local p = self.pending
    local s = self.requests[engine]
    p[s] = p[s] + 1
    s = self.decisions[action]
    p[s] = p[s] + 1
    if removed and removed > 0 then
        s = self.stripped
        p[s] = p[s] + removed
    end
end

--- The scores of one engine for one request (`names` in order).
function _M.scores(self, engine, names, scores)
    local slots = self.score_slots[engine]
    local p = self.pending
    for i = 1, #names do
        local first = slots[names[i]]
        if first then
            observe(p, first, SCORE_BUCKETS, scores[names[i]])
        end
    end
end

--- Seconds spent in `engine` for one request.
function _M.engine_time(self, engine, seconds)
    observe(self.pending, self.seconds_slots[engine], SECONDS_BUCKETS, seconds)
end

--- A challenge page served ("served"), or an answer: "solved", or
-- "failed" with the clearance code of its reason.
function _M.challenge(self, result, code)
    local p = self.pending
    local s = self.challenges[result]
    p[s] = p[s] + 1
    s = code and self.failures[code]
    if s then
        p[s] = p[s] + 1
    end
end

--- A clearance cookie seen: its clearance code (1 accepted, more: why not).
function _M.clearance(self, code)
    local s = self.clearances[code]
    if s then
        local p = self.pending
        p[s] = p[s] + 1
    end
end

--- A request claiming the verified bot `name`: verdict "verified" or "fake".
function _M.bot(self, name, verdict)
    local b = self.bots[name]
    if b then
        local p = self.pending
        local s = b[verdict]
        p[s] = p[s] + 1
    end
end

--- One shadow disagreement of `kind` ("score", "decision", "headers").
function _M.disagreement(self, kind)
    local p = self.pending
    local s = self.disagree[kind]
    p[s] = p[s] + 1
end

--- Adds this worker's pending deltas to the shared dict. Returns true, or
-- nil and the dict's error (the deltas that failed stay pending).
function _M.flush(self)
    local dict = self.dict
    if not dict then
        return true
    end
    local p, keys = self.pending, self.keys
    local first_err
    for i = 1, #keys do
        local v = p[i]
        if v ~= 0 then
            local _, err = dict:incr(keys[i], v, 0)
            if err then
                first_err = first_err or err
            else
                p[i] = 0
            end
        end
    end
    if first_err then
        return nil, "edgeguard metrics: shared dict: " .. first_err
    end
    return true
end

--- Counts `n` load errors of configuration generation `generation` once,
-- whichever worker calls first (workers restarted later do not recount).
function _M.count_load_errors(self, generation, n)
    local dict = self.dict
    if not dict or n == 0 then
        return
    end
    if dict:add("load_errors_counted:" .. generation, true) then
        dict:incr(self.keys[self.load_errors], n, 0)
    end
end

local function number_text(v)
    if v % 1 == 0 and v > -1e15 and v < 1e15 then
        return format("%d", v)
    end
    return format("%.17g", v)
end

--- The Prometheus text exposition (format 0.0.4) of every series, from the
-- shared dict, after flushing this worker's pending deltas.
function _M.text(self)
    self:flush()
    local dict = self.dict
    local function get(slot)
        return (dict and tonumber(dict:get(self.keys[slot]))) or 0
    end
    local out = {}
    for _, fam in ipairs(FAMILIES) do
        local name, kind, help = fam[1], fam[2], fam[3]
        local list = self.series[name]
        if list then
            out[#out + 1] = "# HELP " .. name .. " " .. help
            out[#out + 1] = "# TYPE " .. name .. " " .. kind
            for _, s in ipairs(list) do
                local lt, first, bounds = s[1], s[2], s[3]
                if not bounds then
                    out[#out + 1] = format("%s%s %s", name, lt ~= "" and "{" .. lt .. "}" or "",
                                           number_text(get(first)))
                else
                    local total = 0
                    for b = 1, #bounds + 1 do
                        total = total + get(first + b - 1)
                        out[#out + 1] = format('%s_bucket{%s,le="%s"} %s', name, lt,
                                               bounds[b] and format("%.9g", bounds[b]) or "+Inf", number_text(total))
                    end
                    out[#out + 1] = format("%s_sum{%s} %s", name, lt,
                                           number_text(get(first + #bounds + 1)))
                    out[#out + 1] = format("%s_count{%s} %s", name, lt, number_text(total))
                end
            end
        end
    end
    out[#out + 1] = ""
    return concat(out, "\n")
end

return _M
