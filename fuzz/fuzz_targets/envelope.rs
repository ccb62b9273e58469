//! Any frame body through the strict envelope parse: a typed error or an envelope that
//! encodes and decodes to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(envelope) = proto::decode_envelope(data) {
        let body = serde_json::to_vec(&envelope).expect("an accepted envelope encodes");
        let again = proto::decode_envelope(&body).expect("an encoded envelope decodes");
        assert_eq!(again, envelope);
    }
});
