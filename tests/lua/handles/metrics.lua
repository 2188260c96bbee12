-- What the shim no longer does with the metrics, kept for the tests of the
-- series it feeds: a model that does not load refuses the configuration
-- (issue 41), so nginx never counts edgeguard_load_errors_total (0); the
-- series stays until a versioned release removes it from the ABI.

local _M = {}

--- Counts `n` load errors of configuration generation `generation` into
-- `mx` (a resty.edgeguard.metrics) once, whichever worker calls first.
function _M.count_load_errors(mx, generation, n)
    local dict = mx.dict
    if dict and n > 0 and dict:add("load_errors_counted:" .. generation, true) then
        mx.lib.edgeguard_metrics_load_errors(mx.handle, n)
        return mx:flush()
    end
end

return _M
