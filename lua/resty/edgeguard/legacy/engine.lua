-- The legacy engine (FROZEN): edgeguard's two jobs, internal header
-- stripping and bot scoring, done the way a Lua module on OpenResty did them
-- before the Rust library. It is the "before" of the Lua -> Rust migration
-- and nothing more: `engine = "lua"` runs it alone, `engine = "shadow"`
-- next to the Rust engine (resty.edgeguard.legacy.shadow counts where they
-- disagree; resty.edgeguard.legacy.driver runs both in nginx), so an
-- operator can compare the two on real traffic before switching.
--
-- Frozen means: it computes feature schema 1 only and reads the schema-1
-- models (models/legacy/); it gets no new features, options or model
-- formats. It is NOT a second implementation to keep in step with Rust:
-- when the Rust engine changes, this one does not follow. What it must keep
-- is its own behaviour, pinned by committed fixtures of its outputs
-- (tests/fixtures/legacy/, made by scripts/gen-legacy-fixtures.lua, checked
-- by tests/lua/test_legacy_fixtures.lua), and agreement with the Rust engine
-- on the legacy models within shadow mode's tolerance (shadow.REL_TOLERANCE,
-- tests/lua/test_lua_engine.lua, tests/e2e/test_shadow.py). Its error
-- messages are its own wording; they name the file and the line or field.
--
--   local legacy = require "resty.edgeguard.legacy.engine"
--   local eng = assert(legacy.new{
--       internal_headers = "/etc/edgeguard/internal-headers.txt",
--       models = { bot = "models/legacy/bot.json", spoof = "models/legacy/spoof.json" },
--       lib = require("resty.edgeguard.lib").load(),
--   })
--   eng:read_request(req)             -- fills req from the current request
--   eng:strip(req)                    -- ngx.req.clear_header per internal name: removed, left
--   local scores = eng:score_request(req)  -- { bot = 0.93, spoof = 0.12 }
--
-- Models are bound to the feature schema by the names they were trained
-- with and scored in byte order of their names (the order the Rust scorer
-- used when this engine was frozen). Categorical values are hashed by the
-- library's edgeguard_cat_hash through the FFI (see legacy/catboost.lua for
-- why); the rest is Lua. Per request the engine reuses its tables: the
-- feature tables, the hashes, each model's inputs and the scores table.

local catboost = require "resty.edgeguard.legacy.catboost"
local features = require "resty.edgeguard.legacy.features"
local lheaders = require "resty.edgeguard.legacy.headers"

local error = error
local format = string.format
local find = string.find
local ipairs = ipairs
local pairs = pairs
local setmetatable = setmetatable
local sort = table.sort
local tostring = tostring
local type = type

local extract = features.extract
local read_request = features.read_request
local strip = lheaders.strip

local MAX_MODELS = 64
local TWO32 = 4294967296

local _M = { _VERSION = "0.1.0" }
local Engine = {}
local engine_mt = { __index = Engine }

