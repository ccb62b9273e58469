//! Unit paths and credential names (`unitpath`): each refusal is its own variant, carries
//! what was refused, and reads as it always has.

use grants::unitpath::{
    CredentialNameError, UnitPathError, check_credential_name, check_granted_path, check_unit_path,
};

#[test]
fn each_refused_unit_path_says_which_rule_and_what() {
    let owned = |p: &str| p.to_owned();
    for (path, want, text) in [
        (
            "tmp/x",
            UnitPathError::NotAbsolute {
                path: owned("tmp/x"),
            },
            "path \"tmp/x\" is not absolute",
        ),
        (
            "/a b",
            UnitPathError::Unquotable {
                path: owned("/a b"),
                bad: ' ',
            },
            "path \"/a b\" contains ' ', which systemd unit settings would not take literally",
        ),
        (
            "/a/../b",
            UnitPathError::NotNormalised {
                path: owned("/a/../b"),
            },
            "path \"/a/../b\" is not normalised",
        ),
    ] {
        let err = check_unit_path(path).expect_err(path);
        assert_eq!(err, want, "{path}");
        assert_eq!(err.to_string(), text);
    }
    assert_eq!(check_unit_path("/"), Ok(()));
}

#[test]
fn a_granted_path_is_refused_for_the_whole_host_or_an_api_file_system() {
    let err = check_granted_path("/").expect_err("/");
    assert_eq!(err, UnitPathError::WholeHost);
    assert_eq!(
        err.to_string(),
        "granting \"/\" would expose the whole host file system"
    );
    let err = check_granted_path("/run/dbus").expect_err("/run");
    assert_eq!(
        err,
        UnitPathError::ApiFileSystem {
            path: "/run/dbus".into(),
            api: "/run"
        }
    );
    assert_eq!(
        err.to_string(),
        "granted path \"/run/dbus\" lies in /run, which is never bound into a tool's root"
    );
    // A unit path refusal comes first, as itself.
    assert!(matches!(
        check_granted_path("run"),
        Err(UnitPathError::NotAbsolute { .. })
    ));
}

#[test]
fn a_bad_credential_name_is_named() {
    let err = check_credential_name("../key").expect_err("slash");
    assert_eq!(
        err,
        CredentialNameError {
            name: "../key".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "credential name \"../key\" must be 1 to 255 characters of [A-Za-z0-9_.@-]"
    );
    assert_eq!(check_credential_name("mattermost-token"), Ok(()));
}
