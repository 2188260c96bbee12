-- Client address allowlists: CIDR blocks parsed once at configure time,
-- matched against nginx's binary client address ($binary_remote_addr: 4
-- bytes for IPv4, 16 for IPv6) without creating strings.

local bit = require "bit"

local band = bit.band
local lshift = bit.lshift
local byte = string.byte
local char = string.char
local floor = math.floor
local ipairs = ipairs
local tonumber = tonumber
local type = type
local unpack = unpack

local _M = {}

local function parse_v4(s)
    local a, b, c, d = s:match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
    if not a then
        return nil
    end
    local out = {}
    for i, part in ipairs{ a, b, c, d } do
        local v = tonumber(part)
        if v > 255 or (#part > 1 and part:sub(1, 1) == "0") then
            return nil
        end
        out[i] = v
    end
    return out
end

local function parse_v6(s)
    if s:find(":::", 1, true) then
        return nil
    end
    local head, tail = s, nil
    local gap = s:find("::", 1, true)
    if gap then
        head, tail = s:sub(1, gap - 1), s:sub(gap + 2)
        if tail:find("::", 1, true) then
            return nil
        end
    end
    local function groups(part)
        local out = {}
        if part == "" then
            return out
        end
        for g in (part .. ":"):gmatch("([^:]*):") do
            local v4 = g:find(".", 1, true) and parse_v4(g)
            if v4 then -- an embedded IPv4 tail, as in ::ffff:192.0.2.1
                out[#out + 1] = v4[1] * 256 + v4[2]
                out[#out + 1] = v4[3] * 256 + v4[4]
            elseif g:match("^%x%x?%x?%x?$") then
                out[#out + 1] = tonumber(g, 16)
            else
                return nil
            end
        end
        return out
    end
    local h = groups(head)
    local t = tail and groups(tail) or {}
    if not h or not t then
        return nil
    end
    local missing = 8 - #h - #t
    if (gap and missing < 1) or (not gap and missing ~= 0) then
        return nil
    end
    local words = {}
    for _, w in ipairs(h) do words[#words + 1] = w end
    for _ = 1, missing do words[#words + 1] = 0 end
    for _, w in ipairs(t) do words[#words + 1] = w end
    local out = {}
    for _, w in ipairs(words) do
        out[#out + 1] = floor(w / 256)
        out[#out + 1] = w % 256
    end
    return out
end

--- Parses a CIDR block ("192.0.2.0/24", "2001:db8::/32", or one address).
-- Returns { bytes = "...", bits = n } or nil and an error.
function _M.parse(text)
    if type(text) ~= "string" then
        return nil, "a CIDR block must be a string"
    end
    local addr, bits = text:match("^([^/]+)/(%d+)$")
    addr = addr or text
    local octets = parse_v4(addr) or (addr:find(":", 1, true) and parse_v6(addr))
    if not octets then
        return nil, "invalid address in CIDR block '" .. text .. "'"
    end
    local max = #octets * 8
    bits = bits and tonumber(bits) or max
    if bits > max then
        return nil, "prefix length " .. bits .. " too long in '" .. text .. "'"
    end
    -- Zero the host bits, so the rule compares only what it covers.
    for i = 1, #octets do
        local keep = bits - (i - 1) * 8
        if keep <= 0 then
            octets[i] = 0
        elseif keep < 8 then
            octets[i] = band(octets[i], band(lshift(0xff, 8 - keep), 0xff))
        end
    end
    return { bytes = char(unpack(octets)), bits = bits }
end

--- Compiles a list of CIDR strings. Returns a matcher list, or nil and an
-- error naming the bad entry.
function _M.compile(list)
    if type(list) ~= "table" then
        return nil, "allow must be a list of CIDR blocks"
    end
    local rules = {}
    for i, text in ipairs(list) do
        local rule, err = _M.parse(text)
        if not rule then
            return nil, "allow[" .. i .. "]: " .. err
        end
        rules[#rules + 1] = rule
    end
    return rules
end

--- Whether `addr` (a pointer to `len` bytes, or a Lua string with len = nil)
-- lies in one of the compiled rules.
function _M.match(rules, addr, len)
    if type(addr) == "string" then
        len = #addr
    end
    for r = 1, #rules do
        local rule = rules[r]
        local bytes = rule.bytes
        if #bytes == len then
            local bits = rule.bits
            local ok = true
            local i = 0
            while bits >= 8 do
                local b = type(addr) == "string" and byte(addr, i + 1) or addr[i]
                if b ~= byte(bytes, i + 1) then
                    ok = false
                    break
                end
                i = i + 1
                bits = bits - 8
            end
            if ok and bits > 0 then
                local b = type(addr) == "string" and byte(addr, i + 1) or addr[i]
                local mask = band(lshift(0xff, 8 - bits), 0xff)
                ok = band(b, mask) == byte(bytes, i + 1)
            end
            if ok then
                return true
            end
        end
    end
    return false
end

return _M
