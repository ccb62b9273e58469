//! `bxctl gateway setup` (issue 28 point 6) against the fake Mattermost, which answers the
//! look-ups by name as Mattermost documents them: the ids found and the module snippet
//! printed; each wrong name or token said with what to fix.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The fake Mattermost on a free port, stopped on drop.
struct Fake {
    child: Child,
    url: String,
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fake() -> Fake {
    let mut child = Command::new(stack::bin("fake-mattermost"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("fake-mattermost");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("its address");
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .expect("address")
        .to_owned();
    Fake {
        child,
        url: format!("http://{addr}"),
    }
}

fn setup(
    url: &str,
    token: &std::path::Path,
    owner: &str,
    channel: &str,
) -> (Option<i32>, String, String) {
    let out = Command::new(stack::bin("bxctl"))
        .args(["gateway", "setup", "--server", url, "--token-file"])
        .arg(token)
        .args(["--owner", owner, "--channel", channel])
        .output()
        .expect("bxctl gateway setup");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn setup_finds_the_ids_by_name_and_prints_the_module_snippet() {
    let fake = fake();
    let dir = std::env::temp_dir().join(format!("bx-gw-setup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let token = dir.join("token");
    std::fs::write(&token, "bot-token\n").expect("token");
    let url = &fake.url;
    let (code, out, err) = setup(url, &token, "owner", "home/town-square");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        format!(
            "Mattermost at {url}: the token is the bot @boxmaker's; owner @owner is \
             ownerkp1dx4oy7wqbsm3e9t6ua; channel home/town-square is chan4mqx8ekdy1bwpu7s9ront3, \
             and the bot can read it.\nFor the NixOS module (docs/nixos.md, docs/gateway.md):\n\n\
             services.boxmaker.gateway = {{\n  enable = true;\n  server = \"{url}\";\n  \
             owners = [ \"ownerkp1dx4oy7wqbsm3e9t6ua\" ]; # @owner\n  \
             channel = \"chan4mqx8ekdy1bwpu7s9ront3\"; # home/town-square\n  \
             tokenFile = \"{}\"; # outside the Nix store\n}};\n",
            token.display()
        )
    );
    // Each name that is not there, said with what to fix.
    let (code, _, err) = setup(url, &token, "nobody", "home/town-square");
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        format!(
            "bxctl: looking up the user @nobody: {url}/api/v4/users/username/nobody answered \
             404: Unable to find an existing account matching your username for this team. This \
             team may require an invite from the team owner to join. \
             (app.user.get_by_username.app_error)\nhelp: the owner's user name as Mattermost \
             shows it, without @\n"
        )
    );
    let (_, _, err) = setup(url, &token, "owner", "away/town-square");
    assert!(
        err.starts_with(&format!(
            "bxctl: looking up the team away: {url}/api/v4/teams/name/away answered 404: Unable \
             to find the existing team. (app.team.get_by_name.missing.app_error)\nhelp: "
        )),
        "{err}"
    );
    let (_, _, err) = setup(url, &token, "owner", "home/nowhere");
    assert!(
        err.contains("answered 404: Channel does not exist. (app.channel.get_by_name.missing.app_error)\nhelp: the channel's name as in its URL"),
        "{err}"
    );
    let (_, _, err) = setup(url, &token, "owner", "town-square");
    assert!(err.starts_with("bxctl: --channel town-square: not a Mattermost channel name\nhelp: the channel as TEAM/NAME"), "{err}");
    std::fs::write(&token, "not-the-token\n").expect("token");
    let (_, _, err) = setup(url, &token, "owner", "home/town-square");
    assert!(
        err.starts_with(&format!(
            "bxctl: looking up the bot's token: {url}/api/v4/users/me answered 401: Invalid or \
             expired session, please login again. (api.context.session_expired.app_error)\nhelp: "
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
