#!/bin/sh
# nginx end to end under valgrind memcheck: one nginx process (master_process
# off) with the shipped configuration's edgeguard blocks (list, both models,
# access() in block mode) and an origin server block, REQUESTS requests
# (browser-like and bot-like, with internal headers), then a graceful stop so
# the Lua VM is closed and every handle released. Fails if any "definitely
# lost" block has a libedgeguard frame in its stack. nginx's and LuaJIT's own
# reports are counted and printed, not judged: neither is built for valgrind.
#
#   scripts/valgrind-nginx.sh [REQUESTS]      (default 300)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
requests=${1:-300}
lib=$root/target/release/libedgeguard.so
[ -f "$lib" ] || { echo "no $lib; run make build" >&2; exit 1; }
dir=$(mktemp -d /tmp/edgeguard-valgrind-XXXXXX)
chmod 755 "$dir"
mkdir -p "$dir/logs"
trap 'rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
origin=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$dir/nginx.conf" <<EOF
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
master_process off;
daemon off;
error_log logs/error.log notice;
pid logs/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path logs/body;
    proxy_temp_path logs/proxy;
    fastcgi_temp_path logs/fastcgi;
    uwsgi_temp_path logs/uwsgi;
    scgi_temp_path logs/scgi;
    lua_package_path "$root/lua/?.lua;;";
    init_by_lua_block {
        assert(require("resty.edgeguard").configure{
            internal_headers = "$root/nginx-conf/internal-headers.txt",
            models = { bot = "$root/models/bot.json", spoof = "$root/models/spoof.json" },
            mode = "block",
            lib_path = "$lib",
        })
    }
    init_worker_by_lua_block { require("resty.edgeguard").init_worker() }
    server {
        listen 127.0.0.1:$port;
        underscores_in_headers on;
        location / {
            rewrite_by_lua_block { require("resty.edgeguard").access() }
            proxy_pass http://127.0.0.1:$origin;
        }
    }
    server {
        listen 127.0.0.1:$origin;
        location / { return 200 "origin\n"; }
    }
}
EOF

vlog=$dir/valgrind.log
valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite --num-callers=40 \
    --log-file="$vlog" nginx -p "$dir/" -c nginx.conf &
vpid=$!
# Loading two models under valgrind takes a while.
up=0
for _ in $(seq 1 600); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/ready" 2>/dev/null; then up=1; break; fi
    kill -0 $vpid 2>/dev/null || break
    sleep 0.5
done
[ $up = 1 ] || { echo "nginx under valgrind did not start" >&2; cat "$dir/logs/error.log" "$vlog" >&2; exit 1; }

chrome='Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36'
ok=0 blocked=0 other=0
i=0
while [ $i -lt "$requests" ]; do
    if [ $((i % 2)) = 0 ]; then
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/v1/reviews?i=$i" \
            -H 'sec-ch-ua: "Google Chrome";v="147", "Not.A/Brand";v="8", "Chromium";v="147"' \
            -H 'sec-ch-ua-mobile: ?0' -H 'sec-ch-ua-platform: "macOS"' -H "User-Agent: $chrome" \
            -H 'Accept: application/json, text/plain, */*' -H 'Sec-Fetch-Site: same-origin' \
            -H 'Sec-Fetch-Mode: cors' -H 'Sec-Fetch-Dest: empty' -H 'Accept-Language: en-US,en;q=0.9' \
            -H 'X-Internal-User-Id: 42' -H 'X_Edge_Debug: 1')
    else
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/?i=$i" \
            -H 'User-Agent: curl/8.5.0' -H 'X-Internal-User-Id: 7')
    fi
    case $code in 200) ok=$((ok + 1)) ;; 403) blocked=$((blocked + 1)) ;; *) other=$((other + 1)) ;; esac
    i=$((i + 1))
done
# A signal that lands between two epoll_wait calls is only acted on when
# the next one returns, and with no timer pending that is never: repeat it.
for _ in $(seq 1 60); do
    kill -QUIT $vpid 2>/dev/null || break
    sleep 1
done
kill -0 $vpid 2>/dev/null && { echo "nginx under valgrind did not stop" >&2; kill -KILL $vpid; exit 1; }
wait $vpid || true

echo "requests: $requests ($ok 200, $blocked 403, $other other)"
grep -E "ERROR SUMMARY|definitely lost:|indirectly lost:|possibly lost:|still reachable:" "$vlog" | sed 's/^==[0-9]*== */  /'
# One loss record per paragraph; count the definite ones naming libedgeguard.
ours=$(awk '/definitely lost in loss record/ { rec = 1; hit = 0; next }
            rec && /libedgeguard|edgeguard::/ { hit = 1 }
            rec && /^==[0-9]+== $/ { if (hit) n++; rec = 0 }
            END { print n + 0 }' "$vlog")
echo "definitely lost records with a libedgeguard frame: $ours"
# Whose the other definite losses are: the first frames of each record.
awk '/definitely lost in loss record/ { rec = 1; n = 0 }
     rec && n < 6 { sub(/^==[0-9]+== +/, "    "); print; n++ }
     /^==[0-9]+== $/ { rec = 0 }' "$vlog"
if [ "$ours" != 0 ] || [ "$other" != 0 ]; then
    awk '/definitely lost in loss record/,/^==[0-9]+== $/' "$vlog" | grep -B2 -A30 edgeguard | head -80
    exit 1
fi
