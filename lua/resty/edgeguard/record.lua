-- Records each request's headers for `edgeguard replay`: fills
-- $edgeguard_request_headers, which nginx-conf/log-format.conf logs, with the
-- headers as the client sent them (arrival order, repeats, the client's
-- letter case, every byte but the secrets), before anything strips them.
-- The secrets are redacted in Rust, by the configuration in force
-- (docs/replay.md, "What the log keeps"): cookie values and credentials
-- become their length, the clearance cookie the verdict on it;
-- `redact = false` in configure{} logs every byte.
--
--   set $edgeguard_request_headers "";
--   rewrite_by_lua_block {   -- server level: docs/placement.md
--       require("resty.edgeguard.record").capture()   -- first: before stripping
--       require("resty.edgeguard").access{ vars = true }
--   }
--
-- The value is the JSON text of [[name, value], ...], written by the
-- recorder next to the reader replay uses (src/replay/record/write.rs says
-- which bytes are escaped and why).
--
-- A recording is the record job of the one request call
-- (edgeguard_location_run, through configure()'s location, or none
-- before it: the default redaction): Rust writes
-- the text into the worker's scratch and names the variable in the
-- effects, which resty.edgeguard.gate applies like every variable. A
-- request costs no Lua allocation: the headers come as pointers into
-- nginx's pool, and nginx copies the text into the variable.

local ffi = require "ffi"
require "resty.edgeguard.cdefs"
local edgeguard_lib = require "resty.edgeguard.lib"

local error = error

local _M = { _VERSION = edgeguard_lib.VERSION }

-- The nginx part: present only inside nginx's http subsystem.
local in_nginx = ngx and ngx.config and ngx.config.subsystem == "http"
if not in_nginx then
    function _M.capture()
        error("edgeguard.record.capture needs nginx's http subsystem", 2)
    end
    return _M
end

local request = require "resty.edgeguard.request"
local gate = require "resty.edgeguard.gate"
-- Required here, in init_by_lua (the master, as root), not on a worker's
-- first request: the worker's user may not read the module's directory.
local edgeguard = require "resty.edgeguard"

local JOB_RECORD = ffi.C.EDGEGUARD_JOB_RECORD
local get_request = request.get
local request_current = request.current

--- Sets $edgeguard_request_headers to the current request's headers, as the
-- client sent them, secrets redacted. Call it in rewrite_by_lua* before
-- anything changes the headers (before edgeguard.access()), after
-- configure{} (whose `redact` and challenge it follows; before it, or
-- without it, the default redaction). Returns the number of headers, or
-- nil and an error (headers unreadable, no library). A variable not
-- declared with `set` is reported once per worker and skipped, as every
-- variable the effects name.
function _M.capture()
    local r = get_request(2)
    -- Without configure(): no location (Rust's default options').
    local lib, loc = edgeguard.recorder()
    if not lib then
        local err
        lib, err = edgeguard_lib.load()
        if not lib then
            return nil, err
        end
    end
    -- raw: names in the client's letter case, not lower-cased.
    local req, err, n = request_current(r, nil, true)
    if not req then
        return nil, err
    end
    local e
    e, err = gate.run(lib, loc, nil, req, nil, JOB_RECORD, "rust")
    if not e then
        return nil, err
    end
    gate.apply(r, req.headers, e)
    return n
end

return _M
