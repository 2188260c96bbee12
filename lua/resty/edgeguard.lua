-- edgeguard: strip internal request headers in OpenResty/nginx, in Rust.
--
--   init_by_lua_block   { assert(require("resty.edgeguard").configure{
--                             internal_headers = "/etc/nginx/internal-headers.txt" }) }
--   access_by_lua_block { require("resty.edgeguard").clear_internal_headers() }
--
-- configure() loads everything (it allocates; run it in init_by_lua, where
-- nginx forks the workers from the loaded state). The per-request functions
-- make one FFI call into Rust and reuse buffers allocated once per worker.
--
-- Errors: misuse (wrong argument types, calling before configure) raises
-- error(msg, 2); runtime failures (a file that cannot be read or parsed, a
-- request whose headers cannot be read) return nil and a message.

local ffi = require "ffi"
local edgeguard_lib = require "resty.edgeguard.lib"
local header_set = require "resty.edgeguard.header_set"

local C = ffi.C
local ffi_cast = ffi.cast
local ffi_new = ffi.new
local ffi_string = ffi.string
local error = error
local pairs = pairs
local tostring = tostring
local type = type

local _M = { _VERSION = "0.1.0" }

-- The configuration in force. Replaced whole by a successful configure(), so
-- a failed one leaves the previous state serving.
local state = {}

local OPTIONS = {
    internal_headers = "string",
    lib_path = "string",
}

-- nginx bindings, present only inside nginx's http subsystem. Outside it
-- (plain luajit, for tests and tools) configure() and the set API still work.
local get_request, clear_header, truncated
if ngx and ngx.config and ngx.config.subsystem == "http" then
    local base = require "resty.core.base"
    require "resty.core.request" -- declares ngx_http_lua_ffi_table_elt_t and friends
    get_request = base.get_request
    clear_header = ngx.req.clear_header
    truncated = ffi_new("int[1]")
end

-- One header buffer per worker, in edgeguard's type and, through a cached
-- cast, in nginx's identical one. Grown to the largest request seen.
local hdr_cap = 0
local hdr_buf, ngx_hdr_buf

local function grow_headers(n)
    hdr_cap = n > 128 and n or 128
    hdr_buf = ffi_new("edgeguard_header[?]", hdr_cap)
    ngx_hdr_buf = ffi_cast("ngx_http_lua_ffi_table_elt_t *", hdr_buf)
end

--- Loads the library and the configured data. Call in init_by_lua*.
-- opts.internal_headers: path of the internal header list (one name or
--   `prefix*` per line; see nginx-conf/internal-headers.txt).
-- opts.lib_path: path of libedgeguard.so (default: search package.cpath).
-- Returns true, or nil and an error naming the file (and line).
function _M.configure(opts)
    if type(opts) ~= "table" then
        error("edgeguard.configure expects a table of options", 2)
    end
    for k, v in pairs(opts) do
        local want = OPTIONS[k]
        if not want then
            error("edgeguard.configure: unknown option '" .. tostring(k) .. "'", 2)
        end
        if type(v) ~= want then
            error("edgeguard.configure: option '" .. k .. "' must be a " .. want
                  .. ", got " .. type(v), 2)
        end
    end

    local lib, err = edgeguard_lib.load(opts.lib_path)
    if not lib then
        return nil, err
    end

    local headers
    if opts.internal_headers then
        headers, err = header_set.load(lib, opts.internal_headers)
        if not headers then
            return nil, err
        end
    end

    state = { lib = lib, headers = headers }
    return true
end

--- The loaded library's version, or nil before configure().
function _M.library_version()
    local lib = state.lib
    return lib and ffi_string(lib.edgeguard_version())
end

--- The internal header set in force (for introspection and tests).
function _M.internal_headers()
    return state.headers
end

--- Removes every internal header from the current request, so the upstream
-- never sees it. Call in access_by_lua* (or rewrite_by_lua*).
-- Returns the number of header entries removed, or nil and an error.
function _M.clear_internal_headers()
    local set = state.headers
    if not set then
        error("edgeguard: no internal header list in force; call "
              .. "edgeguard.configure{ internal_headers = ... } in init_by_lua", 2)
    end
    if not get_request then
        error("edgeguard.clear_internal_headers needs nginx's http subsystem", 2)
    end
    local r = get_request()
    if not r then
        error("no request found", 2)
    end

    -- max = 0 means no limit: the usual default of 100 would leave the
    -- headers after the 100th unchecked, and they would reach the origin.
    local n = C.ngx_http_lua_ffi_req_get_headers_count(r, 0, truncated)
    if n <= 0 then
        if n == 0 then
            return 0
        end
        return nil, "cannot count request headers (nginx code " .. n .. ")"
    end
    if truncated[0] ~= 0 then
        return nil, "request header list truncated"
    end
    if n > hdr_cap then
        grow_headers(n)
    end
    if C.ngx_http_lua_ffi_req_get_headers(r, ngx_hdr_buf, n, 0) ~= 0 then
        return nil, "cannot read request headers"
    end

    local clear, nclear, nmatched = set:find(hdr_buf, n)
    if not clear then
        return nil, nclear
    end
    for i = 0, nclear - 1 do
        local key = hdr_buf[clear[i]].key
        clear_header(ffi_string(key.data, key.len))
    end
    return nmatched
end

return _M
