-- resty.edgeguard.tls outside nginx, in plain LuaJIT: no OpenSSL in the
-- process. The library still loads and scores; the live TLS calls say so
-- instead of touching the pointer; ClientHello bytes are fingerprinted.
-- Run from the repository root.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"
local ffi = require "ffi"

local lib, path = T.lib()
local tls = require "resty.edgeguard.tls"
local tls_bytes = require "handles.tls"

local function unhex(s)
    return (s:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
end

-- The fixture's ClientHellos: { client, family, bytes }.
local function local_hellos()
    local out = {}
    for line in io.lines("tests/fixtures/tls/local-clienthellos.txt") do
        if line:sub(1, 1) ~= "#" then
            local client, family, hex = line:match("^(%S+) (%S+) (%x+)$")
            out[#out + 1] = { client = client, family = family, bytes = unhex(hex) }
        end
    end
    return out
end

T.test("the library has no link-time dependency on OpenSSL", function()
    local p = assert(io.popen("ldd " .. path))
    local text = p:read("*a")
    p:close()
    T.ok(not text:find("libssl", 1, true) and not text:find("libcrypto", 1, true), text)
    -- And this LuaJIT has no OpenSSL either: what follows runs without it.
    local exe = assert(io.open("/proc/self/maps")):read("*a")
    T.ok(not exe:find("libssl", 1, true), "libssl is mapped in this process")
end)

T.test("without OpenSSL the live calls report it and touch nothing", function()
    local errbuf = ffi.new("char[256]")
    -- Not an SSL *: the call must fail before using it.
    local fake = ffi.cast("void *", 1)
    local rc = lib.edgeguard_tls_client_hello(fake, errbuf, 256)
    T.eq(tonumber(rc), tonumber(ffi.new("edgeguard_result", "EDGEGUARD_RESULT_TLS_UNAVAILABLE")))
    T.contains(ffi.string(errbuf), "not in this process")
    T.contains(ffi.string(lib.edgeguard_result_text(rc)), "TLS library")
    local info = ffi.new("edgeguard_tls_info[1]")
    info[0].present = 7
    T.eq(tonumber(lib.edgeguard_tls_get(fake, info)), 0)
    T.eq(info[0].present, 0, "nothing found")
    T.eq(tonumber(lib.edgeguard_tls_get(nil, info)), 0, "plain HTTP: a null SSL *")
    T.eq(tonumber(lib.edgeguard_tls_client_hello(nil, errbuf, 256)), 1, "null is a misuse")
end)

T.test("recorded ClientHellos: JA4 and raw parts", function()
    local hellos = local_hellos()
    T.ok(#hellos >= 3, "fixture has clients")
    for _, h in ipairs(hellos) do
        local i = assert(tls_bytes.parse(h.bytes))
        local ja4 = tls_bytes.ja4_of(i)
        T.ok(ja4:match("^t1[23][di]%d%d%d%d%w%w_%x+_%x+$") and #ja4 == 36, h.client .. ": " .. ja4)
        T.eq(tls_bytes.family_of(i), h.family, h.client)
        T.eq(tonumber(i.ciphers), tonumber(ja4:sub(5, 6)) > 98 and tonumber(i.ciphers) or tonumber(ja4:sub(5, 6)))
        T.eq(i.source, 1)
    end
    -- The CLI, which the Rust tests hold to FoxIO's published values, agrees.
    local p = assert(io.popen("target/release/edgeguard tls < tests/fixtures/tls/local-clienthellos.txt"))
    local n = 0
    for line in p:lines() do
        n = n + 1
        T.eq(line:match('"ja4":"([^"]+)"'), tls_bytes.ja4_of(assert(tls_bytes.parse(hellos[n].bytes))), hellos[n].client)
    end
    p:close()
    T.eq(n, #hellos)
end)

T.test("malformed ClientHellos: nil and the field at fault", function()
    local good = local_hellos()[1].bytes
    local i, err = tls_bytes.parse(good:sub(1, 60))
    T.eq(i, nil)
    T.contains(err, "truncated")
    i, err = tls_bytes.parse("\23\3\3\0\0")
    T.eq(i, nil)
    T.contains(err, "not a handshake")
    T.contains(T.raises(function() tls_bytes.parse(nil) end), "ClientHello bytes")
    -- Any prefix: an answer or an error, never a crash.
    for cut = 0, #good do
        local ok = tls_bytes.parse(good:sub(1, cut))
        T.ok(cut == #good or not ok, "prefix " .. cut .. " parsed")
    end
end)

T.test("the request-phase calls need nginx", function()
    T.contains(T.raises(function() tls.ja4() end), "nginx")
    T.contains(T.raises(function() tls.client_hello() end), "nginx")
    T.contains(T.raises(function() tls.family() end), "nginx")
    T.contains(T.raises(function() tls.info_for(nil) end), "nginx")
end)

-- A GET / with a Host and the User-Agent `ua` as an edgeguard_request, and
-- its header array (the caller keeps both, and `ua`, alive while scoring).
local function get_request(ua)
    local headers = ffi.new("edgeguard_header[2]")
    headers[0].key.data, headers[0].key.len = "Host", 4
    headers[0].value.data, headers[0].value.len = "x", 1
    headers[1].key.data, headers[1].key.len = "User-Agent", 10
    headers[1].value.data, headers[1].value.len = ua, #ua
    local req = ffi.new("edgeguard_request")
    req.method.data, req.method.len = "GET", 3
    req.uri.data, req.uri.len = "/", 1
    req.client_addr.data, req.client_addr.len = "127.0.0.1", 9
    req.http_version = 11
    req.headers, req.headers_len = headers, 2
    return req, headers
end

T.test("edgeguard_request.tls: a fingerprint the scorer reads, or null", function()
    local scorer = require "handles.scorer"
    local s = assert(scorer.load(lib, { { name = "bot", path = "models/bot.json" } }))
    local ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
    local req, headers = get_request(ua) -- luacheck: no unused
    T.ok(req.tls == nil, "ffi.new leaves it null")
    local none = assert(s:score(req)).bot
    -- The same head on each recorded client's hello: the features see it.
    local seen = {}
    for _, h in ipairs(local_hellos()) do
        local info = ffi.new("edgeguard_tls_info[1]")
        ffi.copy(info, assert(tls_bytes.parse(h.bytes)), ffi.sizeof("edgeguard_tls_info"))
        req.tls = info
        seen[h.client] = assert(s:score(req)).bot
        -- present = 0 is no fingerprint.
        info[0].present = 0
        T.eq(assert(s:score(req)).bot, none, h.client .. ": absent")
    end
    req.tls = nil
    T.eq(assert(s:score(req)).bot, none, "null again")
    T.ok(seen.curl ~= none and seen.chromium ~= seen.curl,
         string.format("none %.4f, curl %.4f, chromium %.4f", none, seen.curl or -1, seen.chromium or -1))
end)

T.test("the library still scores without TLS", function()
    local scorer = require "handles.scorer"
    local s = assert(scorer.load(lib, { { name = "bot", path = "models/bot.json" } }))
    local ua = "curl/7.88.1"
    local req, headers = get_request(ua) -- luacheck: no unused
    local scores = assert(s:score(req))
    T.ok(scores.bot > 0.5, "a curl request scores as a bot: " .. scores.bot)
end)

T.run()
