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
-- This module is an adapter: the options, the model order and the decision
-- rule are the Rust library's (src/config/, bound by resty.edgeguard.policy;
-- the options are documented once, in docs/configuration.md). It reads
-- nginx's buffers, makes the FFI calls and applies the action: exit, score
-- header, variables, log line (the metrics are counted by Rust, in the same
-- calls; resty.edgeguard.metrics moves them into the shared dict).
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
local metrics = require "resty.edgeguard.metrics"
local policy = require "resty.edgeguard.policy"
local challenge = require "resty.edgeguard.challenge"

local ffi_string = ffi.string
local concat = table.concat
local error = error
local format = string.format
local ipairs = ipairs
local pairs = pairs
local setmetatable = setmetatable
local tonumber = tonumber
local type = type

local _M = { _VERSION = "0.1.0" }

-- The configuration in force. Replaced whole by a successful configure(), so
-- a failed one leaves the previous state serving.
local state = {}

-- Locations are few (one per access{} in nginx.conf); more distinct option
-- tables than this means they are built per request with changing content,
-- which is misuse.
local MAX_LOCATIONS = 1024

-- resty.edgeguard.legacy.driver, the Lua engine's and shadow mode's driving
-- code, required only when the configured engine is not "rust"; and the
-- adapter functions it calls (bound at the end of this file).
local driver
local adapter

-- Logs through nginx when there is one (configure() may run in plain luajit).
-- Request-time code calls ngx.log directly, so its lines name their caller.
local function log(level, ...)
    if ngx and ngx.log then
        ngx.log(level, ...)
    end
end

-- A location: what access() needs of one resolved configuration `cfg`
-- (configure()'s, or a location's access{} over it), made once: the
-- options it reads per request and one Rust policy per loaded engine
-- (bound to that engine's models), which holds the location's strip set
-- (Rust checked the score header name when it derived `cfg`).
local function new_location(st, cfg)
    local o = cfg.options
    local scorer = st.scorer
    local rust = st.engine ~= "lua" and cfg:policy(scorer and scorer.names or {}, scorer and scorer.thresholds,
                                                  st.headers)
    local loc = {
        options = o,
        engine = o.engine,
        score_header = o.score_header,
        vars = o.vars,
        log_level = o.log_level,
        -- The client address is read only when an allow list can use it
        -- (or the challenge or the verified bots, which always do).
        allow = o.allow ~= nil and #o.allow > 0,
        -- The challenge or the verified bots: decided with the request
        -- itself (edgeguard_policy_decide_request), Rust engine only.
        screen = o.challenge_secret ~= nil or o.verified_bots ~= nil,
        policy = rust,
        -- The Rust strip: the list and the score header's spellings.
        strip_set = rust and rust.strip_set,
    }
    if st.lua then
        driver.location(st, cfg, loc)
    end
    return loc
end

-- Location lookup for an access{} table built anew on every request (a
-- table constructor in nginx.conf is): a trie over the table's (key,
-- value) pairs in iteration order, a nested table (thresholds) walked one
-- level down and closed by END. Lookups allocate nothing; nodes are made
-- only for a content Rust accepted.
local END = {}

local function trie_find(node, opts)
    for k, v in pairs(opts) do
        node = node[k]
        if not node then
            return nil
        end
        if type(v) == "table" then
            for k2, v2 in pairs(v) do
                node = node[k2]
                node = node and node[v2]
                if not node then
                    return nil
                end
            end
            node = node[END]
        else
            node = node[v]
        end
        if not node then
            return nil
        end
    end
    return node.location
end

local function trie_step(node, key)
    local next_node = node[key]
    if not next_node then
        next_node = {}
        node[key] = next_node
    end
    return next_node
end

local function trie_insert(node, opts, loc)
    for k, v in pairs(opts) do
        node = trie_step(node, k)
        if type(v) == "table" then
            for k2, v2 in pairs(v) do
                node = trie_step(trie_step(node, k2), v2)
            end
            node = trie_step(node, END)
        else
            node = trie_step(node, v)
        end
    end
    node.location = loc
end

