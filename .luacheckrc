-- luacheck (Debian: lua-check) over lua/, in `make lint`.
-- nginx's Lua module: ngx and ndk globals; LuaJIT's bit, ffi and jit are
-- required as modules, so ngx_lua's standard set covers everything.
std = "ngx_lua"
-- Methods keep `self` for a uniform interface even when one does not use it.
self = false
max_line_length = 120
