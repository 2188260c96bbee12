-- wrk script for scripts/stress.py: a fixed mix of browser-like and bot-like
-- requests carrying internal headers, each sent with an exact header order
-- (the order is a model feature, and wrk.format would reorder a Lua table).
-- Counts responses by class, so failures are seen whatever wrk's own summary
-- folds together; done() prints one "STRESS key=value ..." line.

local CHROME = {
    "Host: edge.test",
    "Connection: keep-alive",
    'sec-ch-ua: "Google Chrome";v="147", "Not.A/Brand";v="8", "Chromium";v="147"',
    "sec-ch-ua-mobile: ?0",
    'sec-ch-ua-platform: "macOS"',
    "User-Agent: Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 "
        .. "(KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36",
    "Accept: application/json, text/plain, */*",
    "Sec-Fetch-Site: same-origin",
    "Sec-Fetch-Mode: cors",
    "Sec-Fetch-Dest: empty",
    "Referer: https://shop.example/checkout",
    "Accept-Encoding: gzip, deflate, br",
    "Accept-Language: en-US,en;q=0.9",
    "X-Internal-User-Id: 42",
    "X-Edge-Debug: 1",
}

local BOTS = {
    { "Host: edge.test", "User-Agent: curl/8.5.0", "Accept: */*", "X-Internal-User-Id: 7" },
    { "Host: edge.test", "User-Agent: python-requests/2.32.3", "Accept-Encoding: gzip, deflate",
      "Accept: */*", "Connection: keep-alive", "X-Forwarded-Internal: 1" },
    { "Host: edge.test", "User-Agent: Go-http-client/1.1", "X_Internal_Trace: abc",
      "Accept-Encoding: gzip" },
}

-- With `-- close` every request asks for its own connection, so no request
-- can race nginx closing an idle keep-alive connection.
local close = false

local function raw(path, lines)
    local out = {}
    for i, line in ipairs(lines) do
        out[i] = close and line:lower():find("^connection:") and "Connection: close" or line
    end
    if close and not table.concat(out, "\n"):find("Connection: close") then
        out[#out + 1] = "Connection: close"
    end
    return "GET " .. path .. " HTTP/1.1\r\n" .. table.concat(out, "\r\n") .. "\r\n\r\n"
end

local threads = {}

function setup(thread)
    threads[#threads + 1] = thread
end

local requests = {}
local next_request = 0

function init(args)
    close = args[1] == "close"
    -- Two browser requests for every bot one: most traffic passes to the origin.
    requests[#requests + 1] = raw("/api/v1/reviews?product=4157", CHROME)
    requests[#requests + 1] = raw("/", BOTS[1])
    requests[#requests + 1] = raw("/static/app.js", CHROME)
    requests[#requests + 1] = raw("/search?q=stress", BOTS[2])
    requests[#requests + 1] = raw("/api/v1/cart", CHROME)
    requests[#requests + 1] = raw("/robots.txt", BOTS[3])
    ok, blocked, other, first_other = 0, 0, 0, 0
end

function request()
    next_request = next_request % #requests + 1
    return requests[next_request]
end

function response(status)
    if status >= 200 and status < 400 then
        ok = ok + 1
    elseif status == 403 then
        blocked = blocked + 1
    else
        other = other + 1
        if first_other == 0 then
            first_other = status
        end
    end
end

function done(summary)
    local t = { ok = 0, blocked = 0, other = 0, first_other = 0 }
    for _, thread in ipairs(threads) do
        t.ok = t.ok + thread:get("ok")
        t.blocked = t.blocked + thread:get("blocked")
        t.other = t.other + thread:get("other")
        if t.first_other == 0 then
            t.first_other = thread:get("first_other")
        end
    end
    local e = summary.errors
    io.write(string.format(
        "STRESS requests=%d ok=%d blocked=%d other=%d first_other=%d connect=%d read=%d "
            .. "write=%d timeout=%d status=%d\n",
        summary.requests, t.ok, t.blocked, t.other, t.first_other, e.connect, e.read, e.write,
        e.timeout, e.status))
end
