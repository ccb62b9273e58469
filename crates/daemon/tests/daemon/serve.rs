//! The shared accept loop on a real socket: each refusal reaches the client as the typed
//! refusal with its text, and a request must be a single final frame.

use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use config::Peer;
use daemon::accept::Activity;
use daemon::conn::{CallError, Conn};
use daemon::serve::{Policy, accept_loop, requests};
use proto::approval::Empty;
use proto::{Envelope, ErrorCode, Message, WireError};

/// A socket served by `accept_loop` under `peers` and `max_connections`, whose handler
/// answers every request with `grants_query` until the client closes.
fn serving(name: &str, peers: Vec<Peer>, max_connections: usize) -> (PathBuf, Arc<Activity>) {
    let dir = std::env::temp_dir().join(format!("daemon-serve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("s.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    let policy = Policy {
        name: "test",
        peers,
        max_connections,
        idle: Duration::from_secs(5),
        frame: Duration::from_secs(5),
    };
    let activity = Arc::new(Activity::default());
    let a = activity.clone();
    let handle = Arc::new(move |mut conn: Conn, who: &str| {
        let _ = requests(&mut conn, "test", who, &a, |conn, env| {
            let answer = Envelope::last(env.id, Message::GrantsQuery(Empty {}));
            Ok::<_, ()>(conn.write(&answer).is_ok())
        });
    });
    let l = activity.clone();
    std::thread::spawn(move || accept_loop(listener, policy, l, handle));
    (path, activity)
}

fn me() -> Peer {
    Peer::Uid(nix::unistd::getuid().as_raw())
}

fn ask(path: &std::path::Path) -> Result<Envelope, CallError> {
    Conn::connect(path)
        .expect("connect")
        .call(1, Message::GrantsQuery(Empty {}), |_| {})
}

fn refusal(result: Result<Envelope, CallError>) -> WireError {
    match result {
        Err(CallError::Refused(e)) => e,
        other => panic!("not a refusal: {other:?}"),
    }
}

#[test]
fn an_admitted_peer_is_served() {
    let (path, _) = serving("admitted", vec![Peer::Uid(u32::MAX - 1), me()], 4);
    let answer = ask(&path).expect("served");
    assert_eq!(answer.id, 1);
    assert!(matches!(answer.msg, Message::GrantsQuery(_)), "{answer:?}");
}

#[test]
fn a_peer_the_socket_does_not_admit_is_told_who_it_admits() {
    let other = nix::unistd::getuid().as_raw().wrapping_add(1);
    let (path, _) = serving(
        "not-admitted",
        vec![
            Peer::Uid(other),
            Peer::Group("no-such-group-boxmaker".into()),
        ],
        4,
    );
    let e = refusal(ask(&path));
    assert_eq!(e.code, ErrorCode::Refused);
    let me = nix::unistd::getuid().as_raw();
    assert!(
        e.detail.starts_with(&format!(
            "the test socket admits only uid {other} or group no-such-group-boxmaker; you are uid {me}"
        )),
        "{}",
        e.detail
    );
}

#[test]
fn a_stopping_server_says_so() {
    let (path, activity) = serving("stopping", vec![me()], 4);
    activity.stopping.store(true, Ordering::SeqCst);
    let e = refusal(ask(&path));
    assert_eq!(e.code, ErrorCode::Unavailable);
    assert_eq!(
        e.detail,
        "the test socket is stopping: try again once it has restarted"
    );
}

#[test]
fn a_full_server_says_so_and_serves_again_once_a_connection_ends() {
    let (path, _) = serving("full", vec![me()], 1);
    let mut first = Conn::connect(&path).expect("connect");
    first
        .call(1, Message::GrantsQuery(Empty {}), |_| {})
        .expect("the first is served");
    let e = refusal(ask(&path));
    assert_eq!(e.code, ErrorCode::Unavailable);
    assert_eq!(
        e.detail,
        "the test socket is at its limit of 1 connections: try again shortly"
    );
    drop(first);
    // The server sees the close when it next reads; give it a moment.
    let served = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        ask(&path).is_ok()
    });
    assert!(served, "the slot was not given back");
}

#[test]
fn a_non_final_request_frame_is_refused_and_the_connection_closed() {
    let (path, _) = serving("non-final", vec![me()], 4);
    let mut conn = Conn::connect(&path).expect("connect");
    conn.write(&Envelope::partial(7, Message::GrantsQuery(Empty {})))
        .expect("write");
    let answer = conn.read().expect("an answer");
    assert_eq!(answer.id, 7);
    assert!(answer.r#final);
    match answer.msg {
        Message::Error(e) => {
            assert_eq!(e.code, ErrorCode::BadMessage);
            assert_eq!(e.detail, "a request is a single final frame");
        }
        other => panic!("not refused: {other:?}"),
    }
    assert!(
        matches!(
            conn.read(),
            Err(proto::ReadError::Frame(proto::FrameError::Closed))
        ),
        "the connection stays open"
    );
}
