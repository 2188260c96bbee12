//! Client addresses: parsing them as nginx and replay hold them, and
//! address blocks (the `allow` list), parsed once, matched per request
//! without allocating.
//!
//! A leaf: it imports nothing of the crate, so the configuration, the
//! verified bots and the challenge all read addresses by one rule.
//!
//! An IPv4-mapped IPv6 address (`::ffff:10.1.2.3`) is the IPv4 address it
//! maps, in a block and in a client address alike ([`canonical`]): a
//! dual-stack listener (`listen [::]:80 ipv6only=off`) reports IPv4
//! clients that way, and `10.0.0.0/8` must allow them as it does on an
//! IPv4 listener. The verified-bot prefixes and the challenge's binding
//! read addresses by the same rule.

#![forbid(unsafe_code)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, what a dual-stack
/// socket reports) as the IPv4 address it is; any other address as it is.
pub fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    }
}

/// An address block of one family (an `allow` entry, a bot's prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// The network address, host bits zeroed.
    addr: IpAddr,
    bits: u8,
}

impl Cidr {
    /// Parses `192.0.2.0/24`, `2001:db8::/32`, or one address (a full-length
    /// prefix). Host bits set in the address are ignored. An IPv4-mapped
    /// block of at least 96 bits (`::ffff:192.0.2.0/120`) is the IPv4 block
    /// it covers (`192.0.2.0/24`).
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let (addr, bits) = match text.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (text, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("invalid address in CIDR block '{text}'"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => max,
            Some(b) => {
                if b.is_empty() || !b.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(format!("invalid prefix length in CIDR block '{text}'"));
                }
                match b.parse::<u8>() {
                    Ok(n) if n <= max => n,
                    _ => return Err(format!("prefix length {b} too long in '{text}'")),
                }
            }
        };
        let (addr, bits) = match addr {
            IpAddr::V6(a) if bits >= 96 => match a.to_ipv4_mapped() {
                Some(v4) => (IpAddr::V4(v4), bits - 96),
                None => (addr, bits),
            },
            _ => (addr, bits),
        };
        Ok(Cidr {
            addr: mask(addr, bits),
            bits,
        })
    }

    /// The network address (host bits zeroed) and the prefix length.
    pub fn parts(&self) -> (IpAddr, u8) {
        (self.addr, self.bits)
    }

    /// Whether `addr` is in the block. An IPv4-mapped address is matched as
    /// the IPv4 address it maps (`10.0.0.0/8` holds `::ffff:10.1.2.3`, and
    /// `::/0` does not, as it holds no IPv4 client of an IPv4 listener);
    /// otherwise families never mix.
    pub fn contains(&self, addr: IpAddr) -> bool {
        let addr = canonical(addr);
        addr.is_ipv4() == self.addr.is_ipv4() && mask(addr, self.bits) == self.addr
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4((u32::from(a) & m).into())
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6((u128::from(a) & m).into())
        }
    }
}

/// A client address as the caller has it: nginx's `$binary_remote_addr`
/// (4 or 16 bytes) or the textual `$remote_addr` replay reads from a log.
/// Anything else (a unix socket's `unix:`, an empty value) is no address
/// and lies in no block.
pub fn addr_from_binary(bytes: &[u8]) -> Option<IpAddr> {
    if let Ok(b) = <[u8; 4]>::try_from(bytes) {
        Some(IpAddr::V4(Ipv4Addr::from(b)))
    } else if let Ok(b) = <[u8; 16]>::try_from(bytes) {
        Some(IpAddr::V6(Ipv6Addr::from(b)))
    } else {
        None
    }
}

