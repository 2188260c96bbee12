-- The ffi.cdef text must declare exactly what include/edgeguard.h declares.
package.path = "./tests/lua/?.lua;" .. package.path
local T = require "harness"

local read = T.read

-- The header without comments, preprocessor blocks for C++, directives, and
-- with white space folded; its constants as LuaJIT declares them.
local function header_decls(text)
    text = text:gsub("/%*.-%*/", "")
    text = text:gsub("#define (EDGEGUARD_[%w_]+) (%d+)", "static const int %1 = %2;")
    text = text:gsub("#ifdef __cplusplus.-#endif[^\n]*", "")
    text = text:gsub("\n#[^\n]*", "\n")
    text = text:gsub("^#[^\n]*", "")
    return (text:gsub("%s+", " "):gsub("^ ", ""):gsub(" $", ""))
end

local function cdef_decls(text)
    local body = assert(text:match("ffi%.cdef%[%[(.-)%]%]"), "no ffi.cdef block")
    return (body:gsub("%s+", " "):gsub("^ ", ""):gsub(" $", ""))
end

T.test("cdefs mirror include/edgeguard.h", function()
    local want = header_decls(read("include/edgeguard.h"))
    local got = cdef_decls(read("lua/resty/edgeguard/cdefs.lua"))
    if got ~= want then
        -- Point at the first difference: the whole texts are long.
        local i = 1
        while i <= #got and got:sub(i, i) == want:sub(i, i) do
            i = i + 1
        end
        error("cdefs.lua differs from include/edgeguard.h at character " .. i
              .. "\n  header: ..." .. want:sub(math.max(1, i - 40), i + 60)
              .. "\n  cdefs:  ..." .. got:sub(math.max(1, i - 40), i + 60))
    end
end)

T.test("cdefs load into LuaJIT, and twice is harmless", function()
    local ffi = require "ffi"
    T.eq(require "resty.edgeguard.cdefs", true)
    package.loaded["resty.edgeguard.cdefs"] = nil
    T.eq(require "resty.edgeguard.cdefs", true)
    -- The element must have nginx's ngx_http_lua_ffi_table_elt_t layout.
    T.eq(ffi.sizeof("edgeguard_str"), 16, "sizeof edgeguard_str")
    T.eq(ffi.sizeof("edgeguard_header"), 32, "sizeof edgeguard_header")
    T.eq(ffi.offsetof("edgeguard_header", "value"), 16, "offset of value")
    T.eq(ffi.offsetof("edgeguard_str", "data"), 8, "offset of data")
end)

T.test("every constant of the header reads the same through the cdefs", function()
    local ffi = require "ffi"
    require "resty.edgeguard.cdefs"
    local n = 0
    for name, value in read("include/edgeguard.h"):gmatch("#define (EDGEGUARD_[%w_]+) (%d+)") do
        T.eq(ffi.C[name], tonumber(value), name)
        n = n + 1
    end
    T.ok(n >= 6, "the buffer sizes and limits are in the header")
    -- The arrays they size.
    T.eq(ffi.sizeof("edgeguard_effects") > ffi.C.EDGEGUARD_MAX_VARS * 32, true, "effects hold every variable")
    -- And an enum's values, which the shim reads by name.
    T.eq(tonumber(ffi.new("edgeguard_exit", "EDGEGUARD_EXIT_REDIRECT")), 3)
end)

T.run()
