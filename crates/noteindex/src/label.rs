//! The label a note reads as, shared by brokerd (a read, a listing) and the indexer (the
//! partition a note goes to): brokerd's record's label when the bytes are those it
//! recorded, else secret and untrusted.

use proto::notes::NoteRecord;
use proto::{DataClass, Hash32};

use crate::Label;

/// What a note reads as when brokerd cannot vouch for its bytes.
pub const UNKNOWN: Label = Label {
    class: DataClass::Secret,
    untrusted: true,
};

/// The largest label record (a name, a hash and up to 32 sources).
pub const MAX_RECORD: u64 = 64 * 1024;

/// brokerd's record of note `name` from the bytes of its record file; a record that is not
/// one, or names another note, is none.
pub fn record_of(name: &str, bytes: &[u8]) -> Option<NoteRecord> {
    let record: NoteRecord = serde_json::from_slice(bytes).ok()?;
    (record.name == name).then_some(record)
}

/// The label a read of `bytes` takes given brokerd's `record`, and whether the bytes are
/// those the record names. Read the bytes before the record: labels only rise, so a record
/// read later never labels older bytes too low.
pub fn note_label(bytes: Option<&[u8]>, record: Option<&NoteRecord>) -> (Label, bool) {
    match (bytes, record) {
        (Some(b), Some(r)) if Hash32::digest(b) == r.hash => (
            Label {
                class: r.class,
                untrusted: r.untrusted,
            },
            true,
        ),
        _ => (UNKNOWN, false),
    }
}
