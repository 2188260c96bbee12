-- configure()'s work: the library, the engine Rust loads from the options
-- (src/load/: the options, the files they name, the internal list, the
-- models, the base location; a file that fails to load refuses it all),
-- the legacy engine when configured, the metrics, and the locations,
-- bound into the state a configuration serves with. It allocates;
-- nothing here runs per request.

local edgeguard_lib = require "resty.edgeguard.lib"
local config = require "resty.edgeguard.config"
local locations = require "resty.edgeguard.locations"
local metrics = require "resty.edgeguard.metrics"

local error = error
local ipairs = ipairs
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
-- anything can be handed to it) and the engine Rust loads from the
-- options. Raises on misuse; returns the library and the configuration,
-- or nil and an error for a file that cannot be read or loaded.
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
    cfg, err, misuse = config.engine(lib, opts, "edgeguard.configure")
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

-- The Rust engine's model names in scoring order (the load report's;
-- nil: no models).
local function names_of(lib, cfg)
    if lib.edgeguard_engine_scorer(cfg.engine) == nil then
        return nil
    end
    local names = {}
    for i, m in ipairs(cfg.options.loaded.models) do
        names[i] = m.name
    end
    return names
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

--- The location of access{} options `opts` (nil: configure()'s own) in
-- the state `st`: its engine and one location handle per engine loaded
-- (the Rust engine's, bound by Rust to its scorer and the internal list;
-- the legacy engine's, bound to its models). Returns nil and the error
-- of a bad option (misuse: the caller raises it).
function _M.bind(st, opts)
    local cfg, rust = st.cfg, st.lib.edgeguard_engine_location(st.cfg.engine)
    if opts then
        rust, cfg = st.cfg:bind(opts, "edgeguard.access")
        if not rust then
            return nil, cfg
        end
    end
    local loc = { engine = cfg.options.engine }
    if st.engine ~= "lua" then
        loc.rust = rust
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
    local lua, err
    if o.engine ~= "rust" then
        legacy = legacy or require "resty.edgeguard.legacy.driver"
        lua, err = legacy.load(lib, o)
        if not lua then
            return nil, err
        end
    end
    local names = names_of(lib, cfg)
    local list = lib.edgeguard_engine_header_set(cfg.engine)
    local mx = false
    if o.metrics_dict then
        mx, err = metrics.new(lib, cfg, dict, names, lua and lua.names)
        if not mx then
            return nil, err
        end
    end
    local st = {
        lib = lib, cfg = cfg, engine = o.engine, primary = o.shadow_primary or o.engine,
        headers = list ~= nil and list or nil, -- lent: cfg.engine owns it
        names = names, scores = {}, lua = lua, models_wanted = o.models_wanted,
        metrics = mx or nil,
        locations = locations.new(),
        record = lib.edgeguard_engine_location(cfg.engine), -- lent: cfg.engine owns it
        -- Only a challenge's pages show $request_id up front (nginx makes
        -- it on first read), and the client memory counts a request once
        -- by it (an internal redirect runs the gate again); a block's
        -- reference and the decision line get it from gate.lua, only when
        -- they are written.
        request_ids = o.challenge_secret ~= nil or o.client_memory ~= nil,
        check_request_id = o.client_memory ~= nil,
    }
    st.shadow = st.engine == "shadow" and legacy.judge(st) or nil
    st.base = _M.bind(st)
    return st
end

return _M
