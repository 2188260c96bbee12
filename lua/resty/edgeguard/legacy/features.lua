-- Request features for bot scoring, in Lua: the legacy engine's.
--
-- Part of the legacy engine, FROZEN: see resty/edgeguard/legacy/engine.lua for what
-- it is for. Not a second implementation to keep in step with Rust; its
-- outputs are pinned by tests/fixtures/legacy/.
--
-- The same 32 float and 12 categorical features as the Rust extractor
-- (src/features/), written the way an OpenResty Lua module would compute
-- them: string.find/byte/sub over the header values, a table lookup per
-- header name. When this engine was frozen the results were bit for bit the
-- Rust extractor's schema 1 (test_lua_features.lua and shadow mode show
-- whether they still are), so every rule below was written from one there
-- (the comments name the Rust function it came from); where Lua's usual
-- idiom differs from Rust's definition, Rust's won:
--   * "whitespace" is Rust's ASCII whitespace (space, \t, \n, \f, \r): Lua's
--     %s also takes \v, so no %s anywhere;
--   * floats are f32 in Rust's schema, so each value is rounded through a
--     C float (1.1 is 1.100000023841858 there), NaN (0/0) where Rust has NaN;
--   * name comparisons fold ASCII case only (LuaJIT's string.lower does
--     exactly that).
--
-- extract(req, floats, cats) reads a request table (see read_request) and
-- fills floats[1..32] and cats[1..12]; it allocates the strings it returns
-- in cats and a few substrings, and no tables.

local ffi = require "ffi"

local byte = string.byte
local char = string.char
local find = string.find
local lower = string.lower
local sub = string.sub
local floor = math.floor
local pcall = pcall
local pairs = pairs
local tonumber = tonumber
local unpack = unpack
local type = type
local error = error

local _M = { _VERSION = "0.1.0" }

local NAN = 0 / 0
local U32_MAX = 4294967295

_M.FLOAT_NAMES = {
    "http_version", "uri_len", "path_depth", "query_arg_count", "header_count",
    "ua_len", "ua_major", "ua_mobile", "has_accept", "accept_len",
    "has_accept_language", "accept_language_count", "has_accept_encoding",
    "accept_encoding_count", "client_hint_count", "fetch_metadata_count",
    "has_upgrade_insecure_requests", "has_cookie", "cookie_count", "has_referer",
    "has_connection", "has_host", "client_ipv6", "ch_ua_major", "ch_missing",
    "ch_version_mismatch", "ch_non_chromium", "ch_platform_mismatch",
    "ch_mobile_mismatch", "fetch_non_browser", "fetch_incoherent", "order_inversions",
}

_M.CAT_NAMES = {
    "method", "uri_ext", "header_order", "ua_family", "ua_os", "ch_brand",
    "accept_language_primary", "accept", "accept_encoding", "fetch_site",
    "fetch_mode", "connection",
}

-- One C float, reused: storing a double and reading it back rounds it the
-- way Rust's `as f32` does (round to nearest even).
local f32_box = ffi.new("float[1]")
local function f32(x)
    f32_box[0] = x
    return f32_box[0]
end

-- Rust's u8::is_ascii_whitespace, as a pattern class body.
local WS = " \t\n\f\r"
local NOT_WS = "[^" .. WS .. "]"

-- Start and end (inclusive) of s[i..j] without leading and trailing ASCII
-- whitespace; i > j when nothing is left.
local function trim_bounds(s, i, j)
    local a = find(s, NOT_WS, i)
    if not a or a > j then
        return j + 1, j
    end
    local b = j
    while true do
        local c = byte(s, b)
        if c ~= 32 and c ~= 9 and c ~= 10 and c ~= 12 and c ~= 13 then
            return a, b
        end
        b = b - 1
    end
end

