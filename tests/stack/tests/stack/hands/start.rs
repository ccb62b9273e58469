//! What brokerd refuses to start with (docs/decisions.md H11, H13), checked as
//! `--check-config` checks it: a run grant naming a program the configuration does not
//! map, a program whose file is a shell without `shell = true`, a write of brokerd's own
//! files, and, under systemd, a write with no hands user or on a systemd without
//! `PrivatePIDs=`. Each beside the control that starts.

use std::process::Command;

use stack::Home;

use super::grant;

/// `brokerd --check-config`: (exit status, stderr).
fn check(home: &Home) -> (Option<i32>, String) {
    let out = Command::new(stack::bin("brokerd"))
        .arg("--config")
        .arg(home.config())
        .arg("--check-config")
        .output()
        .expect("brokerd");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn run_grant(program: &str, extra: &str) -> String {
    format!(
        "tool = \"run\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\n\
         programs = [\"{program}\"]\npatterns = [\"-V\"]\n{extra}\n"
    )
}

#[test]
fn a_run_grant_needs_its_program_configured_and_a_shell_its_key() {
    let home = Home::new("hands-start-run", "");
    home.write_grant("py", &run_grant("python3", ""));
    let (code, err) = check(&home);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("grant py names the program \"python3\", which broker.programs does not map"),
        "{err}"
    );
    // A name mapped to a shell is a shell, whatever the name says.
    home.append_config("[broker.programs]\npython3 = \"/bin/bash\"\n");
    let (code, err) = check(&home);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("/bin/bash, a shell or a launcher of other programs"),
        "{err}"
    );
    // Control: a program that is no shell starts.
    let config = std::fs::read_to_string(home.config()).expect("config");
    std::fs::write(home.config(), config.replace("/bin/bash", "/bin/true")).expect("config");
    let (code, err) = check(&home);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_write_of_brokerds_own_files_refuses_the_start() {
    let home = Home::new("hands-start-own", "");
    let own = home.root.join("home/audit");
    std::fs::create_dir_all(&own).expect("audit");
    home.write_grant("audit-write", &grant("write_file", "ask", &own, "", ""));
    let (code, err) = check(&home);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("grant audit-write writes") && err.contains("brokerd's audit log"),
        "{err}"
    );
    // The grants directory, from above, as well.
    home.write_grant(
        "audit-write",
        &grant("write_file", "ask", &home.root, "", ""),
    );
    let (code, err) = check(&home);
    assert_eq!(code, Some(1), "{err}");
    // Control: a directory of the owner's own starts.
    let notes = home.files("notes", &[]);
    home.write_grant("audit-write", &grant("write_file", "ask", &notes, "", ""));
    let (code, err) = check(&home);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn under_systemd_a_write_needs_the_hands_user_and_private_pids() {
    let home = Home::new("hands-start-systemd", "");
    let notes = home.files("notes", &[]);
    home.write_grant("notes-write", &grant("write_file", "ask", &notes, "", ""));
    let config = std::fs::read_to_string(home.config()).expect("config");
    let systemd = config.replace("runner = \"direct\"", "runner = \"systemd\"");
    std::fs::write(home.config(), &systemd).expect("config");
    let (code, err) = check(&home);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("broker.hands_user is not set"), "{err}");
    home.append_config("hands_user = \"owner\"\n");
    let (code, err) = check(&home);
    assert_eq!(code, Some(0), "{err}");
    // systemd 252 has no PrivatePIDs=: refused, unless the owner accepts the write units
    // sharing the PID namespace; a run with a working directory is refused regardless.
    home.append_config("systemd_version = 252\n");
    let (code, err) = check(&home);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("needs PrivatePIDs= (systemd 257)"), "{err}");
    home.append_config("hands_shared_pids = true\n");
    let (code, err) = check(&home);
    assert_eq!(code, Some(0), "{err}");
    home.append_config("[broker.programs]\npython3 = \"/bin/true\"\n");
    home.write_grant(
        "py",
        &run_grant("python3", &format!("workdir = \"{}\"", notes.display())),
    );
    let (code, err) = check(&home);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("a program would run as the hands user"),
        "{err}"
    );
}
