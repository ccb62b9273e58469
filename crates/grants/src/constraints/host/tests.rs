use super::*;

fn entry(raw: &str) -> Entry {
    Entry::parse(raw).expect(raw)
}

fn url_host(raw: &str) -> Host {
    normalize_url(raw).expect(raw).1
}

fn name(n: &str) -> Host {
    Host::Name(n.to_owned())
}

#[test]
fn exact_entries_match_only_that_name() {
    let e = entry("example.org");
    assert!(e.matches(&name("example.org")));
    for other in [
        "www.example.org",
        "example.org.evil.com",
        "evil-example.org",
        "badexample.org",
        "example.or",
        "example.org0",
    ] {
        assert!(!e.matches(&name(other)), "{other}");
    }
}

#[test]
fn wildcards_match_any_depth_below_but_not_the_apex() {
    let e = entry("*.example.org");
    for below in ["a.example.org", "a.b.example.org", "x-y.z_w.example.org"] {
        assert!(e.matches(&name(below)), "{below}");
    }
    for other in [
        "example.org",
        "badexample.org",
        "a.badexample.org",
        "example.org.evil.com",
        "a.example.org.evil.com",
        "evil.com",
    ] {
        assert!(!e.matches(&name(other)), "{other}");
    }
    assert!(!e.matches(&Host::Ip("127.0.0.1".parse().expect("ip"))));
}

#[test]
fn entries_are_case_insensitive_and_ignore_one_trailing_dot() {
    assert_eq!(entry("EXAMPLE.Org"), Entry::Exact("example.org".into()));
    assert_eq!(entry("example.org."), Entry::Exact("example.org".into()));
    assert_eq!(entry("*.Example.ORG."), Entry::Below("example.org".into()));
    assert_eq!(
        entry("xn--bcher-kva.de"),
        Entry::Exact("xn--bcher-kva.de".into())
    );
    assert_eq!(entry("localhost"), Entry::Exact("localhost".into()));
    assert_eq!(entry("*.lan"), Entry::Below("lan".into()));
    assert_eq!(
        entry("_dmarc.example.org"),
        Entry::Exact("_dmarc.example.org".into())
    );
}

#[test]
fn request_hosts_are_normalised_before_matching() {
    let e = entry("example.org");
    for raw in [
        "https://example.org/",
        "https://EXAMPLE.org/",
        "https://Example.ORG./a",
        "https://exam%70le.org/",
        "https://example.org%2e/",
        "http://example.org:8080/",
        "https://@example.org/",
        "http:example.org/x",
        "https:\\\\example.org\\x",
    ] {
        assert!(e.matches(&url_host(raw)), "{raw}");
    }
    for raw in [
        "https://example.org@evil.com/",
        "https://example.org.evil.com/",
        "https://example.org%E3%80%82evil.com/",
        "https://evil-example.org/",
    ] {
        assert!(
            normalize_url(raw).map_or(true, |(_, h)| !e.matches(&h)),
            "{raw}"
        );
    }
}

#[test]
fn idna_names_match_their_punycode_entry() {
    let e = entry("xn--bcher-kva.de");
    assert!(e.matches(&url_host("https://bücher.de/")));
    assert!(e.matches(&url_host("https://BÜCHER.de./")));
    assert!(e.matches(&url_host("https://xn--bcher-kva.de/")));
    assert!(!e.matches(&url_host("https://bucher.de/")));
    assert!(normalize_url("https://xn--zz.de/").is_err(), "bad punycode");
}

#[test]
fn ip_literals_match_only_an_identical_ip_entry() {
    let v4 = entry("127.0.0.1");
    for raw in [
        "http://127.0.0.1/",
        "http://0x7f.1/",
        "http://127.1/",
        "http://0177.0.0.1/",
        "http://2130706433/",
    ] {
        assert_eq!(
            url_host(raw),
            Host::Ip("127.0.0.1".parse().expect("ip")),
            "{raw}"
        );
        assert!(v4.matches(&url_host(raw)), "{raw}");
    }
    assert!(!v4.matches(&url_host("http://127.0.0.2/")));
    assert!(
        !v4.matches(&url_host("http://[::ffff:127.0.0.1]/")),
        "no v4-mapped equivalence"
    );
    assert!(!v4.matches(&name("localhost")));
    assert!(!entry("example.org").matches(&url_host("http://93.184.215.14/")));

    let v6 = entry("::1");
    assert!(v6.matches(&url_host("http://[::1]/")));
    assert!(v6.matches(&url_host("http://[0:0:0:0:0:0:0:1]:8080/")));
    assert!(!v6.matches(&url_host("http://[::2]/")));
    assert!(entry("2001:DB8::1").matches(&url_host("https://[2001:db8:0::1]/")));
    assert!(entry("::ffff:127.0.0.1").matches(&url_host("http://[::ffff:7f00:1]/")));
}

