-- The challenge's two responses, applied in nginx: the page (for a
-- flagged navigation) and the answer to it (a request to
-- /.edgeguard/challenge). Rust writes both (src/challenge/): the page with
-- its signed nonce, the clearance cookie's Set-Cookie value and the
-- same-site path to return to; this module only puts them on the wire.
-- Neither is on the path of an ordinary request.

local ffi = require "ffi"
require "resty.edgeguard.cdefs"

local ffi_new = ffi.new
local ffi_string = ffi.string

local _M = { _VERSION = "0.1.0" }

local PAGE_CAP = 4096
local COOKIE_CAP = 512
local LOCATION_CAP = 2048
local page_buf = ffi_new("uint8_t[?]", PAGE_CAP)
local cookie_buf = ffi_new("uint8_t[?]", COOKIE_CAP)
local location_buf = ffi_new("uint8_t[?]", LOCATION_CAP)
local len_out = ffi_new("size_t[1]")
local answer_out = ffi_new("edgeguard_challenge_answer[1]")

--- Serves the challenge page with `status` and ends the request.
function _M.serve_page(lib, policy, req, addr, addr_len, now, status)
    local rc = lib.edgeguard_policy_challenge_page(policy.handle, req, addr, addr_len, now,
                                                   page_buf, PAGE_CAP, len_out)
    if rc ~= 0 then
        return nil, "edgeguard_policy_challenge_page: " .. ffi_string(lib.edgeguard_result_text(rc))
    end
    ngx.status = status
    local h = ngx.header
    h["Content-Type"] = "text/html; charset=utf-8"
    h["Cache-Control"] = "no-store"
    h["X-Robots-Tag"] = "noindex"
    local body = ffi_string(page_buf, len_out[0])
    h["Content-Length"] = #body
    ngx.print(body)
    return ngx.exit(ngx.HTTP_OK)
end

--- Checks an answer. Solved: sets the clearance cookie and returns true and
-- the path the page came from (the caller redirects there with 303).
-- Otherwise returns false and the clearance code of the reason (the caller
-- answers with a status). nil and an error when a call fails (never
-- expected: the buffers are sized for the largest output). `counts`: the
-- metrics handle the answer is counted in (nil: not counted).
function _M.answer(lib, policy, counts, req, addr, addr_len, now, tls)
    local rc = lib.edgeguard_policy_challenge_answer(policy.handle, counts, req, addr, addr_len, now,
                                                     tls and 1 or 0, cookie_buf, COOKIE_CAP,
                                                     location_buf, LOCATION_CAP, answer_out)
    if rc ~= 0 then
        return nil, "edgeguard_policy_challenge_answer: " .. ffi_string(lib.edgeguard_result_text(rc))
    end
    local a = answer_out[0]
    local result = tonumber(a.result)
    if result ~= 1 then
        return false, result
    end
    local h = ngx.header
    h["Set-Cookie"] = ffi_string(cookie_buf, a.cookie_len)
    h["Cache-Control"] = "no-store"
    return true, ffi_string(location_buf, a.location_len)
end

return _M
