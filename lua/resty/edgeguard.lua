-- edgeguard: strip internal request headers and score requests for bots in
-- OpenResty/nginx, in Rust, through LuaJIT's FFI.
--
--   init_by_lua_block {
--       assert(require("resty.edgeguard").configure{
--           internal_headers = "/etc/nginx/internal-headers.txt",
--           models = { bot = "/etc/nginx/models/bot.json" },
--       })
--   }
--   access_by_lua_block { require("resty.edgeguard").access{ mode = "block" } }
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
}
local PER_REQUEST = {
    mode = true, thresholds = true, status = true, score_header = true,
    vars = true, log_level = true, fail_closed = true,
}
local MODES = { block = true, log = true, off = true }

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

--- Loads the library and the configured data. Call in init_by_lua*.
--
-- internal_headers  path of the internal header list; if missing or invalid,
--                   configure returns nil, err (fail closed: the shipped
--                   config's assert() keeps nginx from serving without it)
-- models            { name = "path/model.json", ... } CatBoost models; if
--                   they fail to load, the error is logged once and requests
--                   pass unscored (fail open) unless fail_closed = true
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
--
-- Returns true (and, if models failed to load, the error as a second value),
-- or nil and an error.
function _M.configure(opts)
    if type(opts) ~= "table" then
        error("edgeguard.configure expects a table of options", 2)
    end
    check_options(opts, nil, "edgeguard.configure", 2)

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

    local headers
    if opts.internal_headers then
        headers, err = header_set.load(lib, opts.internal_headers)
        if not headers then
            return nil, err
        end
    end

    local scorer, model_err
    if opts.models then
        scorer, model_err = scorer_mod.load(lib, opts.models)
        if not scorer then
            model_err = "models not loaded, requests pass unscored"
                .. (opts.fail_closed and " and are refused (fail_closed)" or "")
                .. ": " .. model_err
            log(ngx and ngx.ERR, "edgeguard: ", model_err)
        end
    end

    local var_names = {}
    for _, name in ipairs(scorer and scorer.names or {}) do
        var_names[name] = "edgeguard_" .. name
    end

    state = {
        lib = lib,
        headers = headers,
        scorer = scorer,
        models_wanted = opts.models ~= nil,
        model_error = model_err,
        var_names = var_names,
        mode = opts.mode or "log",
        thresholds = opts.thresholds or {},
        status = opts.status or 403,
        allow = allow,
        fail_closed = opts.fail_closed or false,
        score_header = opts.score_header or "X-Bot-Score",
        vars = opts.vars or false,
        log_level = opts.log_level,
    }
    return true, model_err
end

--- Call in init_worker_by_lua*. Logs a configuration problem that configure()
-- could only print to nginx's console (init_by_lua runs before the error log
-- is open) into the error log, once per (re)load, from worker 0.
function _M.init_worker()
    if state.model_error and ngx and ngx.worker and ngx.worker.id() == 0 then
        ngx.log(ngx.ERR, "edgeguard: ", state.model_error)
    end
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

--- The model names in scoring order, or nil when no models are loaded.
function _M.models()
    return state.scorer and state.scorer.names
end

-- The nginx part: present only inside nginx's http subsystem. Outside it
-- (plain luajit, for tests and tools) configure() and the handles still work.
local in_nginx = ngx and ngx.config and ngx.config.subsystem == "http"
local request = in_nginx and require "resty.edgeguard.request"

local function need_nginx(fname)
    if not request then
        error("edgeguard." .. fname .. " needs nginx's http subsystem", 3)
    end
end

-- Clears every internal header among `n` headers at `headers`; returns the
-- number of entries removed, or nil and an error.
local function strip(set, headers, n)
    local clear, nclear, nmatched = set:find(headers, n)
    if not clear then
        return nil, nclear
    end
    local clear_header = ngx.req.clear_header
    for i = 0, nclear - 1 do
        local key = headers[clear[i]].key
        clear_header(ffi_string(key.data, key.len))
    end
    return nmatched
