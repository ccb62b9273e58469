//! Where a host name may lead: which addresses an answer keeps, and what `private_networks`
//! widens.

use std::net::{IpAddr, Ipv4Addr};

use grants::constraints::{Reach, Unreachable, Zone, admit, place};
use proto::Grant;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn ips(texts: &[&str]) -> Vec<IpAddr> {
    texts.iter().map(|t| ip(t)).collect()
}

fn fetch_grant(hosts: &[&str], private_networks: bool) -> Grant {
    let hosts: Vec<String> = hosts.iter().map(|h| format!("{h:?}")).collect();
    let text = format!(
        "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\n[constraints]\n\
         hosts = [{}]\nprivate_networks = {private_networks}\n",
        hosts.join(", ")
    );
    Grant::from_toml(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A public grant's reach: a name and nothing else.
fn public() -> Reach {
    Reach::of(&fetch_grant(&["example.org"], false))
}

/// Inside each private range (its first and last address) and one step outside it.
const PRIVATE: &[(&str, &str)] = &[
    ("10.0.0.0", "10.0.0.0/8"),
    ("10.255.255.255", "10.0.0.0/8"),
    ("172.16.0.1", "172.16.0.0/12"),
    ("172.31.255.255", "172.16.0.0/12"),
    ("192.168.0.1", "192.168.0.0/16"),
    ("192.168.255.255", "192.168.0.0/16"),
    ("100.64.0.1", "100.64.0.0/10"),
    ("100.127.255.255", "100.64.0.0/10"),
    ("fc00::1", "fc00::/7"),
    ("fdff:ffff::1", "fc00::/7"),
    ("fec0::1", "fec0::/10"),
    ("64:ff9b:1::a00:1", "64:ff9b:1::/48"),
];

const PUBLIC: &[&str] = &[
    "9.255.255.255",
    "11.0.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.167.255.255",
    "192.169.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "93.184.216.34",
    "fbff::1",
    "fe00::1",
    "2606:2800:220:1::1",
    "64:ff9b:2::1",
];

const LOCAL: &[&str] = &[
    "127.0.0.1",
    "127.255.255.254",
    "169.254.1.1",
    "0.0.0.0",
    "0.1.2.3",
    "224.0.0.1",
    "239.255.255.255",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "febf::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "64:ff9b::7f00:1",
];

#[test]
fn each_private_range_is_dropped_and_its_neighbours_are_not() {
    for (addr, range) in PRIVATE {
        let p = place(ip(addr));
        assert_eq!(p.zone, Zone::Private, "{addr}");
        assert!(p.range.starts_with(range), "{addr}: {}", p.range);
        let err = admit("lan.example", &[ip(addr)], &public()).expect_err(addr);
        assert!(
            matches!(&err, Unreachable::AllDropped { dropped, .. } if dropped.len() == 1),
            "{addr}: {err:?}"
        );
    }
    for addr in PUBLIC {
        assert_eq!(place(ip(addr)).zone, Zone::Public, "{addr}");
        assert_eq!(
            admit("www.example", &[ip(addr)], &public()),
            Ok(vec![ip(addr)])
        );
    }
}

#[test]
fn this_host_and_its_link_stay_dropped_even_with_private_networks() {
    let open = Reach::of(&fetch_grant(&["nas.example"], true));
    for addr in LOCAL {
        assert_eq!(place(ip(addr)).zone, Zone::Local, "{addr}");
        for reach in [public(), open.clone()] {
            let err = admit("h.example", &[ip(addr)], &reach).expect_err(addr);
            // Nothing to opt into: only the literal helps.
            assert!(!err.to_string().contains("private_networks"), "{err}");
        }
    }
}

/// IPv6 forms that carry an IPv4 address: (address, form, the IPv4 address, zone).
#[rustfmt::skip]
const CARRIED: &[(&str, &str, &str, Zone)] = &[
    ("64:ff9b::a00:1", "NAT64", "10.0.0.1", Zone::Private),
    ("64:ff9b::c0a8:101", "NAT64", "192.168.1.1", Zone::Private),
    ("64:ff9b::5db8:d822", "NAT64", "93.184.216.34", Zone::Public),
    ("::ffff:10.0.0.1", "IPv4-mapped", "10.0.0.1", Zone::Private),
    ("::ffff:93.184.216.34", "IPv4-mapped", "93.184.216.34", Zone::Public),
    ("::10.0.0.1", "IPv4-compatible", "10.0.0.1", Zone::Private),
    ("::ffff:0:10.0.0.1", "IPv4-translated", "10.0.0.1", Zone::Private),
    ("2002:c0a8:101::1", "6to4", "192.168.1.1", Zone::Private),
    ("2002:ac10:1::1", "6to4", "172.16.0.1", Zone::Private),
    ("2002:5db8:d822::1", "6to4", "93.184.216.34", Zone::Public),
    ("2002:7f00:1::1", "6to4", "127.0.0.1", Zone::Local),
    // Teredo, server 65.54.227.120: the client 10.0.0.1 (bits flipped: f5ff:fffe)...
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "Teredo", "10.0.0.1", Zone::Private),
    // ...the server 10.0.0.1 with a public client, and both public.
    ("2001:0:a00:1:8000:63bf:3fff:fdd2", "Teredo", "10.0.0.1", Zone::Private),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo", "65.54.227.120", Zone::Public),
];

#[test]
fn ipv6_forms_are_placed_by_the_ipv4_address_they_carry() {
    for &(addr, form, v4, zone) in CARRIED {
        let p = place(ip(addr));
        assert_eq!(p.zone, zone, "{addr}");
        let (named, carried) = p
            .carries
            .unwrap_or_else(|| panic!("{addr}: carries nothing"));
        assert!(named.starts_with(form), "{addr}: {named}");
        assert_eq!(carried, v4.parse::<Ipv4Addr>().expect("v4"), "{addr}");
        let admitted = admit("h.example", &[ip(addr)], &public()).is_ok();
        assert_eq!(admitted, zone == Zone::Public, "{addr}");
    }
}

#[test]
fn a_mixed_answer_keeps_its_public_addresses() {
    let answer = ips(&[
        "10.0.0.1",
        "93.184.216.34",
        "192.168.1.1",
        "2606:2800:220:1::1",
        "fd00::1",
        "64:ff9b::a00:1",
        "127.0.0.1",
        "93.184.216.34",
    ]);
    assert_eq!(
        admit("mixed.example", &answer, &public()),
        Ok(ips(&["93.184.216.34", "2606:2800:220:1::1"]))
    );
}

#[test]
fn an_answer_with_nothing_left_is_refused_with_each_address_and_the_way_out() {
    let answer = ips(&[
        "192.168.1.10",
        "64:ff9b::a00:1",
        "127.0.0.1",
        "192.168.1.10",
    ]);
    let err = admit("rebind.example", &answer, &public()).expect_err("all dropped");
    let Unreachable::AllDropped { name, dropped } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(name, "rebind.example");
    assert_eq!(dropped.len(), 3, "one entry per address: {dropped:?}");
    let text = err.to_string();
    for part in [
        "rebind.example resolves only to addresses a host name may not lead to",
        "192.168.1.10: 192.168.0.0/16 (private network)",
        "64:ff9b::a00:1: NAT64 64:ff9b::/96 of 10.0.0.1, 10.0.0.0/8 (private network)",
        "127.0.0.1: 127.0.0.0/8 (loopback)",
        "list the address itself in the grant's hosts",
        "set constraints.private_networks = true",
    ] {
        assert!(text.contains(part), "{part:?} not in {text:?}");
    }
    assert_eq!(
        admit("empty.example", &[], &public()),
        Err(Unreachable::NoAddress {
            name: "empty.example".into()
        })
    );
}

#[test]
fn an_address_the_grant_lists_literally_is_reached_through_a_name_too() {
    let reach = Reach::of(&fetch_grant(&["nas.example", "192.168.1.10", "::1"], false));
    assert_eq!(
        admit("nas.example", &ips(&["192.168.1.10"]), &reach),
        Ok(ips(&["192.168.1.10"]))
    );
    assert_eq!(
        admit("nas.example", &ips(&["::1"]), &reach),
        Ok(ips(&["::1"]))
    );
    // Only that very address: a neighbour, or the same address in another form, is not.
    for other in [
        "192.168.1.11",
        "::ffff:192.168.1.10",
        "64:ff9b::c0a8:10a",
        "127.0.0.1",
    ] {
        assert!(
            admit("nas.example", &[ip(other)], &reach).is_err(),
            "{other}"
        );
    }
}

#[test]
fn private_networks_lets_names_reach_every_private_range() {
    let reach = Reach::of(&fetch_grant(&["*.lan.example"], true));
    for (addr, _) in PRIVATE {
        assert_eq!(
            admit("nas.lan.example", &[ip(addr)], &reach),
            Ok(vec![ip(addr)])
        );
    }
    for addr in ["64:ff9b::a00:1", "::ffff:10.0.0.1", "2002:c0a8:101::1"] {
        assert_eq!(
            admit("nas.lan.example", &[ip(addr)], &reach),
            Ok(vec![ip(addr)])
        );
    }
}

#[test]
fn private_networks_is_validated_at_load() {
    use grants::constraints::validate;
    let text = |tool: &str, mode: &str, constraints: &str| {
        let t = format!(
            "tool = \"{tool}\"\nmode = \"{mode}\"\nmax_taint = \"private\"\n\n[constraints]\n\
             {constraints}\nprivate_networks = true\n"
        );
        Grant::from_toml(&t).unwrap_or_else(|e| panic!("{t}: {e}"))
    };
    for (g, word) in [
        (
            text("read_file", "auto", "paths = [\"/srv\"]"),
            "does not apply to read_file",
        ),
        (
            text("list_dir", "ask", "paths = [\"/srv\"]"),
            "does not apply to list_dir",
        ),
        (
            text("http_fetch", "deny", "hosts = [\"nas.example\"]"),
            "means nothing on a deny grant",
        ),
        (
            text(
                "http_fetch",
                "auto",
                "hosts = [\"192.168.1.10\", \"fd00::1\"]",
            ),
            "every entry of constraints.hosts is an IP address",
        ),
    ] {
        let err = validate(&g).expect_err(word).to_string();
        assert!(err.contains(word), "{word:?} not in {err:?}");
        assert!(err.contains("constraints.private_networks"), "{err}");
    }
    validate(&text(
        "http_fetch",
        "ask",
        "hosts = [\"nas.example\", \"10.0.0.1\"]",
    ))
    .expect("names");
    validate(&text("consult", "auto", "")).expect("consult's endpoint");
    validate(&fetch_grant(&["192.168.1.10"], false)).expect("off needs no names");
}