-- The location of access{} options `opts`, made on first use: Rust derives
-- the configuration (a bad option raises, as misuse, at the caller's
-- line), the location object is cached by the table itself (weak keys: a
-- table hoisted out of the request is found with one lookup) and by its
-- content.
local function location(st, opts, level)
    local loc = trie_find(st.by_content, opts)
    if loc then
        return loc
    end
    if st.nlocations >= MAX_LOCATIONS then
        error("edgeguard.access: more than " .. MAX_LOCATIONS .. " distinct access{} option tables; "
              .. "build them once, not per request", level + 1)
    end
    local cfg, err = st.cfg:location(opts, "edgeguard.access")
    if not cfg then
        error(err, level + 1)
    end
    loc = cfg.shim_location
    if not loc then
        loc = new_location(st, cfg)
        cfg.shim_location = loc
    end
    st.nlocations = st.nlocations + 1
    trie_insert(st.by_content, opts, loc)
    st.by_table[opts] = loc
    return loc
end

local generation_seq = 0

-- configure(), phase 1: the library (found by the Lua-side lib_path, as it
-- is needed before anything can be handed to it) and the options, parsed
-- by Rust. Raises on misuse; returns the library and the configuration, or
-- nil and an error for a file that cannot be read or holds a bad option.
local function parse_options(opts, level)
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
    cfg, err, misuse = policy.new(lib, opts, "edgeguard.configure")
    if not cfg then
        if misuse then
            error(err, level + 1)
        end
        return nil, err
    end
    return lib, cfg
end

