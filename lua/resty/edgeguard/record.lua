-- Records each request's headers for `edgeguard replay`: fills
-- $edgeguard_request_headers, which nginx-conf/log-format.conf logs, with the
-- headers as the client sent them (arrival order, repeats, the client's
-- letter case, every byte but the secrets), before anything strips them.
-- The secrets are redacted in Rust (edgeguard_config_record, by the
-- configuration in force: docs/replay.md, "What the log keeps"): cookie
-- values and credentials become their length, the clearance cookie the
-- verdict on it; `redact = false` in configure{} logs every byte.
--
--   set $edgeguard_request_headers "";
--   rewrite_by_lua_block {   -- server level: docs/placement.md
--       require("resty.edgeguard.record").capture()   -- first: before stripping
--       require("resty.edgeguard").access{ vars = true }
--   }
--
-- The value is the JSON text of [[name, value], ...], written by
-- edgeguard_config_record next to the reader replay uses
-- (src/replay/record/write.rs says which bytes are escaped and why).
--
-- A request costs no Lua allocation: the headers come as pointers into
-- nginx's pool (request.headers), the text is written into a per-worker C
-- buffer, and nginx copies it into the variable from there.

local ffi = require "ffi"
require "resty.edgeguard.cdefs"
local edgeguard_lib = require "resty.edgeguard.lib"

local ffi_new = ffi.new
local ffi_string = ffi.string
local error = error
local tonumber = tonumber
local type = type

local _M = { _VERSION = edgeguard_lib.VERSION }

local BUFFER_TOO_SMALL = ffi.C.EDGEGUARD_RESULT_BUFFER_TOO_SMALL

-- The output buffer, grown to the largest request seen, never shrunk.
local out_cap = 4096
local out = ffi_new("uint8_t[?]", out_cap)
local out_len = ffi_new("size_t[1]")

local lib -- loaded on first use: configure{ lib_path = } may come first

-- Calls the export `name` (edgeguard_headers_record or
-- edgeguard_config_record) with (a, b) into the per-worker buffer, grown once
-- when it is too small. Returns the pointer and the length, valid until the
-- next call, or nil and an error.
local function into_buffer(name, a, b)
    if not lib then
        local err
        lib, err = edgeguard_lib.load()
        if not lib then
            return nil, err
        end
    end
    local f = lib[name]
    local rc = f(a, b, out, out_cap, out_len)
    if rc == BUFFER_TOO_SMALL then
        out_cap = tonumber(out_len[0])
        out = ffi_new("uint8_t[?]", out_cap)
        rc = f(a, b, out, out_cap, out_len)
    end
    if rc ~= 0 then
        return nil, name .. ": " .. edgeguard_lib.result_text(lib, rc)
    end
    return out, tonumber(out_len[0])
end

--- Writes the JSON text of `n` headers (an edgeguard_header array, or
-- nginx's identical ngx_http_lua_ffi_table_elt_t) into a per-worker buffer,
-- byte for byte (no redaction: capture() redacts). Returns a pointer to it
-- and the length, valid until the next call, or nil and an error.
function _M.encode(headers, n)
    return into_buffer("edgeguard_headers_record", headers, n)
end

--- The JSON text of `n` headers as a Lua string, or nil and an error (for
-- tests and tools; the request path uses encode()).
function _M.encode_string(headers, n)
    if type(n) ~= "number" or n < 0 then
        error("encode_string expects a header array and its length", 2)
    end
    local p, len = _M.encode(headers, n)
    if not p then
        return nil, len
    end
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

require "resty.core.var" -- declares ngx_http_lua_ffi_var_set
local request = require "resty.edgeguard.request"
local C = ffi.C
local get_request = request.get
local request_current = request.current

-- The configuration in force (configure{}'s), whose redaction applies;
-- none before configure(): the default redaction. Required here, in
-- init_by_lua (the master, as root), not on a worker's first request: the
-- worker's user may not read the module's directory (it requires no record).
local edgeguard = require "resty.edgeguard"

-- Writes the redacted text of the request `req` (an edgeguard_request) into
-- the per-worker buffer; the pointer and length, or nil and an error.
local function encode_request(req)
    return into_buffer("edgeguard_config_record", edgeguard.config_handle(), req)
end

local VAR = "edgeguard_request_headers"
local ERRBUF_LEN = 256
local var_lowcase = ffi_new("unsigned char[?]", #VAR)
local errbuf = ffi_new("unsigned char[?]", ERRBUF_LEN)
local errlen = ffi_new("size_t[1]")

--- Sets $edgeguard_request_headers to the current request's headers, as the
-- client sent them, secrets redacted. Call it in rewrite_by_lua* before
-- anything changes the headers (before edgeguard.access()), after
-- configure{} (whose `redact` and challenge it follows). Returns the number
-- of headers, or nil and an error (the variable not declared with `set`,
-- headers unreadable).
function _M.capture()
    local r = get_request(2)
    -- raw: names in the client's letter case, not lower-cased.
    local req, err, n = request_current(r, nil, true)
    if not req then
        return nil, err
    end
    local p, len = encode_request(req)
    if not p then
        return nil, len
    end
    errlen[0] = ERRBUF_LEN
    local rc = C.ngx_http_lua_ffi_var_set(r, VAR, #VAR, var_lowcase, p, len, errbuf, errlen)
    if rc ~= 0 then
        return nil, ffi_string(errbuf, tonumber(errlen[0]))
    end
    return n
end

return _M
