//! Any text as any tool's arguments: refused with a reason, or parsed into the tool's types
//! with a canonical form that parses back to the same value and is its own canonical form.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proto::tools::{TOOL_NAMES, ToolArgs};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let tool = TOOL_NAMES[usize::from(which) % TOOL_NAMES.len()];
    if let Ok(args) = ToolArgs::parse(tool, text) {
        assert_eq!(args.tool(), tool);
        let canonical = args.canonical();
        let again = ToolArgs::parse(tool, &canonical).expect("the canonical form parses");
        assert_eq!(again, args);
        assert_eq!(again.canonical(), canonical);
    }
});
