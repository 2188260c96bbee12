-- The text resty.edgeguard.record logs for a header list, as the library
-- writes it (edgeguard_headers_record: the recorder's writer, without the
-- redaction), and record.lua outside nginx. Run from the repository root.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"

local record = require "resty.edgeguard.record"
local lib = assert(require("resty.edgeguard.lib").load())

local header_array = T.header_array
local len_out = ffi.new("size_t[1]")

-- The text of `list`, into a buffer of the length the library asks for.
local function encode(list)
    local arr, keep = header_array(list)
    T.eq(lib.edgeguard_headers_record(arr, #list, nil, 0, len_out), ffi.C.EDGEGUARD_RESULT_BUFFER_TOO_SMALL,
         "size query")
    local cap = tonumber(len_out[0])
    local buf = ffi.new("uint8_t[?]", math.max(cap, 1))
    T.eq(lib.edgeguard_headers_record(arr, #list, buf, cap, len_out), 0)
    assert(keep)
    return ffi.string(buf, len_out[0])
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

T.test("capture outside nginx is misuse", function()
    local err = T.raises(function() record.capture() end)
    T.contains(err, "needs nginx's http subsystem")
    T.contains(err, "test_record.lua:")
end)

T.run()
