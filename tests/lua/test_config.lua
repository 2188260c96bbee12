-- resty.edgeguard.config: the Lua binding of the Rust configuration, and the
-- locations it binds, decided through the one request call (a location
-- given scores, as the legacy engine's is), under plain luajit. Run from the
-- repository root with EDGEGUARD_LIB pointing at the library.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"
local config = require "handles.config"
local locations = require "resty.edgeguard.locations"
local cjson = require "cjson.safe"

local lib = T.lib()
local C = ffi.C

local function new(opts)
    return config.new(lib, opts, "edgeguard.configure")
end

-- A scratch directory holding edgeguard.json with `json`; returns the paths.
local function config_dir(json)
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local path = dir .. "/edgeguard.json"
    local f = assert(io.open(path, "wb"))
    f:write(json)
    f:close()
    return dir, path
end

-- The one request call on a request from `client` with the given scores
-- (a double buffer in the location's model order; nil: not scored):
-- the action's name, the flagging model's name and threshold, the status.
local scratch_box = ffi.new("edgeguard_scratch *[1]")
assert(lib.edgeguard_scratch_new(scratch_box) == 0)
local scratch = ffi.gc(scratch_box[0], function(p) lib.edgeguard_scratch_free(p) end)
local req = ffi.new("edgeguard_request[1]")
local given = ffi.new("edgeguard_given[1]")
local out = ffi.new("edgeguard_effects[1]")
local names_of = {}

local function decide(loc, scores, n, client)
    local r = req[0]
    r.method.data, r.method.len = "GET", 3
    r.uri.data, r.uri.len = "/", 1
    r.client_addr.data, r.client_addr.len = client, client and #client or 0
    r.http_version = 11
    local g = given[0]
    g.scores, g.scores_len = scores, scores and n or 0
    local rc = lib.edgeguard_location_run(loc, nil, req, given, C.EDGEGUARD_JOB_ACCESS, 0, scratch, out)
    if rc ~= 0 then
        return nil, ffi.string(lib.edgeguard_result_text(rc))
    end
    local e = out[0]
    local number = tonumber(e.action) -- an enum field reads as a cdata
    local action = names_of[number] or ffi.string(lib.edgeguard_outcome_name(number))
    names_of[number] = action
    if e.model >= 0 then
        return action, e.model, e.threshold, e.status
    end
    return action, nil, nil, e.status
end

T.test("options come back resolved: defaults, model order, paths", function()
    local cfg = assert(new{ models = { spoof = "models/spoof.json", bot = "models/bot.json" },
                            allow = { "10.1.2.3/8" } })
    local o = cfg.options
    T.eq(o.mode, "log")
    T.eq(o.status, 403)
    T.eq(o.score_header, "X-Bot-Score")
    T.eq(o.vars, false)
    T.eq(o.fail_closed, false)
    T.eq(o.engine, "rust")
    T.eq(o.models_wanted, true)
    T.eq(o.models[1].name, "bot", "scoring order is name order")
    T.eq(o.models[2].name, "spoof")
    T.eq(o.models[2].path, "models/spoof.json")
    T.eq(o.allow[1], "10.0.0.0/8")
    T.eq(o.log_level, nil, "no default: the shim uses ngx.INFO")
end)

T.test("a bad table is misuse, numbered from 0 like the file", function()
    local cfg, err, misuse = new{ allow = { "10.0.0.0/33" } }
    T.eq(cfg, nil)
    T.eq(misuse, true)
    T.eq(err, "edgeguard.configure: allow[0]: prefix length 33 too long in '10.0.0.0/33'")
    _, err, misuse = new{ internal_header = "typo" }
    T.eq(misuse, true)
    T.contains(err, "unknown option 'internal_header'")
    _, err = new{ mode = "deny" }
    T.contains(err, 'mode: must be "block", "log", "off" or "challenge", got "deny"')
    _, err = new{ thresholds = { bot = 0 / 0 }, models = { bot = "b.json" } }
    T.contains(err, "thresholds.bot: must be a number, got null")
    _, err, misuse = new{ lib_path = print }
    T.eq(misuse, true)
    T.contains(err, "edgeguard.configure: option 'lib_path' must not be a function")
end)

T.test("a bad config file is nil, err naming the file, not misuse", function()
    local dir, path = config_dir('{"allow": ["10.0.0.0/8", "10.0.0.0/33"]}')
    local cfg, err, misuse = new{ config = path }
    T.eq(cfg, nil)
    T.eq(misuse, false)
    T.eq(err, path .. ": allow[1]: prefix length 33 too long in '10.0.0.0/33'")
    os.execute("rm -rf " .. dir)
    cfg, err, misuse = new{ config = dir .. "/missing.json" }
    T.eq(cfg, nil)
    T.eq(misuse, false)
    T.contains(err, dir .. "/missing.json: cannot read")
end)

T.test("options beside the file override it; its paths are relative to it", function()
    local dir, path = config_dir('{"models": {"bot": "bot.json"}, "mode": "block", "status": 429}')
    local cfg = assert(new{ config = path, mode = "off" })
    T.eq(cfg.options.mode, "off")
    T.eq(cfg.options.status, 429)
    T.eq(cfg.options.models[1].path, dir .. "/bot.json")
    os.execute("rm -rf " .. dir)
end)

T.test("decide: thresholds, allowlist (IPv4, IPv6), order, status", function()
    local cfg = assert(new{ models = { bot = "b.json", spoof = "s.json" }, mode = "block",
                            status = 429, thresholds = { spoof = 0.5 },
                            allow = { "10.0.0.0/8", "2001:db8::/32" } })
    local p = cfg:location(nil, nil, { "bot", "spoof" }, { bot = 0.9 })
    local scores = ffi.new("double[2]", 0.95, 0.6)
    local action, model, threshold, status = decide(p, scores, 2, "192.0.2.1")
    T.eq(action, "block")
    T.eq(model, 0, "the first flagging model: bot")
    T.eq(threshold, 0.9, "the model's own threshold")
    T.eq(status, 429)
    scores[0] = 0.1
    action, model, threshold = decide(p, scores, 2, "192.0.2.1")
    T.eq(model, 1, "spoof")
    T.eq(threshold, 0.5, "the configured threshold")
    T.eq(decide(p, scores, 2, "10.9.8.7"), "allow")
    T.eq(decide(p, scores, 2, "2001:db8::1"), "allow")
    T.eq(decide(p, scores, 2, nil), "block", "no address is in no block")
    scores[1] = 0.4
    action, model = decide(p, scores, 2, "192.0.2.1")
    T.eq(action, "pass")
    T.eq(model, nil)
    T.eq(decide(p, ffi.new("double[2]", 0.99, 0), 2, "192.0.2.1"), "block")
    T.eq(decide(p, ffi.new("double[2]", 0.5, 0 / 0), 2, "192.0.2.1"), "pass", "a missing score never flags")
    T.eq(decide(p, nil, 0, "192.0.2.1"), "pass", "unscored, not fail_closed")
    T.eq(select(2, decide(p, ffi.new("double[1]", 1), 1, "192.0.2.1")), "an argument is out of range",
         "one score for two models")
end)

T.test("thresholds arrive exactly as written (lua-cjson would round them)", function()
    local t = 0.1 + 0.2 -- 0.30000000000000004
    local cfg = assert(new{ models = { bot = "b.json" }, thresholds = { bot = t }, mode = "block" })
    local p = cfg:location(nil, nil, { "bot" })
    T.eq(decide(p, ffi.new("double[1]", 0.3), 1, nil), "pass", "0.3 is below 0.1 + 0.2")
    T.eq(decide(p, ffi.new("double[1]", t), 1, nil), "block")
    T.eq(cfg.options.thresholds.bot, t)
end)

T.test("fail_closed with models refuses unscored requests", function()
    local cfg = assert(new{ models = { bot = "b.json" }, fail_closed = true })
    T.eq(decide(cfg:location(nil, nil, {}), nil, 0, nil), "unavailable")
    local off = assert(new{ fail_closed = true })
    T.eq(decide(off:location(nil, nil, {}), nil, 0, nil), "pass", "no models configured: nothing to fail")
end)

T.test("locations: made once per content, overriding model by model", function()
    local cfg = assert(new{ models = { bot = "b.json", spoof = "s.json" }, mode = "block",
                            thresholds = { bot = 0.9 }, engine = "shadow" })
    local cache = locations.new()
    local opts = { mode = "log", thresholds = { spoof = 0.2 } }
    local loc = assert(cfg:derive(opts, "edgeguard.access"))
    T.ok(cache:insert(opts, loc))
    T.ok(cache:find{ mode = "log", thresholds = { spoof = 0.2 } } == loc,
         "a new table with the same content is the cached location")
    T.eq(cache:find{ mode = "log", thresholds = { spoof = 0.3 } }, nil)
    T.eq(cache:find{ mode = "log" }, nil)
    T.eq(loc.options.mode, "log")
    T.eq(loc.options.thresholds.bot, 0.9)
    T.eq(loc.options.thresholds.spoof, 0.2)
    T.eq(cfg.options.mode, "block", "the base is unchanged")
    local p = loc:location(nil, nil, { "bot", "spoof" })
    T.eq(decide(p, ffi.new("double[2]", 0.5, 0.3), 2, nil), "log")
    local _, err, misuse = cfg:derive({ models = {} }, "edgeguard.access")
    T.eq(misuse, true)
    T.contains(err, "edgeguard.access: models: unknown option 'models'")
    T.ok(cfg:derive({ engine = "lua" }, "edgeguard.access"), "shadow loads both engines")
    local rust = assert(new{})
    _, err, misuse = rust:derive({ engine = "lua" }, "edgeguard.access")
    T.eq(misuse, true)
    T.contains(err, 'engine "lua" was not loaded')
end)

T.test("the options reach Rust as JSON lua-cjson reads back", function()
    local opts = { score_header = 'X-"q"\\\n\1é', allow = {}, vars = true, status = 403,
                   thresholds = { ["a.b"] = 1e-300 } }
    local back = cjson.decode(assert(config.json(lib, opts)))
    T.eq(back.score_header, opts.score_header)
    T.eq(back.vars, true)
    T.eq(back.status, 403)
    T.eq(back.thresholds["a.b"], 1e-300)
    -- Through Rust and back, in an option it keeps verbatim (score_header
    -- must now be a header name, which Rust checks).
    local cfg = assert(new{ metrics_dict = opts.score_header })
    T.eq(cfg.options.metrics_dict, opts.score_header)
    local _, err = config.json(lib, { a = { b = { c = { d = { e = { f = { g = { h = { i = {} } } } } } } } } })
    T.contains(err, "nested too deeply")
end)

T.test("the request call allocates nothing on the Lua heap once compiled", function()
    local cfg = assert(new{ models = { bot = "b.json" }, mode = "block", allow = { "10.0.0.0/8" } })
    local p = cfg:location(nil, nil, { "bot" }, { bot = 0.5 })
    local scores = ffi.new("double[1]", 0.7)
    local blocked = 0
    local function run(n)
        for i = 1, n do
            scores[0] = (i % 2 == 0) and 0.7 or 0.1
            local action = decide(p, scores, 1, i % 3 == 0 and "10.0.0.1" or "192.0.2.1")
            if action == "block" then
                blocked = blocked + 1
            end
        end
    end
    -- Interpreted iterations box the struct fields; the compiled trace
    -- sinks them. Warm up until the loop is compiled, then count.
    run(2000)
    collectgarbage("stop")
    local before = collectgarbage("count")
    run(20000)
    local grown = collectgarbage("count") - before
    collectgarbage("restart")
    T.ok(blocked > 0, "some blocked")
    T.ok(grown < 1, "Lua heap grew by " .. grown .. " KiB over 20000 decisions")
end)

T.test("edgeguard_location_run from LuaJIT: the shim's handles, Lua strings, one call", function()
    local header_set = require "handles.header_set"
    local scorer_mod = require "handles.scorer"
    local list = assert(header_set.parse(lib, "x-internal-user-id\n", "t"))
    local cfg = assert(new{ models = { bot = "models/bot.json", spoof = "models/spoof.json" }, mode = "block" })
    local scorer = assert(scorer_mod.load(lib, cfg.options.models))
    -- The location's strip set: the list and the score header's spellings.
    local loc = cfg:location(scorer, list)
    local headers = T.header_array{
        { "User-Agent", "curl/8.1.2" }, { "X-Bot-Score", "bot=0" }, { "x-internal-user-id", "1" },
        { "x_bot_score", "bot=0" }, { "Accept", "*/*" },
    }
    local r = ffi.new("edgeguard_request")
    r.method.data, r.method.len = "GET", 3
    r.uri.data, r.uri.len = "/", 1
    r.client_addr.data, r.client_addr.len = "192.0.2.1", 9
    r.http_version = 11
    r.headers, r.headers_len = headers, 5
    local rc = lib.edgeguard_location_run(loc, nil, r, nil, C.EDGEGUARD_JOB_ACCESS, 1800000000, scratch, out)
    T.eq(rc, 0)
    local o = out[0]
    T.eq(tonumber(o.clear_len), 2, "the internal header and the other spelling; the exact one stays")
    T.eq(o.clear[0], 2)
    T.eq(o.clear[1], 3)
    T.eq(tonumber(o.matched), 1)
    T.eq(tonumber(o.scores_len), 2)
    T.eq(ffi.string(lib.edgeguard_outcome_name(o.action)), "block")
    T.eq(ffi.string(o.action_name.data, o.action_name.len), "block", "the effects name their action")
    T.eq(o.status, 403)
    -- A block answers with a body; without $request_id given, the shim
    -- inserts it at the gap (gate.lua).
    T.eq(o.exit, C.EDGEGUARD_EXIT_BODY)
    T.ok(tonumber(o.body_request_id_at) > 0 and tonumber(o.body_request_id_at) < o.body.len, "a gap in the body")
    T.eq(o.bot_name.len, 0)
    local scores = { bot = o.scores[0], spoof = o.scores[1] }
    T.eq(scores.bot, scorer:score(r).bot, "the same score as edgeguard_scorer_score")
    -- The texts the shim sets and logs, as string.format wrote them.
    local function at(s)
        return ffi.string(s.data, s.len)
    end
    T.eq(at(o.set_header.key), "X-Bot-Score")
    T.eq(at(o.set_header.value), string.format("bot=%.9g; spoof=%.9g", scores.bot, scores.spoof))
    local name = scorer.names[o.model + 1]
    T.eq(at(o.line), string.format('edgeguard action=block grade=certain reasons=ua_library model=%s score=%.6f '
                                   .. 'threshold=%.6f request_id= client=192.0.2.1 method=GET uri="/"',
                                   name, scores[name], o.threshold))
    -- No $request_id given: the shim inserts nginx's after `request_id=`.
    T.eq(at(o.line):sub(1, tonumber(o.line_request_id_at)):match(" request_id=$"), " request_id=")
    T.eq(o.grade, C.EDGEGUARD_GRADE_CERTAIN)
    -- Refused: scores given to a location of the scorer's two models, one short.
    local g = ffi.new("edgeguard_given[1]")
    g[0].scores, g[0].scores_len = ffi.new("double[1]", 0.5), 1
    T.eq(lib.edgeguard_location_run(loc, nil, r, g, C.EDGEGUARD_JOB_ACCESS, 1800000000, scratch, out), 3)
end)

T.test("signals: read at configure, a bad snapshot is nil, err, the worker's thread starts", function()
    local entry = '{"kind":"headers","key":"none:","requests":9,"prefixes24":8,"prefixes48":0,'
        .. '"user_agents":1,"flagged":0,"challenges":4,"solved":0,"cleared":0}'
    local dir, path = config_dir('{"format":"edgeguard-signals","version":1,"generated":' .. os.time()
                                 .. ',"window":3600,"entries":[' .. entry .. ']}')
    local cfg = assert(new{ signals = path, signals_refresh = 0, vars = true })
    T.eq(cfg.options.signals, path)
    T.eq(cfg.options.signals_refresh, 0)
    T.eq(cfg.options.signals_max_age, 7200)
    T.eq(lib.edgeguard_config_start_signals(cfg.handle), 0, "no thread with signals_refresh 0")
    T.eq(lib.edgeguard_config_start_signals(nil), C.EDGEGUARD_RESULT_NULL_PARAMETER)
    -- A request without headers has the key `none:`: its counts are the variables.
    local p = cfg:location(nil, nil, { "bot" }, nil)
    T.eq(decide(p, ffi.new("double[1]", 0.1), 1, "192.0.2.1"), "pass")
    local vars = {}
    for i = 0, tonumber(out[0].vars_len) - 1 do
        local v = out[0].vars[i]
        vars[ffi.string(v.key.data, v.key.len)] = ffi.string(v.value.data, v.value.len)
    end
    T.eq(vars.edgeguard_fp_key, "headers")
    T.eq(vars.edgeguard_fp_prefixes, "8")
    T.eq(vars.edgeguard_fp_solved, "0")
    -- A bad file: the file's error, not misuse; no file: the same.
    local f = assert(io.open(path, "wb"))
    f:write('{"format":"edgeguard-signals","version":1,"generated":1,"window":3600,"entries":[' .. entry
            .. ',' .. entry .. ']}')
    f:close()
    local bad, err, misuse = new{ signals = path }
    T.eq(bad, nil)
    T.eq(misuse, false)
    T.contains(err, path .. ": entries[1].key: headers key \"none:\" is listed twice")
    _, err, misuse = new{ signals = dir .. "/none.json" }
    T.eq(misuse, false)
    T.contains(err, dir .. "/none.json")
    _, err, misuse = new{ signals = 5 }
    T.eq(misuse, true)
    T.contains(err, "signals: must be a snapshot file's path or false")
    os.execute("rm -rf " .. dir)
end)

T.run()
