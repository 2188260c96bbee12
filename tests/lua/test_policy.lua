-- resty.edgeguard.policy: the Lua binding of the Rust configuration and
-- decision rule, under plain luajit. Run from the repository root with
-- EDGEGUARD_LIB pointing at the library.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"
local policy = require "resty.edgeguard.policy"
local cjson = require "cjson.safe"

local lib = T.lib()

local function config(opts)
    return policy.new(lib, opts, "edgeguard.configure")
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

T.test("options come back resolved: defaults, model order, paths", function()
    local cfg = assert(config{ models = { spoof = "models/spoof.json", bot = "models/bot.json" },
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
    local cfg, err, misuse = config{ allow = { "10.0.0.0/33" } }
    T.eq(cfg, nil)
    T.eq(misuse, true)
    T.eq(err, "edgeguard.configure: allow[0]: prefix length 33 too long in '10.0.0.0/33'")
    _, err, misuse = config{ internal_header = "typo" }
    T.eq(misuse, true)
    T.contains(err, "unknown option 'internal_header'")
    _, err = config{ mode = "deny" }
    T.contains(err, 'mode: must be "block", "log", "off" or "challenge", got "deny"')
    _, err = config{ thresholds = { bot = 0 / 0 }, models = { bot = "b.json" } }
    T.contains(err, "thresholds.bot: must be a number, got null")
    _, err, misuse = config{ lib_path = print }
    T.eq(misuse, true)
    T.contains(err, "edgeguard.configure: option 'lib_path' must not be a function")
end)

T.test("a bad config file is nil, err naming the file, not misuse", function()
    local dir, path = config_dir('{"allow": ["10.0.0.0/8", "10.0.0.0/33"]}')
    local cfg, err, misuse = config{ config = path }
    T.eq(cfg, nil)
    T.eq(misuse, false)
    T.eq(err, path .. ": allow[1]: prefix length 33 too long in '10.0.0.0/33'")
    os.execute("rm -rf " .. dir)
    cfg, err, misuse = config{ config = dir .. "/missing.json" }
    T.eq(cfg, nil)
    T.eq(misuse, false)
    T.contains(err, dir .. "/missing.json: cannot read")
end)

T.test("options beside the file override it; its paths are relative to it", function()
    local dir, path = config_dir('{"models": {"bot": "bot.json"}, "mode": "block", "status": 429}')
    local cfg = assert(config{ config = path, mode = "off" })
    T.eq(cfg.options.mode, "off")
    T.eq(cfg.options.status, 429)
    T.eq(cfg.options.models[1].path, dir .. "/bot.json")
    os.execute("rm -rf " .. dir)
end)

local function v4(a, b, c, d)
    return string.char(a, b, c, d)
end

T.test("decide: thresholds, allowlist (IPv4, IPv6), order, status", function()
    local cfg = assert(config{ models = { bot = "b.json", spoof = "s.json" }, mode = "block",
                               status = 429, thresholds = { spoof = 0.5 },
                               allow = { "10.0.0.0/8", "2001:db8::/32" } })
    local p = cfg:policy({ "bot", "spoof" }, { bot = 0.9 })
    local scores = ffi.new("double[2]", 0.95, 0.6)
    local action, model, threshold, status = p:decide(scores, v4(192, 0, 2, 1), 4)
    T.eq(action, "block")
    T.eq(model, "bot", "the first flagging model")
    T.eq(threshold, 0.9, "the model's own threshold")
    T.eq(status, 429)
    scores[0] = 0.1
    action, model, threshold = p:decide(scores, v4(192, 0, 2, 1), 4)
    T.eq(model, "spoof")
    T.eq(threshold, 0.5, "the configured threshold")
    T.eq(p:decide(scores, v4(10, 9, 8, 7), 4), "allow")
    local v6 = "\32\1\13\184" .. string.rep("\0", 12)
    T.eq(p:decide(scores, v6, 16), "allow")
    T.eq(p:decide(scores, nil, 0), "block", "no address is in no block")
    scores[1] = 0.4
    action, model = p:decide(scores, v4(192, 0, 2, 1), 4)
    T.eq(action, "pass")
    T.eq(model, nil)
    T.eq(p:decide_table({ bot = 0.99, spoof = 0 }, v4(192, 0, 2, 1), 4), "block")
    T.eq(p:decide_table({ bot = 0.5 }, v4(192, 0, 2, 1), 4), "pass", "a missing score never flags")
    T.eq(p:decide(nil, v4(192, 0, 2, 1), 4), "pass", "unscored, not fail_closed")
end)

T.test("thresholds arrive exactly as written (lua-cjson would round them)", function()
    local t = 0.1 + 0.2 -- 0.30000000000000004
    local cfg = assert(config{ models = { bot = "b.json" }, thresholds = { bot = t }, mode = "block" })
    local p = cfg:policy({ "bot" })
    T.eq(p:decide(ffi.new("double[1]", 0.3), nil, 0), "pass", "0.3 is below 0.1 + 0.2")
    T.eq(p:decide(ffi.new("double[1]", t), nil, 0), "block")
    T.eq(cfg.options.thresholds.bot, t)
end)

T.test("fail_closed with models refuses unscored requests", function()
    local cfg = assert(config{ models = { bot = "b.json" }, fail_closed = true })
    T.eq(cfg:policy({}):decide(nil, nil, 0), "unavailable")
    local off = assert(config{ fail_closed = true })
    T.eq(off:policy({}):decide(nil, nil, 0), "pass", "no models configured: nothing to fail")
end)

T.test("locations: made once per content, overriding model by model", function()
    local cfg = assert(config{ models = { bot = "b.json", spoof = "s.json" }, mode = "block",
                               thresholds = { bot = 0.9 }, engine = "shadow" })
    local loc = assert(cfg:location({ mode = "log", thresholds = { spoof = 0.2 } }, "edgeguard.access"))
    T.ok(cfg:location({ mode = "log", thresholds = { spoof = 0.2 } }, "edgeguard.access") == loc,
         "a new table with the same content is the cached location")
    T.eq(loc.options.mode, "log")
    T.eq(loc.options.thresholds.bot, 0.9)
    T.eq(loc.options.thresholds.spoof, 0.2)
    T.eq(cfg.options.mode, "block", "the base is unchanged")
    local p = loc:policy({ "bot", "spoof" })
    T.eq(p:decide(ffi.new("double[2]", 0.5, 0.3), nil, 0), "log")
    local _, err, misuse = cfg:location({ models = {} }, "edgeguard.access")
    T.eq(misuse, true)
    T.contains(err, "edgeguard.access: models: unknown option 'models'")
    T.ok(cfg:location({ engine = "lua" }, "edgeguard.access"), "shadow loads both engines")
    local rust = assert(config{})
    _, err, misuse = rust:location({ engine = "lua" }, "edgeguard.access")
    T.eq(misuse, true)
    T.contains(err, 'engine "lua" was not loaded')
end)

T.test("the encoder writes JSON lua-cjson reads back", function()
    local opts = { score_header = 'X-"q"\\\n\1é', allow = {}, vars = true, status = 403,
                   thresholds = { ["a.b"] = 1e-300 } }
    local back = cjson.decode(assert(policy.encode(opts)))
    T.eq(back.score_header, opts.score_header)
    T.eq(back.vars, true)
    T.eq(back.status, 403)
    T.eq(back.thresholds["a.b"], 1e-300)
    -- Through Rust and back, in an option it keeps verbatim (score_header
    -- must now be a header name, which Rust checks).
    local cfg = assert(config{ metrics_dict = opts.score_header })
    T.eq(cfg.options.metrics_dict, opts.score_header)
    local _, err = policy.encode({ a = { b = { c = { d = { e = { f = { g = { h = { i = {} } } } } } } } } })
    T.contains(err, "nested too deeply")
end)

T.test("decide allocates nothing once the loop is compiled", function()
    local cfg = assert(config{ models = { bot = "b.json" }, mode = "block", allow = { "10.0.0.0/8" } })
    local p = cfg:policy({ "bot" }, { bot = 0.5 })
    local scores = ffi.new("double[1]", 0.7)
    local addr = v4(10, 0, 0, 1)
    local blocked = 0
    local function run(n)
        for i = 1, n do
            scores[0] = (i % 2 == 0) and 0.7 or 0.1
            local action = p:decide(scores, i % 3 == 0 and addr or "\192\0\2\1", 4)
            if action == "block" then
                blocked = blocked + 1
            end
        end
    end
    -- Interpreted iterations box the decision struct; the compiled trace
    -- sinks it. Warm up until the loop is compiled, then count.
    run(2000)
    collectgarbage("stop")
    local before = collectgarbage("count")
    run(20000)
    local grown = collectgarbage("count") - before
    collectgarbage("restart")
    T.ok(blocked > 0, "some blocked")
    T.ok(grown < 1, "Lua heap grew by " .. grown .. " KiB over 20000 decisions")
end)

T.test("edgeguard_access from LuaJIT: the shim's handles, Lua strings, one call", function()
    local header_set = require "resty.edgeguard.header_set"
    local scorer_mod = require "resty.edgeguard.scorer"
    local list = assert(header_set.parse(lib, "x-internal-user-id\n", "t"))
    local cfg = assert(config{ models = { bot = "models/bot.json", spoof = "models/spoof.json" }, mode = "block" })
    local scorer = assert(scorer_mod.load(lib, cfg.options.models))
    -- The policy's strip set: the list and the score header's spellings.
    local p = cfg:policy(scorer.names, scorer.thresholds, list)
    T.ok(p.strip_set, "a strip set")
    T.eq(cfg:policy(scorer.names, scorer.thresholds).strip_set:len(), 0, "without the list: the spellings alone")
    local headers = T.header_array{
        { "User-Agent", "curl/8.1.2" }, { "X-Bot-Score", "bot=0" }, { "x-internal-user-id", "1" },
        { "x_bot_score", "bot=0" }, { "Accept", "*/*" },
    }
    local req = ffi.new("edgeguard_request")
    req.method.data, req.method.len = "GET", 3
    req.uri.data, req.uri.len = "/", 1
    req.client_addr.data, req.client_addr.len = "192.0.2.1", 9
    req.http_version = 11
    req.headers, req.headers_len = headers, 5
    local clear = ffi.new("uint32_t[5]")
    local out = ffi.new("edgeguard_access_out[1]")
    local text = ffi.new("uint8_t[?]", 4096)
    local rc = lib.edgeguard_access(scorer.handle, p.handle, nil, req, nil, 0, 1800000000, clear, 5, scorer.out, scorer.n,
                                    text, 4096, out)
    T.eq(rc, 0)
    local o = out[0]
    T.eq(tonumber(o.clear_len), 2, "the internal header and the other spelling; the exact one stays")
    T.eq(clear[0], 2)
    T.eq(clear[1], 3)
    T.eq(tonumber(o.matched), 1)
    T.eq(tonumber(o.scores_len), 2)
    T.eq(policy.ACTIONS[tonumber(o.decision.action)], "block")
    T.eq(o.decision.status, 403)
    T.eq(o.label.len, 0)
    local scores = scorer:scores_of_out()
    T.eq(scores.bot, scorer:score(req).bot, "the same score as edgeguard_scorer_score")
    -- The texts the shim sets and logs, as string.format wrote them.
    local function at(span)
        return ffi.string(text + span.offset, span.len)
    end
    T.eq(at(o.text.scores), string.format("bot=%.9g; spoof=%.9g", scores.bot, scores.spoof))
    T.eq(at(o.text.values[1]), string.format("%.9g", scores.spoof))
    local name = scorer.names[o.decision.model + 1]
    T.eq(at(o.text.line), string.format('edgeguard action=block model=%s score=%.6f threshold=%.6f client=192.0.2.1 '
                                        .. 'method=GET uri="/"', name, scores[name], o.decision.threshold))
    -- Refused: a policy bound to another number of models than the scorer.
    local p1 = cfg:policy({ "bot" })
    T.eq(lib.edgeguard_access(scorer.handle, p1.handle, nil, req, nil, 0, 1800000000, clear, 5, scorer.out, scorer.n,
                              text, 4096, out), 3)
end)

T.run()
