//! Peer checks: who is on the other end, from the kernel, against a socket's rule, and a
//! closed peer seen without reading.

use std::os::unix::net::UnixStream;

use config::Peer;
use daemon::peer::{admits, hung_up, identify};
use nix::unistd::Group;

#[test]
fn the_kernel_names_our_own_uid() {
    let (a, _b) = UnixStream::pair().expect("pair");
    let me = identify(&a).expect("peer cred");
    assert_eq!(me.uid, nix::unistd::getuid().as_raw());
    assert_eq!(me.pid, i32::try_from(std::process::id()).expect("pid"));
    assert!(admits(&Peer::Uid(me.uid), &me));
    assert!(!admits(&Peer::Uid(me.uid + 1), &me));
    if let Some(name) = me.user.clone() {
        assert!(admits(&Peer::User(name), &me));
    }
    assert!(!admits(&Peer::User("no-such-user-boxmaker".into()), &me));
    assert!(!admits(&Peer::Group("no-such-group-boxmaker".into()), &me));
    let own_group = Group::from_gid(nix::unistd::Gid::from_raw(me.gid))
        .expect("nss")
        .expect("group");
    assert!(admits(&Peer::Group(own_group.name), &me));
}

#[test]
fn a_closed_peer_is_seen_without_reading() {
    use std::io::{Read, Write};
    let (a, mut b) = UnixStream::pair().expect("pair");
    assert!(!hung_up(&a));
    b.write_all(b"x").expect("write");
    assert!(!hung_up(&a), "data waiting is not a hang-up");
    drop(b);
    assert!(!hung_up(&a), "unread data comes first");
    let mut buf = [0u8; 1];
    (&a).read_exact(&mut buf).expect("the byte is still there");
    assert!(hung_up(&a));
}
