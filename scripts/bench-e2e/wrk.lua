-- wrk script for `make bench-e2e`: rotates through the request heads of
-- requests.http (path given after `--`), sent byte for byte so that header
-- order and case reach the edge as written, and prints one JSON line with the
-- counts and latency percentiles the harness parses.
--
--   wrk -t1 -c16 -d8s -s wrk.lua http://127.0.0.1:PORT/ -- requests.http
--
-- With EDGEGUARD_WRK_PACE_MS set, each connection waits before each request
-- for a random time with that mean (exponentially distributed), which holds
-- the offered rate near connections / pace with arrivals spread out like
-- independent clients' (for latency below saturation; a fixed wait would keep
-- the connections in step and make every request queue behind the others).
-- Without it there is no delay() at all: wrk then sends the next request as
-- soon as the response arrives.
--
-- With EDGEGUARD_WRK_CLOSE=1 every head says `Connection: close` (any
-- Connection header it had is replaced): wrk opens a new connection, over
-- https a new TLS handshake, for every request (scripts/bench-e2e-tls.py).

local requests = {}
local counter = 0
local close = os.getenv("EDGEGUARD_WRK_CLOSE") == "1"

local function load(path)
    local f = assert(io.open(path, "rb"))
    local text = f:read("*a")
    f:close()
    local lines = {}
    local function flush()
        if #lines > 0 then
            if close then
                lines[#lines + 1] = "Connection: close"
            end
            requests[#requests + 1] = table.concat(lines, "\r\n") .. "\r\n\r\n"
            lines = {}
        end
    end
    for line in (text .. "\n"):gmatch("([^\n]*)\n") do
        line = line:gsub("\r$", "")
        if line == "" then
            flush()
        elseif line:sub(1, 1) ~= "#" and not (close and line:lower():match("^connection:")) then
            lines[#lines + 1] = line
        end
    end
    flush()
    assert(#requests > 0, path .. ": no request")
end

local threads = 0

local pace_ms = tonumber(os.getenv("EDGEGUARD_WRK_PACE_MS") or "")
if pace_ms and pace_ms > 0 then
    local log, random = math.log, math.random
    function delay()
        -- wrk truncates to whole milliseconds: + 0.5 keeps the mean.
        return -log(1 - random()) * pace_ms + 0.5
    end
end

-- Runs in the main state once per thread: each thread gets its own offset.
function setup(thread)
    thread:set("thread_index", threads)
    threads = threads + 1
end

function init(args)
    load(assert(args[1], "usage: wrk ... -s wrk.lua URL -- requests.http"))
    -- Threads start at different heads, so that with -t2 and more the mix
    -- stays the same as with -t1.
    counter = (thread_index or 0) * 3
    math.randomseed(os.time() + (thread_index or 0))
end

function request()
    counter = counter + 1
    return requests[counter % #requests + 1]
end

-- Percentiles the harness reports and plots; wrk keeps microseconds.
local PERCENTILES = { 1, 5, 10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 90, 95, 97.5, 99, 99.5, 99.9, 99.99 }

function done(summary, latency, _)
    local e = summary.errors
    local parts = {}
    for _, p in ipairs(PERCENTILES) do
        parts[#parts + 1] = string.format('"%s": %d', tostring(p), latency:percentile(p))
    end
    io.write(string.format(
        'EDGEGUARD_WRK {"requests": %d, "duration_us": %d, "bytes": %d, '
            .. '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, '
            .. '"latency_us": {"min": %d, "max": %d, "mean": %.3f, "stdev": %.3f, "percentiles": {%s}}}\n',
        summary.requests, summary.duration, summary.bytes,
        e.connect, e.read, e.write, e.status, e.timeout,
        latency.min, latency.max, latency.mean, latency.stdev, table.concat(parts, ", ")))
end
