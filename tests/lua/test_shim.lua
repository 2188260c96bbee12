-- The Lua shim outside nginx: loading the library, configure(), header sets.
-- Run from the repository root with EDGEGUARD_LIB pointing at the library.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local load_errors = require "handles.metrics"
local ffi = require "ffi"

local LIB = assert(os.getenv("EDGEGUARD_LIB"), "set EDGEGUARD_LIB to libedgeguard.so")

local tmpfile = T.tmpfile

-- Runs a Lua snippet in a fresh luajit (a fresh VM: nothing loaded yet).
local function fresh_vm(code, env)
    local script = tmpfile('package.path = "./lua/?.lua;" .. package.path\n' .. code)
    local p = assert(io.popen((env or "") .. " luajit " .. script .. " 2>&1"))
    local out = p:read("*a")
    p:close()
    os.remove(script)
    return out
end

local header_array = T.header_array

local edgeguard = require "resty.edgeguard"
local header_set = require "handles.header_set"

T.test("module has a version, and the library reports the same one", function()
    T.eq(type(edgeguard._VERSION), "string")
    local list = tmpfile("x-internal-user-id\n")
    assert(edgeguard.configure{ internal_headers = list, lib_path = LIB })
    os.remove(list)
    T.eq(edgeguard.library_version(), edgeguard._VERSION)
end)

T.test("misuse raises at the caller's line", function()
    local err = T.raises(function() edgeguard.configure("nope") end)
    T.contains(err, "test_shim.lua:")
    T.contains(err, "expects a table")
    err = T.raises(function() edgeguard.configure{ internal_header = "typo" } end)
    T.contains(err, "unknown option 'internal_header'")
    err = T.raises(function() edgeguard.configure{ internal_headers = 42 } end)
    T.contains(err, "internal_headers: must be a non-empty path string, got number")
end)

T.test("clear_internal_headers outside nginx is misuse", function()
    local err = T.raises(function() edgeguard.clear_internal_headers() end)
    T.contains(err, "needs nginx's http subsystem")
end)

T.test("a missing list returns nil, err and keeps the previous set", function()
    local before = edgeguard.internal_headers()
    T.ok(before, "a set from the first test")
    local ok, err = edgeguard.configure{ internal_headers = "/nonexistent/list.txt" }
    T.eq(ok, nil)
    T.contains(err, "/nonexistent/list.txt")
    T.ok(edgeguard.internal_headers() == before, "previous set still in force")
end)

T.test("a bad list names file and line and keeps the previous set", function()
    local before = edgeguard.internal_headers()
    local path = tmpfile("x-ok\n\n# comment\nx-b*d\n")
    local ok, err = edgeguard.configure{ internal_headers = path }
    os.remove(path)
    T.eq(ok, nil)
    T.contains(err, path .. ":4")
    T.ok(edgeguard.internal_headers() == before, "previous set still in force")
end)

T.test("header_set.parse names the source in errors", function()
    local lib = require("resty.edgeguard.lib").load(LIB)
    local set, err = header_set.parse(lib, "x-fine\nbad name\n", "inline-list")
    T.eq(set, nil)
    T.contains(err, "inline-list:2")
    T.raises(function() header_set.parse(lib, nil) end)
end)

T.test("find reports each internal name once and counts every entry", function()
    local lib = require("resty.edgeguard.lib").load(LIB)
    local set = assert(header_set.parse(lib, "x-internal-user-id\nx-edge-*\n", "t"))
    T.eq(set:len(), 2)
    local arr = header_array{
        { "accept", "*/*" },
        { "x-internal-user-id", "1" },
        { "x-edge-route", "eu" },
        { "X-Internal-User-Id", "2" },
        { "x_internal_user_id", "3" },
        { "user-agent", "curl/8" },
    }
    local clear, n, matched = set:find(arr, 6)
    T.eq(matched, 4, "entries matched")
    T.eq(n, 3, "distinct names to clear")
    T.eq(clear[0], 1)
    T.eq(clear[1], 2)
    T.eq(clear[2], 4)
    local none_clear, none, zero = set:find(arr, 1)
    T.ok(none_clear ~= nil)
    T.eq(none, 0)
    T.eq(zero, 0)
end)

