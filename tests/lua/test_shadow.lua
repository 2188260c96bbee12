-- Shadow mode's judge, outside nginx: a stand-in `ngx` records log lines.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"

local clock, lines = 100, {}
_G.ngx = {
    WARN = 5,
    now = function() return clock end,
    log = function(_, msg) lines[#lines + 1] = msg end,
    var = { request_method = "GET", request_uri = "/x", remote_addr = "192.0.2.1", request_id = "abc" },
}

local shadow = require "resty.edgeguard.legacy.shadow"

local NAMES = { "bot", "spoof" }

T.test("scores agree within the relative tolerance, on every model, and both unscored", function()
    local differ = shadow.scores_differ
    T.eq(differ(NAMES, { bot = 0.5, spoof = 0.25 }, { bot = 0.5, spoof = 0.25 }), false)
    T.eq(differ(NAMES, { bot = 0.5, spoof = 0.25 }, { bot = 0.5 * (1 + 1e-12), spoof = 0.25 }), false)
    T.eq(differ(NAMES, { bot = 0.5, spoof = 0.25 }, { bot = 0.5, spoof = 0.25 * (1 + 1e-8) }), true)
    T.eq(differ(NAMES, { bot = -2, spoof = 0 }, { bot = -2, spoof = 0 }), false)
    T.eq(differ(NAMES, { bot = 0, spoof = 0 }, { bot = 0, spoof = 1e-300 }), true)
    T.eq(differ(NAMES, { bot = 0.5 }, { bot = 0.5, spoof = 0.1 }), true, "a missing model")
    T.eq(differ(NAMES, nil, nil), false)
    T.eq(differ(NAMES, nil, { bot = 0.5, spoof = 0.25 }), true)
end)

T.test("agreement counts and logs nothing", function()
    local judge = shadow.new(NAMES, NAMES, nil, "rust")
    local s = { bot = 0.1, spoof = 0.2 }
    T.eq(judge:compare(s, s, "pass", "pass", 1, 1), 0)
    T.eq(#lines, 0)
end)

T.test("each kind is counted; one line a second, saying how many were held back", function()
    local counted = {}
    local mx = { disagreement = function(_, kind) counted[kind] = (counted[kind] or 0) + 1 end }
    local judge = shadow.new(NAMES, NAMES, mx, "lua")
    local rs, ls = { bot = 0.95, spoof = 0.2 }, { bot = 0.5, spoof = 0.2 }
    T.eq(judge:compare(rs, ls, "block", "pass", 2, 1), 3)
    T.eq(#lines, 1)
    T.contains(lines[1], "kinds=score,decision,headers primary=lua rust_action=block lua_action=pass")
    T.contains(lines[1], "rust_scores=bot=0.94999999999999996;spoof=0.20000000000000001")
    T.contains(lines[1], 'rust_headers=2 lua_headers=1 method=GET uri="/x" client=192.0.2.1 request_id=abc')
    T.contains(lines[1], "suppressed=0")
    clock = clock + 0.5
    T.eq(judge:compare(rs, rs, "pass", "block", 1, 1), 1)
    T.eq(judge:compare(rs, ls, "pass", "pass", 1, 1), 1)
    T.eq(#lines, 1, "within the second: counted, not logged")
    clock = clock + 1
    T.eq(judge:compare(nil, ls, "pass", "pass", 0, 0), 1)
    T.eq(#lines, 2)
    T.contains(lines[2], "kinds=score ")
    T.contains(lines[2], "rust_scores=none")
    T.contains(lines[2], "suppressed=2")
    T.eq(counted.score, 3)
    T.eq(counted.decision, 2)
    T.eq(counted.headers, 1)
end)

T.test("models only one engine has make every scored request differ", function()
    local judge = shadow.new({ "bot" }, NAMES, nil, "rust")
    clock = clock + 10
    T.eq(judge:compare({ bot = 0.1 }, { bot = 0.1, spoof = 0.3 }, "pass", "pass", 0, 0), 1)
    T.contains(lines[#lines], "rust_scores=bot=0.10000000000000001 lua_scores=bot=0.10000000000000001;spoof=")
end)

T.run()
