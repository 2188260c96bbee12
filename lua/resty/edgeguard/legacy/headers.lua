-- Internal header stripping in Lua: the legacy engine's.
--
-- Part of the legacy engine, FROZEN: see resty/edgeguard/legacy/engine.lua for what
-- it is for. Not a second implementation to keep in step with Rust; its
-- outputs are pinned by tests/fixtures/legacy/.
--
-- The list format and its accept/reject rules are those the Rust parser had
-- when this engine was frozen, so that a list one engine refuses the other
-- refuses at the same line (tests/lua/test_lua_headers.lua checks the
-- verdicts and line numbers). The messages are this module's own wording,
-- pinned by tests/fixtures/legacy/, not copies of Rust's. Matching is the
-- Rust rule too: ASCII case folded, `_` read as `-`, exact names and prefix
-- rules.
--
-- strip() is the algorithm a Lua module used before the Rust one:
-- ngx.req.clear_header for every exact name of the list, then one pass over
-- ngx.req.get_headers(0, true) for what exact names cannot catch (prefix
-- rules, and `_` spellings, which clear_header does not fold).

local byte = string.byte
local find = string.find
local format = string.format
local gsub = string.gsub
local lower = string.lower
local sort = table.sort
local sub = string.sub
local io_open = io.open
local pairs = pairs
local tostring = tostring
local type = type
local error = error

local _M = { _VERSION = "0.1.0" }

-- headers::MAX_NAME_LEN.
local MAX_NAME_LEN = 256

-- list::is_name_byte: RFC 9110 tchar less `#`.
local NOT_NAME_BYTE = "[^0-9A-Za-z!$%%&'*+%-.^_`|~]"
-- Rust's u8::is_ascii_whitespace.
local WS_CLASS = "[ \t\n\f\r]"
local NOT_WS = "[^ \t\n\f\r]"

-- ASCII case folded and `_` read as `-` (headers::matcher::fold).
local function fold(name)
    local l = lower(name)
    if find(l, "_", 1, true) then
        l = gsub(l, "_", "-")
    end
    return l
end

-- u8::escape_ascii, as Rust quotes list entries in errors.
local ESCAPES = { [9] = "\\t", [10] = "\\n", [13] = "\\r", [34] = '\\"', [39] = "\\'",
                  [92] = "\\\\" }
local function escape_ascii(s)
    return (gsub(s, "[%z\1-\31\"'\\\127-\255]", function(c)
        local b = byte(c)
        return ESCAPES[b] or format("\\x%02x", b)
    end))
end

-- list::Shown: escaped, and cut at 64 bytes.
local function shown(s)
    if #s > 64 then
        return escape_ascii(sub(s, 1, 64)) .. "..."
    end
    return escape_ascii(s)
end

