-- wrk script for scripts/stress.py's client-memory phase: every request
-- comes from a client address never seen before, relayed by a trusted
-- front (X-Forwarded-For, which nginx's realip module and edgeguard's
-- trusted_proxies read), with one browser's head: each request is a new
-- host record, and every 256 a new network record, in the memory.
-- done() prints one "STRESS key=value ..." line, as mix.lua's.

local HEAD = table.concat({
    "Host: edge.test",
    "Connection: keep-alive",
    'sec-ch-ua: "Google Chrome";v="147", "Not.A/Brand";v="8", "Chromium";v="147"',
    "sec-ch-ua-mobile: ?0",
    'sec-ch-ua-platform: "Windows"',
    "Upgrade-Insecure-Requests: 1",
    "User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
        .. "(KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36",
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
    "Sec-Fetch-Site: none",
    "Sec-Fetch-Mode: navigate",
    "Sec-Fetch-User: ?1",
    "Sec-Fetch-Dest: document",
    "Accept-Encoding: gzip, deflate, br, zstd",
    "Accept-Language: en-US,en;q=0.9",
}, "\r\n")

local threads = {}

function setup(thread)
    thread:set("id", #threads)
    threads[#threads + 1] = thread
end

function init(args)
    -- Each thread its own /8 (11.0.0.0/8, 12.0.0.0/8, ...): 16.7 M
    -- addresses apiece, none repeated; a run goes on from where the last
    -- one stopped (args[1]: the highest count a thread reached).
    first = 11 + id
    n = tonumber(args[1]) or 0
    ok, other, first_other = 0, 0, 0
end

function request()
    n = n + 1
    local addr = string.format("%d.%d.%d.%d", first, math.floor(n / 65536) % 256, math.floor(n / 256) % 256,
                               n % 256)
    return "GET /p/" .. n .. " HTTP/1.1\r\n" .. HEAD .. "\r\nX-Forwarded-For: " .. addr .. "\r\n\r\n"
end

function response(status)
    if status >= 200 and status < 400 then
        ok = ok + 1
    else
        other = other + 1
        if first_other == 0 then
            first_other = status
        end
    end
end

function done(summary)
    local t = { ok = 0, other = 0, first_other = 0, last = 0 }
    for _, thread in ipairs(threads) do
        t.last = math.max(t.last, thread:get("n"))
        t.ok = t.ok + thread:get("ok")
        t.other = t.other + thread:get("other")
        if t.first_other == 0 then
            t.first_other = thread:get("first_other")
        end
    end
    local e = summary.errors
    io.write(string.format(
        "STRESS requests=%d ok=%d blocked=0 other=%d first_other=%d connect=%d read=%d "
            .. "write=%d timeout=%d status=%d last=%d\n",
        summary.requests, t.ok, t.other, t.first_other, e.connect, e.read, e.write, e.timeout, e.status, t.last))
end
