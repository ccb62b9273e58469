//! Where a granted host name may lead: which addresses of a resolver's answer a call may
//! connect to.
//!
//! A name in a grant is the owner's word for a place on the internet; what it resolves to is
//! said by whoever runs its DNS, who may answer differently at each lookup (DNS rebinding).
//! So each address of an answer is placed first. Addresses of this host and its link
//! (loopback, link-local, unspecified, multicast, broadcast: where llama-server and
//! boxmaker's own sockets listen) and of private networks (the owner's LAN, the tailnet,
//! a carrier's NAT) are dropped, unless the grant lists that very address as an IP literal,
//! which it could reach anyway, or, for private networks only, sets
//! `constraints.private_networks = true`. IPv6 forms that carry an IPv4 address (mapped,
//! compatible, translated, NAT64, 6to4, Teredo) are placed by that address, so a NAT64
//! answer for a public host stays reachable and one for 10.0.0.1 does not.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proto::Grant;

use super::InvalidGrant;
use super::host::Entry;

/// Where an address leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Zone {
    Public,
    /// A private network: 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7 and the like.
    Private,
    /// This host or its link.
    Local,
}

/// An address's zone and the range that puts it there, for a refusal a person can check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub zone: Zone,
    /// The range in CIDR form and what it is, as in `10.0.0.0/8 (private network)`;
    /// empty for a public address.
    pub range: &'static str,
    /// For an IPv6 form that carries an IPv4 address: the form's name and that address.
    pub carries: Option<(&'static str, Ipv4Addr)>,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((form, v4)) = self.carries {
            write!(f, "{form} of {v4}, ")?;
        }
        f.write_str(if self.range.is_empty() {
            "public"
        } else {
            self.range
        })
    }
}

/// IPv4 ranges that are not public: (network, prefix length, zone, words).
#[rustfmt::skip]
const V4: &[([u8; 4], u8, Zone, &str)] = &[
    ([127, 0, 0, 0], 8, Zone::Local, "127.0.0.0/8 (loopback)"),
    ([169, 254, 0, 0], 16, Zone::Local, "169.254.0.0/16 (link-local)"),
    ([0, 0, 0, 0], 8, Zone::Local, "0.0.0.0/8 (unspecified, this network)"),
    ([224, 0, 0, 0], 4, Zone::Local, "224.0.0.0/4 (multicast)"),
    ([255, 255, 255, 255], 32, Zone::Local, "255.255.255.255 (broadcast)"),
    ([10, 0, 0, 0], 8, Zone::Private, "10.0.0.0/8 (private network)"),
    ([172, 16, 0, 0], 12, Zone::Private, "172.16.0.0/12 (private network)"),
    ([192, 168, 0, 0], 16, Zone::Private, "192.168.0.0/16 (private network)"),
    ([100, 64, 0, 0], 10, Zone::Private,
        "100.64.0.0/10 (shared address space: carrier-grade NAT, tailnets)"),
];

/// IPv6 ranges that are not public and carry no IPv4 address.
#[rustfmt::skip]
const V6: &[(u128, u8, Zone, &str)] = &[
    (1, 128, Zone::Local, "::1 (loopback)"),
    (0, 128, Zone::Local, ":: (unspecified)"),
    (0xfe80 << 112, 10, Zone::Local, "fe80::/10 (link-local)"),
    (0xff00 << 112, 8, Zone::Local, "ff00::/8 (multicast)"),
    (0xfc00 << 112, 7, Zone::Private, "fc00::/7 (unique local)"),
    (0xfec0 << 112, 10, Zone::Private, "fec0::/10 (site-local)"),
    (0x0064_ff9b_0001 << 80, 48, Zone::Private,
        "64:ff9b:1::/48 (local-use NAT64: a translator of your own network)"),
];

/// Any address no row names.
const PUBLIC: Place = Place {
    zone: Zone::Public,
    range: "",
    carries: None,
};

fn in_range(bits: u128, net: u128, len: u8, width: u8) -> bool {
    let shift = u32::from(width - len);
    // A shift by the whole width (len 0) gives None on both sides: everything matches.
    bits.checked_shr(shift) == net.checked_shr(shift)
}

/// Where `ip` leads.
pub fn place(ip: IpAddr) -> Place {
    match ip {
        IpAddr::V4(v4) => place_v4(v4),
        IpAddr::V6(v6) => place_v6(v6),
    }
}

fn place_v4(v4: Ipv4Addr) -> Place {
    let bits = u128::from(u32::from(v4));
    let row = V4
        .iter()
        .find(|(net, len, ..)| in_range(bits, u128::from(u32::from_be_bytes(*net)), *len, 32));
    match row {
        Some((_, _, zone, range)) => Place {
            zone: *zone,
            range,
            carries: None,
        },
        None => PUBLIC,
    }
}