T.test("models load into a scorer; options are checked", function()
    local list = tmpfile("x-internal-user-id\n")
    local ok, model_err = edgeguard.configure{
        internal_headers = list,
        models = { spoof = "models/spoof.json", bot = "models/bot.json" },
        mode = "block",
        thresholds = { bot = 0.9 },
        allow = { "10.0.0.0/8", "2001:db8::/32" },
        status = 429,
    }
    T.eq(ok, true)
    T.eq(model_err, nil)
    local names = edgeguard.models()
    T.eq(#names, 2)
    T.eq(names[1], "bot", "models are scored in name order")
    T.eq(names[2], "spoof")

    T.contains(T.raises(function() edgeguard.configure{ mode = "deny" } end), 'mode: must be "block"')
    T.contains(T.raises(function() edgeguard.configure{ status = 200 } end), "status: must be")
    T.contains(T.raises(function() edgeguard.configure{ thresholds = { bot = "high" } } end),
               "thresholds.bot: must be a number")
    T.contains(T.raises(function() edgeguard.configure{ allow = { "10.0.0.0/33" } } end), "allow[0]")
    T.contains(T.raises(function() edgeguard.configure{ models = { bot = 1 } } end),
               "models.bot: must be a non-empty path string")
    os.remove(list)
end)

T.test("with models in force, a model that fails to load is refused; the old state stays", function()
    local list = tmpfile("x-internal-user-id\n")
    assert(edgeguard.configure{ internal_headers = list, models = { bot = "models/bot.json" }, mode = "block" })
    T.eq(edgeguard.models()[1], "bot")
    local ok, err = edgeguard.configure{
        internal_headers = list, models = { bot = "/nonexistent/bot.json" }, mode = "log",
    }
    os.remove(list)
    T.eq(ok, nil)
    T.contains(err, "/nonexistent/bot.json")
    T.contains(err, "models not loaded, so this configuration is refused")
    T.eq(edgeguard.models()[1], "bot", "the previous models stay in force")
end)

T.test("without models in force, a model that fails to load is refused all the same", function()
    local list = tmpfile("x-internal-user-id\n")
    -- A configuration without models is in force: nothing to keep, still refused.
    assert(edgeguard.configure{ internal_headers = list })
    local ok, err = edgeguard.configure{ internal_headers = list, models = { bot = "/nonexistent/bot.json" } }
    T.eq(ok, nil)
    T.contains(err, "/nonexistent/bot.json")
    T.contains(err, "models not loaded, so this configuration is refused")
    T.eq(edgeguard.models(), nil, "the configuration in force (no models) stays")
    -- fail_closed changes nothing: a file that does not load never serves.
    T.eq(edgeguard.configure{ internal_headers = list, models = { bot = "/nonexistent/bot.json" },
                              fail_closed = true }, nil)
    os.remove(list)
end)

T.test("a fresh process refuses a model that fails to load (nginx's first start, nginx -t)", function()
    local list = tmpfile("x-internal-user-id\n")
    local out = fresh_vm(
        'local eg = require "resty.edgeguard"\n'
            .. 'print(eg.configure{ internal_headers = "' .. list .. '", lib_path = "' .. LIB
            .. '", models = { bot = "/nonexistent/bot.json" } })'
    )
    os.remove(list)
    T.contains(out, "nil\tmodels not loaded, so this configuration is refused")
    T.contains(out, "/nonexistent/bot.json")
end)

-- A scratch directory holding a config file and what its relative paths name.
local function config_dir(json)
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. "/lists && cp models/bot.json " .. dir .. "/"))
    local f = assert(io.open(dir .. "/lists/internal.txt", "wb"))
    f:write("x-internal-user-id\nx-debug-*\n")
    f:close()
    f = assert(io.open(dir .. "/edgeguard.json", "wb"))
    f:write(json)
    f:close()
    return dir, dir .. "/edgeguard.json"
end

-- Exit status and output of `edgeguard replay --config path` on no input.
local function replay_accepts(path)
    local bin = LIB:gsub("libedgeguard%.so$", "edgeguard")
    -- LuaJIT's popen close does not return the exit status: echo it.
    local p = assert(io.popen(bin .. " replay --config " .. path
        .. " --threads 1 --no-progress /dev/null 2>&1; echo \"exit=$?\""))
    local out = p:read("*a")
    p:close()
    return out:match("exit=(%d+)%s*$") == "0", out
end

T.test("config = a JSON file: the options replay reads, paths relative to it", function()
    local dir, path = config_dir([[{
        "internal_headers": "lists/internal.txt",
        "models": { "bot": "bot.json" },
        "mode": "block", "thresholds": { "bot": 0.5 }, "allow": ["10.0.0.0/8"], "status": 429,
        "vars": true, "fail_closed": false, "score_header": "X-Score", "log_level": 7
    }]])
    local ok, err = edgeguard.configure{ config = path, lib_path = LIB, mode = "log" }
    T.eq(err, nil)
    T.eq(ok, true)
    T.eq(edgeguard.models()[1], "bot")
    local lib = require("resty.edgeguard.lib").load(LIB)
    T.eq(tonumber(lib.edgeguard_header_set_len(edgeguard.internal_headers())), 2,
         "the list the file names, relative to it")
    T.ok(replay_accepts(path), "edgeguard replay reads the same file")
    os.execute("rm -rf " .. dir)
end)

