-- TLS fingerprints (JA4) of nginx's connections: an adapter around
-- edgeguard_tls_client_hello / edgeguard_tls_get.
--
--   server {
--       listen 443 ssl;
--       ssl_client_hello_by_lua_block { require("resty.edgeguard.tls").client_hello() }
--       # for log formats: $edgeguard_ja4, "" when the connection has none
--       set_by_lua_block $edgeguard_ja4 { return require("resty.edgeguard.tls").ja4() or "" }
--       set_by_lua_block $edgeguard_tls_family { return require("resty.edgeguard.tls").family() or "" }
--   }
--
-- With the ssl_client_hello line, edgeguard's scorer reads the fingerprint
-- too (request.current() points edgeguard_request.tls at it through
-- info_for()): the TLS features of feature schema 3. Without it, or on
-- plain HTTP, they are missing values. Any TLS connection is marked as one
-- (a clearance cookie set on it is Secure).
--
-- client_hello() reads the ClientHello through nginx's OpenSSL while the
-- handshake waits in OpenSSL's client-hello callback, and stores the JA4 on
-- the connection's SSL object (freed with it). Every request of that
-- connection, HTTP/2 streams included, then reads it with ja4() or get().
-- It never fails the handshake: any error is logged and the handshake goes
-- on without a fingerprint.
--
-- No fingerprint (nil): plain HTTP; TLS without the ssl_client_hello line;
-- an SSLv2-format ClientHello; a process without OpenSSL's client-hello
-- functions. A resumed session sends a ClientHello too and is fingerprinted
-- (its JA4 differs from a full handshake's: pre_shared_key is one more
-- extension).

local ffi = require "ffi"
require "resty.edgeguard.cdefs"
local edgeguard_lib = require "resty.edgeguard.lib"

local ffi_new = ffi.new
local ffi_string = ffi.string
local tonumber = tonumber

local _M = { _VERSION = edgeguard_lib.VERSION }

local TLS_UNAVAILABLE = ffi.C.EDGEGUARD_RESULT_TLS_UNAVAILABLE
local JA4_LEN = ffi.C.EDGEGUARD_JA4_LEN
local ERRBUF_LEN = ffi.C.EDGEGUARD_ERRBUF_LEN
local errbuf = ffi_new("char[?]", ERRBUF_LEN)

-- The library, loaded on first use (configure{ lib_path = } may come
-- first); lib.load() returns the one loaded.
local get_lib = edgeguard_lib.load

-- The JA4 and the family name of an edgeguard_tls_info, as Lua strings.
local function ja4_of(i)
    return ffi_string(i.ja4, JA4_LEN)
end

local function family_of(i)
    return ffi_string(assert(get_lib()).edgeguard_tls_family_name(i.family))
end

-- The nginx part: present only inside nginx's http subsystem.
local in_nginx = ngx and ngx.config and ngx.config.subsystem == "http"
if not in_nginx then
    local function outside()
        error("edgeguard.tls needs nginx's http subsystem", 2)
    end
    _M.client_hello, _M.get, _M.ja4, _M.family, _M.info_for = outside, outside, outside, outside, outside
    return _M
end

local base = require "resty.core.base"
local info = ffi_new("edgeguard_tls_info[1]")
local C = ffi.C
local get_request = base.get_request
local ngx_log = ngx.log
local ngx_ERR = ngx.ERR
local ngx_WARN = ngx.WARN

-- lua-nginx-module exports it (0.10.16+); lua-resty-core 0.1.25 does not
-- declare it. The SSL * is passed on untyped.
if not pcall(ffi.typeof, "edgeguard_req_ssl_pointer_declared") then
    ffi.cdef[[
        typedef int edgeguard_req_ssl_pointer_declared;
        void *ngx_http_lua_ffi_get_req_ssl_pointer(void *r);
    ]]
end

-- Resolved once: a lua-nginx-module without it (before 0.10.16) leaves
-- every connection without a fingerprint instead of raising in a handshake.
local has_ssl_pointer, get_ssl_pointer = pcall(function()
    return C.ngx_http_lua_ffi_get_req_ssl_pointer
end)
if not has_ssl_pointer then
    get_ssl_pointer = function()
        return nil
    end
