//! Who is on the other end of a Unix socket, from the kernel (SO_PEERCRED), never from what
//! the peer says. Under DynamicUser uids are assigned at start, so rules name users and
//! groups, resolved through NSS (which knows DynamicUser names) at each check.

use std::fmt;
use std::io;
use std::os::unix::net::UnixStream;

use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::sys::socket::{MsgFlags, getsockopt, recv, sockopt::PeerCredentials};
use nix::unistd::{Group, Uid, User};

use config::Peer;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerIdentity {
    pub uid: u32,
    pub gid: u32,
    pub pid: i32,
    /// The user name NSS gives for `uid`, when it has one.
    pub user: Option<String>,
    /// The primary group NSS gives for `uid`, when it has one (from the same look-up as
    /// `user`; it can differ from the socket's `gid`).
    pub primary_gid: Option<u32>,
}

impl fmt::Display for PeerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.user {
            Some(name) => write!(f, "uid {} ({name})", self.uid),
            None => write!(f, "uid {}", self.uid),
        }
    }
}

pub fn identify(stream: &UnixStream) -> io::Result<PeerIdentity> {
    let cred = getsockopt(stream, PeerCredentials).map_err(io::Error::from)?;
    let user = User::from_uid(Uid::from_raw(cred.uid())).ok().flatten();
    let primary_gid = user.as_ref().map(|u| u.gid.as_raw());
    Ok(PeerIdentity {
        uid: cred.uid(),
        gid: cred.gid(),
        pid: cred.pid(),
        user: user.map(|u| u.name),
        primary_gid,
    })
}

/// Whether `who` is what `rule` admits. A group admits its members and users whose
/// primary group it is.
pub fn admits(rule: &Peer, who: &PeerIdentity) -> bool {
    match rule {
        Peer::Uid(uid) => who.uid == *uid,
        Peer::User(name) => who.user.as_deref() == Some(name.as_str()),
        Peer::Group(name) => match Group::from_name(name) {
            Ok(Some(group)) => {
                group.gid.as_raw() == who.gid
                    || who.user.as_ref().is_some_and(|u| group.mem.contains(u))
                    || who.primary_gid == Some(group.gid.as_raw())
            }
            _ => false,
        },
    }
}

/// Whether the peer has closed its end (or shut down its writing side): a peek that does
/// not wait and takes nothing. Data waiting to be read means the peer is still there.
/// (std's `UnixStream::peek` is unstable.)
pub fn hung_up(stream: &UnixStream) -> bool {
    let mut byte = [0u8; 1];
    match recv(
        stream.as_raw_fd(),
        &mut byte,
        MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
    ) {
        Ok(0) => true,
        Ok(_) | Err(Errno::EAGAIN | Errno::EINTR) => false,
        Err(_) => true,
    }
}

/// Which scheduled job a runner on the other end may speak for: the one its user names
/// (`boxmaker-job-<name>`, each job unit's own DynamicUser), whatever it claims; only
/// where the socket admits one uid (`bxctl dev`, where every process is the developer's
/// and SO_PEERCRED cannot tell jobs apart) the job it claims.
pub fn job_of(
    who: &PeerIdentity,
    admitted: Option<&Peer>,
    claimed: &proto::JobName,
) -> Result<proto::JobName, String> {
    if let Some(job) = who.user.as_deref().and_then(proto::JobName::of_user) {
        return if &job == claimed {
            Ok(job)
        } else {
            Err(format!(
                "the runner of job {job} may not speak for job {claimed}"
            ))
        };
    }
    match admitted {
        Some(Peer::Uid(uid)) if *uid == who.uid => Ok(claimed.clone()),
        _ => Err(format!(
            "{who} is not a job's user ({}<name>)",
            proto::job::UNIT_PREFIX
        )),
    }
}