T.test("a bad config file is refused with its name; the previous state stays", function()
    local before = edgeguard.models()
    local cases = {
        { "not json", "not JSON" },
        { "[1, 2]", "must be a JSON object" },
        { '{"engine": "lua"}', "unknown option 'engine'" },
        { '{"mode": "deny"}', 'mode: must be "block", "log", "off" or "challenge", got "deny"' },
        { '{"status": "403"}', "status: must be an HTTP error status (400-599)" },
        { '{"thresholds": {"bot": "high"}}', "thresholds.bot: must be a number" },
        { '{"models": {"bot": 7}}', "models.bot: must be a non-empty path string" },
        { '{"internal_headers": "lists/missing.txt"}', "lists/missing.txt" },
    }
    for _, case in ipairs(cases) do
        local dir, path = config_dir(case[1])
        local ok, err = edgeguard.configure{ config = path, lib_path = LIB }
        T.eq(ok, nil, case[1])
        T.contains(err, path:match("^(.*/)") , case[1])
        T.contains(err, case[2], case[1])
        if case[2]:match("^unknown") or case[2]:match("^mode") then
            local accepted, out = replay_accepts(path)
            T.eq(accepted, false, "replay refuses " .. case[1] .. " too: " .. out)
        end
        os.execute("rm -rf " .. dir)
    end
    local ok, err = edgeguard.configure{ config = "/nonexistent/edgeguard.json", lib_path = LIB }
    T.eq(ok, nil)
    T.contains(err, "/nonexistent/edgeguard.json")
    local after = edgeguard.models()
    T.eq(after and after[1], before and before[1], "previous configuration still in force")
end)

T.test("score and access outside nginx are misuse", function()
    T.contains(T.raises(function() edgeguard.access() end), "needs nginx's http subsystem")
    T.contains(T.raises(function() edgeguard.access("block") end), "expects a table")
    T.contains(T.raises(function() edgeguard.access{ models = {} } end), "unknown option 'models'")
end)

T.test("the library search names every path tried", function()
    local out = fresh_vm(
        'package.cpath = "/nonexistent-a/?.so;/nonexistent-b/?.so"\n'
            .. 'local lib, err = require("resty.edgeguard.lib").load("/nonexistent/explicit.so")\n'
            .. "print(lib, err)",
        "EDGEGUARD_LIB=/nonexistent/env.so"
    )
    T.contains(out, "/nonexistent/explicit.so (not found)")
    T.contains(out, "/nonexistent/env.so (not found)")
    T.contains(out, "/nonexistent-a/libedgeguard.so (not found)")
    T.contains(out, "/nonexistent-b/libedgeguard.so (not found)")
    T.contains(out, "system search path")
end)

