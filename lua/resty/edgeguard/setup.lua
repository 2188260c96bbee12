-- configure()'s work: the library, the options (parsed by Rust), the
-- engines' data (a file that fails to load refuses it all), the metrics, and the
-- locations, bound into the state a configuration serves with. It
-- allocates; nothing here runs per request.

local edgeguard_lib = require "resty.edgeguard.lib"
local config = require "resty.edgeguard.config"
local header_set = require "resty.edgeguard.header_set"
local locations = require "resty.edgeguard.locations"
local metrics = require "resty.edgeguard.metrics"
local scorer_mod = require "resty.edgeguard.scorer"

local concat = table.concat
local error = error
local type = type

local _M = {}

-- resty.edgeguard.legacy.driver, the legacy engine's interface, required
-- only when the configured engine is not "rust".
local legacy

-- Logs through nginx when there is one (configure() may run in plain luajit).
local function log(level, ...)
    if ngx and ngx.log then
        ngx.log(level, ...)
    end
end

-- The library (found by the Lua-side lib_path, as it is needed before
-- anything can be handed to it) and the options, parsed by Rust. Raises
-- on misuse; returns the library and the configuration, or nil and an
-- error for a file that cannot be read or holds a bad option.
local function parse(opts, level)
    if type(opts) ~= "table" then
        error("edgeguard.configure expects a table of options", level + 1)
    end
    local lib_path = opts.lib_path
    if lib_path ~= nil and type(lib_path) ~= "string" then
        error("edgeguard.configure: lib_path: must be a path string, got " .. type(lib_path), level + 1)
    end
    local lib, err = edgeguard_lib.load(lib_path)
    if not lib then
        return nil, err
    end
    local cfg, misuse
    cfg, err, misuse = config.new(lib, opts, "edgeguard.configure")
    if not cfg then
        if misuse then
            error(err, level + 1)
        end
        return nil, err
    end
    -- What the operator must hear of at every (re)load: the demo key.
    for _, w in ipairs(cfg.options.warnings or {}) do
        log(ngx and ngx.WARN, "edgeguard: ", w)
    end
    return lib, cfg
end

-- The engines' data, from the resolved options `o`: a table of what
-- loaded (headers, scorer, lua) and the model errors, or nil and an error
-- when an internal header list is bad (fail closed).
local function load_engines(lib, o)
    local engine = o.engine
    local got = { model_errors = {} }
    local err
    if engine ~= "lua" then
        if o.internal_headers then
            got.headers, err = header_set.load(lib, o.internal_headers)
            if not got.headers then
                return nil, err
            end
        end
        if o.models then
            got.scorer, err = scorer_mod.load(lib, o.models)
            if not got.scorer then
                got.model_errors[#got.model_errors + 1] = (engine == "shadow" and "rust engine: " or "") .. err
            end
        end
    end
    if engine ~= "rust" then
        legacy = legacy or require "resty.edgeguard.legacy.driver"
        local list_err, lua_model_err
        got.lua, list_err, lua_model_err = legacy.load(lib, o)
        if not got.lua then
            return nil, list_err
        end
        if lua_model_err then
            got.model_errors[#got.model_errors + 1] = (engine == "shadow" and "lua engine: " or "") .. lua_model_err
        end
    end
    return got
end

-- Models that failed to load refuse the configuration, like a bad list: at
-- the first start nginx stops with the file and the field; on a reload it
-- keeps the running workers and the models they scored with. One policy
-- for every file configure() reads. Returns the error, or nil when all
-- loaded.
local function model_failure(model_errors)
    if #model_errors == 0 then
        return nil
    end
    return "models not loaded, so this configuration is refused (on a reload, nginx keeps "
        .. "the running workers and their models): " .. concat(model_errors, "; ")
end

-- The metrics dict the options name (nil outside nginx); misuse when
-- nginx has none of that name.
local function dict_of(name, level)
    local dict = name and ngx and ngx.shared and ngx.shared[name]
    if name and ngx and ngx.shared and not dict then
        error("edgeguard.configure: metrics_dict \"" .. name .. "\" is not a lua_shared_dict "
              .. "(add `lua_shared_dict " .. name .. " 1m;` to http {})", level + 1)
    end
    return dict
end

--- What the configuration `cfg` (configure()'s, or an access{} over it)
-- resolves to in the state `st`: its engine and one location handle per
-- engine loaded (the Rust engine's, bound to its scorer and the internal
-- list; the legacy engine's, bound to its models).
function _M.bind(st, cfg)
    local loc = { engine = cfg.options.engine }
    if st.engine ~= "lua" then
        loc.rust = cfg:location(st.scorer, st.headers)
    end
    if st.lua then
        loc.lua = legacy.location(st, cfg)
    end
    return loc
end

--- The state of the configuration `opts` (configure{}'s table), or nil
-- and an error. Raises misuse at `level`.
function _M.state(opts, level)
    local lib, cfg = parse(opts, level + 1)
    if not lib then
        return nil, cfg
    end
    local o = cfg.options
    local dict = dict_of(o.metrics_dict, level + 1)
    local got, err = load_engines(lib, o)
    if not got then
        return nil, err
    end
    err = model_failure(got.model_errors)
    if err then
        return nil, err
    end
    local mx = false
    if o.metrics_dict then
        mx, err = metrics.new(lib, cfg, dict, got.scorer and got.scorer.names, got.lua and got.lua.names)
        if not mx then
            return nil, err
        end
    end
    local st = {
        lib = lib, cfg = cfg, engine = o.engine, primary = o.shadow_primary or o.engine,
        headers = got.headers, scorer = got.scorer, lua = got.lua, models_wanted = o.models_wanted,
        metrics = mx or nil,
        locations = locations.new(),
        -- Only a challenge's pages show $request_id up front (nginx makes
        -- it on first read), and the client memory counts a request once
        -- by it (an internal redirect runs the gate again); a block's
        -- reference and the decision line get it from gate.lua, only when
        -- they are written.
        request_ids = o.challenge_secret ~= nil or o.client_memory ~= nil,
        check_request_id = o.client_memory ~= nil,
    }
    st.shadow = st.engine == "shadow" and legacy.judge(st) or nil
    st.base = _M.bind(st, cfg)
    return st
end

return _M
