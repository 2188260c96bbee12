-- Records each request's headers for `edgeguard replay`: fills
-- $edgeguard_request_headers, which nginx-conf/log-format.conf logs, with the
-- headers exactly as the client sent them (arrival order, repeats, the
-- client's letter case, every byte), before anything strips them.
--
--   set $edgeguard_request_headers "";
--   rewrite_by_lua_block {   -- server level: README "Where edgeguard goes in nginx.conf"
--       require("resty.edgeguard.record").capture()   -- first: before stripping
--       require("resty.edgeguard").access{ vars = true }
--   }
--
-- The value is the JSON text of [[name, value], ...]. Only `"`, `\` and bytes
-- below 0x20 are escaped (`\"`, `\\`, `\u00XX`); every other byte, 8-bit ones
-- included, is written as it came: nginx's escape=json does the same for the
-- bytes of $request_uri, and the replay reader takes JSON strings as bytes,
-- so what replay scores is byte for byte what nginx scored.
--
-- A request costs no Lua allocation: the headers come as pointers into
-- nginx's pool (ngx_http_lua_ffi_req_get_headers), the text is written into a
-- per-worker C buffer, and nginx copies it into the variable from there.

local ffi = require "ffi"
require "resty.edgeguard.cdefs"

local bit = require "bit"
local band = bit.band
local rshift = bit.rshift
local ffi_new = ffi.new
local ffi_cast = ffi.cast
local ffi_string = ffi.string
local error = error
local tonumber = tonumber
local type = type

local _M = { _VERSION = "0.1.0" }

local VAR = "edgeguard_request_headers"

-- Per byte: 0 copy, 1 backslash then the byte, 2 \u00XX.
local ESCAPE = ffi_new("uint8_t[256]")
for b = 0, 0x1f do
    ESCAPE[b] = 2
end
ESCAPE[34] = 1 -- "
ESCAPE[92] = 1 -- \
local HEX = ffi_new("uint8_t[16]", { 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102 })

-- The output buffer, grown to the largest request seen, never shrunk.
local out_cap = 0
local out

-- Appends byte `c` to `o` at `pos`, escaped; returns the next position.
local function put_byte(o, pos, c)
    local e = ESCAPE[c]
    if e == 0 then
        o[pos] = c
        return pos + 1
    elseif e == 1 then
        o[pos] = 92
        o[pos + 1] = c
        return pos + 2
    end
    o[pos] = 92
    o[pos + 1] = 117 -- u
    o[pos + 2] = 48
    o[pos + 3] = 48
    o[pos + 4] = HEX[rshift(c, 4)]
    o[pos + 5] = HEX[band(c, 15)]
    return pos + 6
end

-- The byte loops index the header array afresh on every byte, never keeping
-- a pointer or struct reference in a Lua variable: a cdata value that lives
-- across the loop would be boxed (a heap allocation) where the loop's trace
-- starts, twice per header.

-- Appends the JSON string of header i's name to `out` at `pos`.
local function put_key(o, pos, headers, i)
    o[pos] = 34
    pos = pos + 1
    for j = 0, headers[i].key.len - 1 do
        pos = put_byte(o, pos, headers[i].key.data[j])
    end
    o[pos] = 34
    return pos + 1
end

-- Appends the JSON string of header i's value to `out` at `pos`.
local function put_value(o, pos, headers, i)
    o[pos] = 34
    pos = pos + 1
    for j = 0, headers[i].value.len - 1 do
        pos = put_byte(o, pos, headers[i].value.data[j])
    end
    o[pos] = 34
    return pos + 1
end

--- Writes the JSON text of `n` headers (an edgeguard_header array, or
-- nginx's identical ngx_http_lua_ffi_table_elt_t) into a per-worker buffer.
-- Returns a pointer to it and the length: valid until the next call.
function _M.encode(headers, n)
    -- Worst case: every byte escaped as \u00XX, plus `["",""],` per header.
    local need = 2
    for i = 0, n - 1 do
        need = need + 6 * (headers[i].key.len + headers[i].value.len) + 8
    end
    if need > out_cap then
        out_cap = need > 4096 and need or 4096
        out = ffi_new("uint8_t[?]", out_cap)
    end
    local o = out
    o[0] = 91 -- [
    local pos = 1
    for i = 0, n - 1 do
        if i > 0 then
            o[pos] = 44 -- ,
            pos = pos + 1
        end
        o[pos] = 91
        pos = put_key(o, pos + 1, headers, i)
        o[pos] = 44
        pos = put_value(o, pos + 1, headers, i)
        o[pos] = 93 -- ]
        pos = pos + 1
    end
    o[pos] = 93
    return o, pos + 1
end

--- The JSON text of `n` headers as a Lua string (for tests and tools; the
-- request path uses encode()).
function _M.encode_string(headers, n)
    if type(n) ~= "number" or n < 0 then
        error("encode_string expects a header array and its length", 2)
    end
    local p, len = _M.encode(headers, n)
    return ffi_string(p, len)
end

-- The nginx part: present only inside nginx's http subsystem.
local in_nginx = ngx and ngx.config and ngx.config.subsystem == "http"
if not in_nginx then
    function _M.capture()
        error("edgeguard.record.capture needs nginx's http subsystem", 2)
    end
    return _M
end

local base = require "resty.core.base"
require "resty.core.request" -- declares ngx_http_lua_ffi_req_get_headers*
require "resty.core.var"     -- declares ngx_http_lua_ffi_var_set
local C = ffi.C
local get_request = base.get_request

local ERRBUF_LEN = 256
local truncated = ffi_new("int[1]")
local var_lowcase = ffi_new("unsigned char[?]", #VAR)
local errbuf = ffi_new("unsigned char[?]", ERRBUF_LEN)
local errlen = ffi_new("size_t[1]")

-- nginx's header elements, grown to the largest request seen.
local hdr_cap = 0
local hdr_buf, eg_hdr_buf

--- Sets $edgeguard_request_headers to the current request's headers, as the
-- client sent them. Call it in rewrite_by_lua* before anything changes the
-- headers (before edgeguard.access()). Returns the number of headers, or nil
-- and an error (the variable not declared with `set`, headers unreadable).
function _M.capture()
    local r = get_request()
    if not r then
        error("no request found", 2)
    end
    -- max = 0: every header, where the usual 100 would drop the rest.
    local n = C.ngx_http_lua_ffi_req_get_headers_count(r, 0, truncated)
    if n < 0 then
        return nil, "cannot count request headers (nginx code " .. n .. ")"
    end
    if n > hdr_cap then
        hdr_cap = n > 128 and n or 128
        hdr_buf = ffi_new("ngx_http_lua_ffi_table_elt_t[?]", hdr_cap)
        eg_hdr_buf = ffi_cast("edgeguard_header *", hdr_buf) -- the same layout
    end
    -- raw = 1: names in the client's letter case, not lower-cased.
    if n > 0 and C.ngx_http_lua_ffi_req_get_headers(r, hdr_buf, n, 1) ~= 0 then
        return nil, "cannot read request headers"
    end
    local p, len = _M.encode(eg_hdr_buf, n)
    errlen[0] = ERRBUF_LEN
    local rc = C.ngx_http_lua_ffi_var_set(r, VAR, #VAR, var_lowcase, p, len, errbuf, errlen)
    if rc ~= 0 then
        return nil, ffi_string(errbuf, tonumber(errlen[0]))
    end
    return n
end

return _M