--- CatBoost's categorical hash of a Lua string, from the library's
-- edgeguard_cat_hash: a function(str) -> number in [0, 2^32).
-- The library returns the bits as int32_t (a uint32_t return would be read
-- wrongly by JIT-compiled calls, see include/edgeguard.h); the models' CTR
-- tables are keyed by the unsigned value.
function _M.cat_hash_function(lib)
    if lib == nil then
        error("cat_hash_function(lib): lib is the library from resty.edgeguard.lib", 2)
    end
    local hash = lib.edgeguard_cat_hash
    return function(s)
        local h = hash(s, #s)
        if h < 0 then
            return h + TWO32
        end
        return h
    end
end

-- Model name checks (the Rust scorer's rules when this engine was frozen).
local function check_names(names)
    if #names == 0 then
        return "no models given: a scorer needs at least one"
    end
    if #names > MAX_MODELS then
        return format("%d models given; a scorer holds at most %d", #names, MAX_MODELS)
    end
    for i, name in ipairs(names) do
        if name == "" then
            return format("model %d has an empty name", i - 1)
        end
        if find(name, "[%z\1-\31\127]") then
            return format("model %d name %q holds control characters", i - 1, name)
        end
    end
end

local function index_of(list)
    local at = {}
    for i, name in ipairs(list) do
        at[name] = i
    end
    return at
end

local FLOAT_AT = index_of(features.FLOAT_NAMES)
local CAT_AT = index_of(features.CAT_NAMES)

-- Schema positions of one kind of a model's inputs, by name: `what` is
-- "float" or "categorical", `at` this kind's name -> position, `other` the
-- other kind's, `other_is` how a name of the other kind is described.
local function positions(names, what, at, other, other_is)
    local out, seen = {}, {}
    for i, name in ipairs(names) do
        local pos = at[name]
        if name == "" then
            return nil, format("%s feature %d has no name; train on named columns "
                .. "(`edgeguard features --names`)", what, i - 1)
        elseif not pos then
            if other[name] then
                return nil, format("%s feature %d `%s` is %s in the feature schema",
                    what, i - 1, name, other_is)
            end
            return nil, format("%s feature %d `%s` is not in the feature schema", what, i - 1, name)
        elseif seen[name] then
            return nil, format("%s features %d and %d are both named `%s`", what, seen[name], i - 1, name)
        end
        seen[name] = i - 1
        out[i] = pos
    end
    return out
end

-- Binds a model's inputs to schema positions by name, as
-- the Rust scorer did when this engine was frozen; returns floats, cats or
-- nil and the reason.
local SCHEMA_KEY = "edgeguard.schema"

local function bind(model)
    if not model.kind then
        return nil, model.kind_error
    end
    -- This engine computes the first feature schema only (the legacy
    -- models, models/legacy/); later ones need the Rust engine.
    local schema = model.metadata and model.metadata[SCHEMA_KEY]
    if schema ~= nil and schema ~= "1" then
        return nil, format("model_info[%q] = %q: the Lua engine reads feature schema 1 only "
            .. "(models/legacy/); use engine = \"rust\" for this model", SCHEMA_KEY, schema)
    end
    if model.threshold_error then
        return nil, model.threshold_error
    end
    local floats, err = positions(model.float_names, "float", FLOAT_AT, CAT_AT, "categorical")
    if not floats then
        return nil, err
    end
    local cats
    cats, err = positions(model.cat_names, "categorical", CAT_AT, FLOAT_AT, "a float feature")
    if not cats then
        return nil, err
    end
    return floats, cats
end

-- new()'s misuse checks; raises at new()'s caller (level 3). Returns the
-- list path, the models table and the model names in scoring order.
local function check_options(opts)
    if type(opts) ~= "table" then
        error("legacy.new expects a table of options", 3)
    end
    for k in pairs(opts) do
        if k ~= "internal_headers" and k ~= "models" and k ~= "lib" then
            error(format("legacy.new: unknown option '%s'", tostring(k)), 3)
        end
    end
    local headers_path, models = opts.internal_headers, opts.models
    if headers_path ~= nil and type(headers_path) ~= "string" then
        error("legacy.new: 'internal_headers' must be a string, got " .. type(headers_path), 3)
    end
    if models ~= nil and type(models) ~= "table" then
        error("legacy.new: 'models' must be a table of name = path, got " .. type(models), 3)
    end
    local names = {}
    for name, path in pairs(models or {}) do
        if type(name) ~= "string" or type(path) ~= "string" then
            error("legacy.new: 'models' must map model names (strings) to file paths (strings)", 3)
        end
        names[#names + 1] = name
    end
    sort(names) -- byte order of the names
    return headers_path, models, names
end

-- Loads and binds self.names' models; sets the per-model tables and which
-- categorical features are hashed per request (those some model reads).
-- Returns true, or nil and the error.
local function load_models(self, models, lib)
    local bad = check_names(self.names)
    if bad then
        return nil, bad
    end
    if lib == nil then
        local err
        lib, err = require("resty.edgeguard.lib").load()
        if not lib then
            return nil, err
        end
    end
    local cat_hash = _M.cat_hash_function(lib)
    self.cat_hash = cat_hash
    local used = {}
    local bound = {}
    for i, name in ipairs(self.names) do
        local model, err = catboost.load(models[name], cat_hash)
        if not model then
            return nil, format("model `%s`: %s", name, err)
        end
        local floats, cats = bind(model)
        if not floats then
            return nil, format("model `%s`: %s: %s", name, model.source, cats)
        end
        for _, at in ipairs(cats) do
            used[at] = true
        end
        self.models[name] = model
        self.thresholds[name] = model.threshold
        self.scores[name] = 0
        bound[i] = { model = model, name = name, floats = floats, cats = cats,
                     in_floats = {}, in_cats = {} }
    end
    local hashed = {}
    for at = 1, #features.CAT_NAMES do
        if used[at] then
            hashed[#hashed + 1] = at
        end
    end
    self.hashed, self.bound = hashed, bound
    return true
end

--- Builds an engine. opts: internal_headers (path or nil), models
-- ({ name = path } or nil), lib (the library from resty.edgeguard.lib, for
-- edgeguard_cat_hash; loaded with the default search when nil and models
-- are given). Returns the engine, or nil and an error naming the file (and
-- line or JSON field).
function _M.new(opts)
    local headers_path, models, names = check_options(opts)
    local self = {
        names = names,
        thresholds = {},
        headers = nil,
        models = {},      -- name -> catboost model
        floats = {},      -- schema floats of the latest request (1..32)
        cats = {},        -- schema categorical strings (1..12)
        hashes = {},      -- schema position -> hash, for the used ones
        scores = {},      -- name -> latest score; reused for every request
        hashed = {},      -- the categorical positions hashed per request
        bound = {},       -- per model: its inputs' schema positions and scratch
    }
    if headers_path then
        local list, err = lheaders.load(headers_path)
        if not list then
            return nil, err
        end
        self.headers = list
    end
    if models then
        local ok, err = load_models(self, models, opts.lib)
        if not ok then
            return nil, err
        end
    end
    return setmetatable(self, engine_mt)
end

--- The request's feature vector: floats[1..32], cats[1..12] (tables reused
-- by the engine for every request).
function Engine:features(req)
    return extract(req, self.floats, self.cats)
end

--- Scores a feature vector (as features() returns it): the reused table of
-- scores by model name.
function Engine:score_features(floats, cats)
    local hashes, hashed, cat_hash = self.hashes, self.hashed, self.cat_hash
    for i = 1, #hashed do
        local at = hashed[i]
        hashes[at] = cat_hash(cats[at])
    end
    local scores, bound = self.scores, self.bound
    for i = 1, #bound do
        local b = bound[i]
        local in_floats, in_cats, fmap, cmap = b.in_floats, b.in_cats, b.floats, b.cats
        for k = 1, #fmap do
            in_floats[k] = floats[fmap[k]]
        end
        for k = 1, #cmap do
            in_cats[k] = hashes[cmap[k]]
        end
        scores[b.name] = b.model:predict(in_floats, in_cats)
    end
    return scores
end

--- Scores one request table: the reused table of scores by model name, the
-- same numbers as the Rust scorer to within 1e-9.
function Engine:score_request(req)
    local floats, cats = extract(req, self.floats, self.cats)
    return self:score_features(floats, cats)
end

--- Inside nginx: fills req from the current request (features.read_request).
function Engine:read_request(req)
    return read_request(req)
end

--- Inside nginx: clears the internal headers of the current request with the
-- original algorithm (headers.strip); returns how many of req's headers were
-- removed and how many internal ones nginx still holds (names
-- ngx.req.clear_header cannot reach, see headers.strip). 0, 0 without a
-- header list.
function Engine:strip(req)
    local list = self.headers
    if not list then
        return 0, 0
    end
    return strip(list, req)
end

return _M
