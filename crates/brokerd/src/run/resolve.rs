//! The addresses a call may reach: its host resolved once, here, through the system resolver
//! (on NixOS, systemd-resolved over AF_UNIX), and the answer filtered by the grant's reach
//! (`grants::constraints::admit`). The tool connects only to these addresses and its unit
//! admits only these, so a name's owner who answers differently later (DNS rebinding) still
//! reaches only what was admitted here.
//!
//! The lookup is a parameter, so tests stand in for DNS without touching the system's.

use std::io;
use std::net::{IpAddr, ToSocketAddrs};
use std::time::Duration;

use grants::constraints::{Host, Reach, Unreachable, admit};

/// Asks a name's addresses for a port. [`system`] in brokerd; a stand-in in tests.
type Lookup = fn(&str, u16) -> io::Result<Vec<IpAddr>>;

/// The system resolver, through the C library (NSS).
fn system(name: &str, port: u16) -> io::Result<Vec<IpAddr>> {
    (name, port)
        .to_socket_addrs()
        .map(|addrs| addrs.map(|a| a.ip()).collect())
}

/// How long a name may take to resolve. The system resolver's own timeouts and retries
/// can add up to much more, and the session's calls wait meanwhile (its lock is held).
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call's host gives nothing to connect to. Each text is whole: it prints what it
/// wraps (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The lookup thread could not start.
    #[error("cannot resolve {name}: {error}")]
    Thread { name: String, error: io::Error },
    /// The resolver answered with an error.
    #[error("cannot resolve {name}: {error}")]
    Lookup { name: String, error: io::Error },
    /// The resolver did not answer in time.
    #[error("cannot resolve {name}: no answer within {after:?}")]
    Timeout { name: String, after: Duration },
    /// The answer left nothing the grant reaches.
    #[error("{0}")]
    Unreachable(Unreachable),
}

/// The addresses of `host` a call under `reach` may connect to, sorted. An IP literal in the
/// URL is its own answer: the grant covered it only by listing it.
pub fn addresses(host: &Host, port: u16, reach: &Reach) -> Result<Vec<IpAddr>, Error> {
    addresses_with(host, port, reach, TIMEOUT, system)
}

/// [`addresses`] with the lookup given. The lookup runs on a thread of its own; one that
/// outlasts `timeout` fails the call (its thread ends when the resolver gives up).
fn addresses_with(
    host: &Host,
    port: u16,
    reach: &Reach,
    timeout: Duration,
    lookup: Lookup,
) -> Result<Vec<IpAddr>, Error> {
    let name = match host {
        Host::Ip(ip) => return Ok(vec![*ip]),
        Host::Name(name) => name,
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = name.clone();
    std::thread::Builder::new()
        .name("resolve".into())
        .spawn(move || {
            let _ = tx.send(lookup(owned.as_str(), port));
        })
        .map_err(|source| Error::Thread {
            name: name.clone(),
            error: source,
        })?;
    let answer = match rx.recv_timeout(timeout) {
        Ok(found) => found.map_err(|source| Error::Lookup {
            name: name.clone(),
            error: source,
        })?,
        Err(_) => {
            return Err(Error::Timeout {
                name: name.clone(),
                after: timeout,
            });
        }
    };
    admit(name, &answer, reach).map_err(Error::Unreachable)
}

#[cfg(test)]
mod tests;
