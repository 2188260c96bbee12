-- The current nginx request as edgeguard's C types, without copying: header
-- pointers come from ngx_http_lua_ffi_req_get_headers, the method from
-- ngx_http_lua_ffi_req_get_method_name, the URI, protocol and client
-- address from ngx_http_lua_ffi_var_get, all pointing
-- into nginx's request pool. Buffers are allocated once per worker and reused.
--
-- Only usable inside nginx's http subsystem.

local ffi = require "ffi"
local base = require "resty.core.base"
require "resty.core.request" -- declares ngx_http_lua_ffi_table_elt_t, _req_get_method_name, _req_set_header
require "resty.core.var"     -- declares ngx_http_lua_ffi_var_get, _var_set (gate.lua calls it)
require "resty.core.misc"    -- declares ngx_http_lua_ffi_is_subrequest (edgeguard.lua calls it)
require "resty.core.phase"   -- declares ngx_http_lua_ffi_get_phase (edgeguard.lua calls it)
require "resty.edgeguard.cdefs"
local tls = require "resty.edgeguard.tls"

local C = ffi.C
local ffi_cast = ffi.cast
local ffi_new = ffi.new
local get_request = base.get_request
local tls_info_for = tls.info_for
local error = error

local _M = {}

local truncated = ffi_new("int[1]")
local var_value = ffi_new("unsigned char *[1]")
-- ngx_http_lua_ffi_var_get lower-cases the name into this buffer.
local var_lowcase = ffi_new("char[32]")
local var_len = ffi_new("size_t[1]")
local var_err = ffi_new("char *[1]")
local method_name = ffi_new("unsigned char *[1]")
local method_len = ffi_new("size_t[1]")

-- One header buffer per worker, in edgeguard's element type and, through a
-- cached cast, in nginx's identical one. Grown to the largest request seen.
-- Made here, so a request without headers gets an array too.
local hdr_cap = 128
local hdr_buf = ffi_new("edgeguard_header[?]", hdr_cap)
local ngx_hdr_buf = ffi_cast("ngx_http_lua_ffi_table_elt_t *", hdr_buf)

local req = ffi_new("edgeguard_request")
local proto = ffi_new("edgeguard_str")

--- The request's headers: the edgeguard_header array and its length, or nil
-- and an error. Every header is returned: max = 0 means no limit, where the
-- usual default of 100 would leave the rest unchecked. Names are lower-cased
-- by nginx, or with `raw` as the client sent them (record.capture()).
function _M.headers(r, raw)
    local n = C.ngx_http_lua_ffi_req_get_headers_count(r, 0, truncated)
    if n < 0 then
        return nil, "cannot count request headers (nginx code " .. n .. ")"
    end
    if truncated[0] ~= 0 then
        return nil, "request header list truncated"
    end
    if n > hdr_cap then
        hdr_cap = n
        hdr_buf = ffi_new("edgeguard_header[?]", hdr_cap)
        ngx_hdr_buf = ffi_cast("ngx_http_lua_ffi_table_elt_t *", hdr_buf)
    end
    if n > 0 and C.ngx_http_lua_ffi_req_get_headers(r, ngx_hdr_buf, n, raw and 1 or 0) ~= 0 then
        return nil, "cannot read request headers"
    end
    return hdr_buf, n
end

-- Points `s` (an edgeguard_str) at what an nginx FFI getter returned in
-- `data[0]` and `len[0]`, in place; empty when it returned non-zero (a
-- variable not found, -5, or without a value, -1), as the extractor treats
-- a missing field.
local function point(s, rc, data, len)
    if rc == 0 then
        s.data = data[0]
        s.len = len[0]
    else
        s.data = nil
        s.len = 0
    end
end

-- Points `s` at the value of an nginx variable.
local function var_into(r, name, s)
    point(s, C.ngx_http_lua_ffi_var_get(r, name, #name, var_lowcase, 0, var_value, var_len, var_err),
          var_value, var_len)
end

--- The current request as an edgeguard_request (a per-worker struct,
-- overwritten by the next call), its header array, or nil and an error.
-- `request_id`: pass $request_id too (a challenge shows it; nginx makes
-- it, 16 random bytes, on the first read, so it is not read otherwise).
-- `raw`: header names as the client sent them (record.capture()).
function _M.current(r, request_id, raw)
    local headers, n = _M.headers(r, raw)
    if not headers then
        return nil, n
    end
    req.headers = headers
    req.headers_len = n
    -- The method through its own FFI call (no variable lookup): the
    -- request's method name, $request_method for a main request.
    point(req.method, C.ngx_http_lua_ffi_req_get_method_name(r, method_name, method_len), method_name,
          method_len)
    var_into(r, "request_uri", req.uri)
    var_into(r, "remote_addr", req.client_addr)
    -- The connection's peer (before realip replaced $remote_addr with the
    -- client's): whom trusted_proxies is asked about. Empty without the
    -- realip module: the client address.
    var_into(r, "realip_remote_addr", req.peer_addr)
    if request_id then
        var_into(r, "request_id", req.request_id)
    else
        req.request_id.len = 0
    end
    -- The connection's TLS facts (JA4 and family for the TLS features, or
    -- none), or NULL for plain HTTP.
    req.tls = tls_info_for(r)

    -- $server_protocol is "HTTP/1.0", "HTTP/1.1", "HTTP/2.0" or "HTTP/3.0";
    -- empty for HTTP/0.9, which the extractor sees as version 9.
    var_into(r, "server_protocol", proto)
    local p = proto.data
    if proto.len == 8 then
        req.http_version = (p[5] - 48) * 10 + (p[7] - 48)
    else
        req.http_version = 9
    end
    return req, headers, n
end

--- The running request, or a raised error outside a request context.
function _M.get(level)
    local r = get_request()
    if not r then
        error("no request found", (level or 1) + 1)
    end
    return r
end

return _M
