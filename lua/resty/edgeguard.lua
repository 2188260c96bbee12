-- edgeguard: strip internal request headers and score requests for bots in
-- OpenResty/nginx, in Rust, through LuaJIT's FFI.
--
--   init_by_lua_block {
--       assert(require("resty.edgeguard").configure{
--           internal_headers = "/etc/nginx/internal-headers.txt",
--           models = { bot = "/etc/nginx/models/bot.json" },
--       })
--   }
--   rewrite_by_lua_block { require("resty.edgeguard").access{ mode = "block" } }  -- server level
--
-- configure() loads everything (it allocates; run it in init_by_lua, where
-- nginx forks the workers from the loaded state, and again on every reload).
-- The per-request functions make one FFI call per job into Rust and reuse
-- buffers and tables allocated once per worker.
--
-- Errors: misuse (wrong option names or types, calling before configure)
-- raises error(msg, 2); runtime failures (a file that cannot be read or
-- parsed, a request whose headers cannot be read) return nil and a message.

local ffi = require "ffi"
local edgeguard_lib = require "resty.edgeguard.lib"
local header_set = require "resty.edgeguard.header_set"
local scorer_mod = require "resty.edgeguard.scorer"
local cidr = require "resty.edgeguard.cidr"
local metrics = require "resty.edgeguard.metrics"
local shadow = require "resty.edgeguard.shadow"
local config_file = require "resty.edgeguard.config_file"

local ffi_string = ffi.string
local concat = table.concat
local error = error
local format = string.format
local ipairs = ipairs
local pairs = pairs
local tostring = tostring
local type = type

local _M = { _VERSION = "0.1.0" }

-- The configuration in force. Replaced whole by a successful configure(), so
-- a failed one leaves the previous state serving.
local state = {}

-- Option name -> Lua type. `access{}` accepts the ones marked per_request
-- too, overriding configure() for one location.
local OPTIONS = {
    internal_headers = "string",
    lib_path = "string",
    models = "table",
    mode = "string",
    thresholds = "table",
    status = "number",
    allow = "table",
    fail_closed = "boolean",
    score_header = "string",
    vars = "boolean",
    log_level = "number",
    engine = "string",
    shadow_primary = "string",
    lua_models = "table",
    metrics_dict = "string",
    config = "string",
}
local PER_REQUEST = {
    mode = true, thresholds = true, status = true, score_header = true,
    vars = true, log_level = true, fail_closed = true, engine = true,
}
local MODES = { block = true, log = true, off = true }
-- configure's engine -> the engines access{ engine = ... } may pick.
local ENGINES = {
    rust = { rust = true },
    lua = { lua = true },
    shadow = { rust = true, lua = true, shadow = true },
}
local PRIMARIES = { rust = true, lua = true }

local function check_options(opts, allowed, what, level)
    for k, v in pairs(opts) do
        local want = OPTIONS[k]
        if not want or (allowed and not allowed[k]) then
            error(what .. ": unknown option '" .. tostring(k) .. "'", level + 1)
        end
        if type(v) ~= want then
            error(what .. ": option '" .. k .. "' must be a " .. want .. ", got " .. type(v),
                  level + 1)
        end
    end
    if opts.mode and not MODES[opts.mode] then
        error(what .. ": mode must be \"block\", \"log\" or \"off\", got \"" .. opts.mode .. "\"",
              level + 1)
    end
    if opts.engine and not ENGINES[opts.engine] then
        error(what .. ": engine must be \"rust\", \"lua\" or \"shadow\", got \"" .. opts.engine .. "\"",
              level + 1)
    end
    if opts.shadow_primary and not PRIMARIES[opts.shadow_primary] then
        error(what .. ": shadow_primary must be \"rust\" or \"lua\", got \""
              .. opts.shadow_primary .. "\"", level + 1)
    end
    if opts.status and (opts.status < 400 or opts.status > 599 or opts.status % 1 ~= 0) then
        error(what .. ": status must be an HTTP error status (400-599)", level + 1)
    end
    if opts.thresholds then
        for name, t in pairs(opts.thresholds) do
            if type(t) ~= "number" or t ~= t then
                error(what .. ": thresholds." .. tostring(name) .. " must be a number", level + 1)
            end
        end
    end
end

-- Logs through nginx when there is one (configure() may run in plain luajit).
-- Request-time code calls ngx.log directly, so its lines name their caller.
local function log(level, ...)
    if ngx and ngx.log then
        ngx.log(level, ...)
    end
end

