//! Framed connections with deadlines: a slow frame is cut off, an idle peer may wait, and
//! frames that arrive together are read one by one.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use daemon::conn::{Conn, is_timeout};
use proto::{Envelope, FrameError, Message, ReadError};

#[test]
fn a_slow_frame_is_cut_off_but_an_idle_peer_may_wait() {
    let (a, mut b) = UnixStream::pair().expect("pair");
    let mut conn = Conn::new(a, Duration::from_secs(5), Duration::from_millis(100));
    // Idle for less than `idle`, then a whole frame: fine.
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        let env = Envelope::last(1, Message::error(proto::ErrorCode::Internal, ""));
        proto::write_envelope(&mut b, &env).expect("write");
        // Then a frame that starts and never finishes.
        b.write_all(&[0, 0, 0, 50, b'{']).expect("write");
        std::thread::sleep(Duration::from_millis(400));
        b
    });
    assert_eq!(conn.read().expect("frame").id, 1);
    let err = conn.read().expect_err("deadline");
    assert!(is_timeout(&err), "{err:?}");
    drop(writer.join());
}

fn frame(id: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    let env = Envelope::last(id, Message::error(proto::ErrorCode::Internal, ""));
    proto::write_envelope(&mut bytes, &env).expect("encode");
    bytes
}

#[test]
fn frames_that_arrive_together_are_read_one_by_one() {
    let (a, mut b) = UnixStream::pair().expect("pair");
    let mut conn = Conn::new(a, Duration::from_secs(5), Duration::from_secs(5));
    let mut both = frame(1);
    both.extend(frame(2));
    b.write_all(&both).expect("write");
    assert_eq!(conn.read().expect("first").id, 1);
    assert_eq!(conn.read().expect("second").id, 2);
    drop(b);
    assert!(matches!(
        conn.read(),
        Err(ReadError::Frame(FrameError::Closed))
    ));
}

/// The buffer must not stretch the frame deadline: a frame whose first byte came in
/// with the previous frame is cut off `frame` after it is begun, even though the rest
/// comes well within `idle`.
#[test]
fn a_frame_begun_in_the_buffer_keeps_its_deadline() {
    let (a, mut b) = UnixStream::pair().expect("pair");
    let mut conn = Conn::new(a, Duration::from_secs(5), Duration::from_millis(100));
    let (first, second) = (frame(1), frame(2));
    let writer = std::thread::spawn(move || {
        let mut start = first;
        start.push(second[0]);
        b.write_all(&start).expect("write");
        std::thread::sleep(Duration::from_millis(600));
        // Too late for the frame deadline, in time for the idle one.
        let _ = b.write_all(&second[1..]);
        b
    });
    assert_eq!(conn.read().expect("first").id, 1);
    let err = conn.read().expect_err("deadline");
    assert!(is_timeout(&err), "{err:?}");
    drop(writer.join());
}
