-- CIDR allowlists: parsing and matching of IPv4 and IPv6 blocks.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"
local cidr = require "resty.edgeguard.cidr"

local function v4(a, b, c, d)
    return string.char(a, b, c, d)
end

local function v6(...)
    local words, out = { ... }, {}
    for _, w in ipairs(words) do
        out[#out + 1] = string.char(math.floor(w / 256), w % 256)
    end
    return table.concat(out)
end

T.test("IPv4 blocks match by prefix, host bits ignored", function()
    local rules = assert(cidr.compile{ "192.0.2.77/24", "10.0.0.0/8", "198.51.100.7" })
    T.ok(cidr.match(rules, v4(192, 0, 2, 1)), "192.0.2.1 in 192.0.2.0/24")
    T.ok(cidr.match(rules, v4(10, 255, 1, 2)), "10.255.1.2 in 10/8")
    T.ok(cidr.match(rules, v4(198, 51, 100, 7)), "exact address")
    T.ok(not cidr.match(rules, v4(198, 51, 100, 8)), "neighbour of an exact address")
    T.ok(not cidr.match(rules, v4(192, 0, 3, 1)), "next /24")
    T.ok(not cidr.match(rules, v4(11, 0, 0, 0)), "outside 10/8")
end)

T.test("odd prefix lengths compare the partial byte", function()
    local rules = assert(cidr.compile{ "172.16.0.0/12" })
    T.ok(cidr.match(rules, v4(172, 31, 255, 255)))
    T.ok(cidr.match(rules, v4(172, 16, 0, 0)))
    T.ok(not cidr.match(rules, v4(172, 32, 0, 0)))
    T.ok(not cidr.match(rules, v4(172, 15, 255, 255)))
    local all = assert(cidr.compile{ "0.0.0.0/0" })
    T.ok(cidr.match(all, v4(8, 8, 8, 8)))
    T.ok(not cidr.match(all, v6(0, 0, 0, 0, 0, 0, 0, 1)), "a v4 rule never matches v6")
end)

T.test("IPv6 blocks, :: in every position, embedded IPv4", function()
    local rules = assert(cidr.compile{ "2001:db8::/32", "::1", "fe80::/10", "::ffff:192.0.2.0/120" })
    T.ok(cidr.match(rules, v6(0x2001, 0x0db8, 1, 2, 3, 4, 5, 6)))
    T.ok(not cidr.match(rules, v6(0x2001, 0x0db9, 0, 0, 0, 0, 0, 0)))
    T.ok(cidr.match(rules, v6(0, 0, 0, 0, 0, 0, 0, 1)))
    T.ok(cidr.match(rules, v6(0xfebf, 0, 0, 0, 0, 0, 0, 9)))
    T.ok(not cidr.match(rules, v6(0xfec0, 0, 0, 0, 0, 0, 0, 9)))
    T.ok(cidr.match(rules, v6(0, 0, 0, 0, 0, 0xffff, 0xc000, 0x0263)))
    local full = assert(cidr.parse("1:2:3:4:5:6:7:8"))
    T.eq(full.bytes, v6(1, 2, 3, 4, 5, 6, 7, 8))
    T.eq(full.bits, 128)
end)

T.test("matching reads a C buffer as nginx hands it over", function()
    local rules = assert(cidr.compile{ "127.0.0.0/8" })
    local buf = ffi.new("unsigned char[4]", 127, 0, 0, 1)
    T.ok(cidr.match(rules, buf, 4))
    buf[0] = 128
    T.ok(not cidr.match(rules, buf, 4))
end)

T.test("bad blocks are refused with the entry named", function()
    for _, bad in ipairs{ "256.0.0.1", "1.2.3", "10.0.0.0/33", "::1/129", "1::2::3", "1:2:3:4:5:6:7:8:9",
                          "01.2.3.4", "example.com", "10.0.0.0/", "" } do
        local rules, err = cidr.compile{ "10.0.0.0/8", bad }
        T.eq(rules, nil, bad)
        T.contains(err, "allow[2]", bad)
    end
    local _, err = cidr.compile("10.0.0.0/8")
    T.contains(err, "list")
end)

T.run()
