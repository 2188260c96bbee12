#!/usr/bin/env bash
# make deb: target/deb/edgeguard_<version>-1_<arch>.deb, with dpkg-deb from a
# tree staged by `make install`, in Debian's own paths:
#   /usr/share/lua/5.1/resty/edgeguard*          (Debian's package.path, lua-resty-core's home)
#   /usr/lib/<multiarch>/lua/5.1/libedgeguard.so (Debian's package.cpath)
#   /usr/bin/edgeguard{,-update-verified-bots}, /usr/include/edgeguard.h
#   /usr/share/edgeguard/                        (models, list, example configs,
#                                                 rules/ presets, verified-bots-sources.json)
#   /etc/edgeguard/{edgeguard.json,internal-headers.txt}           conffiles
#   /etc/nginx/snippets/edgeguard{,-metrics,-record}.conf          conffiles, inactive until included
#   /lib/systemd/system/edgeguard-update-verified-bots.{service,timer}  enabled by postinst;
#                                                 they refresh /var/lib/edgeguard/verified-bots.json
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
debversion="$version-1"
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
maintainer=${DEB_MAINTAINER:-"$(git config user.name) <$(git config user.email)>"}
out=target/deb/edgeguard_${debversion}_${arch}.deb

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/root

make -s install DESTDIR="$stage" PREFIX=/usr LUA_CMODULE_DIR="/usr/lib/$multiarch/lua/5.1" \
    EDGEGUARD_CONFIG=/etc/edgeguard/edgeguard.json EDGEGUARD_MODELS=/usr/share/edgeguard/models \
    EDGEGUARD_VERIFIED_BOTS=/var/lib/edgeguard/verified-bots.json

# Debian keeps debug info in -dbgsym packages; the symbols stay.
strip --strip-debug "$stage/usr/bin/edgeguard" "$stage/usr/lib/$multiarch/lua/5.1/libedgeguard.so"

# What the admin edits lives in /etc and survives upgrades (dpkg asks before
# replacing a changed one); /usr/share/edgeguard keeps the shipped originals.
install -d "$stage/etc/edgeguard" "$stage/etc/nginx/snippets" "$stage/usr/share/doc/edgeguard"
install -m 644 "$stage/usr/share/edgeguard/edgeguard.json" "$stage/usr/share/edgeguard/internal-headers.txt" \
    "$stage/etc/edgeguard/"
install -m 644 "$stage/usr/share/edgeguard/nginx/edgeguard.conf" \
    "$stage/usr/share/edgeguard/nginx/edgeguard-metrics.conf" \
    "$stage/usr/share/edgeguard/nginx/edgeguard-record.conf" "$stage/etc/nginx/snippets/"
install -m 644 packaging/debian/README.Debian packaging/debian/copyright "$stage/usr/share/doc/edgeguard/"
install -d "$stage/lib/systemd/system"
install -m 644 packaging/systemd/edgeguard-update-verified-bots.service \
    packaging/systemd/edgeguard-update-verified-bots.timer "$stage/lib/systemd/system/"

# Shared-library dependencies of what we ship, the way debhelper computes them.
mkdir -p "$work/src/debian"
printf 'Source: edgeguard\n\nPackage: edgeguard\nArchitecture: any\n' > "$work/src/debian/control"
shlibs=$(cd "$work/src" && dpkg-shlibdeps -O "$stage/usr/bin/edgeguard" \
    "$stage/usr/lib/$multiarch/lua/5.1/libedgeguard.so" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')

install -d "$stage/DEBIAN"
install -m 755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$stage/DEBIAN/"
(cd "$stage" && find etc -type f | LC_ALL=C sort | sed 's|^|/|') > "$stage/DEBIAN/conffiles"
(cd "$stage" && find usr lib -type f | LC_ALL=C sort | xargs md5sum) > "$stage/DEBIAN/md5sums"
sed -e "s|@VERSION@|$debversion|" -e "s|@ARCH@|$arch|" -e "s|@MAINTAINER@|$maintainer|" \
    -e "s|@SHLIBS@|$shlibs|" -e "s|@SIZE@|$(du -sk --exclude=DEBIAN "$stage" | cut -f1)|" \
    packaging/debian/control.in > "$stage/DEBIAN/control"

mkdir -p target/deb
rm -f target/deb/edgeguard_*.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "$out"
