-- The configuration file shared with `edgeguard replay --config` (its format
-- is documented in src/config.rs): a JSON object of configure{} options. One
-- file for both means the traffic a team replays is scored exactly as nginx
-- will score it.
--
-- read() runs in configure(), in init_by_lua: it reads and decodes the file,
-- has the caller check the options, and resolves relative paths against the
-- file's directory, as the Rust side does.

local cjson = require "cjson.safe"

local io_open = io.open
local ipairs = ipairs
local pairs = pairs
local pcall = pcall
local sub = string.sub
local tostring = tostring
local type = type

local _M = {}

-- The keys the Rust reader accepts too; nginx-only options (engine,
-- metrics_dict, ...) stay in nginx.conf, where replay does not look.
_M.KEYS = {
    internal_headers = true, models = true, mode = true, thresholds = true,
    allow = true, status = true, lib_path = true, fail_closed = true,
    score_header = true, vars = true, log_level = true,
}

local function directory(path)
    return path:match("^(.*/)") or "./"
end

local function resolve(dir, p)
    if sub(p, 1, 1) == "/" then
        return p
    end
    return dir .. p
end

--- Returns the file's options with paths resolved, or nil and an error that
-- names the file. `check(opts, what)` raises on a bad option (configure's
-- own checks), its message prefixed with `what`.
function _M.read(path, check)
    local f, err = io_open(path, "rb")
    if not f then
        return nil, "cannot read the configuration file: " .. err
    end
    local text = f:read("*a")
    f:close()
    local opts
    opts, err = cjson.decode(text)
    if opts == nil then
        return nil, path .. ": not JSON: " .. tostring(err)
    end
    if type(opts) ~= "table" or opts[1] ~= nil then
        return nil, path .. ": must be a JSON object of configure{} options"
    end
    local ok
    ok, err = pcall(check, opts, path)
    if not ok then
        return nil, err
    end
    local dir = directory(path)
    for _, key in ipairs({ "internal_headers", "lib_path" }) do
        if opts[key] then
            opts[key] = resolve(dir, opts[key])
        end
    end
    if opts.models then
        local models = {}
        for name, p in pairs(opts.models) do
            if type(p) ~= "string" then
                return nil, path .. ": models." .. tostring(name) .. " must be a file path (a string)"
            end
            models[name] = resolve(dir, p)
        end
        opts.models = models
    end
    return opts
end

return _M
