//! Timestamps: the one canonical form, and every other form refused.

use proto::Timestamp;

/// The last millisecond of the year 9999, the latest instant a timestamp can name.
const MAX_MILLIS: u64 = 253_402_300_799_999;

#[test]
fn canonical_round_trip() {
    let ts = Timestamp::parse("2026-09-17T08:05:00.000Z").expect("canonical");
    assert_eq!(ts.as_millis(), 1_789_632_300_000);
    assert_eq!(ts.to_string(), "2026-09-17T08:05:00.000Z");
    assert_eq!(
        Timestamp::parse("1970-01-01T00:00:00.000Z").map(Timestamp::as_millis),
        Ok(0)
    );
    let last = Timestamp::from_millis(MAX_MILLIS).expect("max");
    assert_eq!(last.to_string(), "9999-12-31T23:59:59.999Z");
    assert_eq!(Timestamp::parse(&last.to_string()), Ok(last));
}

#[test]
fn non_canonical_forms_are_refused() {
    for bad in [
        "2026-09-17T08:05:00Z",
        "2026-09-17T08:05:00.0Z",
        "2026-09-17T08:05:00.000000Z",
        "2026-09-17T08:05:00.000+00:00",
        "2026-09-17t08:05:00.000z",
        "2026-09-17 08:05:00.000Z",
        "2026-02-30T08:05:00.000Z",
        "2026-09-17T24:00:00.000Z",
        "2016-12-31T23:59:60.000Z",
        "1969-12-31T23:59:59.999Z",
        "+2026-09-17T08:05:00.000Z",
        "２026-09-17T08:05:00.000Z",
        "",
    ] {
        assert!(Timestamp::parse(bad).is_err(), "{bad} accepted");
    }
    assert!(Timestamp::from_millis(MAX_MILLIS + 1).is_err());
}