/// The textual form; see [`addr_from_binary`]. `str::parse` does not
/// allocate.
pub fn addr_from_text(text: &[u8]) -> Option<IpAddr> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_blocks() {
        let c = |s: &str| Cidr::parse(s).unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(c("10.0.0.0/8").contains(ip("10.255.1.2")));
        assert!(!c("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(
            c("10.1.2.3/8").contains(ip("10.9.9.9")),
            "host bits ignored"
        );
        assert!(c("192.0.2.7").contains(ip("192.0.2.7")));
        assert!(!c("192.0.2.7").contains(ip("192.0.2.8")));
        assert!(c("0.0.0.0/0").contains(ip("203.0.113.9")));
        assert!(!c("0.0.0.0/0").contains(ip("::1")), "families never mix");
        assert!(c("2001:db8::/32").contains(ip("2001:db8:ffff::1")));
        assert!(!c("2001:db8::/32").contains(ip("2001:db9::1")));
        assert!(c("::/0").contains(ip("::1")));
        // IPv4-mapped clients (a dual-stack listener's IPv4 peers) are
        // IPv4; mapped blocks are the IPv4 blocks they cover.
        assert!(c("192.0.2.0/24").contains(ip("::ffff:192.0.2.1")));
        assert!(c("10.0.0.0/8").contains(ip("::ffff:10.1.2.3")));
        assert!(!c("10.0.0.0/8").contains(ip("::ffff:11.1.2.3")));
        assert!(c("::ffff:10.0.0.0/104").contains(ip("10.200.0.1")));
        assert_eq!(c("::ffff:10.0.0.0/104").to_string(), "10.0.0.0/8");
        assert_eq!(c("::ffff:0:0/96").to_string(), "0.0.0.0/0");
        assert!(
            !c("::/0").contains(ip("::ffff:10.1.2.3")),
            "a mapped client is not IPv6"
        );
        assert!(!c("::ffff:0:0/95").contains(ip("::ffff:10.1.2.3")));
        assert!(
            c("::ffff:0:0/95").contains(ip("::fffe:1:2")),
            "short blocks stay IPv6"
        );
        assert!(
            !c("::/96").contains(ip("10.1.2.3")),
            "IPv4-compatible is not mapped"
        );
        assert!(c("2001:db8::/33").contains(ip("2001:db8:7fff::")));
        assert!(!c("2001:db8::/33").contains(ip("2001:db8:8000::")));
        // What cidr.lua's tests held: odd prefixes, embedded IPv4 tails.
        assert!(c("172.16.0.0/12").contains(ip("172.31.255.255")));
        assert!(!c("172.16.0.0/12").contains(ip("172.32.0.0")));
        assert!(c("fe80::/10").contains(ip("febf::9")));
        assert!(!c("fe80::/10").contains(ip("fec0::9")));
        assert!(c("::ffff:192.0.2.0/120").contains(ip("::ffff:192.0.2.99")));
        assert!(c("::1").contains(ip("::1")));
        assert!(!c("::1").contains(ip("::2")));
        assert!(c("1:2:3:4:5:6:7:8").contains(ip("1:2:3:4:5:6:7:8")));
        assert_eq!(c("1:2:3:4:5:6:7:8").to_string(), "1:2:3:4:5:6:7:8/128");
        for bad in [
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "x",
            "10.0.0.0/",
            "10.0.0.0/-1",
            "1.2.3.4/8/8",
            "256.0.0.1",
            "01.2.3.4",
            "1::2::3",
            "1:2:3:4:5:6:7:8:9",
            "1.2.3",
            "example.com",
            "::1/",
            "",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn binary_and_textual_addresses() {
        assert_eq!(
            addr_from_binary(&[127, 0, 0, 1]),
            Some("127.0.0.1".parse().unwrap())
        );
        let mut v6 = [0u8; 16];
        v6[15] = 1;
        assert_eq!(addr_from_binary(&v6), Some("::1".parse().unwrap()));
        assert_eq!(addr_from_binary(b""), None);
        assert_eq!(addr_from_binary(b"unix:"), None);
        assert_eq!(
            addr_from_text(b"2001:db8::1"),
            Some("2001:db8::1".parse().unwrap())
        );
        assert_eq!(addr_from_text(b"not-an-ip"), None);
        // What nginx gives for an IPv4 client of a dual-stack listener:
        // $binary_remote_addr 16 bytes, $remote_addr the mapped text.
        let mut mapped = [0u8; 16];
        mapped[10..12].copy_from_slice(&[0xff, 0xff]);
        mapped[12..].copy_from_slice(&[10, 1, 2, 3]);
        let block = Cidr::parse("10.0.0.0/8").unwrap();
        for addr in [
            addr_from_binary(&mapped),
            addr_from_text(b"::ffff:10.1.2.3"),
        ] {
            assert!(block.contains(addr.unwrap()), "{addr:?}");
        }
        assert_eq!(addr_from_text(b"\xff"), None);
    }
}
