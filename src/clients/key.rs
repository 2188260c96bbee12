//! Client keys: an address prefix crossed with the head's fingerprint,
//! hashed with a key chosen when the memory is made.
//!
//! An address alone puts everyone behind one carrier-grade NAT in one
//! record; a fingerprint alone puts everyone running one browser in one
//! record. Crossed, people behind one address with different browsers stay
//! apart, and one crawler stays one client. Two widths per family: the
//! host (/32, or the /64 an IPv6 host picks its addresses from) and the
//! network (/24, /48), which catches a crawler that rotates addresses
//! inside its block.
//!
//! The memory keeps only the keyed hash of a key, never the address or the
//! fingerprint: without the hash key (random per memory unless a fleet
//! shares one) a record cannot be traced back to an address, nor can a
//! client pick keys that all land in one bucket to evict its neighbours.

use std::hash::Hasher;
use std::net::IpAddr;

use siphasher::sip::SipHasher13;

/// How much of the address a key keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// One host: an IPv4 /32, an IPv6 /64.
    Host,
    /// Its network: an IPv4 /24, an IPv6 /48.
    Network,
}

/// The leading bytes of a client address at one [`Width`], the rest dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    bytes: [u8; 8],
    /// 4 (/32), 3 (/24), 8 (/64) or 6 (/48): the width and family at once.
    len: u8,
}

impl Prefix {
    /// The prefix of `addr` at `width`; an IPv4-mapped IPv6 address is its
    /// IPv4 address (`net::canonical`).
    pub fn of(addr: IpAddr, width: Width) -> Prefix {
        let mut bytes = [0; 8];
        let len = match (crate::net::canonical(addr), width) {
            (IpAddr::V4(a), w) => {
                bytes[..4].copy_from_slice(&a.octets());
                if w == Width::Host {
                    4
                } else {
                    3
                }
            }
            (IpAddr::V6(a), w) => {
                bytes.copy_from_slice(&a.octets()[..8]);
                if w == Width::Host {
                    8
                } else {
                    6
                }
            }
        };
        bytes[usize::from(len)..].fill(0);
        Prefix { bytes, len }
    }

    /// The bytes kept (3, 4, 6 or 8).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// One client as the gate names it: an address prefix and the fingerprint
/// of its head (e.g. the fleet signals' `headers` key, or a JA4).
#[derive(Clone, Copy, Debug)]
pub struct ClientKey<'a> {
    /// The client's address prefix.
    pub prefix: Prefix,
    /// The head's fingerprint, any bytes.
    pub fingerprint: &'a [u8],
}

/// The secret of the keyed hash (SipHash-1-3), fixed for a memory's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HashKey(pub [u64; 2]);

impl HashKey {
    /// A key from the operating system's random source (a std
    /// `RandomState` if `/dev/urandom` cannot be read).
    pub fn random() -> HashKey {
        use std::io::Read;
        let mut b = [0u8; 16];
        let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
        if read.is_ok() {
            let (k0, k1) = b.split_at(8);
            let word = |s: &[u8]| u64::from_le_bytes(s.try_into().unwrap_or_default());
            return HashKey([word(k0), word(k1)]);
        }
        use std::hash::BuildHasher;
        let state = std::collections::hash_map::RandomState::new();
        HashKey([state.hash_one(0u64), state.hash_one(1u64)])
    }

    /// The 64-bit hash of `key`. Never 0 (0 marks an empty slot).
    pub fn client(&self, key: &ClientKey<'_>) -> u64 {
        let mut h = SipHasher13::new_with_keys(self.0[0], self.0[1]);
        let prefix = key.prefix.as_bytes();
        // The length first: a /24 and a /32 with the same leading bytes,
        // or prefix bytes that continue into the fingerprint, never hash
        // the same input.
        h.write_u8(key.prefix.len);
        h.write(prefix);
        h.write(key.fingerprint);
        h.finish() | 1
    }

    /// The 64-bit hash of a request's id (nginx's `$request_id`), with a
    /// key derived from this one; 0 for the empty id (none to match).
    pub fn request(&self, id: &[u8]) -> u64 {
        if id.is_empty() {
            return 0;
        }
        let mut h = SipHasher13::new_with_keys(self.0[0] ^ 0x7265_7175_6573_7431, self.0[1]);
        h.write(id);
        h.finish() | 1
    }

    /// The 64-bit hash of a path for the distinct-paths sketch: the path
    /// before any `?`, hashed with a key derived from this one so path
    /// hashes and client hashes are unrelated.
    pub fn path(&self, path: &[u8]) -> u64 {
        let path = path.split(|&c| c == b'?').next().unwrap_or_default();
        let mut h = SipHasher13::new_with_keys(self.0[0] ^ 0x7061_7468_7368_6b31, self.0[1]);
        h.write(path);
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(addr: &str, width: Width, fp: &'static [u8]) -> ClientKey<'static> {
        ClientKey {
            prefix: Prefix::of(addr.parse().unwrap(), width),
            fingerprint: fp,
        }
    }

    #[test]
    fn prefixes_keep_the_documented_bytes() {
        let table: &[(&str, Width, &[u8])] = &[
            ("192.0.2.77", Width::Host, &[192, 0, 2, 77]),
            ("192.0.2.77", Width::Network, &[192, 0, 2]),
            ("::ffff:192.0.2.77", Width::Network, &[192, 0, 2]),
            (
                "2001:db8:1:2:3:4:5:6",
                Width::Host,
                &[0x20, 1, 0xd, 0xb8, 0, 1, 0, 2],
            ),
            (
                "2001:db8:1:2:3:4:5:6",
                Width::Network,
                &[0x20, 1, 0xd, 0xb8, 0, 1],
            ),
        ];
        for &(addr, width, want) in table {
            assert_eq!(
                Prefix::of(addr.parse().unwrap(), width).as_bytes(),
                want,
                "{addr}"
            );
        }
    }

    #[test]
    fn hashes_separate_what_the_key_separates() {
        let k = HashKey([1, 2]);
        let chrome = key("192.0.2.7", Width::Host, b"chrome:hCMP");
        // Same host, same head: one client, whatever the rest of the address.
        assert_eq!(
            k.client(&chrome),
            k.client(&key("::ffff:192.0.2.7", Width::Host, b"chrome:hCMP"))
        );
        assert_eq!(
            k.client(&key("192.0.2.7", Width::Network, b"x")),
            k.client(&key("192.0.2.200", Width::Network, b"x"))
        );
        let others = [
            key("192.0.2.7", Width::Host, b"firefox:hUAL"),
            key("192.0.2.8", Width::Host, b"chrome:hCMP"),
            key("192.0.2.7", Width::Network, b"chrome:hCMP"),
            // The /24's bytes plus a fingerprint starting with the /32's
            // last byte: a different key, a different hash.
            key("192.0.2.0", Width::Network, b"\x07chrome:hCMP"),
        ];
        for other in &others {
            assert_ne!(k.client(&chrome), k.client(other), "{other:?}");
        }
        assert_ne!(k.client(&chrome), HashKey([1, 3]).client(&chrome));
        assert_eq!(k.client(&chrome) & 1, 1);
    }

    #[test]
    fn path_hashes_ignore_the_query_and_random_keys_differ() {
        let k = HashKey([5, 6]);
        assert_eq!(k.path(b"/a?x=1"), k.path(b"/a"));
        assert_ne!(k.path(b"/a"), k.path(b"/b"));
        assert_ne!(HashKey::random(), HashKey::random());
    }
}
