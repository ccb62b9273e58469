//! What `main` exits with for each error (the table in `main.rs` and docs/broker.md): 70
//! once durable state failed while serving, and only then; 1 for every failure to start.

use std::error::Error as _;
use std::path::PathBuf;

use brokerd::audit::AuditError;
use brokerd::{EXIT_FAILURE, EXIT_FATAL, Error, Fatal};
use config::{ConfigError, Invalid};
use daemon::exit::Status as _;
use daemon::service::StartError;

fn poisoned() -> Fatal {
    Fatal::Audit(AuditError::Poisoned {
        dir: PathBuf::from("/var/lib/boxmaker/audit"),
        cause: "fsync failed".into(),
    })
}

#[test]
fn a_durable_state_failure_while_serving_exits_70() {
    let e = Error::from(StartError::Halted {
        by: "a request on the loop socket".into(),
        error: Box::new(poisoned()),
    });
    assert_eq!(e.exit_code(), EXIT_FATAL);
    assert_eq!(EXIT_FATAL, 70);
    let text = e.to_string();
    assert!(
        text.contains("/var/lib/boxmaker/audit") && text.contains("a request on the loop socket"),
        "{text}"
    );
    // The halt's Fatal is kept, typed, with the audit log's own error in it; its text is
    // printed whole, not chained (docs/decisions.md F16), so a chain walker prints it once.
    assert!(
        matches!(
            &e,
            Error::Stopped {
                fatal: Fatal::Audit(AuditError::Poisoned { .. }),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.source().is_none());
}

#[test]
fn every_failure_to_start_exits_1() {
    let config = Error::Config(ConfigError::Invalid {
        path: PathBuf::from("/etc/boxmaker/config.toml"),
        reason: Invalid::Zero {
            name: "broker.max_connections",
        },
    });
    assert_eq!(config.exit_code(), EXIT_FAILURE);
    assert_eq!(EXIT_FAILURE, 1);
    // Auditing the grants brokerd starts with is still starting: 1, as before.
    assert_eq!(Error::FirstSnapshot(poisoned()).exit_code(), EXIT_FAILURE);
    let threads = Error::from(StartError::Thread {
        name: "watchdog".into(),
        error: std::io::Error::other("no threads left"),
    });
    assert_eq!(threads.exit_code(), EXIT_FAILURE);
    // A notes directory that cannot be made: its path and the OS's reason.
    let notes = Error::Notes(brokerd::notes::NoteError::Io {
        path: PathBuf::from("/var/lib/boxmaker/notes"),
        error: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
    });
    assert_eq!(notes.exit_code(), EXIT_FAILURE);
    assert_eq!(
        notes.to_string(),
        "/var/lib/boxmaker/notes: permission denied"
    );
}

#[test]
fn a_halt_with_another_error_than_fatal_is_a_service_failure() {
    let e = Error::from(StartError::Halted {
        by: "a thread".into(),
        error: "not brokerd's".into(),
    });
    assert!(
        matches!(e, Error::Service(StartError::Halted { .. })),
        "{e:?}"
    );
    assert_eq!(e.exit_code(), EXIT_FAILURE);
}
