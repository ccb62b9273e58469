//! The binary's statuses for what it can say without a stack: the job is found, or not.

use std::process::Command;

fn config(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bx-jobrunner-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        "[sockets]\nloop_broker = \"/run/l\"\nadmin_broker = \"/run/a\"\n\
         [peers]\nloopd = { uid = 1 }\nadmin = { uid = 2 }\n\
         [gateway]\nserver = \"https://chat.example.com\"\nowners = [\"ownerkp1dx4oy7wqbsm3e9t6ua\"]\nchannel = \"c\"\n\
         [[jobs]]\nname = \"morning-brief\"\nschedule = \"daily\"\nprompt = \"p\"\n\
         deliver = \"mattermost\"\n",
    )
    .expect("config");
    path
}

fn run(config: &std::path::Path, job: &str) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_boxmaker-job"))
        .arg("--config")
        .arg(config)
        .args(["--check-config", "--job", job])
        .output()
        .expect("boxmaker-job");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_config_finds_the_job_or_says_there_is_none() {
    let path = config("check");
    let (code, log) = run(&path, "morning-brief");
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("good; job morning-brief"), "{log}");
    let (code, log) = run(&path, "watch-page");
    assert_eq!(code, Some(2), "{log}");
    assert!(
        log.contains("no [[jobs]] entry is named \"watch-page\""),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
}
