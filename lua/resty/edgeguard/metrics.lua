-- edgeguard's Prometheus metrics in nginx, correct across workers.
--
-- The Rust library owns the metrics (src/metrics/): the series of a
-- configuration, the per-request counting (inside edgeguard_location_run)
-- and the text exposition. Each worker counts into its
-- own registry; this module keeps what needs nginx, the
-- `lua_shared_dict` (configure option `metrics_dict`) the workers share: a
-- timer (ngx.timer.every, started by init_worker) adds this worker's
-- deltas into the dict once per FLUSH_SECONDS, so the text a scrape
-- returns lags by at most FLUSH_SECONDS for other workers' requests (the
-- scraping worker flushes its own first); a worker that is killed loses
-- at most that much.

local ffi = require "ffi"
require "resty.edgeguard.cdefs"

local C = ffi.C
local ffi_gc = ffi.gc
local ffi_new = ffi.new
local ffi_string = ffi.string
local setmetatable = setmetatable
local tonumber = tonumber
local upper = string.upper

local _M = { _VERSION = require("resty.edgeguard.lib").VERSION }
local mt = { __index = _M }

_M.FLUSH_SECONDS = 1

-- The numbers of the names ("rust", "block", ...) of an enum of the header,
-- read from the cdefs on first use (EDGEGUARD_ENGINE_KIND_RUST, ...).
local function numbers(prefix)
    return setmetatable({}, { __index = function(t, name)
        local n = C[prefix .. upper(name)]
        t[name] = n
        return n
    end })
end
local ENGINES = numbers("EDGEGUARD_ENGINE_KIND_")
local OUTCOMES = numbers("EDGEGUARD_OUTCOME_")
_M.ENGINES = ENGINES

local ERRBUF_LEN = C.EDGEGUARD_ERRBUF_LEN
local new_out = ffi_new("edgeguard_metrics *[1]")
local len_out = ffi_new("size_t[1]")
local key_out = ffi_new("edgeguard_str[1]")
local errbuf = ffi_new("char[?]", ERRBUF_LEN)

-- A list of names as a C array (the strings stay referenced by `list`).
local function c_names(list)
    local n = list and #list or 0
    if n == 0 then
        return nil, 0
    end
    local arr = ffi_new("const char *[?]", n)
    for i = 1, n do
        arr[i - 1] = list[i]
    end
    return arr, n
end

--- The metrics of the configuration `cfg` (resty.edgeguard.config's: its
-- engine, challenge and verified bots decide the series) over the dict
-- `dict` (an ngx.shared.DICT, or nil outside nginx: counting still works,
-- nothing is stored), with each engine's model names in scoring order
-- (nil: none). Returns the metrics, or nil and an error.
function _M.new(lib, cfg, dict, rust_models, lua_models)
    local rust, nrust = c_names(rust_models)
    local lua, nlua = c_names(lua_models)
    local rc = lib.edgeguard_metrics_new(cfg.handle, rust, nrust, lua, nlua, new_out, errbuf, ERRBUF_LEN)
    if rc ~= 0 then
        return nil, "edgeguard_metrics_new: " .. ffi_string(errbuf)
    end
    local handle = ffi_gc(new_out[0], function(p) lib.edgeguard_metrics_free(p) end)
    -- The dict key of every slot, fetched once.
    local n = tonumber(lib.edgeguard_metrics_len(handle))
    local keys = {}
    for i = 0, n - 1 do
        lib.edgeguard_metrics_key(handle, i, key_out)
        keys[i] = ffi_string(key_out[0].data, key_out[0].len)
    end
    return setmetatable({
        lib = lib, dict = dict, handle = handle, n = n, keys = keys,
        slots = ffi_new("uint32_t[?]", n), values = ffi_new("double[?]", n),
    }, mt)
end

--- One request that edgeguard_location_run did not count (shadow mode,
-- and the shim's 500s): the engine setting, the action, the internal
-- header entries removed and, for shadow mode, the Rust engine's
-- edgeguard_effects (its clearance and bot claim).
function _M.request(self, engine, action, removed, out)
    self.lib.edgeguard_metrics_request(self.handle, ENGINES[engine], OUTCOMES[action], removed, out)
end

--- Adds this worker's deltas to the shared dict. Returns true, or nil and
-- the dict's error (the deltas that failed are given back to the next flush).
function _M.flush(self)
    local dict = self.dict
    if not dict then
        return true
    end
    local lib, handle, slots, deltas, keys = self.lib, self.handle, self.slots, self.values, self.keys
    lib.edgeguard_metrics_drain(handle, slots, deltas, self.n, len_out)
    local first_err
    for i = 0, tonumber(len_out[0]) - 1 do
        local slot, v = slots[i], deltas[i]
        local _, err = dict:incr(keys[slot], v, 0)
        if err then
            first_err = first_err or err
            lib.edgeguard_metrics_restore(handle, slot, v)
        end
    end
    if first_err then
        return nil, "edgeguard metrics: shared dict: " .. first_err
    end
    return true
end

--- The Prometheus text exposition (format 0.0.4) of the shared dict's
-- totals, after flushing this worker's deltas.
function _M.text(self)
    self:flush()
    local lib, dict, keys, values = self.lib, self.dict, self.keys, self.values
    for i = 0, self.n - 1 do
        values[i] = dict and tonumber(dict:get(keys[i])) or 0
    end
    if not self.buf then
        self.room = lib.edgeguard_metrics_text_room(self.handle)
        self.buf = ffi_new("uint8_t[?]", self.room)
    end
    local rc = lib.edgeguard_metrics_text(self.handle, values, self.n, self.buf, self.room, len_out)
    if rc ~= 0 then
        return nil, "edgeguard_metrics_text: " .. ffi_string(lib.edgeguard_result_text(rc))
    end
    return ffi_string(self.buf, len_out[0])
end

return _M
