-- The options, owned by Rust (src/config/, loaded by src/load/): the
-- engine configure{} loads (edgeguard_engine), a Lua handle around
-- edgeguard_config, and the locations they bind (edgeguard_location).
--
-- configure{} and each access{} table are handed to Rust value by value
-- (edgeguard_options_put: numbers as doubles, so a threshold arrives
-- exactly as written, which lua-cjson's 14 digits would not do), parsed
-- and resolved there; the resolved options come back once, as a plain
-- table. A location is everything one access{} resolves to, bound to one
-- engine's models and the internal list.

local ffi = require "ffi"
local cjson = require "cjson.safe"
require "resty.edgeguard.cdefs"

local C = ffi.C
local ffi_gc = ffi.gc
local ffi_new = ffi.new
local ffi_string = ffi.string
local pairs = pairs
local setmetatable = setmetatable
local tostring = tostring
local type = type

local _M = { _VERSION = require("resty.edgeguard.lib").VERSION }
local mt = { __index = _M }

local ERRBUF_LEN = C.EDGEGUARD_ERRBUF_LEN
local errbuf = ffi_new("char[?]", ERRBUF_LEN)
local RESULT_INVALID_ARGUMENT = C.EDGEGUARD_RESULT_INVALID_ARGUMENT
local STRING, NUMBER, BOOLEAN = C.EDGEGUARD_VALUE_STRING, C.EDGEGUARD_VALUE_NUMBER, C.EDGEGUARD_VALUE_BOOLEAN
local OBJECT, ARRAY, OTHER = C.EDGEGUARD_VALUE_OBJECT, C.EDGEGUARD_VALUE_ARRAY, C.EDGEGUARD_VALUE_OTHER
local config_out = ffi_new("edgeguard_config *[1]")
local location_out = ffi_new("edgeguard_location *[1]")
local engine_out = ffi_new("edgeguard_engine *[1]")
local options_out = ffi_new("edgeguard_options *[1]")

-- Hands value `v` of option `key` (nil: a list's next item) to the table
-- open at `depth`.
local function put(lib, o, depth, key, v)
    local t, klen = type(v), key and #key or 0
    if t == "table" then
        local n, list = 0, true
        for k in pairs(v) do
            n, list = n + 1, list and type(k) == "number"
        end
        list = list and n > 0 and n == #v -- {}: an object, which Rust reads as a list too
        lib.edgeguard_options_put(o, depth, key, klen, list and ARRAY or OBJECT, 0, nil, 0)
        if list then
            for i = 1, n do
                put(lib, o, depth + 1, nil, v[i])
            end
        else
            for k, x in pairs(v) do
                put(lib, o, depth + 1, tostring(k), x)
            end
        end
    elseif t == "string" then
        lib.edgeguard_options_put(o, depth, key, klen, STRING, 0, v, #v)
    elseif t == "number" then
        lib.edgeguard_options_put(o, depth, key, klen, NUMBER, v, nil, 0)
    elseif t == "boolean" then
        lib.edgeguard_options_put(o, depth, key, klen, BOOLEAN, v and 1 or 0, nil, 0)
    else
        lib.edgeguard_options_put(o, depth, key, klen, OTHER, 0, t, #t)
    end
end

--- The Rust table of options `opts`, filled value by value (an
-- edgeguard_options, freed with its last reference).
local function fill(lib, opts)
    assert(lib.edgeguard_options_new(options_out) == 0)
    local o = ffi_gc(options_out[0], function(p) lib.edgeguard_options_free(p) end)
    for k, v in pairs(opts) do
        put(lib, o, 0, tostring(k), v)
    end
    return o
end
_M.options = fill

--- Loads everything configure{}'s options `opts` name, in Rust
-- (src/load/: the options, the files they name, the internal list, the
-- models; a file that does not load refuses it all). Returns the
-- configuration: `options` is the load report (the resolved options and
-- what `loaded`), `engine` the handle that owns the lent `handle`; or
-- nil, an error and true when the table itself is wrong (misuse).
function _M.engine(lib, opts, what)
    local rc = lib.edgeguard_engine_new(fill(lib, opts), what, engine_out, errbuf, ERRBUF_LEN)
    if rc ~= 0 then
        return nil, ffi_string(errbuf), rc == RESULT_INVALID_ARGUMENT
    end
    local engine = ffi_gc(engine_out[0], function(p) lib.edgeguard_engine_free(p) end)
    local options = cjson.decode(ffi_string(lib.edgeguard_engine_report(engine)))
    return setmetatable({ engine = engine, handle = lib.edgeguard_engine_config(engine), lib = lib,
                          options = options }, mt)
end

--- A location of this engine's (a configuration from _M.engine) for the
-- access{} options `opts`: the Rust location, bound to the engine's list
-- and scorer, and its configuration; or nil and the error of a bad option
-- (misuse: the caller raises it).
function _M.bind(self, opts, what)
    local lib = self.lib
    local rc = lib.edgeguard_engine_location_new(self.engine, fill(lib, opts), what, location_out, config_out,
                                                 errbuf, ERRBUF_LEN)
    if rc ~= 0 then
        return nil, ffi_string(errbuf)
    end
    local loc = ffi_gc(location_out[0], function(p) lib.edgeguard_location_free(p) end)
    local handle = ffi_gc(config_out[0], function(p) lib.edgeguard_config_free(p) end)
    return loc, { handle = handle, options = cjson.decode(ffi_string(lib.edgeguard_config_json(handle))) }
end

return _M
