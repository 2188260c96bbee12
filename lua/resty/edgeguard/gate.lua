-- One request through a location in one FFI call (edgeguard_location_run:
-- the Rust gate strips, scores, decides and writes every text), and its
-- effects applied in nginx: the headers cleared, the score header set, the
-- variables, the log line, the exit. Nothing here decides anything: the
-- effects say what to do, this module does it.
--
-- Only usable inside nginx's http subsystem. Each worker has one scratch
-- per engine (the buffers the effects point into) and reuses them.

local ffi = require "ffi"
require "resty.edgeguard.cdefs"
-- request.lua declares ngx_http_lua_ffi_req_set_header and _var_set (through
-- resty.core); outside nginx only run() works.
local in_nginx = ngx and ngx.config and ngx.config.subsystem == "http"
local request = in_nginx and require "resty.edgeguard.request"

local C = ffi.C
local ffi_gc = ffi.gc
local ffi_new = ffi.new
local ffi_string = ffi.string
local error = error
local tonumber = tonumber

local _M = {}

local EXIT_CONTINUE = C.EDGEGUARD_EXIT_CONTINUE
local EXIT_STATUS = C.EDGEGUARD_EXIT_STATUS
local EXIT_REDIRECT = C.EDGEGUARD_EXIT_REDIRECT
local FFI_DECLINED = -5 -- lua-nginx-module's NGX_DECLINED, as resty.core.base names it