end

local unavailable_logged = false

-- No fingerprints in this worker at all: the same for every handshake, so
-- logged once.
local function unavailable(msg)
    if not unavailable_logged then
        unavailable_logged = true
        ngx_log(ngx_WARN, "edgeguard tls: no fingerprints: ", msg)
    end
    return nil, msg
end

local function client_hello()
    if not has_ssl_pointer then
        return unavailable("this lua-nginx-module does not export ngx_http_lua_ffi_get_req_ssl_pointer")
    end
    local r = get_request()
    if not r then
        ngx_log(ngx_ERR, "edgeguard tls: no request (call client_hello() in ssl_client_hello_by_lua*)")
        return nil, "no request"
    end
    local l, err = get_lib()
    if not l then
        ngx_log(ngx_ERR, "edgeguard tls: ", err)
        return nil, err
    end
    local ssl = get_ssl_pointer(r)
    if ssl == nil then
        return nil, "no TLS connection"
    end
    local rc = l.edgeguard_tls_client_hello(ssl, errbuf, ERRBUF_LEN)
    if rc == 0 then
        return true
    end
    local msg = ffi_string(errbuf)
    if rc == TLS_UNAVAILABLE then
        return unavailable(msg)
    end
    ngx_log(ngx_ERR, "edgeguard tls: ", ffi_string(l.edgeguard_result_text(rc)), ": ", msg)
    return nil, msg
end

--- Call in ssl_client_hello_by_lua*: fingerprints the connection's
-- ClientHello. Returns true, or nil and an error (already logged); the
-- handshake goes on either way: a Lua error here would fail it, so none
-- escapes.
function _M.client_hello()
    local ok, res, err = pcall(client_hello)
    if not ok then
        ngx_log(ngx_ERR, "edgeguard tls: ", res)
        return nil, res
    end
    return res, err
end

-- Fills `buf` (an edgeguard_tls_info[1]) with request r's connection
-- facts; returns it for a TLS connection (`present` = 0 when it has no
-- fingerprint), nil for plain HTTP.
local function facts(r, buf)
    local ssl = get_ssl_pointer(r)
    if ssl == nil then
        return nil
    end
    local l = get_lib()
    if not l then
        buf[0].present = 0
        return buf
    end
    l.edgeguard_tls_get(ssl, buf)
    return buf
end

--- The current request's connection fingerprint as an edgeguard_tls_info
-- (a buffer this module reuses: read it before the next call), or nil.
-- Allocates nothing.
function _M.get()
    local r = get_request()
    if not r then
        error("no request found", 2)
    end
    local found = facts(r, info)
    return found and found[0].present ~= 0 and found[0] or nil
end

-- request.current()'s own buffer: nothing a caller of get() keeps is
-- overwritten by scoring.
local req_info = ffi_new("edgeguard_tls_info[1]")

--- The TLS facts of request r's connection, as a pointer for
-- edgeguard_request.tls (a buffer this module reuses): its fingerprint, or
-- `present` = 0 without one; nil for plain HTTP. Allocates nothing.
function _M.info_for(r)
    return facts(r, req_info)
end

--- The current request's TLS family name ("boringssl", "nss", "openssl",
-- "go", "unknown"), or nil without a fingerprint.
function _M.family()
    local i = _M.get()
    return i and family_of(i)
end

--- The current request's JA4 string, or nil.
function _M.ja4()
    local i = _M.get()
    return i and ja4_of(i)
end

--- The raw parts of the current request's fingerprint as numbers and
-- strings, or nil: ja4, version, ciphers, extensions, alpn, grease,
-- family, source ("wire": every extension read from the ClientHello;
-- "openssl": only those OpenSSL implements). Makes a table: for tools and
-- tests, not the hot path.
function _M.parts()
    local i = _M.get()
    if not i then
        return nil
    end
    return {
        ja4 = ja4_of(i),
        version = tonumber(i.version),
        ciphers = tonumber(i.ciphers),
        extensions = tonumber(i.extensions),
        alpn = ffi_string(i.alpn, i.alpn_len),
        grease = i.grease == 1,
        family = family_of(i),
        source = i.source == 1 and "wire" or "openssl",
    }
end

return _M