T.test("handles are freed by the garbage collector", function()
    local lib = require("resty.edgeguard.lib").load(LIB)
    -- Thousands of sets would exhaust nothing if freed; this only checks
    -- that finalizers run without crashing (leaks are valgrind's job).
    for _ = 1, 2000 do
        assert(header_set.parse(lib, "x-a\nx-b*\n", "gc"))
    end
    collectgarbage()
    collectgarbage()
end)

T.test("engine options are checked at configure and per location", function()
    T.contains(T.raises(function() edgeguard.configure{ engine = "python" } end),
               'engine: must be "rust", "lua" or "shadow", got "python"')
    T.contains(T.raises(function() edgeguard.configure{ engine = 1 } end),
               'engine: must be "rust", "lua" or "shadow", got number')
    T.contains(T.raises(function() edgeguard.configure{ engine = "shadow", shadow_primary = "go" } end),
               'shadow_primary: must be "rust" or "lua"')
    T.contains(T.raises(function() edgeguard.configure{ shadow_primary = "lua" } end),
               'shadow_primary needs engine = "shadow"')
    T.contains(T.raises(function() edgeguard.configure{ lua_models = { bot = "models/bot.json" } } end),
               'lua_models needs engine = "lua" or "shadow"')
    T.contains(T.raises(function() edgeguard.configure{ metrics_dict = 5 } end),
               "metrics_dict: must be a string, got number")
    -- Checked before anything else in access, so it raises here too.
    local err = T.raises(function() edgeguard.access{ engine = "lus" } end)
    T.contains(err, 'engine: must be "rust", "lua" or "shadow", got "lus"')
    T.contains(err, "test_shim.lua:")
    T.contains(T.raises(function() edgeguard.access{ shadow_primary = "lua" } end),
               "unknown option 'shadow_primary'")
end)

T.test("engine = shadow loads both engines with the same model names", function()
    local list = tmpfile("x-internal-user-id\n")
    local ok, model_err = edgeguard.configure{
        internal_headers = list, lib_path = LIB, engine = "shadow",
        -- Both engines read schema 1 (the Lua engine computes no other).
        models = { spoof = "models/legacy/spoof.json", bot = "models/legacy/bot.json" },
    }
    os.remove(list)
    T.eq(model_err, nil)
    T.eq(ok, true)
    T.eq(edgeguard.engine(), "shadow")
    local names = edgeguard.models()
    T.eq(names[1], "bot")
    T.eq(names[2], "spoof")
end)

T.test("engine = lua with a bad list fails closed and names the line", function()
    local before = edgeguard.engine()
    local path = tmpfile("x-ok\nx-b*d\n")
    local ok, err = edgeguard.configure{ internal_headers = path, lib_path = LIB, engine = "lua" }
    os.remove(path)
    T.eq(ok, nil)
    T.contains(err, path .. ":2")
    T.eq(edgeguard.engine(), before, "previous configuration still in force")
end)

T.test("a Lua-only model that fails to load is refused, like the Rust one", function()
    local list = tmpfile("x-internal-user-id\n")
    local opts = {
        internal_headers = list, lib_path = LIB, engine = "shadow",
        models = { bot = "models/bot.json" }, lua_models = { bot = "/nonexistent/lua-bot.json" },
    }
    -- Models are in force from the previous test: refused.
    local ok, err = edgeguard.configure(opts)
    T.eq(ok, nil)
    T.contains(err, "(on a reload, nginx keeps the running workers and their models): lua engine: ")
    T.contains(err, "/nonexistent/lua-bot.json")
    -- None in force: refused too.
    assert(edgeguard.configure{ internal_headers = list, lib_path = LIB })
    ok, err = edgeguard.configure(opts)
    os.remove(list)
    T.eq(ok, nil)
    T.contains(err, "lua engine: ")
    T.contains(err, "/nonexistent/lua-bot.json")
    T.eq(edgeguard.models(), nil, "the configuration in force stays")
end)

T.test("metrics without metrics_dict is misuse", function()
    T.contains(T.raises(function() edgeguard.metrics() end), "no metrics; configure{ metrics_dict")
end)

T.test("metrics text: cumulative buckets, count from +Inf, escaped labels", function()
    local metrics = require "resty.edgeguard.metrics"
    local lib = T.lib()
    local store = {}
    local dict = {
        incr = function(_, k, v, init) store[k] = (store[k] or init) + v; return store[k] end,
        get = function(_, k) return store[k] end,
        add = function(_, k, v) if store[k] ~= nil then return false end; store[k] = v; return true end,
    }
    -- The registry is Rust's: the legacy engine's exports count scores and
    -- time (edgeguard_location_run counts the Rust engine's itself).
    local cfg = assert(require("handles.config").new(lib, { engine = "rust" }, "test"))
    local mx = assert(metrics.new(lib, cfg, dict, { 'a"b' }))
    mx:request("rust", "block", 3)
    mx:request("rust", "pass", 0)
    lib.edgeguard_metrics_scores(mx.handle, 0, ffi.new("double[1]", 0.25), 1)
    lib.edgeguard_metrics_scores(mx.handle, 0, ffi.new("double[1]", 2), 1)
    lib.edgeguard_metrics_engine_time(mx.handle, 0, 3e-6)
    load_errors.count_load_errors(mx, "g1", 2)
    load_errors.count_load_errors(mx, "g1", 2)
    local text = mx:text()
    T.contains(text, 'edgeguard_requests_total{engine="rust"} 2\n')
    T.contains(text, "edgeguard_headers_stripped_total 3\n")
    T.contains(text, 'edgeguard_decisions_total{action="block"} 1\n')
    T.contains(text, 'edgeguard_score_bucket{model="a\\"b",engine="rust",le="0.2"} 0\n')
    T.contains(text, 'edgeguard_score_bucket{model="a\\"b",engine="rust",le="0.3"} 1\n')
    T.contains(text, 'edgeguard_score_bucket{model="a\\"b",engine="rust",le="1"} 1\n')
    T.contains(text, 'edgeguard_score_bucket{model="a\\"b",engine="rust",le="+Inf"} 2\n')
    T.contains(text, 'edgeguard_score_sum{model="a\\"b",engine="rust"} 2.25\n')
    T.contains(text, 'edgeguard_score_count{model="a\\"b",engine="rust"} 2\n')
    T.contains(text, 'edgeguard_engine_seconds_bucket{engine="rust",le="2.5e-06"} 0\n')
    T.contains(text, 'edgeguard_engine_seconds_bucket{engine="rust",le="5e-06"} 1\n')
    T.contains(text, "edgeguard_load_errors_total 2\n", "counted once per generation")
    T.contains(text, "# TYPE edgeguard_score histogram\n")
    local clock = require("resty.edgeguard.legacy.driver").clock
    local t0 = clock()
    T.ok(clock() >= t0, "monotonic")
end)

T.test("a config file's bad entry is nil, err naming the file, the option and the entry from 0", function()
    local before = edgeguard.models()
    for _, case in ipairs{
        { '{"allow": ["10.0.0.0/33"]}', "allow[0]: prefix length 33 too long in '10.0.0.0/33'" },
        { '{"allow": ["10.0.0.0/8", "2001:db8::/32", "nope"]}', "allow[2]: invalid address in CIDR block 'nope'" },
        { '{"allow": ["10.0.0.0/8", 7]}', "allow[1]: must be a CIDR block string, got number" },
        { '{"lib_path": "/x/libedgeguard.so"}',
          "lib_path: unknown option 'lib_path' in a configuration file (it is an nginx.conf option: give it to configure{})" },
        { '{"models": {"bot": "bot.json"}, "thresholds": {"bto": 0.5}}', "thresholds.bto: no model of that name" },
    } do
        local dir, path = config_dir(case[1])
        local ok, err = edgeguard.configure{ config = path, lib_path = LIB }
        T.eq(ok, nil, case[1])
        T.eq(err, path .. ": " .. case[2], case[1])
        os.execute("rm -rf " .. dir)
    end
    local after = edgeguard.models()
    T.eq(after and after[1], before and before[1], "previous configuration still in force")
    -- The same entry in the table itself is misuse, numbered the same way.
    local err = T.raises(function() edgeguard.configure{ allow = { "10.0.0.0/8", "10.0.0.0/33" } } end)
    T.contains(err, "test_shim.lua:")
    T.contains(err, "edgeguard.configure: allow[1]: prefix length 33 too long in '10.0.0.0/33'")
    T.contains(T.raises(function() edgeguard.configure{ lib_path = 7 } end),
               "edgeguard.configure: lib_path: must be a path string, got number")
end)

T.test("model order is the configuration's, whatever the table's", function()
    assert(edgeguard.configure{ lib_path = LIB,
                                models = { spoof = "models/spoof.json", bot = "models/bot.json" } })
    local names = edgeguard.models()
    T.eq(names[1], "bot")
    T.eq(names[2], "spoof")
end)

T.test("access{} options are resolved by Rust once per location; misuse raises at first use", function()
    assert(edgeguard.configure{ lib_path = LIB, models = { bot = "models/bot.json" }, mode = "block" })
    local function at_first_use(opts)
        return T.raises(function() edgeguard.access(opts) end)
    end
    -- Resolved (nothing to raise but the missing nginx), cached, and again.
    local opts = { mode = "log", thresholds = { bot = 0.2 }, status = 429 }
    T.contains(at_first_use(opts), "needs nginx's http subsystem")
    T.contains(at_first_use(opts), "needs nginx's http subsystem")
    T.contains(at_first_use{ mode = "log", thresholds = { bot = 0.2 }, status = 429 },
               "needs nginx's http subsystem")
    local err = at_first_use{ mode = "deny" }
    T.contains(err, "test_shim.lua:")
    T.contains(err, 'edgeguard.access: mode: must be "block", "log", "off" or "challenge", got "deny"')
    T.contains(at_first_use{ thresholds = { bto = 0.5 } }, "edgeguard.access: thresholds.bto: no model of that name")
    T.contains(at_first_use{ status = 200 }, "edgeguard.access: status: must be an HTTP error status")
    T.contains(at_first_use{ allow = { "10.0.0.0/8" } },
               "edgeguard.access: allow: unknown option 'allow' per location (give it to configure{})")
    T.contains(at_first_use{ engine = "lua" }, 'engine "lua" was not loaded')
    T.contains(at_first_use{ score_header = "X-*" }, 'score_header "X-*" is not a header name')
    T.contains(at_first_use{ vars = print }, "option 'vars' must not be a function")
    -- A bad table stays bad: it is not cached.
    T.contains(at_first_use{ mode = "deny" }, "mode: must be")
end)

T.run()
