#!/usr/bin/env bash
# make test-fresh: `make run`, then `make test`, as root in a clean Debian 12
# (bookworm) root built with debootstrap, on a clean clone of HEAD.
#
# What the root gets before the two commands, and why:
# - `apt-get install make`: a stock Debian has no make, and the two
#   commands are make targets (docs/development.md says so too);
# - the host's Rust toolchain, bind-mounted read-only at /opt/rust and first
#   on the PATH: the crate needs rustc >= its rust-version (1.89), Debian
#   12's rustc is 1.63, and rustup cannot download here. It is the one
#   assumption: a fresh machine brings its toolchain (rustup, or a copy);
# - /usr/sbin/policy-rc.d answering 101: package scripts inside a chroot must
#   not start daemons (Debian's nginx and prometheus would listen on :80 and
#   :9090 of the host's network), the usual rule for a chroot.
# - the host's local CA certificates (/usr/local/share/ca-certificates), when
#   it has any, and the variables that point Python, pip and node at the
#   system bundle: a network whose egress goes through a TLS-inspecting proxy
#   needs them on any machine in it, fresh or not.
# Everything else (apt packages, the venv's pip installs, crates, npm) the
# two commands fetch themselves, from the package registries.
#
# The root lives in FRESH_DIR (default /var/tmp/edgeguard-fresh/root) and is
# rebuilt on every run; downloaded .debs are kept in FRESH_DIR/debs for
# debootstrap. The log is FRESH_DIR/log, the step times at its end.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

[ "$(id -u)" = 0 ] || { echo "test-fresh: run as root (debootstrap, chroot, mounts)" >&2; exit 2; }
work=${FRESH_DIR:-/var/tmp/edgeguard-fresh}
root=$work/root
mirror=${FRESH_MIRROR:-http://deb.debian.org/debian}
toolchain=${FRESH_RUST_TOOLCHAIN:-$(rustc --print sysroot)}
commit=$(git rev-parse HEAD)
mkdir -p "$work/debs"

"$toolchain/bin/rustc" --version >/dev/null ||
    { echo "test-fresh: no rustc in $toolchain (set FRESH_RUST_TOOLCHAIN)" >&2; exit 2; }
for port in 8080 8081; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "test-fresh: 127.0.0.1:$port is taken; \`make run\` inside needs it" >&2
        exit 2
    fi
done

# Processes left inside the root (a test's nginx), then every mount under
# it, deepest first; only then is the root removed (--one-file-system: never
# through a mount that did not come off).
teardown() {
    local pid mnt
    for pid in /proc/[0-9]*; do
        [ "$(readlink "$pid/root" 2>/dev/null)" = "$root" ] && kill -KILL "${pid#/proc/}" 2>/dev/null || true
    done
    while read -r mnt; do
        umount -l "$mnt" 2>/dev/null || true
    done < <(awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r)
}
teardown
rm -rf --one-file-system "$root"

step_times=()
step() {
    local name=$1 t0=$SECONDS
    shift
    echo "==> test-fresh: $name ($(date -u +%H:%M:%S) UTC)"
    if "$@"; then
        step_times+=("$name: $((SECONDS - t0)) s")
    else
        local rc=$?
        step_times+=("$name: FAILED (exit $rc) after $((SECONDS - t0)) s")
        report
        exit "$rc"
    fi
}
report() {
    echo "==> test-fresh: commit $commit, toolchain $("$toolchain/bin/rustc" --version)"
    printf '    %s\n' "${step_times[@]}"
}

local_cas=(/usr/local/share/ca-certificates/*.crt)
ca_env=()
if [ -e "${local_cas[0]}" ]; then
    bundle=/etc/ssl/certs/ca-certificates.crt
    ca_env=(SSL_CERT_FILE=$bundle PIP_CERT=$bundle REQUESTS_CA_BUNDLE=$bundle NODE_EXTRA_CA_CERTS=$bundle)
fi

in_root() {
    chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "${ca_env[@]}" \
        PATH=/opt/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/bash -c "$1"
}

setup_root() {
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    if [ ${#ca_env[@]} -gt 0 ]; then
        mkdir -p "$root/usr/local/share/ca-certificates" "$root/etc/ssl/certs"
        cp "${local_cas[@]}" "$root/usr/local/share/ca-certificates/"
        cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
    fi
    cat > "$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
    printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
    chmod 755 "$root/usr/sbin/policy-rc.d"
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount --rbind /dev "$root/dev"
    mount --make-rslave "$root/dev"
    mkdir -p "$root/opt/rust"
    mount --bind "$toolchain" "$root/opt/rust"
    mount -o remount,bind,ro "$root/opt/rust"
    git clone -q --no-hardlinks --no-checkout "$repo" "$root/root/edgeguard"
    git -C "$root/root/edgeguard" checkout -q --detach "$commit"
}

trap teardown EXIT
start=$SECONDS
step "debootstrap bookworm" debootstrap --cache-dir="$work/debs" bookworm "$root" "$mirror"
step "root: mounts, toolchain, clone of $commit" setup_root
step "apt-get install make" in_root 'apt-get update -qq && apt-get install -y -qq --no-install-recommends make'
step "make run" in_root 'cd /root/edgeguard && make run && curl -s -o /dev/null -w "%{http_code}\n" http://127.0.0.1:8080/hello'
step "make stop" in_root 'cd /root/edgeguard && make stop'
step "make test" in_root 'cd /root/edgeguard && make test'
step_times+=("total: $((SECONDS - start)) s")
report
