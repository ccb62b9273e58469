//! Under an imitated systemd: brokerd takes its sockets by name from socket activation
//! (started by the first connection) and says READY=1 only once it serves.

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::Duration;

use daemon::conn::Conn;
use proto::Message;
use proto::approval::Empty;
use stack::Home;

#[test]
fn the_first_connection_starts_brokerd_with_the_named_sockets() {
    if !stack::have("systemd-socket-activate") {
        return;
    }
    let home = Home::new("activation", "");
    let notify_path = home.root.join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).expect("notify");
    notify
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let stderr = home.root.join("activate.log");
    let mut activate = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(home.loop_sock())
        .arg("-l")
        .arg(home.admin_sock())
        .arg("-l")
        .arg(home.chat_broker_sock())
        .arg("-l")
        .arg(home.witness_sock())
        .arg("--fdname=loop:admin:chat:witness")
        .arg(format!("--setenv=NOTIFY_SOCKET={}", notify_path.display()))
        .arg(stack::bin("brokerd"))
        .arg("--config")
        .arg(home.config())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).expect("log"))
        .spawn()
        .expect("systemd-socket-activate");
    // Wait (up to 2 s) for the sockets to exist; nothing may announce readiness before a
    // connection.
    let _ = stack::poll_until(Duration::from_secs(2), || home.admin_sock().exists());
    let mut buf = [0u8; 4096];
    assert!(
        notify.recv(&mut buf).is_err(),
        "brokerd ran before any connection"
    );
    assert!(
        !home.audit_dir().exists(),
        "brokerd ran before any connection"
    );

    // The first connection (on the admin socket) starts it and is served.
    let mut admin = Conn::connect(&home.admin_sock()).expect("connect");
    let reply = admin
        .call(1, Message::GrantsQuery(Empty {}), |_| {})
        .expect("reply");
    assert!(matches!(reply.msg, Message::GrantsInfo(_)), "{reply:?}");
    let ready = supervise::await_ready(&notify, Duration::from_secs(10), None).is_ok();
    assert!(ready, "no READY=1");
    // The loopd side arrived as the socket named "loop".
    let mut looped = Conn::connect(&home.loop_sock()).expect("connect loop");
    let reply = looped
        .call(2, Message::GrantsQuery(Empty {}), |_| {})
        .expect("reply");
    assert!(
        matches!(&reply.msg, Message::Error(e) if e.code == proto::ErrorCode::ForbiddenKind),
        "the loop socket must be the loopd side: {reply:?}"
    );
    let _ = activate.kill();
    let _ = activate.wait();
    let log = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(
        log.contains("taken from systemd (socket activation)"),
        "{log}"
    );
}
