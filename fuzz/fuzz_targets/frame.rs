//! Any byte stream through the frame decoder and the strict envelope parse: a typed error
//! or an envelope, never a panic. The gate runs this with `-malloc_limit_mb`, which fails
//! on any single allocation larger than the limit, so a decoder that allocated from an
//! unchecked length prefix would be caught.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut stream = data;
    // Read frames until the stream is used up or refused, as a connection loop would.
    while let Ok(envelope) = proto::read_envelope(&mut stream) {
        // Whatever decodes must encode again and decode to the same value.
        let mut wire = Vec::new();
        if proto::write_envelope(&mut wire, &envelope).is_ok() {
            let again = proto::read_envelope(&mut wire.as_slice());
            assert_eq!(again.ok().as_ref(), Some(&envelope));
        }
    }
});
