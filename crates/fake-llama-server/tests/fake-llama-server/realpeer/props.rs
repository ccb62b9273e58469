//! Real-peer checks of what `/props` says, for `bxctl verify` (docs/verify.md): the fake's
//! `tools = false` reports what the real server reports of a template without tool support
//! (SmolLM2's own), and the real server reports neither `--cache-reuse` nor `--context-shift`
//! anywhere in `/props` or `/slots`, which is why `bxctl verify` says so as `warn` rather
//! than reading a setting that is not there. The day a server reports them, the second test
//! fails and the check can read them.

use serde_json::Value;

use super::{real, real_with};
use crate::common::Server;

/// The fields of `chat_template_caps` that say whether tools render.
const TOOL_CAPS: [&str; 4] = [
    "supports_tools",
    "supports_tool_calls",
    "supports_object_arguments",
    "supports_parallel_tool_calls",
];

fn caps(server: &Server) -> Vec<(&'static str, Value)> {
    let props = server.get("/props").json();
    TOOL_CAPS
        .iter()
        .map(|k| (*k, props["chat_template_caps"][*k].clone()))
        .collect()
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn the_fakes_tool_support_in_props_is_the_real_servers() {
    let with = real();
    let fake_with = Server::fake("[server]\ntotal_slots = 2\n");
    assert_eq!(caps(&fake_with), caps(&with));
    assert!(caps(&with).iter().all(|(_, v)| *v == Value::Bool(true)));
    drop(with);
    let without = real_with(&["--model-template"]);
    let fake_without = Server::fake("[server]\ntotal_slots = 2\ntools = false\n");
    assert_eq!(caps(&fake_without), caps(&without));
    assert!(caps(&without).iter().all(|(_, v)| *v == Value::Bool(false)));
}

/// `/props` without its per-start fields (the media marker is random at each start).
fn props_of(server: &Server) -> Value {
    let mut props = server.get("/props").json();
    if let Value::Object(map) = &mut props {
        map.remove("media_marker");
    }
    props
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn props_and_slots_say_nothing_of_cache_reuse_or_context_shift() {
    let plain = real();
    let (props, slots) = (props_of(&plain), plain.get("/slots").json());
    drop(plain);
    let loose = real_with(&["--cache-reuse", "256", "--context-shift"]);
    assert_eq!(
        props_of(&loose),
        props,
        "/props differs with --cache-reuse 256 --context-shift: bxctl verify can read them now"
    );
    assert_eq!(loose.get("/slots").json(), slots);
}
