use super::*;

use grants::constraints::Zone;
use proto::Grant;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A stand-in for DNS: fixed answers, as a hostile name owner might give them.
fn zone_file(name: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
    let answer: &[&str] = match name {
        "www.example" => &["93.184.216.34", "2606:2800:220:1::1"],
        // A rebinding name: one public address, the rest of the owner's LAN.
        "mixed.example" => &["10.0.0.1", "93.184.216.34", "fd00::1", "192.168.1.1"],
        "lan.example" => &[
            "10.1.2.3",
            "172.16.5.4",
            "192.168.1.10",
            "100.64.0.7",
            "fd00::7",
        ],
        "nat64.example" => &["64:ff9b::5db8:d822"],
        "nat64-lan.example" => &["64:ff9b::a00:1"],
        "mapped-lan.example" => &["::ffff:10.0.0.1"],
        "sixtofour-lan.example" => &["2002:c0a8:101::1"],
        "nas.example" => &["192.168.1.10"],
        "localhost.example" => &["127.0.0.1", "::1"],
        _ => return Err(io::Error::new(io::ErrorKind::NotFound, "no such name")),
    };
    Ok(answer.iter().map(|a| ip(a)).collect())
}

fn reach(constraints: &str) -> Reach {
    let text = format!(
        "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\n[constraints]\n\
         {constraints}\n"
    );
    let grant = Grant::from_toml(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    grants::constraints::validate(&grant).unwrap_or_else(|e| panic!("{text}: {e}"));
    Reach::of(&grant)
}

fn resolve(name: &str, reach: &Reach) -> Result<Vec<IpAddr>, Error> {
    let host = Host::Name(name.into());
    addresses_with(&host, 443, reach, Duration::from_secs(60), zone_file)
}

#[test]
fn a_public_grant_never_becomes_a_lan_scan() {
    let web = reach("hosts = [\"*.example\"]");
    assert_eq!(
        resolve("www.example", &web).expect("public"),
        [ip("93.184.216.34"), ip("2606:2800:220:1::1")]
    );
    assert_eq!(
        resolve("mixed.example", &web).expect("the public one"),
        [ip("93.184.216.34")]
    );
    assert_eq!(
        resolve("nat64.example", &web).expect("NAT64 of a public address"),
        [ip("64:ff9b::5db8:d822")]
    );
    for name in [
        "lan.example",
        "nat64-lan.example",
        "mapped-lan.example",
        "sixtofour-lan.example",
        "localhost.example",
    ] {
        let err = resolve(name, &web).expect_err(name);
        let Error::Unreachable(Unreachable::AllDropped { dropped, .. }) = &err else {
            panic!("{name}: {err:?}");
        };
        assert!(
            dropped.iter().all(|(_, p)| p.zone != Zone::Public),
            "{name}"
        );
        assert!(
            err.to_string()
                .starts_with(&format!("{name} resolves only to addresses")),
            "{err}"
        );
    }
    let err = resolve("lan.example", &web)
        .expect_err("all private")
        .to_string();
    for part in [
        "10.1.2.3: 10.0.0.0/8",
        "172.16.5.4: 172.16.0.0/12",
        "192.168.1.10: 192.168.0.0/16",
        "100.64.0.7: 100.64.0.0/10",
        "fd00::7: fc00::/7",
        "constraints.private_networks = true",
    ] {
        assert!(err.contains(part), "{part:?} not in {err:?}");
    }
}

#[test]
fn the_owner_opens_a_private_address_by_listing_it_or_by_the_key() {
    let literal = reach("hosts = [\"nas.example\", \"192.168.1.10\"]");
    assert_eq!(
        resolve("nas.example", &literal).expect("listed"),
        [ip("192.168.1.10")]
    );
    assert_eq!(
        resolve("lan.example", &literal).expect("the listed one"),
        [ip("192.168.1.10")],
        "only that address of the answer"
    );
    let open = reach("hosts = [\"*.example\"]\nprivate_networks = true");
    assert_eq!(resolve("lan.example", &open).expect("opted in").len(), 5);
    assert_eq!(
        resolve("nat64-lan.example", &open).expect("opted in"),
        [ip("64:ff9b::a00:1")]
    );
    // The key opens private networks, never this host.
    assert!(resolve("localhost.example", &open).is_err());
    // An IP in the URL is its own answer (the grant covered it by listing it).
    let lan = Host::Ip(ip("10.0.0.1"));
    let quick = Duration::from_secs(60);
    assert_eq!(
        addresses_with(&lan, 80, &literal, quick, zone_file).expect("literal URL"),
        [ip("10.0.0.1")]
    );
}

#[test]
fn names_never_lead_to_this_host() {
    let web = reach("hosts = [\"localhost\"]");
    let err = addresses(&Host::Name("localhost".into()), 80, &web).expect_err("loopback");
    assert!(matches!(err, Error::Unreachable(_)), "{err:?}");
    assert!(err.to_string().contains("127.0.0.0/8 (loopback)"), "{err}");
    let loopback = ip("127.0.0.1");
    assert_eq!(
        addresses(&Host::Ip(loopback), 80, &web).expect("literal"),
        [loopback]
    );
}

#[test]
fn a_resolver_that_does_not_answer_fails_the_call_in_time() {
    let slow: Lookup = |_, _| {
        std::thread::sleep(Duration::from_secs(5));
        Ok(vec![IpAddr::from([192, 0, 2, 7])])
    };
    let web = reach("hosts = [\"example.org\"]");
    let name = Host::Name("example.org".into());
    let short = Duration::from_millis(50);
    let err = addresses_with(&name, 443, &web, short, slow).expect_err("no answer in time");
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert!(err.to_string().contains("no answer within"), "{err}");
    let quick: Lookup = |_, _| Ok(vec![IpAddr::from([192, 0, 2, 7])]);
    let long = Duration::from_secs(60);
    assert_eq!(
        addresses_with(&name, 443, &web, long, quick).expect("answers"),
        [IpAddr::from([192, 0, 2, 7])]
    );
    let err = resolve("unknown.example", &web).expect_err("not found");
    assert!(matches!(err, Error::Lookup { .. }), "{err:?}");
}
