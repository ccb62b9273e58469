//! Durable state files: replaced whole with the mode asked for, and read back only when
//! they are what this daemon writes.

use std::os::unix::fs::PermissionsExt;

use daemon::durable::{ReadError, Refusal, read_file, replace_file};

#[test]
fn replaces_whole_with_the_mode_asked_for_and_reads_back_only_that() {
    let dir = std::env::temp_dir().join(format!("daemon-durable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let (path, tmp) = (dir.join("state.json"), dir.join(".state.json.tmp"));
    std::fs::write(&tmp, b"stale").expect("stale temp file");
    replace_file(&path, &tmp, b"first", 0o600).expect("first");
    replace_file(&path, &tmp, b"second", 0o600).expect("second");
    assert_eq!(std::fs::read(&path).expect("read"), b"second");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!tmp.exists());
    assert_eq!(read_file(&path, 0o077, 6).expect("read back"), b"second");
    let refused = |r| match r {
        Err(ReadError::Refused(why)) => why,
        other => panic!("not refused: {other:?}"),
    };
    let why = refused(read_file(&path, 0o077, 5));
    assert!(matches!(why, Refusal::TooLarge { max: 5 }), "{why:?}");
    assert_eq!(why.to_string(), "larger than 5 bytes");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let why = refused(read_file(&path, 0o077, 100));
    assert!(
        matches!(
            why,
            Refusal::Mode {
                mode: 0o640,
                sets: 0o40
            }
        ),
        "{why:?}"
    );
    assert_eq!(
        why.to_string(),
        "mode 640 sets 40, which this daemon never does"
    );
    read_file(&path, 0o022, 100).expect("0640 has no bit of 022");
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(&path, &link).expect("link");
    let why = refused(read_file(&link, 0, 100));
    assert!(matches!(why, Refusal::Link), "{why:?}");
    assert_eq!(why.to_string(), "it is a symbolic link");
    let why = refused(read_file(&dir, 0, 100));
    assert!(matches!(why, Refusal::NotRegular), "{why:?}");
    assert_eq!(why.to_string(), "not a regular file");
    assert!(matches!(
        read_file(&dir.join("absent"), 0, 100),
        Err(ReadError::Missing)
    ));
    let _ = std::fs::remove_dir_all(&dir);
}
