//! The owner's words, registered with brokerd before loopd has them (docs/decisions.md X4):
//! brokerd then accounts them as the owner's, private and trusted.

use std::io::Write;
use std::path::Path;

use crate::Error;

/// Registers `text` on brokerd's chat side `broker`. When brokerd cannot take it, the chat
/// goes on and says what that costs: the message is then loopd's word to brokerd.
pub fn register(broker: &Path, text: &str, out: &mut dyn Write) -> Result<(), Error> {
    if let Err(e) = owner_words::register(broker, text) {
        let e = inert::line(&e.to_string());
        writeln!(
            out,
            "[brokerd did not register this message ({e}); the turn's tool calls are \
             labelled as the highest label loopd was ever sent]"
        )
        .map_err(Error::Output)?;
    }
    Ok(())
}