-- Whether this worker logged the deployment warning (effects' `warning`).
local warned = false

local set_err = ffi_new("char *[1]")
-- ngx_http_lua_ffi_var_set lower-cases a name into this buffer: grown
-- (rarely) to the longest name set.
local lowcase_cap = 64
local var_lowcase = ffi_new("unsigned char[?]", lowcase_cap)
local var_err = ffi_new("unsigned char[256]")
local var_errlen = ffi_new("size_t[1]")

-- The scratches (one thread's buffers, which the effects point into) and
-- the effects of each engine's runs: the Rust engine's and the legacy
-- engine's, so that shadow mode holds both at once.
local scratches, outs = {}, {}

--- The effects struct of `engine` ("rust" or "lua"), for edgeguard_location_run.
local function out_of(lib, engine)
    local out = outs[engine]
    if not out then
        local box = ffi_new("edgeguard_scratch *[1]")
        assert(lib.edgeguard_scratch_new(box) == 0)
        scratches[engine] = ffi_gc(box[0], function(p) lib.edgeguard_scratch_free(p) end)
        out = ffi_new("edgeguard_effects[1]")
        outs[engine] = out
    end
    return out
end

--- Runs `job` (an edgeguard_job) on the request `req` (an edgeguard_request)
-- through the location handle `loc`, counting into `metrics` (a handle or
-- nil); `given` is the legacy engine's work (nil: the location's own), and
-- `engine` whose scratch to use. Returns the effects, or nil and an error.
function _M.run(lib, loc, metrics, req, given, job, engine)
    local out = outs[engine] or out_of(lib, engine)
    local rc = lib.edgeguard_location_run(loc, metrics, req, given, job, ngx.time(), scratches[engine], out)
    if rc ~= 0 then
        return nil, "edgeguard_location_run: " .. ffi_string(lib.edgeguard_result_text(rc))
    end
    return out[0]
end

-- Sets (or, with a null value, removes in every letter case) request
-- header `name` (data and length), as ngx.req.set_header does, through the
-- FFI function it wraps: the name need not become a Lua string. Raises on
-- failure, as ngx.req.set_header does.
local function set_req_header(r, data, len, value, vlen)
    local rc = C.ngx_http_lua_ffi_req_set_header(r, data, len, value, vlen, nil, 0, 1, set_err)
    if rc ~= 0 and rc ~= FFI_DECLINED then -- declined: an HTTP/0.9 request, no headers
        error("edgeguard: setting request header failed (nginx code " .. rc .. ")", 2)
    end
end

-- Clears what the effects list. Most requests list none or one: that one
-- is cleared outside the loop, so the loop only runs (and only becomes a
-- trace) for requests carrying several; a loop of one iteration per
-- request is a root trace LuaJIT keeps trying and may end up blacklisting.
local function clear_listed(r, headers, e)
    local n = tonumber(e.clear_len)
    if n == 0 then
        return
    end
    local clear = e.clear
    local key = headers[clear[0]].key
    set_req_header(r, key.data, key.len, nil, 0)
    for i = 1, n - 1 do
        key = headers[clear[i]].key
        set_req_header(r, key.data, key.len, nil, 0)
    end
end

-- Variables nginx does not know (no `set $edgeguard_x "";` anywhere in
-- nginx.conf), by name: skipped, not fatal (an option must not turn into
-- 500s), and reported once per worker. Off the hot path: only a failed set
-- reaches it.
local unknown_vars = {}

local function skip_var(name, err, errlen)
    local n = ffi_string(name.data, name.len)
    if not unknown_vars[n] then
        unknown_vars[n] = true
        ngx.log(ngx.ERR, "edgeguard: vars: $", n, " is not set (", ffi_string(err, errlen),
                "); declare it in any server{}: set $", n, " \"\"; ",
                "(reported once per worker, skipped on every request)")
    end
end

-- Sets the variables the effects list (declared with `set` in
-- nginx.conf, as `vars = true` asks); one nginx cannot set is skipped.
local function set_vars(r, e)
    for i = 0, tonumber(e.vars_len) - 1 do
        local v = e.vars[i]
        local name = v.key
        if name.len > lowcase_cap then
            lowcase_cap = name.len
            var_lowcase = ffi_new("unsigned char[?]", lowcase_cap)
        end
        var_errlen[0] = 256
        if C.ngx_http_lua_ffi_var_set(r, name.data, name.len, var_lowcase, v.value.data, v.value.len, var_err,
                                      var_errlen) ~= 0 then
            skip_var(name, var_err, var_errlen[0])
        end
    end
end

local function str(s)
    return ffi_string(s.data, s.len)
end

-- Answers the request as the effects' exit says: a status, a body with
-- its headers, or a redirect (after the cookie).
local function respond(e)
    if e.exit == EXIT_STATUS then
        return ngx.exit(e.status)
    end
    local h = ngx.header
    for i = 0, tonumber(e.response_headers_len) - 1 do
        local x = e.response_headers[i]
        h[str(x.key)] = str(x.value)
    end
    if e.exit == EXIT_REDIRECT then
        return ngx.redirect(str(e.location), e.status)
    end
    local body = str(e.body)
    -- A block's reference (Rust left a gap for it): $request_id, made
    -- only now, for the requests that are answered so.
    local at = tonumber(e.body_request_id_at)
    if at > 0 then
        local id = ngx.var.request_id
        h["Edgeguard-Reference"] = id
        body = body:sub(1, at) .. id .. body:sub(at + 1)
    end
    ngx.status = e.status
    h["Content-Length"] = #body
    ngx.print(body)
    return ngx.exit(ngx.HTTP_OK)
end

-- Logs the decision line, with $request_id where the line leaves room for
-- it: nginx makes the id (16 random bytes) on its first read, so only a
-- request that logs a line pays for it.
local function log_line(e)
    local at = tonumber(e.line_request_id_at)
    if at == 0 then
        return ngx.log(e.log_level, ffi_string(e.line.data, e.line.len))
    end
    ngx.log(e.log_level, ffi_string(e.line.data, at), ngx.var.request_id,
            ffi_string(e.line.data + at, e.line.len - at))
end

--- Applies effects `e` to request `r`, whose header array (as the run
-- read it) is `headers`: clears, sets the score header and the variables,
-- logs the line, and ends the request when the exit says so. Returns the
-- action's name otherwise (Rust's text: LuaJIT finds the interned string).
function _M.apply(r, headers, e)
    clear_listed(r, headers, e)
    local h = e.set_header
    if h.key.len > 0 then
        set_req_header(r, h.key.data, h.key.len, h.value.data, h.value.len)
    end
    if e.vars_len > 0 then
        set_vars(r, e)
    end
    if e.line.len > 0 then
        log_line(e)
    end
    -- A deployment warning (realip not set up behind trusted_proxies):
    -- once per worker, the fix is the same for every request.
    if e.warning.len > 0 and not warned then
        warned = true
        ngx.log(ngx.WARN, ffi_string(e.warning.data, e.warning.len))
    end
    if e.exit ~= EXIT_CONTINUE then
        return respond(e)
    end
    -- The client memory's cookie, on the upstream's answer.
    if e.response_headers_len > 0 then
        local x = e.response_headers[0]
        ngx.header[str(x.key)] = str(x.value)
    end
    return str(e.action_name)
end

--- The current request as an edgeguard_request, its header array, or nil
-- and an error (resty.edgeguard.request's).
_M.current = request and request.current

return _M
