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
-- This module applies what Rust decides. The options, the model order, the
-- decision rule and every text are the library's (src/gate/, docs/
-- architecture.md): configure() hands the options to Rust, which loads
-- the engine (src/load/: the list, the models, the base location) and
-- binds a location per access{} table; each request is one FFI call
-- (edgeguard_location_run) whose effects resty.edgeguard.gate applies:
-- headers cleared, the score header, the variables, the log line, the
-- exit. The metrics are counted in the same call (resty.edgeguard.metrics
-- moves them into the shared dict).
--
-- configure() loads everything (it allocates; run it in init_by_lua, where
-- nginx forks the workers from the loaded state, and again on every
-- reload). The per-request functions reuse buffers made once per worker.
--
-- Errors: misuse (wrong option names or types, calling before configure)
-- raises error(msg, 2); runtime failures (a file that cannot be read or
-- parsed, a request whose headers cannot be read) return nil and a message.

local ffi = require "ffi"
local metrics = require "resty.edgeguard.metrics"
local setup = require "resty.edgeguard.setup"
require "resty.edgeguard.cdefs"

local C = ffi.C
local ffi_string = ffi.string
local error = error
local tonumber = tonumber
local type = type

local _M = { _VERSION = require("resty.edgeguard.lib").VERSION }

-- The configuration in force. Replaced whole by a successful configure(), so
-- a failed one leaves the previous state serving.
local state = {}

local JOB_ACCESS, JOB_STRIP, JOB_STRIP_LIST = C.EDGEGUARD_JOB_ACCESS, C.EDGEGUARD_JOB_STRIP,
                                              C.EDGEGUARD_JOB_STRIP_LIST
local JOB_SCORE = C.EDGEGUARD_JOB_SCORE

--- Loads the library and the configured data. Call in init_by_lua* (the
-- site's own, beside other modules' init: docs/install.md). The
-- options are docs/configuration.md's table; `config = FILE` reads
-- them from the JSON file `edgeguard replay --config` reads, the options
-- beside it overriding the file's. Misspelt options and wrong types raise;
-- a file that cannot be read or holds a bad option returns nil and an error
-- naming the file, the option and, in a list, the entry (counted from 0).
-- Every file is held to one policy: a list or a model that is missing or
-- invalid returns nil, err naming the file and the field, so the shipped
-- assert() refuses the start and a reload (nginx keeps the running workers,
-- with the list and models they loaded). `nginx -t` runs no Lua.
--
-- Returns true, or nil and an error; a failure leaves the previous
-- configuration serving.
function _M.configure(opts)
    local new, err = setup.state(opts, 2)
    if not new then
        return nil, err
    end
    state = new
    new.lib.edgeguard_process_set_models_in_force(new.models_wanted and 1 or 0)
    return true
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

--- Call in init_worker_by_lua* (the site's own, beside other modules' calls:
-- docs/install.md, "Alongside other Lua modules"). Starts this worker's
-- refresh thread of the signals snapshot (option signals). With metrics,
-- starts the timer that moves this worker's counts into the shared dict
-- every metrics.FLUSH_SECONDS.
function _M.init_worker()
    if state.cfg then -- the signals snapshot's refresh thread: one per worker, never in the master
        state.lib.edgeguard_config_start_signals(state.cfg.handle)
    end
    local mx = state.metrics
    if mx and ngx and ngx.timer then
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

