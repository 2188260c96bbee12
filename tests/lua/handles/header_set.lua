-- An internal header set: a Lua handle around edgeguard_header_set, for the
-- tests that ask the Rust matcher directly (the shim hands the engine's set
-- to edgeguard_location_run and keeps no handle of its own).
--
-- Loading allocates (Rust builds the matcher); `find` does not: it hands a
-- header array to Rust and reads back indices from buffers this module
-- owns and reuses.

local ffi = require "ffi"
require "resty.edgeguard.cdefs"

local ffi_gc = ffi.gc
local ffi_new = ffi.new
local ffi_string = ffi.string
local error = error
local setmetatable = setmetatable
local tonumber = tonumber
local type = type

local ERRBUF_LEN = ffi.C.EDGEGUARD_ERRBUF_LEN
local errbuf = ffi_new("char[?]", ERRBUF_LEN)
local set_out = ffi_new("edgeguard_header_set *[1]")
local clear_len = ffi_new("size_t[1]")
local matched = ffi_new("size_t[1]")
local unremovable = ffi_new("size_t[1]")

-- Indices to clear; grown (rarely) to the largest header count seen, since
-- Rust requires room for every header.
local clear_cap = 0
local clear_buf

local _M = {}
local mt = { __index = _M }

local function wrap(lib, rc, handle_box)
    if rc ~= 0 then
        return nil, ffi_string(errbuf)
    end
    -- A Lua closure keeps `lib` reachable for as long as the handle lives.
    local handle = ffi_gc(handle_box[0], function(p)
        lib.edgeguard_header_set_free(p)
    end)
    -- The search is on every request's path: its function is looked up once.
    return setmetatable({ handle = handle, lib = lib, find_checked = lib.edgeguard_header_set_find_checked },
                        mt)
end

-- Loads a list file. Returns the set, or nil and a message naming the file
-- and line.
function _M.load(lib, path)
    if type(path) ~= "string" then
        error("internal header list path must be a string", 2)
    end
    local rc = lib.edgeguard_header_set_new_from_file(path, set_out, errbuf, ERRBUF_LEN)
    return wrap(lib, rc, set_out)
end

-- Parses a list held in a Lua string; `name` labels it in error messages.
function _M.parse(lib, text, name)
    if type(text) ~= "string" then
        error("internal header list must be a string", 2)
    end
    local rc = lib.edgeguard_header_set_new_from_buffer(text, #text, name, set_out,
                                                         errbuf, ERRBUF_LEN)
    return wrap(lib, rc, set_out)
end

-- Number of rules in the set.
function _M.len(self)
    return tonumber(self.lib.edgeguard_header_set_len(self.handle))
end

-- Finds the internal entries among `n` headers at `headers` (an
-- edgeguard_header array). Returns the index buffer, how many distinct names
-- to clear, how many entries matched, and how many of those
-- ngx.req.clear_header cannot remove (names that are not RFC 9110 tokens;
-- include/edgeguard.h, edgeguard_header_set_find_checked); or nil and an
-- error.
function _M.find(self, headers, n)
    if n > clear_cap then
        clear_cap = n > 128 and n or 128
        clear_buf = ffi_new("uint32_t[?]", clear_cap)
    end
    local rc = self.find_checked(self.handle, headers, n, clear_buf, clear_cap, clear_len, matched,
                                 unremovable)
    if rc ~= 0 then
        return nil, ffi_string(self.lib.edgeguard_result_text(rc))
    end
    return clear_buf, tonumber(clear_len[0]), tonumber(matched[0]), tonumber(unremovable[0])
end

return _M