-- The pure-Lua engine, loaded only when configured (the Rust-only path does
-- not need it). Returns the engine, or nil and the list's error; and, third,
-- the models' error when they failed but the list loaded (fail open, like the
-- Rust scorer).
local function load_lua_engine(lib, opts)
    local lua_engine = require "resty.edgeguard.legacy"
    local models = opts.lua_models or opts.models
    local eng, err = lua_engine.new{ internal_headers = opts.internal_headers, models = models, lib = lib }
    if eng then
        return eng
    end
    if not models then
        return nil, err
    end
    -- Either file may be at fault; without the models, only the list is left.
    local list_only, list_err = lua_engine.new{ internal_headers = opts.internal_headers, lib = lib }
    if not list_only then
        return nil, list_err
    end
    return list_only, nil, err
end

-- A score header name must be one exact list entry: an RFC 9110 token (the
-- list parser checks that); `*` (a prefix rule), `#` (a comment) and
-- whitespace (a second entry) are refused here.
local function check_score_header(name, what, level)
    if name:find("[*#%s]") then
        error(what .. ": score_header \"" .. name .. "\" is not a header name: `*`, `#` and "
              .. "whitespace are not allowed", level + 1)
    end
end

-- The Rust set edgeguard strips with while `names` (score header names,
-- one a line) are in force: the internal list `list` (nil: none) extended
-- with `names` as extra rules, matched by the Rust rule (ASCII case folded,
-- `_` read as `-`), so one search per request finds the internal headers
-- and `X_Bot_Score` or `x-bot-SCORE` as well as `X-Bot-Score`
-- (ngx.req.set_header replaces only the names equal to its own, ignoring
-- case), and counts only the internal ones. Without a list, a set of
-- `names` alone (whose counts mean nothing). false when there is nothing
-- to strip.
local function strip_set(lib, list, names, what, level)
    if names == "" then
        return list or false
    end
    local set, err
    if list then
        set, err = list:extend(names, "score_header")
    else
        set, err = header_set.parse(lib, names, "score_header")
    end
    if not set then
        error(what .. ": score_header is not a header name: " .. err, level + 1)
    end
    return set
end

local generation_seq = 0
-- resty.edgeguard.lua_engine.headers, required with the Lua engine.
local lheaders

