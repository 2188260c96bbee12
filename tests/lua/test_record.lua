-- resty.edgeguard.record outside nginx: the text it logs for a header list.
-- Run from the repository root.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"

local record = require "resty.edgeguard.record"

local header_array = T.header_array

local function encode(list)
    local arr, keep = header_array(list)
    local text = record.encode_string(arr, #list)
    assert(keep)
    return text
end

-- A JSON string decoder for the escapes record.lua writes, written apart
-- from it: \" \\ \uXXXX (below 0x100), everything else byte for byte.
local function decode(text)
    local pairs_, i = {}, 1
    local function expect(ch)
        T.eq(text:sub(i, i), ch, "byte " .. i)
        i = i + 1
    end
    local function str()
        expect('"')
        local out = {}
        while true do
            local c = text:sub(i, i)
            if c == '"' then
                i = i + 1
                return table.concat(out)
            elseif c == "\\" then
                local e = text:sub(i + 1, i + 1)
                if e == "u" then
                    local code = tonumber(text:sub(i + 2, i + 5), 16)
                    T.ok(code and code < 0x20, "only control bytes are \\u-escaped")
                    out[#out + 1] = string.char(code)
                    i = i + 6
                else
                    T.ok(e == '"' or e == "\\", "escape \\" .. e)
                    out[#out + 1] = e
                    i = i + 2
                end
            else
                T.ok(c ~= "", "unterminated string")
                T.ok(c:byte() >= 0x20, "raw control byte")
                out[#out + 1] = c
                i = i + 1
            end
        end
    end
    expect("[")
    while text:sub(i, i) == "[" do
        i = i + 1
        local k = str()
        expect(",")
        local v = str()
        expect("]")
        pairs_[#pairs_ + 1] = { k, v }
        if text:sub(i, i) == "," then
            i = i + 1
        end
    end
    expect("]")
    T.eq(i, #text + 1, "end of text")
    return pairs_
end

T.test("no headers is an empty list", function()
    T.eq(encode({}), "[]")
end)

T.test("order, repeats and letter case are kept", function()
    T.eq(encode({ { "Host", "a" }, { "X-A", "1" }, { "x-a", "2" }, { "Accept", "" } }),
        '[["Host","a"],["X-A","1"],["x-a","2"],["Accept",""]]')
end)

T.test("quotes, backslashes and control bytes are escaped, 8-bit bytes kept", function()
    T.eq(encode({ { "User-Agent", 'say "hi" \\o/' } }), '[["User-Agent","say \\"hi\\" \\\\o/"]]')
    T.eq(encode({ { "X-Ctl", "a\tb\1\31" } }), '[["X-Ctl","a\\u0009b\\u0001\\u001f"]]')
    T.eq(encode({ { "X-8", "caf\195\169 \255\128\127" } }), '[["X-8","caf\195\169 \255\128\127"]]')
end)

T.test("every byte value round-trips", function()
    local all = {}
    for b = 0, 255 do
        all[#all + 1] = string.char(b)
    end
    local list = { { "X-All", table.concat(all) }, { "K\0\"\\\255", "v" } }
    local got = decode(encode(list))
    T.eq(#got, 2)
    T.eq(got[1][1], list[1][1])
    T.eq(got[1][2], list[1][2], "value with every byte")
    T.eq(got[2][1], list[2][1], "name")
end)

T.test("a request larger than the buffer grows it", function()
    local list = {}
    for i = 1, 300 do
        list[i] = { "X-H" .. i, string.rep("\"", 100) }
    end
    local got = decode(encode(list))
    T.eq(#got, 300)
    T.eq(got[300][2], string.rep("\"", 100))
    T.eq(encode({ { "a", "b" } }), '[["a","b"]]', "still right after growing")
end)

T.test("the text is byte for byte what the Lua encoder wrote (tests/fixtures/record)", function()
    local list = {}
    for line in T.read("tests/fixtures/record/random-headers.hex"):gmatch("[^\n]+") do
        local k, v = line:match("^(%x*):(%x*)$")
        local unhex = function(h)
            return (h:gsub("%x%x", function(x) return string.char(tonumber(x, 16)) end))
        end
        list[#list + 1] = { unhex(k), unhex(v) }
    end
    T.eq(#list, 120)
    T.ok(encode(list) == T.read("tests/fixtures/record/random-headers.json"), "same text as the fixture")
    T.eq(decode(encode(list))[120][2], list[120][2], "decoded back")
end)

T.test("capture outside nginx and bad arguments are misuse", function()
    T.contains(T.raises(function() record.capture() end), "needs nginx's http subsystem")
    local err = T.raises(function() record.encode_string(nil, -1) end)
    T.contains(err, "test_record.lua:")
end)

T.test("encode is JIT-compiled (no trace aborts)", function()
    local vmdef = require "jit.vmdef"
    local jutil = require "jit.util"
    local aborts = {}
    local function on_trace(what, _, func, pc, otr, oex)
        if what == "abort" then
            local info = jutil.funcinfo(func, pc)
            aborts[#aborts + 1] = string.format(vmdef.traceerr[otr] or tostring(otr), oex)
                .. " at " .. tostring(info.source) .. ":" .. tostring(info.currentline)
        end
    end
    local arr, keep = header_array({ { "Host", "shop.example" }, { "User-Agent", 'Mozilla "x" \\ \1' } })
    -- While LuaJIT picks where the traces start it may abort a few with
    -- "leaving loop in root trace" and start them elsewhere; only an abort
    -- once the loop has been compiled means a path that never compiles.
    for _ = 1, 2000 do
        record.encode(arr, 2)
    end
    jit.attach(on_trace, "trace")
    for _ = 1, 2000 do
        record.encode(arr, 2)
    end
    jit.attach(on_trace) -- detaches it
    assert(keep)
    T.eq(table.concat(aborts, "; "), "", "trace aborts")
end)

T.test("encode allocates nothing on the Lua heap", function()
    local list = {}
    for i = 1, 14 do
        list[i] = { "X-Header-" .. i, string.rep("v\"\1", 10) }
    end
    local arr, keep = header_array(list)
    for _ = 1, 1000 do
        record.encode(arr, #list) -- warm up: compile the traces, size the buffer
    end
    collectgarbage()
    collectgarbage("stop")
    local before = collectgarbage("count")
    for _ = 1, 20000 do
        record.encode(arr, #list)
    end
    local grown = collectgarbage("count") - before
    collectgarbage("restart")
    assert(keep)
    -- A boxed pointer per string would be ~1 KiB per call here: 20 MiB.
    T.ok(grown < 64, "Lua heap grew by " .. grown .. " KiB over 20000 calls")
end)

T.run()
