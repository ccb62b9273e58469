//! Binding outside socket activation: a stale socket is replaced, a live one never.

use std::os::unix::net::{UnixListener, UnixStream};

use daemon::listen::{ListenError, bind};

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("bx-listen-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

#[test]
fn a_socket_a_live_process_listens_on_is_left_alone() {
    let d = dir("live");
    let path = d.join("x.sock");
    let live = UnixListener::bind(&path).expect("the first listener");
    match bind(&path) {
        Err(ListenError::InUse { path: p }) => assert_eq!(p, path),
        other => panic!("not InUse: {other:?}"),
    }
    // Still the first listener's socket: a client reaches it.
    let _client = UnixStream::connect(&path).expect("still reachable");
    live.accept().expect("the first listener accepts");
    let e = bind(&path).expect_err("in use");
    assert!(
        e.to_string().contains("another process listens on it"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_stale_socket_is_replaced() {
    let d = dir("stale");
    let path = d.join("x.sock");
    drop(UnixListener::bind(&path).expect("an earlier run's listener"));
    assert!(path.exists(), "the stale socket file stays behind");
    let fresh = bind(&path).expect("replaced");
    let _client = UnixStream::connect(&path).expect("reachable");
    fresh.accept().expect("the new listener accepts");
    let _ = std::fs::remove_dir_all(&d);
}
