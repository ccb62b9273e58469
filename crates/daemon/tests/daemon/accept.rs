//! The accept loop when accept itself fails: it pauses instead of spinning, and serves
//! again once accepting works.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use config::Peer;
use daemon::accept::{Accept, Activity, Admission, MAX_BACKOFF, Refusal, Refuse, accept_loop};

/// A listener that fails with EMFILE (out of descriptors) while `exhausted` is set,
/// counting every attempt, and otherwise accepts from the real one.
struct Exhausted {
    real: UnixListener,
    exhausted: Arc<AtomicBool>,
    attempts: Arc<AtomicUsize>,
}

impl Accept for Exhausted {
    fn accept(&self) -> io::Result<UnixStream> {
        if self.exhausted.load(Ordering::SeqCst) {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            return Err(io::Error::from_raw_os_error(
                nix::errno::Errno::EMFILE as i32,
            ));
        }
        UnixListener::accept(&self.real).map(|(s, _)| s)
    }
}

/// Refuses nothing this test makes; a refusal is a failure.
struct NoRefusal;

impl Refuse for NoRefusal {
    fn refuse(&self, _: &str, _: UnixStream, why: &Refusal<'_>) {
        panic!("refused: {why:?}");
    }
}

/// Runs the loop on a listener that starts out exhausted; returns the socket's path, the
/// switch and the attempt count. Each admitted connection gets one byte.
fn exhausted(name: &str) -> (std::path::PathBuf, Arc<AtomicBool>, Arc<AtomicUsize>) {
    let dir = std::env::temp_dir().join(format!("daemon-accept-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("s.sock");
    let exhausted = Arc::new(AtomicBool::new(true));
    let attempts = Arc::new(AtomicUsize::new(0));
    let listener = Exhausted {
        real: UnixListener::bind(&path).expect("bind"),
        exhausted: exhausted.clone(),
        attempts: attempts.clone(),
    };
    let admission = Admission {
        name: "test",
        peers: vec![Peer::Uid(nix::unistd::getuid().as_raw())],
        max_connections: 4,
    };
    let handle = Arc::new(|mut stream: UnixStream, _: &str| {
        let _ = io::Write::write_all(&mut stream, b"x");
    });
    std::thread::spawn(move || {
        accept_loop(
            &listener,
            &admission,
            &Activity::default(),
            &NoRefusal,
            &handle,
        );
    });
    (path, exhausted, attempts)
}

#[test]
fn out_of_descriptors_the_loop_pauses_instead_of_spinning() {
    let (_, _, attempts) = exhausted("spin");
    std::thread::sleep(Duration::from_millis(400));
    let n = attempts.load(Ordering::SeqCst);
    // 5, 10, 20, 40, 80, 160 ms: seven attempts fit in 400 ms. Retrying at once would make
    // millions.
    assert!(n <= 12, "{n} accept attempts in 400 ms");
    assert!(n >= 3, "it gave up after {n} attempts");
}

#[test]
fn once_descriptors_are_free_again_the_loop_serves_within_the_longest_pause() {
    let (path, exhausted, attempts) = exhausted("recover");
    // Long enough for the pause to reach its ceiling.
    std::thread::sleep(Duration::from_millis(1200));
    let mut client = UnixStream::connect(&path).expect("connect");
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let start = Instant::now();
    exhausted.store(false, Ordering::SeqCst);
    let mut byte = [0u8; 1];
    io::Read::read_exact(&mut client, &mut byte).expect("served");
    assert!(
        start.elapsed() < MAX_BACKOFF + Duration::from_millis(300),
        "served only after {:?}",
        start.elapsed()
    );
    let failed = attempts.load(Ordering::SeqCst);
    assert!(failed <= 12, "{failed} failed attempts in 1.2 s");
}
