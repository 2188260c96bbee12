-- The options and the decision rule, owned by Rust (src/config/): a Lua
-- handle around edgeguard_config and edgeguard_policy.
--
-- configure{} hands its option table to new(), which returns the options
-- resolved (defaults filled, paths resolved, models in scoring order) as a
-- plain table, read once. Each engine binds a policy to its models; a
-- request is decided by one FFI call that reads a score buffer and nginx's
-- binary client address, and allocates nothing. A location's access{}
-- options make a derived configuration once, cached by their content.
--
-- The option tables go to Rust as JSON, encoded here rather than with
-- lua-cjson: its numbers stop at 14 significant digits, and a threshold
-- must arrive exactly as written.

local ffi = require "ffi"
local cjson = require "cjson.safe"
local header_set = require "resty.edgeguard.header_set"
require "resty.edgeguard.cdefs"

local ffi_gc = ffi.gc
local ffi_new = ffi.new
local ffi_string = ffi.string
local concat = table.concat
local format = string.format
local gsub = string.gsub
local byte = string.byte
local next = next
local pairs = pairs
local setmetatable = setmetatable
local tonumber = tonumber
local tostring = tostring
local type = type

local ERRBUF_LEN = 512
local errbuf = ffi_new("char[?]", ERRBUF_LEN)
local config_out = ffi_new("edgeguard_config *[1]")
-- edgeguard_bot values -> the verdict names the shim uses (false: no claim);
-- the clearance names come from Rust (clearance_names).
local BOTS = { [0] = false, "verified", "fake" }
local policy_out = ffi_new("edgeguard_policy *[1]")

-- edgeguard_result values this module tells apart.
local RESULT_INVALID_ARGUMENT = 3
-- Locations are few (one per access{} in nginx.conf); a cache that keeps
-- growing means the options are built per request, which is misuse.
local MAX_LOCATIONS = 1024

-- edgeguard_action -> the name the shim acts on and logs.
local ACTIONS = { [0] = "pass", "allow", "log", "block", "unavailable",
                  "cleared", "challenge", "verified", "answer" }

local _M = { _VERSION = "0.1.0", ACTIONS = ACTIONS, BOTS = BOTS }
local config_mt = { __index = {} }
local policy_mt = { __index = {} }
local config_methods, policy_methods = config_mt.__index, policy_mt.__index

------------------------------------------------------------------------------
-- JSON encoding of an option table: strings, finite numbers (exactly, as
-- %.17g), booleans, arrays and string-keyed objects. Anything else is the
-- caller's mistake, reported with the option's path.

local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\" }
local function escape_char(c)
    return ESCAPES[c] or format("\\u%04x", byte(c))
end

local function encode_string(s)
    return '"' .. gsub(s, '[%c"\\]', escape_char) .. '"'
end

local encode_value

local function encode_table(t, path, depth)
    if depth > 8 then
        return nil, "option '" .. path .. "' is nested too deeply"
    end
    if next(t) == nil then
        return "{}" -- Rust reads an empty object as an empty list too
    end
    local parts, n = {}, 0
    for _ in pairs(t) do
        n = n + 1
    end
    if n == #t then
        for i = 1, n do
            local v, err = encode_value(t[i], path .. "[" .. (i - 1) .. "]", depth + 1)
            if not v then
                return nil, err
            end
            parts[i] = v
        end
        return "[" .. concat(parts, ",") .. "]"
    end
    local i = 0
    for k, v in pairs(t) do
        local key = tostring(k)
        local sub = path == "" and key or path .. "." .. key
        local text, err = encode_value(v, sub, depth + 1)
        if not text then
            return nil, err
        end
        i = i + 1
        parts[i] = encode_string(key) .. ":" .. text
    end
    return "{" .. concat(parts, ",") .. "}"
end

function encode_value(v, path, depth)
    local t = type(v)
    if t == "string" then
        return encode_string(v)
    elseif t == "number" then
        -- NaN and infinities are no JSON: null, which Rust refuses with the
        -- option named ("must be a number, got null").
        if v ~= v or v == 1 / 0 or v == -1 / 0 then
            return "null"
        end
        return format("%.17g", v)
    elseif t == "boolean" then
        return v and "true" or "false"
    elseif t == "table" then
        return encode_table(v, path, depth)
    end
    return nil, "option '" .. path .. "' must not be a " .. t
end

--- The JSON text of an option table, or nil and an error.
function _M.encode(opts)
    return encode_value(opts, "", 0)
end

------------------------------------------------------------------------------

local function wrap_config(lib, handle)
    handle = ffi_gc(handle, function(p)
        lib.edgeguard_config_free(p)
    end)
    local options = cjson.decode(ffi_string(lib.edgeguard_config_json(handle)))
    return setmetatable({ handle = handle, lib = lib, options = options, locations = {},
                          nlocations = 0 }, config_mt)
end

-- nil, the message, and whether it is misuse (the caller raises then).
local function refused(rc)
    return nil, ffi_string(errbuf), rc == RESULT_INVALID_ARGUMENT
end

