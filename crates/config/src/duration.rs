//! How the configuration writes a duration: humantime's text (`"30s"`, `"1h 30m"`), so a
//! value says its unit. Each section's fields take it with `deserialize_with = "duration"`.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

pub(super) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    humantime::parse_duration(&text)
        .map_err(|e| serde::de::Error::custom(format!("{text:?} is not a duration: {e}")))
}
