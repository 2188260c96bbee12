//! What the client memory holds of one request's client ([`ClientSeen`]), and
//! what a location does with the memory ([`Clients`]): the leaf the
//! `clients` stage (`clients.rs`), the state, the location and the
//! effects share.

use std::net::IpAddr;

use crate::clients::{ClientKey, ClientMemory, ClientView, Prefix, Width};
use crate::config::{Behaviour, Options};

/// What a location does with the client memory.
#[derive(Clone, Debug)]
pub(super) struct Clients {
    pub(super) memory: ClientMemory,
    /// `client_cookie`: the memory's cookie is set on navigations.
    pub(super) cookie: bool,
    pub(super) behaviour: Behaviour,
    /// `behaviour_navigations`.
    pub(super) navigations: u32,
}

impl Clients {
    /// What `o` asks of the memory it opened; none when it opened none.
    pub(super) fn of(o: &Options) -> Option<Clients> {
        Some(Clients {
            memory: o.clients.clone()?,
            cookie: o.cookie_on(),
            behaviour: o.behaviour_action(),
            navigations: o.crawl_navigations(),
        })
    }

    /// The memory.
    pub(super) fn memory(&self) -> &ClientMemory {
        &self.memory
    }
}

/// The memory's cookie in one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CookieSeen {
    /// Neither sent back nor set.
    #[default]
    None,
    /// A valid one came back.
    Returned,
    /// The answer sets one.
    Issued,
}

impl CookieSeen {
    /// `$edgeguard_client_cookie`'s value.
    pub fn as_str(self) -> &'static str {
        match self {
            CookieSeen::None => "none",
            CookieSeen::Returned => "returned",
            CookieSeen::Issued => "issued",
        }
    }
}

/// What the memory holds of a request's client, after the request.
#[derive(Clone, Copy, Debug)]
pub struct ClientSeen {
    /// The host's record (/32, /64 × fingerprint).
    pub host: ClientView,
    /// The network's (/24, /48 × fingerprint).
    pub network: ClientView,
    /// The memory's cookie in this request.
    pub cookie: CookieSeen,
    pub(super) addr: IpAddr,
    pub(super) fingerprint: [u8; 8],
}

impl ClientSeen {
    pub(super) fn keys(&self) -> [ClientKey<'_>; 2] {
        [Width::Host, Width::Network].map(|w| ClientKey {
            prefix: Prefix::of(self.addr, w),
            fingerprint: &self.fingerprint,
        })
    }
}