-- list::parse_line: nil for a blank or comment line, or the folded name and
-- whether it is a prefix rule; or false and what is wrong.
local function parse_line(raw)
    local first = find(raw, NOT_WS)
    if not first or byte(raw, first) == 35 then -- '#'
        return nil
    end
    local indent = first - 1
    local last = #raw
    while find(sub(raw, last, last), WS_CLASS) do
        last = last - 1
    end
    local content = sub(raw, first, last)
    local name_end = (find(content, WS_CLASS) or #content + 1) - 1
    local name = sub(content, 1, name_end)
    local pos = find(name, NOT_NAME_BYTE)
    if pos then
        local b = byte(name, pos)
        local why = b == 35 and " (a comment after a name needs whitespace before the `#`)"
            or " (only RFC 9110 token characters)"
        return false, format("\"%s\": byte 0x%02x ('%s') at column %d is not allowed in a "
                             .. "header name%s", shown(name), b, escape_ascii(sub(name, pos, pos)),
                             indent + pos, why)
    end
    local rest = find(content, NOT_WS, name_end + 1)
    if rest and byte(content, rest) ~= 35 then
        return false, format("\"%s\": whitespace inside a header name (a comment after a "
                             .. "name starts with \" #\")", shown(content))
    end
    local body, prefix = name, false
    if byte(name, -1) == 42 then -- '*'
        body, prefix = sub(name, 1, -2), true
    end
    if find(body, "*", 1, true) then
        return false, format("\"%s\": `*` is only allowed as the last character "
                             .. "(a prefix rule)", shown(name))
    end
    if prefix and body == "" then
        return false, "a bare `*` would match every header; write a prefix before it"
    end
    if #body > MAX_NAME_LEN then
        return false, format("a name of %d bytes; the limit is %d", #body, MAX_NAME_LEN)
    end
    return fold(body), prefix
end

-- Parses a list held in a string; `source` names it in errors. Returns the
-- list, or nil and "source:line: what".
function _M.parse(text, source)
    if type(text) ~= "string" then
        error("internal header list must be a string", 2)
    end
    source = source or "<buffer>"
    local exact, prefixes, seen_prefix = {}, {}, {}
    local names = {}
    local line, pos = 0, 1
    local len = #text
    while pos <= len + 1 do
        line = line + 1
        local nl = find(text, "\n", pos, true)
        local raw = sub(text, pos, (nl or len + 1) - 1)
        local name, prefix = parse_line(raw)
        if name == false then
            return nil, source .. ":" .. line .. ": " .. prefix
        end
        if name then
            if prefix then
                if not seen_prefix[name] then
                    seen_prefix[name] = true
                    prefixes[#prefixes + 1] = name
                end
            elseif not exact[name] then
                exact[name] = true
                names[#names + 1] = name
            end
        end
        if not nl then
            break
        end
        pos = nl + 1
    end
    if #names == 0 and #prefixes == 0 then
        return nil, source .. ": no header names in the list; an empty list would strip "
            .. "nothing, so it is refused (truncated or wrong file?)"
    end
    sort(names)
    sort(prefixes)
    return { exact = exact, names = names, prefixes = prefixes, n = #names + #prefixes }
end

-- Reads and parses a list file. Returns the list, or nil and an error that
-- names the file (and the line).
function _M.load(path)
    if type(path) ~= "string" then
        error("internal header list path must be a string", 2)
    end
    local f, err = io_open(path, "rb")
    if not f then
        return nil, err
    end
    local text, rerr = f:read("*a")
    f:close()
    if not text then
        return nil, path .. ": " .. tostring(rerr)
    end
    return _M.parse(text, path)
end

-- Whether a header of this name must be stripped.
local function is_internal(list, name)
    local folded = fold(name)
    if list.exact[folded] then
        return true
    end
    local prefixes = list.prefixes
    for i = 1, #prefixes do
        local p = prefixes[i]
        if #folded >= #p and sub(folded, 1, #p) == p then
            return true
        end
    end
    return false
end
_M.is_internal = is_internal

-- How many of req.headers[1..n_headers] are internal, repeats counted: what
-- the Rust engine's strip returns.
function _M.count(list, req)
    local headers = req.headers
    local n = 0
    for i = 1, req.n_headers or #headers do
        if is_internal(list, headers[i][1]) then
            n = n + 1
        end
    end
    return n
end

-- How many of the current request's header entries are internal, repeats
-- counted, read back from nginx (ngx.req.get_headers keeps repeats in a
-- table per raw name).
local function count_left(list, get_headers)
    local left = 0
    for name, v in pairs(get_headers(0, true)) do
        if is_internal(list, name) then
            left = left + (type(v) == "table" and #v or 1)
        end
    end
    return left
end

-- Inside nginx: removes the current request's internal headers. Returns how
-- many of req's entries (req as read_request filled it) were really removed,
-- and how many internal entries are still there.
--
-- The second number is not always 0: ngx.req.clear_header percent-escapes
-- the bytes of a name that are not RFC 9110 token characters before it
-- searches (lua-nginx-module's ngx_http_lua_copy_escaped_header, 0.10.23),
-- so a name such as `X-Internal-(a` or `X-Internal-\xe9`, which nginx
-- keeps with `ignore_invalid_headers off`, is searched as `x-internal-%28a`
-- and silently stays. So what is left is read back from nginx, never assumed.
function _M.strip(list, req)
    local ngx_req = ngx.req
    local clear_header = ngx_req.clear_header
    local get_headers = ngx_req.get_headers
    local names = list.names
    for i = 1, #names do
        clear_header(names[i])
    end
    -- What the exact names missed: prefix rules, and names spelled with `_`
    -- (clear_header compares case-insensitively but keeps `_` and `-` apart).
    local exact = list.exact
    local missed = false
    for name in pairs(get_headers(0, true)) do
        if not exact[lower(name)] and is_internal(list, name) then
            clear_header(name)
            missed = true
        end
    end
    local found = _M.count(list, req)
    -- Exact names are tokens, which clear_header removes; only a name found
    -- by the second pass can have been left.
    local left = missed and count_left(list, get_headers) or 0
    return found - left, left
end

-- Module-level helpers the tests use.
_M.fold = fold
_M.MAX_NAME_LEN = MAX_NAME_LEN

return _M
