-- luarocks make (from a checkout) builds the Rust library with cargo and
-- installs it the way `make install` does: resty/edgeguard*.lua (with the
-- frozen legacy engine, resty/edgeguard/legacy*) into the
-- tree's share/lua/5.1 and libedgeguard.so into its lib/lua/5.1, where the
-- tree's package.path and package.cpath find them (no lib_path needed); the
-- edgeguard CLI into its bin. Needs a Rust toolchain (cargo) on the PATH.
rockspec_format = "3.0"
package = "lua-resty-edgeguard"
version = "0.1.0-1"
source = {
   -- The repository has no public address yet: this is the maintainers'
   -- main checkout. `luarocks make` ignores it (it builds the checkout it
   -- runs in); set the published git URL and a tag before `luarocks upload`.
   url = "git+file:///work/main",
}
description = {
   summary = "Internal-header stripping and CatBoost bot scoring for OpenResty/nginx, in Rust through LuaJIT's FFI",
   detailed = [[
edgeguard removes internal request headers before nginx proxies a request
and scores requests for bots with CatBoost models; the work is done by a Rust
library (libedgeguard.so) that the resty.edgeguard Lua modules call through
LuaJIT's FFI. Needs OpenResty or nginx with lua-nginx-module and
lua-resty-core.
]],
   license = "Apache-2.0",
}
dependencies = {
   "lua == 5.1",
}
build = {
   type = "make",
   build_target = "build",
   build_variables = {},
   install_target = "install",
   install_variables = {
      PREFIX = "$(PREFIX)",
      BINDIR = "$(BINDIR)",
      LUA_MODULE_DIR = "$(LUADIR)",
      LUA_CMODULE_DIR = "$(LIBDIR)",
   },
}