--- Parses configure{}'s options (a `config` file they name is read in
-- Rust). `what` names the table in messages ("edgeguard.configure").
-- Returns the configuration, whose `options` field is the resolved table;
-- or nil, an error and true when the table itself is wrong (misuse: raise
-- it), nil and an error when a file is bad or unreadable.
function _M.new(lib, opts, what)
    local json, err = _M.encode(opts)
    if not json then
        return nil, what .. ": " .. err, true
    end
    local rc = lib.edgeguard_config_new(json, #json, what, nil, config_out, errbuf, ERRBUF_LEN)
    if rc ~= 0 then
        return refused(rc)
    end
    return wrap_config(lib, config_out[0])
end

--- The configuration of the location whose access{} options are `opts`,
-- made once per distinct content and cached. Returns it, or nil, an error
-- and true (misuse) for a bad option.
function config_methods.location(self, opts, what)
    local json, err = _M.encode(opts)
    if not json then
        return nil, what .. ": " .. err, true
    end
    local loc = self.locations[json]
    if loc then
        return loc
    end
    if self.nlocations >= MAX_LOCATIONS then
        return nil, what .. ": more than " .. MAX_LOCATIONS .. " distinct access{} option tables; "
            .. "build them once, not per request", true
    end
    local lib = self.lib
    local rc = lib.edgeguard_config_new_for_location(self.handle, json, #json, what, config_out,
                                                     errbuf, ERRBUF_LEN)
    if rc ~= 0 then
        return refused(rc)
    end
    loc = wrap_config(lib, config_out[0])
    self.locations[json] = loc
    self.nlocations = self.nlocations + 1
    return loc
end

--- Binds the decision rule to one engine's models: `names` in scoring order
-- (1-based), `own` = { name = the model's own threshold } (may be nil);
-- `headers`, the internal header set (nil: none), which Rust extends with
-- the score header's spellings into the location's strip set. Returns the
-- policy.
function config_methods.policy(self, names, own, headers)
    local lib = self.lib
    local n = #names
    local c_names = ffi_new("const char *[?]", n > 0 and n or 1)
    local c_own = ffi_new("double[?]", n > 0 and n or 1)
    for i = 1, n do
        c_names[i - 1] = names[i] -- `names` keeps the strings alive
        local t = own and own[names[i]]
        c_own[i - 1] = t or 0 / 0
    end
    local rc = lib.edgeguard_policy_new(self.handle, c_names, c_own, n, headers and headers.handle,
                                        policy_out, errbuf, ERRBUF_LEN)
    if rc ~= 0 then
        -- Only a malformed name gets here: the shim's names come from Rust.
        error("edgeguard: " .. ffi_string(errbuf), 2)
    end
    local handle = ffi_gc(policy_out[0], function(p)
        lib.edgeguard_policy_free(p)
    end)
    local self_ = setmetatable({
        handle = handle, lib = lib, n = n, names = names,
        scores = ffi_new("double[?]", n > 0 and n or 1), -- for decide_table
        out = ffi_new("edgeguard_decision[1]"),
    }, policy_mt)
    -- What the location strips (the policy owns it), or false: nothing.
    local set = lib.edgeguard_policy_strip_set(handle)
    self_.strip_set = set ~= nil and header_set.borrow(lib, set, self_)
    -- The text buffer a request needs besides its method, URI and address.
    self_.text_room = tonumber(lib.edgeguard_policy_text_room(handle))
    return self_
end

--- Decides one request from `scores` (a double buffer in the policy's model
-- order; nil: not scored) and the client address nginx keeps
-- ($binary_remote_addr: a pointer or string, and its length). Returns the
-- action name, and for a flagged request the model's name, its threshold
-- and, always, the status of a blocked request. Allocates nothing.
function policy_methods.decide(self, scores, addr, addr_len)
    local out = self.out
    local rc = self.lib.edgeguard_policy_decide(self.handle, scores, scores and self.n or 0,
                                                addr, addr_len or 0, out)
    if rc ~= 0 then
        return nil, "edgeguard_policy_decide: " .. ffi_string(self.lib.edgeguard_result_text(rc))
    end
    local d = out[0]
    local model = d.model
    if model >= 0 then
        return ACTIONS[tonumber(d.action)], self.names[model + 1], d.threshold, d.status
    end
    return ACTIONS[tonumber(d.action)], nil, nil, d.status
end

--- The name of a clearance code ("accepted", "mac", ...), from Rust.
function _M.clearance_names(lib)
    local names = {}
    for i = 0, 31 do
        local p = lib.edgeguard_clearance_name(i)
        if p == nil then
            break
        end
        names[i] = ffi_string(p)
    end
    return names
end

--- decide() for scores held in a table by model name (the Lua engine's).
function policy_methods.decide_table(self, scores, addr, addr_len)
    if not scores then
        return self:decide(nil, addr, addr_len)
    end
    local buf, names = self.scores, self.names
    for i = 1, self.n do
        buf[i - 1] = scores[names[i]] or 0 / 0
    end
    return self:decide(buf, addr, addr_len)
end

return _M