end

--- Removes every internal header from the current request, so the upstream
-- never sees it. Call in access_by_lua* (or rewrite_by_lua*).
-- Returns the number of header entries removed, or nil and an error.
function _M.clear_internal_headers()
    local set = state.headers
    if not set then
        error("edgeguard: no internal header list in force; call "
              .. "edgeguard.configure{ internal_headers = ... } in init_by_lua", 2)
    end
    need_nginx("clear_internal_headers")
    local headers, n = request.headers(request.get(2))
    if not headers then
        return nil, n
    end
    return strip(set, headers, n)
end

--- Scores the current request with every configured model.
-- Returns a table of scores by model name (reused: read it before the next
-- request), or nil and an error.
function _M.score()
    local scorer = state.scorer
    if not scorer then
        if state.models_wanted then
            return nil, state.model_error
        end
        error("edgeguard: no models configured; call "
              .. "edgeguard.configure{ models = { ... } } in init_by_lua", 2)
    end
    need_nginx("score")
    local req, err = request.current(request.get(2))
    if not req then
        return nil, err
    end
    return scorer:score(req)
end

local score_parts = {}

local function decision_line(action, name, score, threshold, req)
    return format('edgeguard action=%s model=%s score=%.6f threshold=%.6f client=%s method=%s uri="%s"',
                  action, name, score, threshold,
                  ffi_string(req.client_addr.data, req.client_addr.len),
                  ffi_string(req.method.data, req.method.len),
                  ffi_string(req.uri.data, req.uri.len))
end

--- The one-liner for access_by_lua*: strips internal headers, scores the
-- request, passes the scores upstream, and blocks or logs by the mode.
-- `opts` may override mode, thresholds, status, score_header, vars,
-- log_level and fail_closed for this location. Returns the action taken
-- ("pass", "allow", "log", "block"); blocking ends the request with ngx.exit.
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
    need_nginx("access")

    local r = request.get(2)
    local req, headers, n = request.current(r)
    if not req then
        ngx.log(ngx.ERR, "edgeguard: ", headers)
        return ngx.exit(ngx.HTTP_INTERNAL_SERVER_ERROR)
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

    if state.headers then
        local removed
        removed, err = strip(state.headers, headers, n)
        if not removed then
            ngx.log(ngx.ERR, "edgeguard: ", err)
            return ngx.exit(ngx.HTTP_INTERNAL_SERVER_ERROR)
        end
    end

    local fail_closed = opts.fail_closed
    if fail_closed == nil then
        fail_closed = state.fail_closed
    end
    if not scores then
        if state.models_wanted and fail_closed then
            return ngx.exit(ngx.HTTP_SERVICE_UNAVAILABLE)
        end
        return "pass"
    end

    local names = scorer.names
    local score_header = opts.score_header or state.score_header
    if score_header ~= "" then
        for i = 1, #names do
            score_parts[i] = format("%s=%.9g", names[i], scores[names[i]])
        end
        ngx.req.set_header(score_header, concat(score_parts, "; ", 1, #names))
    end

    local mode = opts.mode or state.mode
    local thresholds = opts.thresholds or state.thresholds
    local flagged_name, flagged_score, flagged_threshold
    for i = 1, #names do
        local name = names[i]
        local t = thresholds[name] or state.thresholds[name] or scorer.thresholds[name]
        if t and scores[name] >= t then
            flagged_name, flagged_score, flagged_threshold = name, scores[name], t
            break
        end
    end

    local action = "pass"
    if flagged_name and mode ~= "off" then
        if state.allow and cidr.match(state.allow, request.binary_addr(r)) then
            action = "allow"
        else
            action = mode
        end
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
        ngx.log(opts.log_level or state.log_level or ngx.INFO,
            decision_line(action, flagged_name, flagged_score, flagged_threshold, req))
    end
    if action == "block" then
        return ngx.exit(opts.status or state.status)
    end
    return action
end

return _M