--- The library and the location a request head is recorded through
-- (configure()'s, whose redaction applies), or nil before configure():
-- for resty.edgeguard.record.
function _M.recorder()
    return state.lib, state.record
end

--- The internal header set in force (an edgeguard_header_set handle the
-- engine lends), or nil: for introspection and tests.
function _M.internal_headers()
    return state.headers
end

--- The engine configured ("rust", "lua" or "shadow"), or nil before configure().
function _M.engine()
    return state.engine
end

--- The model names in scoring order, or nil when no models are loaded.
function _M.models()
    local names = state.names or state.lua and state.lua.names
    return names and #names > 0 and names or nil
end

-- The nginx part: present only inside nginx's http subsystem. Outside it
-- (plain luajit, for tests and tools) configure() and the handles still work.
local in_nginx = ngx and ngx.config and ngx.config.subsystem == "http"
local request = in_nginx and require "resty.edgeguard.request"
local gate = in_nginx and require "resty.edgeguard.gate"
-- lua-nginx-module's NGX_HTTP_LUA_CONTEXT_ACCESS, what
-- ngx_http_lua_ffi_get_phase returns in access_by_lua* (resty.core.phase,
-- which request.lua requires, declares it and names it "access").
local CONTEXT_ACCESS = 0x0004
local phase_err = ffi.new("char *[1]")

local function need_nginx(fname)
    if not request then
        error("edgeguard." .. fname .. " needs nginx's http subsystem", 3)
    end
end

-- Runs `job` on request `r` through location `loc` with `engine` (the
-- location's, or the primary one for a strip): the effects and the header
-- array they index; or nil, an error and the engine label to count it under.
local legacy -- resty.edgeguard.legacy.driver, when an engine is not "rust"

local function run(st, loc, r, job, engine)
    if engine ~= "rust" then
        legacy = legacy or require "resty.edgeguard.legacy.driver"
        return legacy.run(st, loc, r, job)
    end
    local req, headers = gate.current(r, st.request_ids)
    if not req then
        return nil, headers, "rust"
    end
    if st.check_request_id then -- once a worker (docs/behaviour.md)
        st.check_request_id = nil
        if ffi_string(req.request_id.data, req.request_id.len) ~= ngx.var.request_id then
            ngx.log(ngx.WARN, "edgeguard: $request_id changes on each read: name it once (include ",
                    "nginx-conf/decision-vars.conf), else the client memory counts a redirected page twice")
        end
    end
    local mx = st.metrics
    local e, err = gate.run(st.lib, loc.rust, mx and mx.handle, req, nil, job, "rust")
    if not e then
        return nil, err, "rust"
    end
    if e.score_result ~= 0 then
        ngx.log(ngx.ERR, "edgeguard: scoring failed: ", ffi_string(st.lib.edgeguard_result_text(e.score_result)))
    end
    return e, headers
end

-- A call failed: logged, counted, 500.
local function fail(label, msg)
    ngx.log(ngx.ERR, "edgeguard: ", msg)
    if state.metrics then
        state.metrics:request(label, "error", 0)
    end
    return ngx.exit(ngx.HTTP_INTERNAL_SERVER_ERROR)
end

--- Removes every internal header from the current request, so the upstream
-- never sees it, and every client spelling of the score header. Call in
-- rewrite_by_lua* or server_rewrite_by_lua* ("Where edgeguard goes in
-- nginx.conf" in docs/placement.md). Uses the primary engine. Returns the number of
-- internal header entries removed, or nil and an error. A request carrying
-- an internal header that nginx's Lua API cannot remove (a name that is not
-- an RFC 9110 token, kept by `ignore_invalid_headers off`) is ended here
-- with 400.
function _M.clear_internal_headers()
    local st = state
    if not st.headers and not (st.lua and st.lua.headers) then
        error("edgeguard: no internal header list in force; call "
              .. "edgeguard.configure{ internal_headers = ... } in init_by_lua", 2)
    end
    need_nginx("clear_internal_headers")
    local r = request.get(2)
    local e, headers = run(st, st.base, r, JOB_STRIP, st.primary)
    if not e then
        return nil, headers
    end
    gate.apply(r, headers, e)
    return tonumber(e.matched)
end

--- Scores the current request with every configured model (the primary
-- engine's). Returns a table of scores by model name (reused: read it before
-- the next request), or nil and an error.
function _M.score()
    local names = _M.models()
    if not names then
        error("edgeguard: no models configured; call "
              .. "edgeguard.configure{ models = { ... } } in init_by_lua", 2)
    end
    need_nginx("score")
    if state.primary == "lua" then
        legacy = legacy or require "resty.edgeguard.legacy.driver"
        return legacy.score(state)
    end
    local st = state
    local e, err = run(st, st.base, request.get(2), JOB_SCORE, "rust")
    if not e or e.score_result ~= 0 then
        return nil, err or ffi_string(st.lib.edgeguard_result_text(e.score_result))
    end
    local scores = st.scores
    for i = 1, tonumber(e.scores_len) do
        scores[names[i]] = e.scores[i - 1]
    end
    return scores
end

-- The location of access{} options `opts`, made on first use: Rust derives
-- and binds it through the engine (a bad option raises, as misuse, at the
-- caller's line); cached by the table's content (a full cache raises).
local function location(st, opts, level)
    local loc, err = setup.bind(st, opts)
    if not loc then
        error(err, level + 1)
    end
    if not st.locations:insert(opts, loc) then
        error("edgeguard.access: more than " .. st.locations.MAX .. " distinct access{} option tables; "
              .. "build them once, not per request", level + 1)
    end
    return loc
end

--- The one-liner for rewrite_by_lua*: scores the request as the client
-- sent it, strips internal headers and every client spelling of the score
-- header, passes the scores upstream, and blocks, logs or challenges by the
-- mode. `opts` may override the options docs/configuration.md marks "per
-- location" for this location; they are resolved by Rust once per location
-- (a bad one raises, as misuse, on the first request), and the engine
-- override can only pick an engine configure() loaded. Returns the action
-- taken ("pass", "allow", "log", "cleared", "verified"); the others end the
-- request (block, unavailable, challenge, answer, refused: 400 for internal
-- headers nginx's Lua API cannot remove).
--
-- Where it runs (docs/placement.md: "Where edgeguard goes in nginx.conf"):
-- - rewrite_by_lua* (the shipped placement) or server_rewrite_by_lua*;
-- - in a subrequest (auth_request, ngx.location.capture), which carries
--   headers its parent's run already stripped and scored, it only strips
--   (a second score would judge the stripped copy) and returns "pass";
-- - in access_by_lua* it does not return: a handler that returns normally
--   there returns NGX_OK, which under `satisfy any` grants access, so it
--   ends the handler with ngx.exit(ngx.DECLINED) and nginx's own access
--   modules decide.
function _M.access(opts)
    local st = state
    if not st.lib then
        error("edgeguard: call edgeguard.configure{ ... } in init_by_lua first", 2)
    end
    local loc = st.base
    if opts ~= nil then
        if type(opts) ~= "table" then
            error("edgeguard.access expects a table of options or nothing", 2)
        end
        loc = st.locations:find(opts) or location(st, opts, 2)
    end
    need_nginx("access")

    local r = request.get(2)
    -- Direct FFI calls, not resty.core's wrappers: this is every request's
    -- path, and its JIT trace must stay within LuaJIT's limits.
    local sub = C.ngx_http_lua_ffi_is_subrequest(r) ~= 0
    local engine = sub and st.primary or loc.engine
    local e, headers, label = run(st, loc, r, sub and JOB_STRIP_LIST or JOB_ACCESS, engine)
    if not e then
        return fail(label, headers)
    end
    local action = gate.apply(r, headers, e)
    if sub then
        return "pass"
    end
    if C.ngx_http_lua_ffi_get_phase(r, phase_err) == CONTEXT_ACCESS then
        return ngx.exit(ngx.DECLINED)
    end
    return action
end

return _M
