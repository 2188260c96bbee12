-- Configuration handles for the tests that build them without an engine:
-- edgeguard_config_new and _new_for_location from options handed over as
-- resty.edgeguard.config hands them (edgeguard_options_put), and locations
-- bound to given model names (edgeguard_location_new), as the legacy
-- engine's are. The shim itself loads through edgeguard_engine_new
-- (resty.edgeguard.config.engine) and needs none of this.

local ffi = require "ffi"
local cjson = require "cjson.safe"
local config = require "resty.edgeguard.config"

local C = ffi.C
local ffi_gc = ffi.gc
local ffi_new = ffi.new
local ffi_string = ffi.string

local _M = setmetatable({}, { __index = config })
local mt = { __index = _M }

local ERRBUF_LEN = C.EDGEGUARD_ERRBUF_LEN
local errbuf = ffi_new("char[?]", ERRBUF_LEN)
local config_out = ffi_new("edgeguard_config *[1]")
local location_out = ffi_new("edgeguard_location *[1]")
local json_out, json_len = ffi_new("const uint8_t *[1]"), ffi_new("size_t[1]")

--- The JSON text Rust makes of an option table, or nil and an error
-- naming the option that has none.
function _M.json(lib, opts)
    local o = config.options(lib, opts)
    if lib.edgeguard_options_json(o, json_out, json_len, errbuf, ERRBUF_LEN) ~= 0 then
        return nil, ffi_string(errbuf)
    end
    return ffi_string(json_out[0], json_len[0])
end

-- A configuration handle's Lua object, with its resolved options.
local function wrap(lib, rc)
    if rc ~= 0 then
        return nil, ffi_string(errbuf), rc == C.EDGEGUARD_RESULT_INVALID_ARGUMENT
    end
    local handle = ffi_gc(config_out[0], function(p) lib.edgeguard_config_free(p) end)
    local options = cjson.decode(ffi_string(lib.edgeguard_config_json(handle)))
    return setmetatable({ handle = handle, lib = lib, options = options }, mt)
end

--- Parses configure{}'s options (`what` names the table in messages).
-- Returns the configuration, or nil, an error and true when the table
-- itself is wrong (misuse), nil and an error when a file is bad.
function _M.new(lib, opts, what)
    local json, err = _M.json(lib, opts)
    if not json then
        return nil, what .. ": " .. err, true
    end
    return wrap(lib, lib.edgeguard_config_new(json, #json, what, nil, config_out, errbuf, ERRBUF_LEN))
end

--- The configuration of a location's access{} options `opts` over this
-- one, or nil, an error and true (misuse) for a bad option.
function _M.derive(self, opts, what)
    local json, err = _M.json(self.lib, opts)
    if not json then
        return nil, what .. ": " .. err, true
    end
    local lib = self.lib
    return wrap(lib, lib.edgeguard_config_new_for_location(self.handle, json, #json, what, config_out, errbuf,
                                                           ERRBUF_LEN))
end

--- Binds this configuration into a location handle: the models of
-- `scorer` (a handles.scorer; nil: none), or `names` (1-based, in scoring
-- order) given their scores with their own thresholds `own` (name ->
-- threshold, may be nil); the internal list `headers` (a
-- handles.header_set, or nil). Raises when Rust refuses.
function _M.location(self, scorer, headers, names, own)
    local lib = self.lib
    local n = names and #names or 0
    local c_names = ffi_new("const char *[?]", n + 1)
    local c_own = ffi_new("double[?]", n + 1)
    for i = 1, n do
        c_names[i - 1] = names[i] -- `names` keeps the strings alive
        c_own[i - 1] = own and own[names[i]] or 0 / 0
    end
    local rc = lib.edgeguard_location_new(self.handle, scorer and scorer.handle, c_names, c_own, n,
                                          headers and headers.handle, location_out, errbuf, ERRBUF_LEN)
    if rc ~= 0 then
        error("edgeguard: " .. ffi_string(errbuf), 2)
    end
    return ffi_gc(location_out[0], function(p) lib.edgeguard_location_free(p) end)
end

return _M
