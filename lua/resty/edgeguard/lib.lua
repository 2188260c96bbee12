-- Finds and loads libedgeguard.so once per LuaJIT VM.
--
-- Search order: the explicit path given to edgeguard.configure{ lib_path = },
-- then $EDGEGUARD_LIB, then every package.cpath template with "?" replaced
-- by "libedgeguard", then the system loader's own search ("edgeguard").
-- On failure the error lists every path tried, so a misplaced library is a
-- one-line fix.
--
-- A library of another release than these Lua modules is refused, with one
-- error naming both versions and the fix: the modules' cdefs declare the
-- ABI and crate version of the header they were generated from
-- (EDGEGUARD_ABI_VERSION, EDGEGUARD_VERSION_*), the library says its own.
-- That happens on `nginx -s reload` after an upgrade: the master loads the
-- new Lua files, but the old library is still mapped and LuaJIT cannot
-- unload it, so ffi.load() hands back the old one (docs/install.md,
-- "Upgrading").

local ffi = require "ffi"
require "resty.edgeguard.cdefs"

local ffi_load = ffi.load
local ffi_string = ffi.string
local io_open = io.open
local os_getenv = os.getenv
local concat = table.concat
local gmatch = string.gmatch
local gsub = string.gsub

local C = ffi.C
local pcall = pcall
local tonumber = tonumber
local tostring = tostring

local _M = {}

--- The release these modules are: the C ABI version and crate version of
-- the header their cdefs were generated from.
_M.ABI_VERSION = tonumber(C.EDGEGUARD_ABI_VERSION)
_M.VERSION = C.EDGEGUARD_VERSION_MAJOR .. "." .. C.EDGEGUARD_VERSION_MINOR .. "." .. C.EDGEGUARD_VERSION_PATCH

local loaded     -- the clib, once loaded
local loaded_from

-- The C ABI and crate version a loaded library reports. A library older
-- than the versioned ABI has no edgeguard_abi_version: ABI 0.
local function identity(clib)
    local ok, abi = pcall(function() return clib.edgeguard_abi_version() end)
    local okv, version = pcall(function() return ffi_string(clib.edgeguard_version()) end)
    return ok and tonumber(abi) or 0, okv and version or "unknown"
end

-- nil when `clib` (loaded from `path`) is of these modules' release, else
-- the error that names both and the fix.
local function mismatch(clib, path)
    local abi, version = identity(clib)
    if abi == _M.ABI_VERSION and version:match("^%d+%.%d+%.%d+") == _M.VERSION then
        return nil
    end
    return "libedgeguard.so (" .. path .. ") is edgeguard " .. version .. " (C ABI " .. abi
        .. "), but the edgeguard Lua modules are " .. _M.VERSION .. " (C ABI " .. _M.ABI_VERSION
        .. "): an upgrade was followed by an nginx reload, and the old library is still loaded "
        .. "(LuaJIT cannot unload a shared object, so a reload keeps it). Restart nginx "
        .. "(systemctl restart nginx), or do nginx's binary upgrade (kill -USR2 the master, then "
        .. "-QUIT the old one), to load the new library; the running workers keep serving until then"
end

-- The paths to try, in the order the header says.
local function candidates(explicit)
    local list = { explicit }
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

    -- A library of another release is passed over (another path may hold
    -- the right one); when no path does, its error is the one returned.
    local tried, refused = {}, nil
    local function try(target, name)
        local ok, lib = pcall(ffi_load, target)
        if not ok then
            tried[#tried + 1] = name .. " (" .. tostring(lib) .. ")"
            return nil
        end
        local err = mismatch(lib, name)
        if err then
            refused = refused or err
            tried[#tried + 1] = name .. " (another release)"
            return nil
        end
        loaded, loaded_from = lib, name
        return lib
    end

    for _, path in ipairs(candidates(explicit)) do
        local f = io_open(path, "rb")
        if not f then
            tried[#tried + 1] = path .. " (not found)"
        elseif f:close() and try(path, path) then
            return loaded, loaded_from
        end
    end
    if try("edgeguard", "libedgeguard.so (system search path)") then
        return loaded, loaded_from
    end
    if refused then
        return nil, refused
    end
    return nil, "cannot load libedgeguard.so; tried: " .. concat(tried, ", ")
end

return _M