--- Loads the library and the configured data. Call in init_by_lua*.
--
-- config            path of a JSON file of the options below, the file
--                   `edgeguard replay --config` reads (src/config.rs), so
--                   replay scores as nginx does; relative paths in it are
--                   relative to its directory. Options given beside it
--                   override the file's. A file that cannot be read or holds
--                   a bad option: nil, err naming the file
-- internal_headers  path of the internal header list; if missing or invalid,
--                   configure returns nil, err (fail closed: the shipped
--                   config's assert() keeps nginx from serving without it)
-- models            { name = "path/model.json", ... } CatBoost models; if
--                   they fail to load while models loaded by an earlier
--                   configure() in this process are in force (an nginx
--                   reload), configure returns nil, err, so the shipped
--                   assert() refuses the reload and the running workers keep
--                   their models; otherwise (first start) the error is logged
--                   once and requests pass unscored (fail open) unless
--                   fail_closed = true
-- mode              "block" | "log" | "off" (default "log")
-- thresholds        { name = probability } overriding the models' own
-- status            status for blocked requests (default 403)
-- allow             list of CIDR blocks never blocked ({ "10.0.0.0/8" })
-- fail_closed       when models are configured but not loaded, answer 503
-- score_header      request header carrying the scores upstream
--                   (default "X-Bot-Score"; "" to not send one)
-- vars              also set $edgeguard_<model> and $edgeguard_action, which
--                   nginx.conf must declare (`set $edgeguard_bot "";`)
-- log_level         nginx level of the decision lines (default ngx.INFO)
-- lib_path          path of libedgeguard.so (default: search package.cpath)
-- engine            "rust" (default) | "lua" (the pure-Lua engine, the
--                   "before" of a migration) | "shadow" (both on every
--                   request, acting on shadow_primary's result, counting
--                   and logging every disagreement)
-- shadow_primary    the engine whose result is acted on in shadow mode:
--                   "rust" (default) or "lua"
-- lua_models        { name = path } for the Lua engine only, instead of
--                   models (a migration and testing aid: shadow a candidate)
-- metrics_dict      name of a `lua_shared_dict` (1m is plenty) that holds
--                   the counters edgeguard.metrics() exposes; none: no metrics
--
-- Returns true (and, if models failed to load, the error as a second value),
-- or nil and an error.
function _M.configure(opts)
    if type(opts) ~= "table" then
        error("edgeguard.configure expects a table of options", 2)
    end
    check_options(opts, nil, "edgeguard.configure", 2)
    if opts.config then
        local file, err = config_file.read(opts.config, function(o, what)
            check_options(o, config_file.KEYS, what, -1)
        end)
        if not file then
            return nil, err
        end
        for k, v in pairs(opts) do
            if k ~= "config" then
                file[k] = v
            end
        end
        opts = file
    end
    local engine = opts.engine or "rust"
    if opts.shadow_primary and engine ~= "shadow" then
        error("edgeguard.configure: shadow_primary needs engine = \"shadow\"", 2)
    end
    if opts.lua_models and engine == "rust" then
        error("edgeguard.configure: lua_models needs engine = \"lua\" or \"shadow\"", 2)
    end
    local dict
    if opts.metrics_dict and ngx and ngx.shared then
        dict = ngx.shared[opts.metrics_dict]
        if not dict then
            error("edgeguard.configure: metrics_dict \"" .. opts.metrics_dict .. "\" is not a "
                  .. "lua_shared_dict (add `lua_shared_dict " .. opts.metrics_dict .. " 1m;` to http {})", 2)
        end
    end

    local allow, err
    if opts.allow then
        allow, err = cidr.compile(opts.allow)
        if not allow then
            error("edgeguard.configure: " .. err, 2)
        end
    end

    local lib
    lib, err = edgeguard_lib.load(opts.lib_path)
    if not lib then
        return nil, err
    end

    local model_errors, load_errors = {}, 0

    local headers, scorer
    if engine ~= "lua" then
        if opts.internal_headers then
            headers, err = header_set.load(lib, opts.internal_headers)
            if not headers then
                return nil, err
            end
        end
        if opts.models then
            scorer, err = scorer_mod.load(lib, opts.models)
            if not scorer then
                load_errors = load_errors + 1
                model_errors[#model_errors + 1] = (engine == "shadow" and "rust engine: " or "") .. err
            end
        end
    end

    local leng
    if engine ~= "rust" then
        local list_err, lua_model_err
        lheaders = require "resty.edgeguard.legacy.headers"
        leng, list_err, lua_model_err = load_lua_engine(lib, opts)
        if not leng then
            return nil, list_err
        end
        if lua_model_err then
            load_errors = load_errors + 1
            model_errors[#model_errors + 1] = (engine == "shadow" and "lua engine: " or "") .. lua_model_err
        end
    end
    local model_err
    if load_errors > 0 then
        -- The process flag outlives the Lua VM that nginx replaces on reload;
        -- failing open here would swap working models for none.
        if lib.edgeguard_process_models_in_force() ~= 0 then
            return nil, "models not loaded, so this configuration is refused and the models "
                .. "in force keep scoring (on a reload, nginx keeps the running workers): "
                .. concat(model_errors, "; ")
        end
        model_err = "models not loaded, requests pass unscored"
            .. (opts.fail_closed and " and are refused (fail_closed)" or "") .. ": "
            .. concat(model_errors, "; ")
        log(ngx and ngx.ERR, "edgeguard: ", model_err)
    end

    local score_header = opts.score_header or "X-Bot-Score"
    check_score_header(score_header, "edgeguard.configure", 2)
    local strip_sets = { [score_header] = strip_set(lib, headers, score_header, "edgeguard.configure", 2) }
    local spelling_sets = { [score_header] = strip_set(lib, nil, score_header, "edgeguard.configure", 2) }

    local names = (scorer and scorer.names) or (leng and leng.names and #leng.names > 0 and leng.names)
    local var_names = {}
    for _, name in ipairs(names or {}) do
        var_names[name] = "edgeguard_" .. name
    end
    if leng then
        for _, name in ipairs(leng.names or {}) do
            var_names[name] = "edgeguard_" .. name
        end
    end

    local mx
    if opts.metrics_dict then
        local request_engines = engine == "shadow" and { "rust", "lua", "shadow" } or { engine }
        local engines = engine == "shadow" and { "rust", "lua" } or { engine }
        mx = metrics.new(dict, {
            request_engines = request_engines,
            engines = engines,
            models = { rust = scorer and scorer.names, lua = leng and leng.names },
        })
    end
    generation_seq = generation_seq + 1
    local primary = engine == "shadow" and (opts.shadow_primary or "rust") or engine

    state = {
        lib = lib,
        engine = engine,
        primary = primary,
        shadow = engine == "shadow" and shadow.new(scorer and scorer.names, leng.names, mx, primary) or nil,
        headers = headers,
        scorer = scorer,
        lua = leng,
        models_wanted = opts.models ~= nil or opts.lua_models ~= nil,
        model_error = model_err,
        load_errors = load_errors,
        -- Unique per configure() call across master restarts and reloads.
        generation = format("%s-%s-%d", ngx and ngx.now and ngx.now() or os.time(),
                            ngx and ngx.worker and ngx.worker.pid() or 0, generation_seq),
        metrics = mx,
        var_names = var_names,
        mode = opts.mode or "log",
        thresholds = opts.thresholds or {},
        status = opts.status or 403,
        allow = allow,
        fail_closed = opts.fail_closed or false,
        score_header = score_header,
        -- score_header name in force -> the Rust set to strip with (false:
        -- nothing to strip); access{ score_header = } adds to it.
        strip_sets = strip_sets,
        -- The same, without the list: the score header's spellings, which
        -- the Lua engine removes after its own strip.
        spelling_sets = spelling_sets,
        vars = opts.vars or false,
        log_level = opts.log_level,
    }
    lib.edgeguard_process_set_models_in_force(state.models_wanted and load_errors == 0 and 1 or 0)
    return true, model_err
end

local function flush_metrics(premature)
    local mx = state.metrics
    if mx then
        local ok, err = mx:flush()
        if not ok and not premature then
            ngx.log(ngx.ERR, err)
        end
    end
end

--- Call in init_worker_by_lua*. Logs a configuration problem that configure()
-- could only print to nginx's console (init_by_lua runs before the error log
-- is open) into the error log, once per (re)load, from worker 0. With
-- metrics, starts the timer that moves this worker's counts into the shared
-- dict every metrics.FLUSH_SECONDS, and counts the load errors once.
function _M.init_worker()
    if state.model_error and ngx and ngx.worker and ngx.worker.id() == 0 then
        ngx.log(ngx.ERR, "edgeguard: ", state.model_error)
    end
    local mx = state.metrics
    if mx and ngx and ngx.timer then
        mx:count_load_errors(state.generation, state.load_errors)
        local ok, err = ngx.timer.every(metrics.FLUSH_SECONDS, flush_metrics)
        if not ok then
            ngx.log(ngx.ERR, "edgeguard: cannot start the metrics timer: ", err)
        end
    end
end

--- Prometheus text exposition (format 0.0.4) of edgeguard's metrics, for
--   location /metrics { content_by_lua_block {
--       ngx.header.content_type = "text/plain; version=0.0.4"
--       ngx.print(require("resty.edgeguard").metrics()) } }
-- Needs configure{ metrics_dict = ... }.
function _M.metrics()
    local mx = state.metrics
    if not mx then
        error("edgeguard.metrics: no metrics; configure{ metrics_dict = \"edgeguard_metrics\" } "
              .. "with `lua_shared_dict edgeguard_metrics 1m;` in nginx.conf", 2)
    end
    return mx:text()
end

--- The loaded library's version, or nil before configure().
function _M.library_version()
    local lib = state.lib
    return lib and ffi_string(lib.edgeguard_version())
end

--- The internal header set in force (for introspection and tests).
function _M.internal_headers()
    return state.headers
end

--- The engine configured ("rust", "lua" or "shadow"), or nil before configure().
function _M.engine()
    return state.engine
end

--- The model names in scoring order, or nil when no models are loaded.
function _M.models()
    if state.scorer then
        return state.scorer.names
    end
    local names = state.lua and state.lua.names
    return names and #names > 0 and names or nil
end

-- The nginx part: present only inside nginx's http subsystem. Outside it
-- (plain luajit, for tests and tools) configure() and the handles still work.
local in_nginx = ngx and ngx.config and ngx.config.subsystem == "http"
local request = in_nginx and require "resty.edgeguard.request"
local C = ffi.C
-- lua-nginx-module's NGX_HTTP_LUA_CONTEXT_ACCESS, what
-- ngx_http_lua_ffi_get_phase returns in access_by_lua* (resty.core.phase,
-- which request.lua requires, declares it and names it "access").
local CONTEXT_ACCESS = 0x0004
local phase_err = ffi.new("char *[1]")
local set_err = ffi.new("char *[1]")
-- Declared by resty.core.request, which request.lua requires.
local req_set_header = in_nginx and C.ngx_http_lua_ffi_req_set_header
local FFI_DECLINED = -5 -- lua-nginx-module's NGX_DECLINED, as resty.core.base names it

local function need_nginx(fname)
    if not request then
        error("edgeguard." .. fname .. " needs nginx's http subsystem", 3)
    end
end

-- Sets (or, with a nil value, removes in every letter case) request
-- header `name` (data and length), as ngx.req.set_header does, through the
-- FFI function it wraps: the name need not become a Lua string, and the
-- request path stays short for the JIT. Raises on failure, as
-- ngx.req.set_header does.
local function set_req_header(r, data, len, value, vlen)
    local rc = req_set_header(r, data, len, value, vlen, nil, 0, 1, set_err)
    if rc ~= 0 and rc ~= FFI_DECLINED then -- declined: an HTTP/0.9 request, no headers
        error("edgeguard: setting request header failed (nginx code " .. rc .. ")", 2)
    end
end

-- Clears the names that a header_set:find listed, except one spelled
-- exactly `keep` (nil: none), the score header about to be set: set_header
-- replaces its value and removes its repeats. Returns nothing.
local function clear_found(r, headers, clear, nclear, keep)
    local klen = keep and #keep or -1
    for i = 0, nclear - 1 do
        local key = headers[clear[i]].key
        local len = key.len
        if len ~= klen or ffi_string(key.data, len) ~= keep then
            set_req_header(r, key.data, len, nil, 0)
        end
    end
end

-- Clears the entries of `set` among the `n` headers at `headers`: the
-- internal ones and the score header's client spellings. Returns the
-- entries found and how many of them nginx's Lua API cannot remove (then
-- nothing is cleared: the caller refuses the request); or nil and an error.
--
-- Why some cannot be removed: ngx.req.clear_header percent-escapes the
-- bytes of a name that are not RFC 9110 token characters before it
-- compares names (lua-nginx-module 0.10.23, ngx_http_lua_copy_escaped_header),
-- so `X-Internal-(a` or `X-Internal-\xe9`, which nginx keeps under
-- `ignore_invalid_headers off`, is searched as `X-Internal-%28a` and would
-- stay. No Lua API removes such an entry. The Rust search counts them
-- (edgeguard_header_set_find_checked), so nothing is cleared and counted
-- that nginx would keep.
local function strip(r, set, headers, n, keep)
    local clear, nclear, found, unremovable = set:find(headers, n)
    if not clear then
        return nil, nclear
    end
    if unremovable > 0 then
        return found, unremovable
    end
    clear_found(r, headers, clear, nclear, keep)
    return found, 0
end

-- The score header names in force for `opts`, one a line: its own and, for
-- an access{ score_header = } override, configure()'s too (an origin behind
-- both locations may trust either).
local function score_names(name, level)
    check_score_header(name, "edgeguard.access", level + 1)
    if state.score_header == "" or name == state.score_header then
        return name
    end
    return name == "" and state.score_header or name .. "\n" .. state.score_header
end

-- `cache[name]` for `opts`' score header name: the strip set of `list`
-- (nil: the score header rules alone) extended by that name's rules, made
-- on first use in a worker and kept (false when there is nothing to strip).
local function cached_set(cache, list, opts, level)
    local name = opts.score_header or state.score_header
    local set = cache[name]
    if set == nil then
        set = strip_set(state.lib, list, score_names(name, level + 1), "edgeguard.access", level + 1)
        cache[name] = set
    end
    return set
end

-- The Rust strip set for `opts`' score header (see strip_set), made on
-- first use in a worker for an override; false when there is nothing to
-- strip.
local function strip_set_for(opts, level)
    return cached_set(state.strip_sets, state.headers, opts, level + 1)
end

-- After the Lua engine's strip: removes the client spellings of `opts`'
-- score header(s), found by the Rust rule on the headers nginx holds now;
-- true, or nil and an error.
local function score_spellings(r, opts, level)
    local set = cached_set(state.spelling_sets, nil, opts, level + 1)
    if not set then
        return true
    end
    local headers, n = request.headers(r)
    if not headers then
        return nil, n
    end
    local clear, nclear = set:find(headers, n)
    if not clear then
        return nil, nclear
    end
    clear_found(r, headers, clear, nclear)
    return true
end

-- Ends a request that carries internal headers nginx's Lua API cannot
-- remove (see strip) with 400: such a name is not an RFC 9110 token, which
-- a real client does not send, and forwarding it would hand the origin an
-- internal header. `removed` entries were removed before, `left` not.
local function refuse(engine_label, removed, left)
    local var = ngx.var
    ngx.log(state.log_level or ngx.INFO, format(
        'edgeguard action=refused status=400 internal_left=%d reason="header names that are '
        .. 'not RFC 9110 tokens, which ngx.req.clear_header cannot remove" client=%s method=%s uri="%s"',
        left, var.remote_addr, var.request_method, var.request_uri))
    if engine_label and state.metrics then
        state.metrics:request(engine_label, "refused", removed)
    end
    return ngx.exit(ngx.HTTP_BAD_REQUEST)
end

-- The Lua engine's request table, reused by every request of this worker.
local lreq = { headers = {}, n_headers = 0 }

-- The primary engine's strip of the current request outside access():
-- clear_internal_headers() (the score header's spellings too) and
-- subrequests (`keep_score`: their score header is the one their parent's
-- run set). Returns the entries removed, refusing the request with 400
-- when some cannot be; or nil and an error.
local function strip_request(r, keep_score)
    local removed, left = 0, 0
    if state.primary == "lua" then
        local leng = state.lua
        if leng.headers then
            leng:read_request(lreq)
            removed, left = leng:strip(lreq)
        end
        if not keep_score and left == 0 then
            local ok, err = score_spellings(r, state, 2)
            if not ok then
                return nil, err
            end
        end
    else
        local set = keep_score and state.headers or state.strip_sets[state.score_header]
        if set then
            local headers, n = request.headers(r)
            if not headers then
                return nil, n
            end
            removed, left = strip(r, set, headers, n)
            if not removed then
                return nil, left
            end
            if not state.headers then
                removed = 0 -- a set of score header names only
            end
        end
    end
    if left > 0 then
        return refuse(nil, 0, left)
    end
    return removed
end

--- Removes every internal header from the current request, so the upstream
-- never sees it, and every client spelling of the score header. Call in
-- rewrite_by_lua* or server_rewrite_by_lua* ("Where edgeguard goes in
-- nginx.conf" in the README). Uses the primary engine. Returns the number of
-- internal header entries removed, or nil and an error. A request carrying
-- an internal header that nginx's Lua API cannot remove (a name that is not
-- an RFC 9110 token, kept by `ignore_invalid_headers off`) is ended here
-- with 400.
function _M.clear_internal_headers()
    if not state.headers and not (state.lua and state.lua.headers) then
        error("edgeguard: no internal header list in force; call "
              .. "edgeguard.configure{ internal_headers = ... } in init_by_lua", 2)
    end
    need_nginx("clear_internal_headers")
    return strip_request(request.get(2), false)
end

--- Scores the current request with every configured model (the primary
-- engine's). Returns a table of scores by model name (reused: read it before
-- the next request), or nil and an error.
function _M.score()
    local names = _M.models()
    if not names then
        if state.models_wanted then
            return nil, state.model_error
        end
        error("edgeguard: no models configured; call "
              .. "edgeguard.configure{ models = { ... } } in init_by_lua", 2)
    end
    need_nginx("score")
    if state.primary == "lua" then
        state.lua:read_request(lreq)
        return state.lua:score_request(lreq)
    end
    local req, err = request.current(request.get(2))
    if not req then
        return nil, err
    end
    return state.scorer:score(req)
end

------------------------------------------------------------------------------
-- access(): each engine produces scores and a count of internal headers; one
-- decision function turns a result into an action, and one function acts.

local score_parts = {}
local clock = metrics.clock

-- The first model whose score reaches its threshold: name, score, threshold.
local function flagged(opts, names, scores, model_thresholds)
    local thresholds = opts.thresholds or state.thresholds
    for i = 1, #names do
        local name = names[i]
        local t = thresholds[name] or state.thresholds[name] or model_thresholds[name]
        local s = scores[name]
        if t and s and s >= t then
            return name, s, t
        end
    end
end

local function fail_closed(opts)
    local v = opts.fail_closed
    if v == nil then
        v = state.fail_closed
    end
    return v
end

-- One engine's decision, without acting (shadow mode decides for both):
-- "pass", "allow", "log", "block", or "unavailable" (unscored under
-- fail_closed); then the flagged model, its score and threshold.
local function decide(opts, scores, names, model_thresholds, r)
    if not scores then
        return (state.models_wanted and fail_closed(opts)) and "unavailable" or "pass"
    end
    local name, score, threshold = flagged(opts, names, scores, model_thresholds)
    local mode = opts.mode or state.mode
    if not name or mode == "off" then
        return "pass"
    end
    if state.allow and cidr.match(state.allow, request.binary_addr(r)) then
        return "allow", name, score, threshold
    end
    return mode, name, score, threshold
end

local function str(s)
    local n = s.len
    return n > 0 and ffi_string(s.data, n) or ""
end

-- Method, URI and client of the request the engine read: the Lua engine's
-- request table, or the edgeguard_request request.current filled (already
-- pointing at nginx's values: no ngx.var lookups on the hot path).
local function request_text(req)
    if type(req) == "table" then
        return req.method, req.uri, req.client_addr
    end
    return str(req.method), str(req.uri), str(req.client_addr)
end

-- Acts on one engine's result, whichever engine produced it: metrics, score
-- header, variables, decision line, and the exit. Returns the action.
local function act(opts, engine_label, scores, names, model_thresholds, removed, r, req)
    local action, flagged_name, flagged_score, flagged_threshold =
        decide(opts, scores, names, model_thresholds, r)
    if state.metrics then
        state.metrics:request(engine_label, action, removed)
    end
    if action == "unavailable" then
        return ngx.exit(ngx.HTTP_SERVICE_UNAVAILABLE)
    end
    if not scores then
        return action
    end
    local score_header = opts.score_header or state.score_header
    if score_header ~= "" then
        for i = 1, #names do
            score_parts[i] = format("%s=%.9g", names[i], scores[names[i]])
        end
        local value = concat(score_parts, "; ", 1, #names)
        set_req_header(r, score_header, #score_header, value, #value)
    end

    local vars = opts.vars
    if vars == nil then
        vars = state.vars
    end
    if vars then
        local var = ngx.var
        for i = 1, #names do
            var[state.var_names[names[i]]] = format("%.9g", scores[names[i]])
        end
        var.edgeguard_action = action
    end

    if action == "block" or action == "log" then
        local method, uri, client = request_text(req)
        ngx.log(opts.log_level or state.log_level or ngx.INFO,
            format('edgeguard action=%s model=%s score=%.6f threshold=%.6f client=%s method=%s uri="%s"',
                   action, flagged_name, flagged_score, flagged_threshold, client, method, uri))
    end
    if action == "block" then
        return ngx.exit(opts.status or state.status)
    end
    return action
end

local function fail(engine_label, msg)
    ngx.log(ngx.ERR, "edgeguard: ", msg)
    if state.metrics then
        state.metrics:request(engine_label, "error", 0)
    end
    return ngx.exit(ngx.HTTP_INTERNAL_SERVER_ERROR)
end

local function run_rust(opts, r, set)
    local mx = state.metrics
    local t0 = mx and clock()
    local req, headers, n = request.current(r)
    if not req then
        return fail("rust", headers)
    end
    -- Score what the client sent, before anything is removed.
    local scorer = state.scorer
    local scores, err
    if scorer then
        scores, err = scorer:score(req)
        if not scores then
            ngx.log(ngx.ERR, "edgeguard: scoring failed: ", err)
        end
    end
    local found, left = 0, 0
    if set then
        -- A score header spelled exactly as edgeguard's stays for act() to
        -- overwrite when the request is scored.
        found, left = strip(r, set, headers, n, scores and (opts.score_header or state.score_header))
        if not found then
            return fail("rust", left)
        end
        if not state.headers then
            found = 0 -- a set of score header names only
        end
    end
    if mx then
        mx:engine_time("rust", clock() - t0)
        if scores then
            mx:scores("rust", scorer.names, scores)
        end
    end
    if left > 0 then
        return refuse("rust", 0, left)
    end
    return act(opts, "rust", scores, scorer and scorer.names, scorer and scorer.thresholds, found, r, req)
end

local function run_lua(opts, r)
    local mx = state.metrics
    local t0 = mx and clock()
    local leng = state.lua
    leng:read_request(lreq)
    local scores
    if #leng.names > 0 then
        scores = leng:score_request(lreq)
    end
    local removed, left = 0, 0
    if leng.headers then
        removed, left = leng:strip(lreq)
    end
    if left == 0 then
        local ok, err = score_spellings(r, opts, 3)
        if not ok then
            return fail("lua", err)
        end
    end
    if mx then
        mx:engine_time("lua", clock() - t0)
        if scores then
            mx:scores("lua", leng.names, scores)
        end
    end
    if left > 0 then
        return refuse("lua", removed, left)
    end
    return act(opts, "lua", scores, leng.names, leng.thresholds, removed, r, lreq)
end

-- Shadow mode: both engines on every request (resty.edgeguard.shadow judges).

local function run_shadow(opts, r, set)
    local mx = state.metrics
    local scorer, leng = state.scorer, state.lua
    -- What both engines count: the list's entries (an extended set's
    -- score header spellings are not counted).
    local count_set = state.headers
    local primary = state.primary

    -- Both engines read and score what the client sent, before any strip.
    local t0 = mx and clock()
    local req, headers, n = request.current(r)
    if not req then
        return fail("shadow", headers)
    end
    local rs, err
    if scorer then
        rs, err = scorer:score(req)
        if not rs then
            ngx.log(ngx.ERR, "edgeguard: scoring failed: ", err)
        end
    end
    local rcount = 0
    if count_set then
        local clear, nclear
        clear, nclear, rcount = count_set:find(headers, n)
        if not clear then
            return fail("shadow", nclear)
        end
    end
    local t1 = mx and clock()

    leng:read_request(lreq)
    local ls
    if #leng.names > 0 then
        ls = leng:score_request(lreq)
    end
    local lcount = leng.headers and lheaders.count(leng.headers, lreq) or 0
    local t2 = mx and clock()

    -- Strip with the primary only.
    local removed, left = 0, 0
    if primary == "rust" then
        if set then
            removed, left = strip(r, set, headers, n)
            if not removed then
                return fail("shadow", left)
            end
        end
        if left > 0 or not state.headers then
            removed = 0 -- refused, or a set of score header names only
        end
    else
        if leng.headers then
            removed, left = leng:strip(lreq)
        end
        if left == 0 then
            local ok
            ok, err = score_spellings(r, opts, 3)
            if not ok then
                return fail("shadow", err)
            end
        end
    end
    if mx then
        local t3 = clock()
        if primary == "rust" then
            mx:engine_time("rust", (t1 - t0) + (t3 - t2))
            mx:engine_time("lua", t2 - t1)
        else
            mx:engine_time("rust", t1 - t0)
            mx:engine_time("lua", t3 - t1)
        end
        if rs then
            mx:scores("rust", scorer.names, rs)
        end
        if ls then
            mx:scores("lua", leng.names, ls)
        end
    end

    local rnames, lnames = scorer and scorer.names, leng.names
    local ra = decide(opts, rs, rnames, scorer and scorer.thresholds, r)
    local la = decide(opts, ls, lnames, leng.thresholds, r)
    state.shadow:compare(rs, ls, ra, la, rcount, lcount)

    if left > 0 then
        return refuse("shadow", removed, left)
    end
    if primary == "rust" then
        return act(opts, "shadow", rs, rnames, scorer and scorer.thresholds, removed, r, req)
    end
    return act(opts, "shadow", ls, lnames, leng.thresholds, removed, r, lreq)
end

--- The one-liner for rewrite_by_lua*: scores the request as the client
-- sent it, strips internal headers and every client spelling of the score
-- header, passes the scores upstream, and blocks or logs by the mode.
-- `opts` may override mode, thresholds, status, score_header, vars,
-- log_level, fail_closed and engine for this location. The engine override
-- can only pick an engine configure() loaded ("rust" or "lua" when it was
-- "shadow"); anything else raises an error, as misuse. Returns the action
-- taken ("pass", "allow", "log", "block"); blocking ends the request with
-- ngx.exit, and so does refusing (400) a request whose internal headers
-- nginx's Lua API cannot remove.
--
-- Where it runs (README: "Where edgeguard goes in nginx.conf"):
-- - rewrite_by_lua* (the shipped placement) or server_rewrite_by_lua*;
-- - in a subrequest (auth_request, ngx.location.capture), which carries
--   headers its parent's run already stripped and scored, it only strips
--   (a second score would judge the stripped copy) and returns "pass";
-- - in access_by_lua* it does not return: a handler that returns normally
--   there returns NGX_OK, which under `satisfy any` grants access, so it
--   ends the handler with ngx.exit(ngx.DECLINED) and nginx's own access
--   modules decide.
function _M.access(opts)
    if opts ~= nil then
        if type(opts) ~= "table" then
            error("edgeguard.access expects a table of options or nothing", 2)
        end
        check_options(opts, PER_REQUEST, "edgeguard.access", 2)
    else
        opts = state
    end
    if not state.lib then
        error("edgeguard: call edgeguard.configure{ ... } in init_by_lua first", 2)
    end
    local engine = opts.engine or state.engine
    if not ENGINES[state.engine][engine] then
        error("edgeguard.access: engine \"" .. engine .. "\" was not loaded; configure{ engine = \""
              .. state.engine .. "\" } allows " .. (state.engine == "shadow"
                  and "\"rust\", \"lua\" or \"shadow\"" or "only \"" .. state.engine .. "\""), 2)
    end
    need_nginx("access")

    local r = request.get(2)
    -- Direct FFI calls, not resty.core's wrappers: this is every request's
    -- path, and its JIT trace must stay within LuaJIT's limits.
    if C.ngx_http_lua_ffi_is_subrequest(r) ~= 0 then
        local removed, err = strip_request(r, true)
        if not removed then
            return fail(engine, err)
        end
        return "pass"
    end
    local set = strip_set_for(opts, 2)
    local action
    if engine == "rust" then
        action = run_rust(opts, r, set)
    elseif engine == "lua" then
        action = run_lua(opts, r)
    else
        action = run_shadow(opts, r, set)
    end
    if C.ngx_http_lua_ffi_get_phase(r, phase_err) == CONTEXT_ACCESS then
        return ngx.exit(ngx.DECLINED)
    end
    return action
end

return _M
