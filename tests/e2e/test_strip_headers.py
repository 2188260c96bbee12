"""Internal headers never reach the origin: real nginx, real origin, real HTTP."""

import pytest

from conftest import raw_request

# Headers nginx's proxy rewrites on its own; everything else must arrive as sent.
PROXY_OWNED = {"host", "connection"}


def received(origin):
    return [(n, v) for n, v in origin.last_headers() if n.lower() not in PROXY_OWNED]


def names(origin):
    return [n.lower() for n, _ in received(origin)]


def test_request_without_internal_headers_is_untouched_and_in_order(edge, origin):
    port, _ = edge
    sent = [
        ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0"),
        ("Accept", "text/html,application/xhtml+xml"),
        ("Accept-Language", "en-US,en;q=0.5"),
        ("X-Internal", "a name that only shares a prefix with the rules"),
        ("X-Tenant-Id", "longer than the internal x-tenant"),
        ("X-Edg", "shorter than the x-edge- prefix"),
        ("Cookie", "a=1; b=2"),
        ("Empty", ""),
    ]
    status, headers, _ = raw_request(port, [f"{n}: {v}" for n, v in sent])
    assert status == 200
    assert headers["x-edgeguard-removed"] == "0"
    assert received(origin) == sent


@pytest.mark.parametrize(
    "name",
    ["X-Internal-User-Id", "x-internal-user-id", "X-INTERNAL-USER-ID", "x-InTeRnAl-UsEr-Id", "X-Auth-Subject"],
)
def test_exact_names_in_any_case_are_removed(edge, origin, name):
    port, _ = edge
    status, headers, _ = raw_request(port, [f"{name}: 42", "Accept: */*"])
    assert status == 200
    assert headers["x-edgeguard-removed"] == "1"
    assert names(origin) == ["accept"]


def test_prefix_rules_match_any_suffix(edge, origin):
    port, _ = edge
    lines = ["X-Internal-Anything: 1", "x-edge-route: eu", "X-EDGE-: bare prefix", "X-Edge-Very-Long-" + "A" * 300 + ": 1"]
    status, headers, _ = raw_request(port, ["Accept: */*", *lines, "X-Edgy: kept"])
    assert status == 200
    assert headers["x-edgeguard-removed"] == "4"
    assert names(origin) == ["accept", "x-edgy"]


def test_repeated_internal_header_is_removed_every_time(edge, origin):
    port, _ = edge
    lines = ["X-Debug-Token: 1", "Accept: */*", "x-debug-token: 2", "X-DEBUG-TOKEN: 3"]
    status, headers, _ = raw_request(port, lines)
    assert status == 200
    assert headers["x-edgeguard-removed"] == "3"
    assert names(origin) == ["accept"]


def test_empty_values_are_still_removed(edge, origin):
    port, _ = edge
    status, headers, _ = raw_request(port, ["X-Tenant:", "X-Internal-Flag: ", "Accept: */*", "Empty:"])
    assert status == 200
    assert headers["x-edgeguard-removed"] == "2"
    assert received(origin) == [("Accept", "*/*"), ("Empty", "")]


def test_underscore_spellings_are_removed_when_nginx_passes_them(edge, origin):
    port, _ = edge
    lines = ["X_Internal_User_Id: 1", "x-internal_user-id: 2", "X_Auth_Subject: root", "Accept: */*", "X_Kept: yes"]
    status, headers, _ = raw_request(port, lines)
    assert status == 200
    assert headers["x-edgeguard-removed"] == "3"
    assert names(origin) == ["accept", "x_kept"]


def test_underscore_spellings_never_arrive_when_nginx_drops_them(edge_strict, origin):
    port, _ = edge_strict
    lines = ["X_Internal_User_Id: 1", "X-Internal-User-Id: 2", "Accept: */*"]
    status, headers, _ = raw_request(port, lines)
    assert status == 200
    # nginx ignores names with "_" itself (ignore_invalid_headers); edgeguard removes the other.
    assert headers["x-edgeguard-removed"] == "1"
    assert names(origin) == ["accept"]


def test_internal_headers_after_the_hundredth_are_removed(edge, origin):
    port, _ = edge
    ordinary = [f"X-Filler-{i:03d}: {i}" for i in range(145)]
    internal = ["X-Internal-User-Id: 1", "X-Edge-Last: 2", "x-tenant: 3", "X-Debug-Token: 4", "x-auth-subject: 5"]
    status, headers, _ = raw_request(port, ordinary + internal)
    assert status == 200
    assert headers["x-edgeguard-removed"] == "5"
    assert names(origin) == [f"x-filler-{i:03d}" for i in range(145)]