-- configure(), phase 2: the engines' data, from the resolved options `o`.
-- Returns a table of what loaded (headers, scorer, lua) and the model
-- errors, or nil and an error when an internal header list is bad (fail
-- closed).
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
        local list_err, lua_model_err
        if not driver then
            driver = require "resty.edgeguard.legacy.driver"
            driver.bind(adapter)
        end
        got.lua, list_err, lua_model_err = driver.load(lib, o)
        if not got.lua then
            return nil, list_err
        end
        if lua_model_err then
            got.model_errors[#got.model_errors + 1] = (engine == "shadow" and "lua engine: " or "") .. lua_model_err
        end
    end
    return got
end

-- configure(), between load and publish: models that failed to load. nil
-- and an error when models are in force in this process (a reload must not
-- swap working models for none); else the message to log and return
-- beside true (fail open), or nil when all loaded.
local function model_failure(lib, o, model_errors)
    if #model_errors == 0 then
        return false
    end
    -- The process flag outlives the Lua VM that nginx replaces on reload.
    if lib.edgeguard_process_models_in_force() ~= 0 then
        return nil, "models not loaded, so this configuration is refused and the models "
            .. "in force keep scoring (on a reload, nginx keeps the running workers): "
            .. concat(model_errors, "; ")
    end
    local msg = "models not loaded, requests pass unscored"
        .. (o.fail_closed and " and are refused (fail_closed)" or "") .. ": "
        .. concat(model_errors, "; ")
    log(ngx and ngx.ERR, "edgeguard: ", msg)
    return msg
end

local function metrics_for(lib, cfg, dict, scorer, leng)
    if not cfg.options.metrics_dict then
        return false
    end
    return metrics.new(lib, cfg, dict, scorer and scorer.names, leng and leng.names)
end

--- Loads the library and the configured data. Call in init_by_lua*. The
-- options are docs/configuration.md's table; `config = FILE` reads
-- them from the JSON file `edgeguard replay --config` reads, the options
-- beside it overriding the file's. Misspelt options and wrong types raise;
-- a file that cannot be read or holds a bad option returns nil and an error
-- naming the file, the option and, in a list, the entry (counted from 0).
-- A missing or invalid internal header list returns nil, err (fail
-- closed). Models that fail to load while models loaded by an earlier
-- configure() in this process are in force (an nginx reload) return nil,
-- err, so the shipped assert() refuses the reload; otherwise (first start)
-- the error is logged once and requests pass unscored (fail open) unless
-- fail_closed = true.
--
-- Returns true (and, if models failed to load, the error as a second value),
-- or nil and an error; a failure leaves the previous configuration serving.
function _M.configure(opts)
    local lib, cfg = parse_options(opts, 2)
    if not lib then
        return nil, cfg
    end
    local o = cfg.options
    local dict
    if o.metrics_dict and ngx and ngx.shared then
        dict = ngx.shared[o.metrics_dict]
        if not dict then
            error("edgeguard.configure: metrics_dict \"" .. o.metrics_dict .. "\" is not a "
                  .. "lua_shared_dict (add `lua_shared_dict " .. o.metrics_dict .. " 1m;` to http {})", 2)
        end
    end
    local got, err = load_engines(lib, o)
    if not got then
        return nil, err
    end
    local model_err
    model_err, err = model_failure(lib, o, got.model_errors)
    if model_err == nil then
        return nil, err
    end

    local scorer, leng, engine = got.scorer, got.lua, o.engine
    local var_names = {}
    for _, eng in ipairs{ scorer or false, leng or false } do
        for _, name in ipairs(eng and eng.names or {}) do
            var_names[name] = "edgeguard_" .. name
        end
    end
    local mx
    mx, err = metrics_for(lib, cfg, dict, scorer, leng)
    if mx == nil then
        return nil, err
    end
    local primary = o.shadow_primary or engine
    generation_seq = generation_seq + 1
    local new = {
        lib = lib,
        cfg = cfg,
        options = o,
        engine = engine,
        primary = primary,
        headers = got.headers,
        scorer = scorer,
        lua = leng,
        models_wanted = o.models_wanted,
        model_error = model_err or nil,
        load_errors = #got.model_errors,
        -- Unique per configure() call across master restarts and reloads.
        generation = format("%s-%s-%d", ngx and ngx.now and ngx.now() or os.time(),
                            ngx and ngx.worker and ngx.worker.pid() or 0, generation_seq),
        metrics = mx or nil,
        metrics_handle = mx and mx.handle or nil,
        var_names = var_names,
        clearance_names = policy.clearance_names(lib),
        -- access{} tables -> their locations (see location()).
        by_table = setmetatable({}, { __mode = "k" }),
        by_content = {},
        nlocations = 0,
    }
    new.shadow = engine == "shadow" and driver.judge(new) or nil
    new.base = new_location(new, cfg)
    state = new
    lib.edgeguard_process_set_models_in_force(new.models_wanted and new.load_errors == 0 and 1 or 0)
    return true, new.model_error
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

-- Clears the names that a header_set:find listed. Returns nothing.
local function clear_found(r, headers, clear, nclear)
    for i = 0, nclear - 1 do
        local key = headers[clear[i]].key
        set_req_header(r, key.data, key.len, nil, 0)
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
local function strip(r, set, headers, n)
    local clear, nclear, found, unremovable = set:find(headers, n)
    if not clear then
        return nil, nclear
    end
    if unremovable > 0 then
        return found, unremovable
    end
    clear_found(r, headers, clear, nclear)
    return found, 0
end
-- Ends a request that carries internal headers nginx's Lua API cannot
-- remove (see strip) with 400: such a name is not an RFC 9110 token, which
-- a real client does not send, and forwarding it would hand the origin an
-- internal header. `removed` entries were removed before, `left` not;
-- counted under `engine_label` (nil: edgeguard_access counted it, or not
-- an access() request).
local function refuse(engine_label, removed, left)
    local var = ngx.var
    ngx.log(state.base.log_level or ngx.INFO, format(
        'edgeguard action=refused status=400 internal_left=%d reason="header names that are '
        .. 'not RFC 9110 tokens, which ngx.req.clear_header cannot remove" client=%s method=%s uri="%s"',
        left, var.remote_addr, var.request_method, var.request_uri))
    if engine_label and state.metrics then
        state.metrics:request(engine_label, "refused", removed)
    end
    return ngx.exit(ngx.HTTP_BAD_REQUEST)
end

-- The primary engine's strip of the current request outside access():
-- clear_internal_headers() (the score header's spellings too) and
-- subrequests (`keep_score`: their score header is the one their parent's
-- run set). Returns the entries removed, refusing the request with 400
-- when some cannot be; or nil and an error.
local function strip_request(r, keep_score)
    local removed, left = 0, 0
    local base = state.base
    if state.primary == "lua" then
        removed, left = driver.strip_request(state, r, not keep_score and base or nil)
        if not removed then
            return nil, left
        end
    else
        local set = keep_score and state.headers or base.strip_set
        if set then
            local headers, n = request.headers(r)
            if not headers then
                return nil, n
            end
            removed, left = strip(r, set, headers, n)
            if not removed then
                return nil, left
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
-- rewrite_by_lua* or server_rewrite_by_lua* (docs/placement.md: "Where
-- edgeguard goes in nginx.conf"). Uses the primary engine. Returns the number of
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
        return driver.score(state)
    end
    local req, err = request.current(request.get(2))
    if not req then
        return nil, err
    end
    return state.scorer:score(req)
end

------------------------------------------------------------------------------
-- access(): each engine produces scores and a count of internal headers; the
-- location's Rust policy turns a result into an action, and one function
-- acts.


-- edgeguard_access's out struct, reused (act() reads the challenge's and
-- the bots' part of it: one request at a time per worker, and nothing
-- yields between the two).
local access_out = ffi.new("edgeguard_access_out[1]")
local BOTS = policy.BOTS

local function str(s)
    local n = s.len
    return n > 0 and ffi_string(s.data, n) or ""
end

-- Method, URI and client of the request edgeguard_request request.current
-- filled (pointing at nginx's values: no ngx.var lookups).
local function request_text(req)
    return str(req.method), str(req.uri), str(req.client_addr)
end

local function fail(engine_label, msg)
    ngx.log(ngx.ERR, "edgeguard: ", msg)
    if state.metrics then
        state.metrics:request(engine_label, "error", 0)
    end
    return ngx.exit(ngx.HTTP_INTERNAL_SERVER_ERROR)
end

-- An answer to the challenge: solved, the cookie and a 303 back; failed,
-- the block status.
local function answer(loc, req, status)
    local mx = state.metrics
    -- No address: Rust reads the request's client_addr (as in rust_access);
    -- it counts the answer.
    local ok, res = challenge.answer(state.lib, loc.policy, mx and mx.handle, req, nil, 0, ngx.time(),
                                     ngx.var.https == "on")
    if ok == nil then
        return fail("rust", res)
    end
    local method, uri, client = request_text(req)
    local level = loc.log_level or ngx.INFO
    if ok then
        ngx.log(level, format('edgeguard challenge=solved client=%s method=%s uri="%s"',
                              client, method, uri))
        return ngx.redirect(res, 303)
    end
    ngx.log(level, format('edgeguard challenge=failed reason=%s client=%s method=%s uri="%s"',
                          state.clearance_names[res], client, method, uri))
    return ngx.exit(status)
end

-- Actions that flag the request (a decision line; unscored, a fake bot).
local FLAGGED = { block = true, log = true, challenge = true, cleared = true }

-- Acts on one engine's result, whichever engine produced it (and counted
-- it: edgeguard_access, or the legacy driver): score header, variables,
-- decision line (their texts are Rust's: `text`, an edgeguard_text,
-- locates them in `buf`), and the exit. `status` is the error when
-- `action` is nil. Returns the action.
local function act(loc, engine_label, scores, names, r, req, action, status, text, buf)
    if not action then
        return fail(engine_label, status)
    end
    if action == "unavailable" then
        return ngx.exit(ngx.HTTP_SERVICE_UNAVAILABLE)
    end
    local bot = false
    if loc.screen then
        if action == "answer" then
            return answer(loc, req, status)
        end
        bot = BOTS[tonumber(access_out[0].bot)]
    end
    if not scores and not FLAGGED[action] and not bot then
        return action
    end
    local score_header = loc.score_header
    if scores and score_header ~= "" then
        local v = text.scores
        set_req_header(r, score_header, #score_header, buf + v.offset, v.len)
    end

    if loc.vars then
        local var = ngx.var
        if scores then
            for i = 1, #names do
                local v = text.values[i - 1]
                var[state.var_names[names[i]]] = ffi_string(buf + v.offset, v.len)
            end
        end
        var.edgeguard_action = action
        if loc.screen then
            -- The clock the cookie was judged by (ngx.time() is cached for
            -- the event loop's turn: rust_access's value), for replay; the bot.
            var.edgeguard_time = ngx.time()
            local label = access_out[0].label
            var.edgeguard_verified_bot = bot == "verified" and ffi_string(label.data, label.len) or ""
        end
    end

    local line = text.line
    if line.len > 0 then
        ngx.log(loc.log_level or ngx.INFO, ffi_string(buf + line.offset, line.len))
    end
    if action == "block" then
        return ngx.exit(status)
    end
    if action == "challenge" then
        local _, err = challenge.serve_page(state.lib, loc.policy, req, nil, 0, ngx.time(),
                                            access_out[0].challenge_status)
        return fail(engine_label, err)
    end
    return action
end

-- The buffer edgeguard_access writes the indices to clear into; grown
-- (rarely) to the largest header count seen, as it needs room for all.
local clear_cap = 0
local clear_buf
-- The buffer it writes the texts into (score header value, variables,
-- decision line); grown (rarely) to the largest need seen.
local text_cap = 0
local text_buf
local ACTIONS = policy.ACTIONS

-- The Rust engine's whole job on the current request in one FFI call,
-- edgeguard_access: the headers to clear (the location's strip set; the
-- score header spelled exactly as edgeguard's is left to act(), which
-- overwrites it), the scores of what the client sent, and the decision;
-- counted into the metrics handle `counts` (nil: the caller counts).
-- Returns the request, its header array, the (reused) out struct and the
-- score table (nil: unscored); or nil and an error.
local function rust_access(loc, r, counts)
    local req, headers, n = request.current(r)
    if not req then
        return nil, headers
    end
    if n > clear_cap then
        clear_cap = n > 128 and n or 128
        clear_buf = ffi.new("uint32_t[?]", clear_cap)
    end
    local policy_ = loc.policy
    local need = policy_.text_room + req.method.len + req.uri.len + req.client_addr.len
    if need > text_cap then
        text_cap = need > 4096 and need or 4096
        text_buf = ffi.new("uint8_t[?]", text_cap)
    end
    -- No binary address: Rust reads the request's client_addr
    -- ($remote_addr) for the allow list, the challenge and the bots.
    local lib, scorer = state.lib, state.scorer
    local rc = lib.edgeguard_access(scorer and scorer.handle, policy_.handle, counts, req, nil, 0, ngx.time(),
                                    clear_buf, clear_cap, scorer and scorer.out, scorer and scorer.n or 0,
                                    text_buf, text_cap, access_out)
    if rc ~= 0 then
        return nil, "edgeguard_access: " .. ffi_string(lib.edgeguard_result_text(rc))
    end
    local out = access_out[0]
    if out.scores_len > 0 then
        return req, headers, out, scorer:scores_of_out()
    end
    if scorer then
        ngx.log(ngx.ERR, "edgeguard: scoring failed: ", ffi_string(lib.edgeguard_result_text(out.score_result)))
    end
    return req, headers, out
end

-- Clears what rust_access listed. Most requests list none or one: that one
-- is cleared outside the loop, so the loop only runs (and only becomes a
-- trace) for requests carrying several; a loop of one iteration per
-- request is a root trace LuaJIT keeps trying and, with bad luck, ends up
-- blacklisting.
local function clear_listed(r, headers, out)
    local n = tonumber(out.clear_len)
    if n == 0 then
        return
    end
    local key = headers[clear_buf[0]].key
    set_req_header(r, key.data, key.len, nil, 0)
    for i = 1, n - 1 do
        key = headers[clear_buf[i]].key
        set_req_header(r, key.data, key.len, nil, 0)
    end
end

-- rust_access's decision as act()'s arguments: the action, the status,
-- the texts and their buffer.
local function rust_decision(out)
    return ACTIONS[tonumber(out.decision.action)], out.decision.status, out.text, text_buf
end

-- edgeguard_access counts the request (its time, scores and outcome,
-- refused included), so nothing here does but the 500 of a failed call.
local function run_rust(loc, r)
    local req, headers, out, scores = rust_access(loc, r, state.metrics_handle)
    if not req then
        return fail("rust", headers)
    end
    local left = tonumber(out.unremovable)
    if left > 0 then
        return refuse(nil, 0, left)
    end
    clear_listed(r, headers, out)
    local scorer = state.scorer
    return act(loc, "rust", scores, scorer and scorer.names, r, req, rust_decision(out))
end

--- The one-liner for rewrite_by_lua*: scores the request as the client
-- sent it, strips internal headers and every client spelling of the score
-- header, passes the scores upstream, and blocks or logs by the mode.
-- `opts` may override the options docs/configuration.md marks "A" (per location)
-- for this location; they are resolved by Rust once per location (a bad
-- one raises, as misuse, on the first request), and the engine override
-- can only pick an engine configure() loaded. Returns the action taken
-- ("pass", "allow", "log", "block"); blocking ends the request with
-- ngx.exit, and so does refusing (400) a request whose internal headers
-- nginx's Lua API cannot remove.
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
        loc = st.by_table[opts] or location(st, opts, 2)
    end
    need_nginx("access")

    local r = request.get(2)
    local engine = loc.engine
    -- Direct FFI calls, not resty.core's wrappers: this is every request's
    -- path, and its JIT trace must stay within LuaJIT's limits.
    if C.ngx_http_lua_ffi_is_subrequest(r) ~= 0 then
        local removed, err = strip_request(r, true)
        if not removed then
            return fail(engine, err)
        end
        return "pass"
    end
    local action
    if engine == "rust" then
        action = run_rust(loc, r)
    else
        action = driver.run(st, loc, r)
    end
    if C.ngx_http_lua_ffi_get_phase(r, phase_err) == CONTEXT_ACCESS then
        return ngx.exit(ngx.DECLINED)
    end
    return action
end

adapter = {
    rust_access = rust_access, clear_listed = clear_listed, rust_decision = rust_decision,
    act = act, refuse = refuse, fail = fail, clear_found = clear_found, request = request,
}

return _M
