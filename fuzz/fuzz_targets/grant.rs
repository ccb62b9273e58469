//! Any text as a grant file: a grant or a located error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(grant) = proto::Grant::from_toml(text)
    {
        // Every accepted grant writes back to TOML that parses to the same grant.
        let written = toml::to_string(&grant).expect("an accepted grant serialises");
        let again = proto::Grant::from_toml(&written).expect("written grant parses");
        assert_eq!(again, grant);
    }
});