#[test]
fn bad_entries_are_refused_with_a_reason() {
    for (bad, word) in [
        ("", "empty"),
        ("*", "every host"),
        ("*.", "every host"),
        ("bücher.de", "punycode"),
        ("[::1]", "without brackets"),
        ("https://example.org", "scheme"),
        ("example.org/docs", "path"),
        ("user@example.org", "user name"),
        ("example.org:443", "port"),
        ("fe80::1%eth0", "zone"),
        ("*example.org", "leading `*.`"),
        ("a.*.example.org", "leading `*.`"),
        ("*.*.example.org", "leading `*.`"),
        ("example.*", "leading `*.`"),
        ("example..org", "empty label"),
        (".example.org", "empty label"),
        ("example.org..", "empty label"),
        ("*..example.org", "empty label"),
        ("exa mple.org", "letters, digits"),
        ("exam%70le.org", "letters, digits"),
        ("a!b.org", "letters, digits"),
        ("127.1", "dotted quad"),
        ("0x7f.0.0.1", "dotted quad"),
        ("01.2.3.4", "dotted quad"),
        ("2130706433", "dotted quad"),
        ("*.1.2.3.4", "not a host name"),
        ("xn--zz.de", "not a host name"),
    ] {
        let err = Entry::parse(bad).expect_err(bad).to_string();
        assert!(err.contains(word), "{bad:?}: {err}");
    }
}

#[test]
fn only_plain_http_urls_without_userinfo_are_accepted() {
    for (bad, word) in [
        ("file:///etc/passwd", "not file:"),
        ("ftp://example.org/", "not ftp:"),
        ("javascript:alert(1)", "not javascript:"),
        ("data:text/plain,hi", "not data:"),
        ("ws://example.org/", "not ws:"),
        ("example.org/x", "not a URL"),
        ("//example.org/x", "not a URL"),
        ("", "not a URL"),
        ("https://user:pass@example.org/", "user name or password"),
        ("https://user@example.org/", "user name or password"),
        ("https://:pass@example.org/", "user name or password"),
        ("https://a..example.org/", "empty label"),
        ("https://.example.org/", "empty label"),
        ("https://example.org../", "empty label"),
        ("https://*.example.org/", "letters, digits"),
        ("https://a!b$.example.org/", "letters, digits"),
        ("https://exa%00mple.org/", "not a URL"),
        ("http://x.1.2.3.4/", "not a URL"),
        ("http://[fe80::1%25eth0]/", "not a URL"),
    ] {
        let err = normalize_url(bad).expect_err(bad).to_string();
        assert!(err.contains(word), "{bad:?}: {err}");
    }
}

#[test]
fn urls_are_brought_to_one_spelling() {
    for (raw, normal) in [
        ("HTTPS://Example.ORG./a#frag", "https://example.org/a"),
        ("https://example.org:443/", "https://example.org/"),
        ("http://example.org:8080/x", "http://example.org:8080/x"),
        (
            "https://example.org/%7euser/%41%2d?q=%7e%2f#x",
            "https://example.org/~user/A-?q=~%2F",
        ),
        (
            "https://example.org/a%2fb%3A",
            "https://example.org/a%2Fb%3A",
        ),
        ("https://example.org/a/%2e%2e/b", "https://example.org/b"),
        ("https://example.org/a/./b/../c", "https://example.org/a/c"),
        ("https://example.org/a b", "https://example.org/a%20b"),
        ("https://example.org/100%", "https://example.org/100%"),
        ("https://example.org/%+1%zz", "https://example.org/%+1%zz"),
        ("https://bücher.de/ü", "https://xn--bcher-kva.de/%C3%BC"),
        ("http://0x7f.1/", "http://127.0.0.1/"),
    ] {
        let (url, _) = normalize_url(raw).expect(raw);
        assert_eq!(url.as_str(), normal, "{raw}");
        let (again, _) = normalize_url(url.as_str()).expect(normal);
        assert_eq!(again, url, "normalising twice changes nothing: {raw}");
    }
}

#[test]
fn escaped_dot_segments_are_refused() {
    for bad in [
        "https://example.org/docs/..%2fsecret",
        "https://example.org/docs/..%2Fsecret",
        "https://example.org/docs/%2e%2e%2fsecret",
        "https://example.org/docs/..%5csecret",
        "https://example.org/docs/x%2f..%2f..%2fsecret",
        "https://example.org/docs/..;/secret",
        "https://example.org/docs/.;x/secret",
        "https://example.org/docs/%2e%2e;/secret",
    ] {
        let err = normalize_url(bad).expect_err(bad).to_string();
        assert!(err.contains("hides"), "{bad}: {err}");
    }
    for ok in [
        "https://example.org/docs/...",
        "https://example.org/docs/..a",
        "https://example.org/docs/a..%2fb",
        "https://example.org/?next=..%2f..%2fsecret",
    ] {
        normalize_url(ok).expect(ok);
    }
}

#[test]
fn look_alike_letters_become_other_names() {
    let e = entry("example.org");
    // Cyrillic е (U+0435) in place of the Latin e.
    let h = url_host("https://\u{435}xample.org/");
    assert!(matches!(&h, Host::Name(n) if n.starts_with("xn--")), "{h}");
    assert!(!e.matches(&h));
    // The WHATWG parser drops tabs and newlines anywhere; what is matched is what is fetched.
    assert!(e.matches(&url_host("https://exa\tmple.org/")));
    assert_eq!(
        normalize_url("https://exa\nmple.org/a\tb")
            .expect("stripped")
            .0
            .as_str(),
        "https://example.org/ab"
    );
}
