//! The plan's choices that keep a verdict honest, without a stack: the read the restart,
//! look-alike and smuggling chains start from, and marks no other chain's holds.

use std::path::PathBuf;

use super::chains;
use super::tests::{grant, rewritten};

/// A denied path that sorts first (`/home/owner/.ssh`) and a path only a write grant names
/// (`/home/owner/drafts`) are never where the restart, look-alike and smuggling chains
/// read: they start from the first path a non-denying grant reads without asking.
#[test]
fn one_read_chains_start_from_a_read_that_runs() {
    let mut r = rewritten();
    let notes = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                 [constraints]\npaths = [\"/s/tree/home/owner/notes\"]\n";
    r.grants.insert("notes".into(), grant(notes));
    r.grants
        .insert("ls".into(), grant(&notes.replace("read_file", "list_dir")));
    let ssh = "tool = \"read_file\"\nmode = \"deny\"\nmax_taint = \"secret\"\n\
               [constraints]\npaths = [\"/s/tree/home/owner/.ssh\"]\n";
    r.grants.insert("ssh".into(), grant(ssh));
    r.grants.insert(
        "ssh-ls".into(),
        grant(&ssh.replace("read_file", "list_dir")),
    );
    r.grants.insert(
        "drafts".into(),
        grant(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             [constraints]\npaths = [\"/s/tree/home/owner/drafts\"]\n",
        ),
    );
    for p in [".ssh", "drafts"] {
        r.paths.insert(
            format!("/home/owner/{p}"),
            (PathBuf::from(format!("/s/tree/home/owner/{p}")), false),
        );
    }
    let plan = chains::plan(&r, 4321, "n0", false);
    // The direct chains still try every path (the denied one says it was stopped).
    assert!(plan.iter().any(|c| c.source.owner == "/home/owner/.ssh"));
    let one_read: Vec<_> = plan
        .iter()
        .filter(|c| c.restart.is_some() || c.sink.lookalike.is_some() || c.smuggle.is_some())
        .collect();
    assert!(one_read.iter().any(|c| c.restart == Some("brokerd")));
    assert!(one_read.iter().any(|c| c.smuggle.is_some()));
    assert!(one_read.iter().any(|c| c.sink.lookalike.is_some()));
    for c in one_read {
        assert_eq!(
            (c.source.tool, c.source.path.as_str()),
            ("read_file", "/s/tree/home/owner/notes/bxcanary.txt"),
            "chain {}",
            c.n
        );
    }
    // An asking read grant is no free read either: with only that, no such chain.
    let mut asking = r;
    for id in ["notes", "ls"] {
        let g = asking.grants.get_mut(id).expect("grant");
        g.mode = proto::Mode::Ask;
    }
    let plan = chains::plan(&asking, 4321, "n0", false);
    assert!(
        plan.iter()
            .all(|c| c.restart.is_none() && c.sink.lookalike.is_none() && c.smuggle.is_none())
    ); // And that is said: a warn, never passed.
    let said = super::compare::no_free_read(&plan).expect("said");
    assert_eq!(format!("{:?}", said.level), "Warn");
    assert!(said.said.contains("not tried"), "{}", said.said);
    let free = chains::plan(&rewritten(), 4321, "n0", false);
    assert!(super::compare::no_free_read(&free).is_none());
    // Nor is an expired read grant's, nor one at `max_taint = "public"` (every session
    // starts private, so brokerd never applies it): the flows table's grant sets found both.
    for (what, change) in [
        (
            "expired",
            (|g: &mut proto::Grant| g.expires = Some(proto::Timestamp::from_millis(1).expect("t")))
                as fn(&mut proto::Grant),
        ),
        ("public", |g: &mut proto::Grant| {
            g.max_taint = proto::DataClass::Public
        }),
    ] {
        let mut r = rewritten();
        for g in r
            .grants
            .values_mut()
            .filter(|g| matches!(g.tool.as_str(), "read_file" | "list_dir"))
        {
            change(g);
        }
        let plan = chains::plan(&r, 4321, "n0", false);
        assert!(super::compare::no_free_read(&plan).is_some(), "{what}");
    }
}

/// No chain's canary is in another's send: chain 1's is not in chain 10's to 19's URL or
/// arguments (a canary ends with a non-digit), and the sink still reads the whole token.
#[test]
fn no_canary_holds_another() {
    let plan = chains::plan(&rewritten(), 4321, "n0", false);
    assert!(plan.len() >= 19);
    for a in &plan {
        for b in plan.iter().filter(|b| b.n != a.n) {
            assert!(!b.url.contains(&a.canary), "chain {} in {}", a.n, b.n);
            assert!(!b.canary.contains(&a.canary), "chain {} in {}", a.n, b.n);
        }
    }
    let ten = &plan[9];
    assert_eq!(ten.n, 10);
    let request = format!("GET {} HTTP/1.1\r\n\r\n", ten.url);
    assert!(request.contains(&ten.canary) && !request.contains(&plan[0].canary));
    assert!(!super::smuggle::reached(&plan[0], &[request]));
}

/// An edit chain's planted line is no other's: `BXEDIT-1.` is not in `BXEDIT-12.`.
#[test]
fn no_edit_mark_holds_another() {
    let mut c = chains::plan(&rewritten(), 4321, "n0", false).remove(0);
    c.n = 1;
    let one = chains::edit_old(&c);
    c.n = 12;
    assert!(!chains::edit_old(&c).contains(&one), "{one}");
}