local function trim(s)
    local a, b = trim_bounds(s, 1, #s)
    if a == 1 and b == #s then
        return s
    end
    return sub(s, a, b)
end

-- bytes::leading_uint on s from position i: the leading ASCII digits as a
-- number, saturated at u32::MAX; nil without digits. Saturating each step
-- of a decimal parse gives min(value, MAX), so tonumber then min is the same.
local function leading_uint(s, i)
    local a, b = find(s, "^[0-9]+", i)
    if not a then
        return nil
    end
    local n = tonumber(sub(s, a, b))
    if n > U32_MAX then
        return U32_MAX
    end
    return n
end

-- bytes::items(s, sep).count(): non-empty, whitespace-trimmed items. An item
-- counts iff it holds a byte that is neither whitespace nor the separator,
-- which one scan finds without cutting substrings.
local ITEM_START = {
    [";"] = "[^" .. WS .. ";]",
    [","] = "[^" .. WS .. ",]",
}
local function count_items(s, sep)
    local pat = ITEM_START[sep]
    local n, pos = 0, 1
    while true do
        local p = find(s, pat, pos)
        if not p then
            return n
        end
        n = n + 1
        local q = find(s, sep, p, true)
        if not q then
            return n
        end
        pos = q + 1
    end
end

local function starts_with_ci(s, prefix)
    return #s >= #prefix and lower(sub(s, 1, #prefix)) == prefix
end

-- header_order::CODES: known names (lower case) and their one-byte codes.
local CODES = {
    ["host"] = "h", ["connection"] = "c", ["user-agent"] = "u", ["accept"] = "a",
    ["accept-language"] = "l", ["accept-encoding"] = "e", ["cookie"] = "k",
    ["referer"] = "r", ["upgrade-insecure-requests"] = "i", ["sec-ch-ua"] = "C",
    ["sec-ch-ua-mobile"] = "M", ["sec-ch-ua-platform"] = "P",
    ["sec-fetch-site"] = "S", ["sec-fetch-mode"] = "O", ["sec-fetch-user"] = "U",
    ["sec-fetch-dest"] = "D", ["te"] = "t", ["priority"] = "p",
    ["cache-control"] = "y", ["pragma"] = "g", ["dnt"] = "n", ["sec-gpc"] = "G",
    ["origin"] = "o", ["content-type"] = "T", ["content-length"] = "L",
    ["x-requested-with"] = "w", ["if-none-match"] = "m", ["if-modified-since"] = "m",
    ["range"] = "R", ["authorization"] = "z", ["keep-alive"] = "K",
    ["accept-charset"] = "A", ["x-forwarded-for"] = "f", ["purpose"] = "Q",
    ["sec-purpose"] = "Q",
}
for name, c in pairs(CODES) do
    CODES[name] = byte(c)
end
local OTHER_CLIENT_HINT = byte("X")
local OTHER_FETCH = byte("F")
local C_HOST, C_CONNECTION, C_UA, C_ACCEPT = byte("h"), byte("c"), byte("u"), byte("a")
local C_LANG, C_ENC, C_COOKIE, C_REFERER = byte("l"), byte("e"), byte("k"), byte("r")
local C_UIR, C_CH_UA, C_CH_MOBILE, C_CH_PLATFORM = byte("i"), byte("C"), byte("M"), byte("P")
local C_SITE, C_MODE, C_USER, C_DEST = byte("S"), byte("O"), byte("U"), byte("D")
local PLUS = byte("+")

-- header_order::code: nil for a name with no code.
local function header_code(name)
    local c = CODES[name]
    if c then
        return c
    end
    local l = lower(name)
    c = CODES[l]
    if c then
        return c
    end
    if find(l, "sec-ch-ua-", 1, true) == 1 then
        return OTHER_CLIENT_HINT
    elseif find(l, "sec-fetch-", 1, true) == 1 then
        return OTHER_FETCH
    end
    return nil
end

-- header_order canonical orders: code -> rank (0-based, as Rust's position).
local function ranks(order)
    local t = {}
    for i = 1, #order do
        t[byte(order, i)] = i - 1
    end
    return t
end
local CHROMIUM_ORDER = ranks("cyCMPXiuaSOUDFrelkp")
local FIREFOX_ORDER = ranks("ualerckiDOSUFpgyt")
local SAFARI_ORDER = ranks("aSDOurelkc")

local HEADER_ORDER_CAP = 32
local MAX_RANKED = 64

-- User-Agent families (user_agent::Family): name, browser?, chromium?, order.
local F_NONE = { name = "none" }
local F_CHROME = { name = "chrome", browser = true, chromium = true, order = CHROMIUM_ORDER }
local F_HEADLESS = { name = "headless-chrome", browser = true, chromium = true,
                     order = CHROMIUM_ORDER }
local F_EDGE = { name = "edge", browser = true, chromium = true, order = CHROMIUM_ORDER }
local F_OPERA = { name = "opera", browser = true, chromium = true, order = CHROMIUM_ORDER }
local F_SAMSUNG = { name = "samsung", browser = true, chromium = true, order = CHROMIUM_ORDER }
local F_FIREFOX = { name = "firefox", browser = true, order = FIREFOX_ORDER }
local F_SAFARI = { name = "safari", browser = true, order = SAFARI_ORDER }
local F_OTHER_BROWSER = { name = "other-browser", browser = true }
local F_BOT = { name = "bot" }
local F_OTHER = { name = "other" }
local F_NODE = { name = "node" }
local F_AIOHTTP = { name = "python-aiohttp" }

local LIBRARY_PREFIXES = {
    { "curl/", { name = "curl" } },
    { "wget/", { name = "wget" } },
    { "python-requests/", { name = "python-requests" } },
    { "python-httpx/", { name = "python-httpx" } },
    { "python-urllib/", { name = "python-urllib" } },
    { "go-http-client/", { name = "go" } },
    { "java/", { name = "java" } },
    { "java-http-client/", { name = "java" } },
    { "apache-httpclient/", { name = "java" } },
    { "okhttp/", { name = "okhttp" } },
    { "axios/", { name = "axios" } },
    { "node-fetch", F_NODE },
    { "undici", F_NODE },
}

local BOT_WORDS = {
    "bot", "crawl", "spider", "slurp", "scrapy", "+http", "facebookexternalhit",
    "http://", "https://",
}

-- user_agent::PRODUCTS; the branded ones in decision order.
local PRODUCTS = {
    "HeadlessChrome", "Edg", "EdgA", "EdgiOS", "OPR", "SamsungBrowser", "Firefox",
    "FxiOS", "CriOS", "Chrome", "Version", "Safari", "aiohttp",
}
local PRODUCT_SLASH = {}
for i, name in ipairs(PRODUCTS) do
    PRODUCT_SLASH[i] = name .. "/"
end
local BRANDED = {
    { "Edg", F_EDGE }, { "EdgA", F_EDGE }, { "EdgiOS", F_EDGE }, { "OPR", F_OPERA },
    { "SamsungBrowser", F_SAMSUNG }, { "Firefox", F_FIREFOX }, { "FxiOS", F_FIREFOX },
    { "CriOS", F_CHROME }, { "Chrome", F_CHROME },
}
-- Where a Chromium family's engine version is read (UserAgent::chromium).
local ENGINE_TOKENS = { "HeadlessChrome", "Chrome", "CriOS" }

-- The bytes that end a UA token (Products::scan).
local DELIM = { [32] = true, [40] = true, [41] = true, [59] = true, [44] = true, [47] = true }

-- Products::scan results, reused: product -> major (false when the product
-- is there without digits; nil when absent), overwritten per UA.
local found = {}
local NO_MAJOR = false

-- Position of the first whole-token `word` in ua at or after pos: preceded
-- by the start or a delimiter, and (if `ended`) followed by one or the end.
local function whole_token(ua, word, pos, ended)
    while true do
        local p = find(ua, word, pos, true)
        if not p then
            return nil
        end
        if p == 1 or DELIM[byte(ua, p - 1)] then
            local after = byte(ua, p + #word)
            if not ended or after == nil or DELIM[after] then
                return p
            end
        end
        pos = p + 1
    end
end

-- Products::scan, by searching for each product as a token: a token ended by
-- `/` that equals a product name is that product, its version follows (the
-- first occurrence counts). Returns whether `Mobile` is a token.
local function scan_products(ua)
    for k = 1, #PRODUCTS do
        local slash = PRODUCT_SLASH[k]
        local p = whole_token(ua, slash, 1, false)
        if p then
            found[PRODUCTS[k]] = leading_uint(ua, p + #slash) or NO_MAJOR
        else
            found[PRODUCTS[k]] = nil
        end
    end
    return whole_token(ua, "Mobile", 1, true) ~= nil
end

-- A product's major as Rust's Option<u32>: nil when absent or without one.
local function major_of(token)
    local m = found[token]
    if m then
        return m
    end
    return nil
end

local function declares_bot(ua)
    local l = lower(ua)
    for i = 1, #BOT_WORDS do
        if find(l, BOT_WORDS[i], 1, true) then
            return true
        end
    end
    return false
end

-- user_agent::family_and_major.
local function family_and_major(ua)
    for i = 1, #LIBRARY_PREFIXES do
        local p = LIBRARY_PREFIXES[i]
        if starts_with_ci(ua, p[1]) then
            return p[2], leading_uint(ua, #p[1] + 1)
        end
    end
    if #ua == 4 and lower(ua) == "node" then
        return F_NODE, nil
    end
    if found.aiohttp ~= nil then
        return F_AIOHTTP, major_of("aiohttp")
    end
    if found.HeadlessChrome ~= nil then
        return F_HEADLESS, major_of("HeadlessChrome")
    end
    if declares_bot(ua) then
        return F_BOT, nil
    end
    for i = 1, #BRANDED do
        local b = BRANDED[i]
        if found[b[1]] ~= nil then
            return b[2], major_of(b[1])
        end
    end
    if found.Safari ~= nil and found.Version then
        return F_SAFARI, found.Version
    end
    if starts_with_ci(ua, "mozilla/") then
        return F_OTHER_BROWSER, nil
    end
    return F_OTHER, nil
end

-- user_agent::os: the OS named in the first comment.
local function ua_os(ua)
    local open = find(ua, "(", 1, true)
    if not open then
        return "other"
    end
    local close = find(ua, ")", open + 1, true)
    local c = sub(ua, open + 1, close and close - 1 or #ua)
    if find(c, "Windows", 1, true) then
        return "windows"
    elseif find(c, "Android", 1, true) then
        return "android"
    elseif find(c, "iPhone", 1, true) or find(c, "iPad", 1, true)
        or find(c, "iPod", 1, true) then
        return "ios"
    elseif find(c, "CrOS", 1, true) then
        return "chromeos"
    elseif find(c, "Macintosh", 1, true) or find(c, "Mac OS X", 1, true) then
        return "macos"
    elseif find(c, "Linux", 1, true) or find(c, "X11", 1, true) then
        return "linux"
    end
    return "other"
end

-- user_agent::Os::client_hint_platform.
local PLATFORM = {
    windows = "Windows", macos = "macOS", linux = "Linux", android = "Android",
    ios = "iOS", chromeos = "Chrome OS",
}

-- client_hints::brands, one entry at a time: returns the brand's bounds, its
-- major (nil if none) and where the rest starts, or nil at the end or at the
-- first malformed entry.
local function next_brand(v, pos)
    local s = find(v, NOT_WS, pos)
    if not s then
        return nil
    end
    if byte(v, s) == 44 then -- ','
        s = find(v, NOT_WS, s + 1)
        if not s then
            return nil
        end
    end
    if byte(v, s) ~= 34 then -- '"'
        return nil
    end
    local close = find(v, '"', s + 1, true)
    if not close then
        return nil
    end
    local stop = find(v, ",", close + 1, true) or #v + 1
    -- client_hints::version_param over v[close+1 .. stop-1].
    local major
    local p = close + 1
    while true do
        local semi = find(v, ";", p, true)
        if not semi or semi >= stop then
            break
        end
        p = find(v, NOT_WS, semi + 1) or stop
        if p > stop then
            p = stop
        end
        if p + 1 < stop and byte(v, p) == 118 and byte(v, p + 1) == 61 then -- "v="
            local d = p + 2
            if d < stop and byte(v, d) == 34 then
                d = d + 1
            end
            local a, b = find(v, "^[0-9]+", d)
            if a and b >= stop then
                b = stop - 1
            end
            if a and a <= b then
                local n = tonumber(sub(v, a, b))
                major = n > U32_MAX and U32_MAX or n
            end
            break
        end
    end
    return s + 1, close - 1, major, stop
end

local function is_grease(v, a, b)
    return b - a + 1 >= 3 and sub(v, a, a + 2) == "Not"
        and find(sub(v, a, b), "Brand", 1, true) ~= nil
end

local function is_chromium_brand(v, a, b)
    return b - a + 1 == 8 and sub(v, a, b) == "Chromium"
end

-- client_hints::chromium_major.
local function chromium_major(v)
    local best
    local pos = 1
    while true do
        local a, b, major, rest = next_brand(v, pos)
        if not a then
            return best
        end
        if is_chromium_brand(v, a, b) then
            if major then
                return major
            end
        elseif not is_grease(v, a, b) then
            if major and (not best or major > best) then
                best = major
            end
        end
        pos = rest
    end
end

-- client_hints::product_brand.
local function product_brand(v)
    local pos = 1
    while true do
        local a, b, _, rest = next_brand(v, pos)
        if not a then
            return ""
        end
        if not is_chromium_brand(v, a, b) and not is_grease(v, a, b) then
            return sub(v, a, b)
        end
        pos = rest
    end
end

-- client_hints::platform_matches: nil when the UA's OS has no platform value.
local function platform_matches(v, os)
    local expected = PLATFORM[os]
    if not expected then
        return nil
    end
    v = trim(v)
    if #v >= 2 and byte(v, 1) == 34 and byte(v, -1) == 34 then
        v = sub(v, 2, -2)
    end
    return v == expected or (os == "chromeos" and v == "ChromeOS")
end

-- fetch_metadata value sets.
local SITES = { ["none"] = true, ["same-origin"] = true, ["same-site"] = true,
                ["cross-site"] = true }
local MODES = { ["navigate"] = true, ["same-origin"] = true, ["no-cors"] = true,
                ["cors"] = true, ["websocket"] = true }
local NAVIGATION_DESTS = { document = true, iframe = true, frame = true, embed = true,
                           object = true, fencedframe = true }
local OTHER_DESTS = {
    empty = true, image = true, script = true, style = true, font = true, audio = true,
    video = true, track = true, worker = true, sharedworker = true, serviceworker = true,
    manifest = true, report = true, xslt = true, audioworklet = true,
    paintworklet = true, webidentity = true, json = true,
}

-- FetchMetadata::incoherent, given at least one header is present.
local function fetch_incoherent(site, mode, user, dest)
    if not (site and mode and dest) then
        return true
    end
    site, mode, dest = trim(site), trim(mode), trim(dest)
    if not SITES[site] or not MODES[mode] then
        return true
    end
    local navigation_dest = NAVIGATION_DESTS[dest] == true
    if not navigation_dest and not OTHER_DESTS[dest] then
        return true
    end
    local navigate = mode == "navigate"
    if navigate ~= navigation_dest then
        return true
    end
    if user then
        return trim(user) ~= "?1" or not navigate
    end
    return false
end

-- ip_family: 1 for IPv6, 0 for IPv4, NaN otherwise.
local function ip_family(addr)
    addr = trim(addr)
    if find(addr, "unix:", 1, true) == 1 then
        return NAN
    end
    if find(addr, ":", 1, true) then
        local pct = find(addr, "%", 1, true)
        local without_zone = pct and sub(addr, 1, pct - 1) or addr
        if not find(without_zone, "[^0-9A-Fa-f:.]") then
            return 1
        end
    end
    -- Three dots and nothing but digits besides.
    if find(addr, "^[0-9]*%.[0-9]*%.[0-9]*%.[0-9]*$") then
        return 0
    end
    return NAN
end

-- uri::split: the path and query of a request target, as bounds into uri.
local function split_target(uri)
    local n = #uri
    local start = 1
    local scheme = (starts_with_ci(uri, "http://") and 8)
        or (starts_with_ci(uri, "https://") and 9)
    if scheme then
        start = find(uri, "[/?#]", scheme) or n + 1
    end
    local stop = (find(uri, "#", start, true) or n + 1) - 1
    local q = find(uri, "?", start, true)
    if q and q <= stop then
        return start, q - 1, q + 1, stop
    end
    return start, stop, stop + 1, stop
end

-- Non-empty pieces of s[i..j] between separator bytes.
local function count_segments(s, i, j, pat)
    local n = 0
    local pos = i
    while pos <= j do
        local a, b = find(s, pat, pos)
        if not a or a > j then
            break
        end
        n = n + 1
        pos = b + 1
    end
    return n
end

-- uri::extension + uri::write_ext.
local function uri_ext(uri, i, j)
    local last = i
    local pos = i
    while true do
        local slash = find(uri, "/", pos, true)
        if not slash or slash > j then
            break
        end
        last = slash + 1
        pos = slash + 1
    end
    local dot
    pos = last
    while true do
        local d = find(uri, ".", pos, true)
        if not d or d > j then
            break
        end
        dot = d
        pos = d + 1
    end
    if not dot or dot == j then
        return ""
    end
    if j - dot > 8 then
        return "~"
    end
    local ext = sub(uri, dot + 1, j)
    if find(ext, "[^0-9A-Za-z]") then
        return "~"
    end
    return lower(ext)
end

-- language::write_primary.
local function language_primary(v)
    local a, b = trim_bounds(v, 1, #v)
    if a > b then
        return ""
    end
    local comma = find(v, ",", a, true)
    if comma and comma <= b then
        b = comma - 1
    end
    local semi = find(v, ";", a, true)
    if semi and semi <= b then
        b = semi - 1
    end
    a, b = trim_bounds(v, a, b)
    local sep = find(v, "[-_]", a)
    if sep and sep <= b then
        b = sep - 1
    end
    local len = b - a + 1
    if len == 1 and byte(v, a) == 42 then
        return "*"
    end
    if len <= 0 or len > 8 then
        return "~"
    end
    local primary = sub(v, a, b)
    if find(primary, "[^A-Za-z]") then
        return "~"
    end
    return lower(primary)
end

-- Reused per call: the fingerprint, the ranked codes, and the first value
-- of each known header by code (the first one counts when one repeats).
local order_buf = {}
local ranked = {}
local first = {}

-- The codes set in `first` by the last call, to reset it.
local set_codes = {}
local n_set = 0

-- The codes that are counted as a group.
local K_COOKIE, K_CLIENT_HINT, K_FETCH = 1, 2, 3
local KIND = {
    [C_COOKIE] = K_COOKIE,
    [C_CH_UA] = K_CLIENT_HINT, [C_CH_MOBILE] = K_CLIENT_HINT,
    [C_CH_PLATFORM] = K_CLIENT_HINT, [OTHER_CLIENT_HINT] = K_CLIENT_HINT,
    [C_SITE] = K_FETCH, [C_MODE] = K_FETCH, [C_USER] = K_FETCH, [C_DEST] = K_FETCH,
    [OTHER_FETCH] = K_FETCH,
}

-- The header pass of extract: fills order_buf (the fingerprint), ranked
-- (the codes, for inversions) and first (first value by code); returns the
-- client hint, fetch metadata and cookie header counts, the cookie count,
-- and how many codes order_buf and ranked hold.
local function scan_headers(headers, n_headers)
    local client_hints, fetch_headers, cookie_headers, cookies = 0, 0, 0, 0
    local n_order, truncated, n_ranked = 0, false, 0
    for i = 1, n_set do
        first[set_codes[i]] = nil
    end
    n_set = 0

    for i = 1, n_headers do
        local h = headers[i]
        local code = header_code(h[1])
        if code then
            -- Fingerprint::push
            if not truncated and (n_order == 0 or order_buf[n_order] ~= code) then
                if n_order == HEADER_ORDER_CAP then
                    order_buf[n_order] = PLUS
                    truncated = true
                else
                    n_order = n_order + 1
                    order_buf[n_order] = code
                end
            end
            if n_ranked < MAX_RANKED then
                n_ranked = n_ranked + 1
                ranked[n_ranked] = code
            end
            local value = h[2]
            if first[code] == nil then
                first[code] = value
                n_set = n_set + 1
                set_codes[n_set] = code
            end
            local kind = KIND[code]
            if kind == K_COOKIE then
                cookie_headers = cookie_headers + 1
                cookies = cookies + count_items(value, ";")
            elseif kind == K_CLIENT_HINT then
                client_hints = client_hints + 1
            elseif kind == K_FETCH then
                fetch_headers = fetch_headers + 1
            end
        end
    end
    return client_hints, fetch_headers, cookie_headers, cookies, n_order, n_ranked
end

-- The User-Agent's claims (user_agent::parse): family, major, the Chromium
-- engine's major (Chromium families only), OS and whether it says Mobile.
local function ua_claims(ua)
    local family, major, chromium, os, mobile = F_NONE, nil, nil, "none", false
    if ua then
        local t = trim(ua)
        if t ~= "" then
            mobile = scan_products(t)
            family, major = family_and_major(t)
            if family.chromium then
                for i = 1, #ENGINE_TOKENS do
                    local k = ENGINE_TOKENS[i]
                    if found[k] ~= nil then
                        chromium = major_of(k)
                        break
                    end
                end
            end
            os = ua_os(t)
        end
    end
    return family, major, chromium, os, mobile
end

-- ch_mobile_mismatch: Sec-CH-UA-Mobile against the UA's Mobile token.
local function mobile_mismatch(ch_mobile, has_ua, mobile)
    if not ch_mobile then
        return false
    end
    local m = trim(ch_mobile)
    if m == "?1" then
        return has_ua and not mobile
    elseif m == "?0" then
        return has_ua and mobile
    end
    return true
end

-- header_order::inversions of the first n_ranked codes against the claimed
-- browser's order; NaN without one.
local function order_inversions(order, n_ranked)
    if not order then
        return NAN
    end
    local count = 0
    for i = 1, n_ranked do
        local a = order[ranked[i]]
        if a then
            for j = i + 1, n_ranked do
                local b = order[ranked[j]]
                if b and b < a then
                    count = count + 1
                end
            end
        end
    end
    return count
end

-- features::extract. Fills floats[1..32] and cats[1..12]; returns both.
function _M.extract(req, floats, cats)
    if type(req) ~= "table" or type(floats) ~= "table" or type(cats) ~= "table" then
        error("extract expects a request table and two output tables", 2)
    end
    local headers = req.headers
    local n_headers = req.n_headers or #headers
    local client_hints, fetch_headers, cookie_headers, cookies, n_order, n_ranked =
        scan_headers(headers, n_headers)
    local host, connection, ua = first[C_HOST], first[C_CONNECTION], first[C_UA]
    local accept, accept_language = first[C_ACCEPT], first[C_LANG]
    local accept_encoding, referer, uir = first[C_ENC], first[C_REFERER], first[C_UIR]
    local ch_ua, ch_mobile, ch_platform = first[C_CH_UA], first[C_CH_MOBILE], first[C_CH_PLATFORM]
    local site, mode, user, dest = first[C_SITE], first[C_MODE], first[C_USER], first[C_DEST]

    -- The request line.
    local uri = req.uri
    local path_a, path_b, query_a, query_b = split_target(uri)
    floats[1] = f32(req.http_version / 10)
    floats[2] = f32(#uri)
    floats[3] = count_segments(uri, path_a, path_b, "[^/]+")
    floats[4] = count_segments(uri, query_a, query_b, "[^&]+")
    floats[5] = n_headers
    floats[23] = ip_family(req.client_addr)
    cats[1] = req.method
    cats[2] = uri_ext(uri, path_a, path_b)

    local family, major, chromium, os, mobile = ua_claims(ua)
    local has_ua = family ~= F_NONE
    floats[6] = ua and f32(#ua) or NAN
    floats[7] = major and f32(major) or NAN
    floats[8] = has_ua and (mobile and 1 or 0) or NAN
    cats[4] = family.name
    cats[5] = os

    floats[9] = accept and 1 or 0
    floats[10] = accept and f32(#accept) or NAN
    floats[11] = accept_language and 1 or 0
    floats[12] = accept_language and count_items(accept_language, ",") or NAN
    floats[13] = accept_encoding and 1 or 0
    floats[14] = accept_encoding and count_items(accept_encoding, ",") or NAN
    floats[15] = client_hints
    floats[16] = fetch_headers
    floats[17] = uir and 1 or 0
    floats[18] = cookie_headers > 0 and 1 or 0
    floats[19] = cookies
    floats[20] = referer and 1 or 0
    floats[21] = connection and 1 or 0
    floats[22] = host and 1 or 0

    -- Client hints against the UA's claims.
    local ch_major = ch_ua and chromium_major(ch_ua)
    floats[24] = ch_major and f32(ch_major) or NAN
    floats[25] = (not ch_ua and os ~= "ios" and chromium and chromium >= 90) and 1 or 0
    floats[26] = (ch_ua and chromium and ch_major ~= chromium) and 1 or 0
    floats[27] = (client_hints > 0 and not family.chromium) and 1 or 0
    floats[28] = (ch_platform and platform_matches(ch_platform, os) == false) and 1 or 0
    floats[29] = mobile_mismatch(ch_mobile, has_ua, mobile) and 1 or 0
    local any_fetch = site or mode or user or dest
    floats[30] = (any_fetch and not family.browser) and 1 or 0
    floats[31] = (any_fetch and fetch_incoherent(site, mode, user, dest)) and 1 or 0
    floats[32] = order_inversions(family.order, n_ranked)

    cats[3] = n_order > 0 and char(unpack(order_buf, 1, n_order)) or ""
    cats[6] = ch_ua and product_brand(ch_ua) or ""
    cats[7] = accept_language and language_primary(accept_language) or ""
    cats[8] = accept or ""
    cats[9] = accept_encoding or ""
    cats[10] = site or ""
    cats[11] = mode or ""
    cats[12] = connection or ""
    return floats, cats
end

-- Sets headers[n] to {name, value}, reusing the entry table already there.
local function put_header(headers, n, name, value)
    local h = headers[n]
    if h then
        h[1], h[2] = name, value
    else
        headers[n] = { name, value }
    end
end

-- ngx.req.raw_header(true) parsed the way nginx parses a header line, so the
-- Lua engine sees what nginx's header list (the Rust engine's input) holds:
-- the name runs from the line's first byte to the next `:` (nginx takes a
-- leading `:` as part of the name), the value loses its leading and
-- trailing spaces (spaces only, as nginx trims). Names with bytes nginx
-- calls invalid are kept only if nginx kept them (ignore_invalid_headers,
-- underscores_in_headers), which the raw-keyed get_headers table tells.
local function parse_raw_header(raw, headers, get_headers)
    local n = 0
    local kept -- get_headers(0, true), fetched only for odd names
    local pos, len = 1, #raw
    while pos <= len do
        local nl = find(raw, "\n", pos, true) or len + 1
        local stop = nl - 1
        if stop >= pos and byte(raw, stop) == 13 then
            stop = stop - 1
        end
        if stop < pos then
            break -- the empty line that ends the head
        end
        local colon = find(raw, ":", pos + 1, true)
        if colon and colon <= stop then
            local name = sub(raw, pos, colon - 1)
            local keep = true
            if find(name, "[^0-9A-Za-z%-]") then
                kept = kept or get_headers(0, true)
                keep = kept[name] ~= nil
            end
            if keep then
                local a, b = colon + 1, stop
                while a <= b and byte(raw, a) == 32 do
                    a = a + 1
                end
                while b >= a and byte(raw, b) == 32 do
                    b = b - 1
                end
                n = n + 1
                put_header(headers, n, name, sub(raw, a, b))
            end
        end
        pos = nl + 1
    end
    return n
end

-- Fills req from the current nginx request, the way a Lua module reads it:
-- method, $request_uri, HTTP version x10, $remote_addr, and the headers in
-- arrival order from ngx.req.raw_header(). HTTP/2 and HTTP/3 requests have
-- no raw header in lua-nginx-module; their headers come from
-- ngx.req.get_headers(0, true), a hash table, so arrival order (and with it
-- header_order and order_inversions) is lost there. Returns req.
function _M.read_request(req)
    local ngx_req, ngx_var = ngx.req, ngx.var
    req.method = ngx_req.get_method()
    req.uri = ngx_var.request_uri or ""
    local v = ngx_req.http_version()
    if v then
        req.http_version = floor(v * 10 + 0.5)
    else
        -- Versions ngx.req.http_version() has no number for (HTTP/1.5 parses):
        -- read $server_protocol as the Rust shim does.
        local p = ngx_var.server_protocol or ""
        req.http_version = #p == 8 and (byte(p, 6) - 48) * 10 + byte(p, 8) - 48 or 9
    end
    req.client_addr = ngx_var.remote_addr or ""

    local headers = req.headers
    if not headers then
        headers = {}
        req.headers = headers
    end
    local ok, raw = pcall(ngx_req.raw_header, true)
    if ok and raw then
        req.n_headers = parse_raw_header(raw, headers, ngx_req.get_headers)
        return req
    end
    local n = 0
    for name, value in pairs(ngx_req.get_headers(0, true)) do
        if type(value) == "table" then
            for i = 1, #value do
                n = n + 1
                put_header(headers, n, name, value[i])
            end
        else
            n = n + 1
            put_header(headers, n, name, value)
        end
    end
    req.n_headers = n
    return req
end

return _M