fn place_v6(v6: Ipv6Addr) -> Place {
    let bits = u128::from(v6);
    if let Some((_, _, zone, range)) = V6
        .iter()
        .find(|(net, len, ..)| in_range(bits, *net, *len, 128))
    {
        return Place {
            zone: *zone,
            range,
            carries: None,
        };
    }
    let v4 = |shift: u32| Ipv4Addr::from(((bits >> shift) & 0xffff_ffff) as u32);
    // (form, the IPv4 address it carries, a second one); the stricter places the address.
    let (form, first, second) = if in_range(bits, 0xffff << 32, 96, 128) {
        ("IPv4-mapped ::ffff:0:0/96", v4(0), None)
    } else if in_range(bits, 0, 96, 128) {
        ("IPv4-compatible ::/96", v4(0), None)
    } else if in_range(bits, 0xffff << 48, 96, 128) {
        ("IPv4-translated ::ffff:0:0:0/96", v4(0), None)
    } else if in_range(bits, 0x0064_ff9b << 96, 96, 128) {
        ("NAT64 64:ff9b::/96", v4(0), None)
    } else if in_range(bits, 0x2002 << 112, 16, 128) {
        ("6to4 2002::/16", v4(80), None)
    } else if in_range(bits, 0x2001_0000 << 96, 32, 128) {
        // Teredo: the server's address, then the client's with every bit flipped.
        ("Teredo 2001::/32", v4(64), Some(!v4(0)))
    } else {
        return PUBLIC;
    };
    let mut inner = (place_v4(first), first);
    if let Some(other) = second.map(|a| (place_v4(a), a))
        && other.0.zone > inner.0.zone
    {
        inner = other;
    }
    Place {
        zone: inner.0.zone,
        range: inner.0.range,
        carries: Some((form, inner.1)),
    }
}

/// What one grant lets a name's answer reach beyond public addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// The IP literals among the grant's hosts: the grant reaches these anyway.
    literals: Vec<IpAddr>,
    /// `constraints.private_networks`.
    private_networks: bool,
}

impl Reach {
    /// The reach of the grant that decided a call.
    pub fn of(grant: &Grant) -> Self {
        Self {
            literals: grant
                .constraints
                .hosts
                .iter()
                .filter_map(|h| match Entry::parse(h) {
                    Ok(Entry::Ip(ip)) => Some(ip),
                    _ => None,
                })
                .collect(),
            private_networks: grant.constraints.private_networks,
        }
    }

    /// The reach of a grant that lists `host` alone, without `private_networks`: an IP
    /// literal reaches itself, a name public addresses only (a remote MCP server's probe).
    pub fn of_host(host: &super::Host) -> Self {
        Self {
            literals: match host {
                super::Host::Ip(ip) => vec![*ip],
                super::Host::Name(_) => Vec::new(),
            },
            private_networks: false,
        }
    }

    fn admits(&self, ip: IpAddr, place: Place) -> bool {
        match place.zone {
            Zone::Public => true,
            Zone::Private if self.private_networks => true,
            Zone::Private | Zone::Local => self.literals.contains(&ip),
        }
    }
}

/// Why a name's answer leaves nothing to connect to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreachable {
    /// The resolver answered with no address at all.
    #[error("{name} resolved to no address")]
    NoAddress { name: String },
    /// Every address was dropped; each with its place.
    #[error("{}", all_dropped(name, dropped))]
    AllDropped {
        name: String,
        dropped: Vec<(IpAddr, Place)>,
    },
}

/// Every address of `name` was dropped: each with its place, and how the grant could let
/// the name lead there.
fn all_dropped(name: &str, dropped: &[(IpAddr, Place)]) -> String {
    let listed: Vec<String> = dropped
        .iter()
        .map(|(ip, place)| format!("{ip}: {place}"))
        .collect();
    let mut text = format!(
        "{name} resolves only to addresses a host name may not lead to ({}): \
         list the address itself in the grant's hosts",
        listed.join("; ")
    );
    if dropped.iter().any(|(_, p)| p.zone == Zone::Private) {
        text.push_str(
            ", or set constraints.private_networks = true to let the grant's \
             names reach private networks",
        );
    }
    text
}

/// The addresses of `name`'s answer a call under `reach` may connect to, sorted, without
/// repeats. Err when none is left.
pub fn admit(name: &str, answer: &[IpAddr], reach: &Reach) -> Result<Vec<IpAddr>, Unreachable> {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for ip in answer {
        let place = place(*ip);
        if reach.admits(*ip, place) {
            kept.push(*ip);
        } else {
            dropped.push((*ip, place));
        }
    }
    kept.sort();
    kept.dedup();
    if !kept.is_empty() {
        return Ok(kept);
    }
    let name = name.to_owned();
    Err(if dropped.is_empty() {
        Unreachable::NoAddress { name }
    } else {
        dropped.sort_by_key(|(ip, _)| *ip);
        dropped.dedup_by_key(|(ip, _)| *ip);
        Unreachable::AllDropped { name, dropped }
    })
}

/// Load-time check of `constraints.private_networks`: it must widen something.
pub(super) fn validate(grant: &Grant) -> Result<(), InvalidGrant> {
    let c = &grant.constraints;
    if !c.private_networks {
        return Ok(());
    }
    let tool = grant.tool.as_str();
    if !matches!(tool, "http_fetch" | "consult" | "run") && !tool.starts_with(super::mcp::PREFIX) {
        return Err(InvalidGrant::PrivateNetworksNoNetwork {
            tool: tool.to_owned(),
        });
    }
    if grant.mode == proto::Mode::Deny {
        return Err(InvalidGrant::PrivateNetworksOnDeny);
    }
    let names = c
        .hosts
        .iter()
        .any(|h| !matches!(Entry::parse(h), Ok(Entry::Ip(_))));
    if matches!(tool, "http_fetch" | "run") && !names {
        return Err(InvalidGrant::PrivateNetworksNoNames);
    }
    Ok(())
}
