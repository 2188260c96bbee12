-- Finds and loads libedgeguard.so once per LuaJIT VM.
--
-- Search order: the explicit path given to edgeguard.configure{ lib_path = },
-- then $EDGEGUARD_LIB, then every package.cpath template with "?" replaced
-- by "libedgeguard", then the system loader's own search ("edgeguard").
-- On failure the error lists every path tried, so a misplaced library is a
-- one-line fix.

local ffi = require "ffi"
require "resty.edgeguard.cdefs"

local ffi_load = ffi.load
local ffi_string = ffi.string
local io_open = io.open
local os_getenv = os.getenv
local concat = table.concat
local gmatch = string.gmatch
local gsub = string.gsub

local _M = {}

local loaded     -- the clib, once loaded
local loaded_from

local function readable(path)
    local f = io_open(path, "rb")
    if f then
        f:close()
        return true
    end
    return false
end

local function candidates(explicit)
    local list = {}
    if explicit then
        list[#list + 1] = explicit
    end
    local env = os_getenv("EDGEGUARD_LIB")
    if env and env ~= "" then
        list[#list + 1] = env
    end
    for template in gmatch(package.cpath, "[^;]+") do
        list[#list + 1] = (gsub(template, "%?", "libedgeguard"))
    end
    return list
end

-- Returns the loaded library, or nil and an error naming every path tried.
-- A library that is already loaded is reused: LuaJIT cannot unload one, and
-- the cdefs bind to the first.
function _M.load(explicit)
    if loaded then
        return loaded, loaded_from
    end

    local tried = {}
    for _, path in ipairs(candidates(explicit)) do
        if readable(path) then
            local ok, lib = pcall(ffi_load, path)
            if ok then
                loaded, loaded_from = lib, path
                return lib, path
            end
            tried[#tried + 1] = path .. " (" .. tostring(lib) .. ")"
        else
            tried[#tried + 1] = path .. " (not found)"
        end
    end

    local ok, lib = pcall(ffi_load, "edgeguard")
    if ok then
        loaded, loaded_from = lib, "libedgeguard.so (system search path)"
        return loaded, loaded_from
    end
    tried[#tried + 1] = "system search path (" .. tostring(lib) .. ")"

    return nil, "cannot load libedgeguard.so; tried: " .. concat(tried, ", ")
end

-- The text of a result code, for error messages.
function _M.result_text(lib, rc)
    return ffi_string(lib.edgeguard_result_text(rc))
end

return _M
