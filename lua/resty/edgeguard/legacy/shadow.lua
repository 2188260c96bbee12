-- Shadow mode's judge (the legacy engine's driving code, loaded only with
-- engine = "shadow"): given what the Rust and the Lua engine made of one
-- request, counts each kind of disagreement and logs it, at most one line a
-- second per worker (a broken candidate must not flood the error log), the
-- line saying how many it held back before it.
--
-- Made once per configure() with the engines' model names and the metrics;
-- `compare` allocates nothing when the engines agree.

local concat = table.concat
local format = string.format
local setmetatable = setmetatable
local tostring = tostring

-- Scores within this relative distance agree: the engines compute the same
-- sums, but nothing promises the last bit across two implementations.
local REL_TOLERANCE = 1e-9

local _M = { REL_TOLERANCE = REL_TOLERANCE }
local mt = { __index = _M }

--- Whether two score tables (name -> score, or nil when unscored) differ on
-- any of `names`.
function _M.scores_differ(names, a, b)
    if not a or not b then
        return a ~= b
    end
    for i = 1, #names do
        local x, y = a[names[i]], b[names[i]]
        if not x or not y then
            return true
        end
        local d = x - y
        if d < 0 then d = -d end
        local m = x < 0 and -x or x
        local my = y < 0 and -y or y
        if my > m then m = my end
        if d > REL_TOLERANCE * m then
            return true
        end
    end
    return false
end

--- rust_names, lua_names: each engine's model names in scoring order (the
-- Rust list may be nil when its models did not load); metrics: the metrics
-- object or nil; primary: "rust" or "lua", for the log line.
function _M.new(rust_names, lua_names, metrics, primary)
    return setmetatable({
        names = rust_names or lua_names,
        lua_names = lua_names,
        -- Models one engine lacks count as differing scores.
        same_models = rust_names == nil or #rust_names == #lua_names,
        metrics = metrics,
        primary = primary,
        kinds = {},       -- reused list of the kinds of one disagreement
        text = {},        -- reused formatting buffer
        last_log = 0,     -- ngx.now() of this worker's last line
        suppressed = 0,   -- lines not written since then
    }, mt)
end

local function scores_text(buf, names, scores)
    if not scores then
        return "none"
    end
    for i = 1, #names do
        buf[i] = format("%s=%.17g", names[i], scores[names[i]] or 0 / 0)
    end
    return concat(buf, ";", 1, #names)
end

--- rs, ls: the scores; ra, la: the decisions; rcount, lcount: the internal
-- header entries each found. Returns the number of kinds that disagreed.
function _M.compare(self, rs, ls, ra, la, rcount, lcount)
    local kinds, n = self.kinds, 0
    if _M.scores_differ(self.names, rs, ls) or (rs and ls and not self.same_models) then
        n = n + 1
        kinds[n] = "score"
    end
    if ra ~= la then
        n = n + 1
        kinds[n] = "decision"
    end
    if rcount ~= lcount then
        n = n + 1
        kinds[n] = "headers"
    end
    if n == 0 then
        return 0
    end
    local mx = self.metrics
    if mx then
        for i = 1, n do
            mx:disagreement(kinds[i])
        end
    end
    local now = ngx.now()
    if now - self.last_log < 1 then
        self.suppressed = self.suppressed + 1
        return n
    end
    self.last_log = now
    local var = ngx.var
    ngx.log(ngx.WARN, format('edgeguard shadow disagreement kinds=%s primary=%s rust_action=%s lua_action=%s '
        .. 'rust_scores=%s lua_scores=%s rust_headers=%s lua_headers=%s method=%s uri="%s" '
        .. 'client=%s request_id=%s suppressed=%d',
        concat(kinds, ",", 1, n), self.primary, ra, la, scores_text(self.text, self.names, rs),
        scores_text(self.text, self.lua_names, ls), tostring(rcount), tostring(lcount),
        var.request_method, var.request_uri, var.remote_addr, var.request_id, self.suppressed))
    self.suppressed = 0
    return n
end

return _M
