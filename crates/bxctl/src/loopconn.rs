//! The connection to loopd's chat socket (`loop.sock`), for the chat and the session
//! commands.

use config::Config;
use daemon::conn::Conn;

use crate::Error;

pub fn connect(config: &Config) -> Result<Conn, Error> {
    let path = config.sockets.chat_loop_sock();
    Conn::connect(&path).map_err(|source| Error::Reach {
        server: "loopd",
        path,
        error: source,
    })
}
