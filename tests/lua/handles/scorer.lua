-- A bot scorer: a Lua handle around edgeguard_scorer (several CatBoost models
-- sharing one feature extraction and one round of categorical hashing), for
-- the tests that load models directly (the shim scores through the engine
-- configure() loads: resty.edgeguard.setup).
--
-- Loading allocates; `score` reuses the output buffer and the result table
-- made at load, so a request creates no Lua tables and no C memory.

local ffi = require "ffi"
require "resty.edgeguard.cdefs"

local ffi_gc = ffi.gc
local ffi_new = ffi.new
local ffi_string = ffi.string
local error = error
local ipairs = ipairs
local setmetatable = setmetatable
local tonumber = tonumber
local type = type

local ERRBUF_LEN = ffi.C.EDGEGUARD_ERRBUF_LEN
local errbuf = ffi_new("char[?]", ERRBUF_LEN)
local scorer_out = ffi_new("edgeguard_scorer *[1]")

local _M = {}
local mt = { __index = _M }
local wrap

--- Loads models given as a list of { name = , path = } in scoring order
-- (the order the resolved options give: the configuration owns it).
-- Returns the scorer, or nil and an error naming the model file (and field).
function _M.load(lib, models)
    if type(models) ~= "table" or #models == 0 then
        error("models must be a non-empty list of { name = , path = }", 2)
    end
    local n = #models
    local c_names = ffi_new("const char *[?]", n)
    local c_paths = ffi_new("const char *[?]", n)
    for i, m in ipairs(models) do
        if type(m.name) ~= "string" or type(m.path) ~= "string" then
            error("models must be a list of { name = string, path = string }", 2)
        end
        -- `models` keeps the strings alive during the call.
        c_names[i - 1] = m.name
        c_paths[i - 1] = m.path
    end
    local rc = lib.edgeguard_scorer_new(c_names, c_paths, n, scorer_out, errbuf, ERRBUF_LEN)
    if rc ~= 0 then
        return nil, ffi_string(errbuf)
    end
    return wrap(lib, ffi_gc(scorer_out[0], function(p) lib.edgeguard_scorer_free(p) end))
end

-- The Lua object of a scorer handle: its names, thresholds and buffers.
function wrap(lib, handle)
    local count = tonumber(lib.edgeguard_scorer_model_count(handle))
    local self = {
        handle = handle,
        lib = lib,
        n = count,
        names = {},       -- index (1-based) -> model name, in the scorer's order
        thresholds = {},  -- model name -> the model's own default threshold, or nil
        out = ffi_new("double[?]", count),
        scores = {},      -- model name -> latest score; reused for every request
    }
    for i = 1, count do
        local name = ffi_string(lib.edgeguard_scorer_model_name(handle, i - 1))
        local t = tonumber(lib.edgeguard_scorer_model_threshold(handle, i - 1))
        self.names[i] = name
        self.thresholds[name] = (t == t) and t or nil -- NaN: the model has none
        self.scores[name] = 0
    end
    return setmetatable(self, mt)
end

--- Scores one request (an edgeguard_request). Returns the reused table of
-- scores by model name, or nil and an error.
function _M.score(self, req)
    local out = self.out
    local rc = self.lib.edgeguard_scorer_score(self.handle, req, out, self.n)
    if rc ~= 0 then
        return nil, ffi_string(self.lib.edgeguard_result_text(rc))
    end
    local scores, names = self.scores, self.names
    for i = 1, self.n do
        scores[names[i]] = out[i - 1]
    end
    return scores
end

return _M
