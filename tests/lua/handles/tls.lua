-- ClientHello bytes fingerprinted through edgeguard_tls_parse, for the
-- tests of recorded handshakes (nginx fingerprints its connections with
-- resty.edgeguard.tls.client_hello, which reads them from OpenSSL).

local ffi = require "ffi"
require "resty.edgeguard.cdefs"
local edgeguard_lib = require "resty.edgeguard.lib"

local ffi_new = ffi.new
local ffi_string = ffi.string
local C = ffi.C

local _M = {}

local errbuf = ffi_new("char[?]", C.EDGEGUARD_ERRBUF_LEN)
local info = ffi_new("edgeguard_tls_info[1]")

--- Fingerprints the bytes of one ClientHello (a TLS record or a handshake
-- message, as a Lua string). Returns the edgeguard_tls_info (a reused
-- buffer), or nil and an error naming the field at fault.
function _M.parse(hello)
    if type(hello) ~= "string" then
        error("tls.parse expects the ClientHello bytes as a string", 2)
    end
    local lib = assert(edgeguard_lib.load())
    if lib.edgeguard_tls_parse(hello, #hello, info, errbuf, C.EDGEGUARD_ERRBUF_LEN) ~= 0 then
        return nil, ffi_string(errbuf)
    end
    return info[0]
end

--- The JA4 of an edgeguard_tls_info as a Lua string.
function _M.ja4_of(i)
    return ffi_string(i.ja4, C.EDGEGUARD_JA4_LEN)
end

--- The name of an edgeguard_tls_info's family ("boringssl", "nss", ...).
function _M.family_of(i)
    return ffi_string(assert(edgeguard_lib.load()).edgeguard_tls_family_name(i.family))
end

return _M
