//! The demo's hands step under `bxctl dev`: "add to my plan" makes the demo model call
//! `write_file` on the demo's plan.md under the sample grant files-write, which asks the
//! owner; the file changes only after the approval, and the write is audited.

use expectrl::Expect;

use crate::dev::{dev, quit, state_dir};

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_demo_adds_to_its_plan_through_write_file_after_the_owners_approval() {
    let state = state_dir("hands");
    let mut s = dev(&state, &[]);
    let plan = state.join("files/notes/plan.md");
    let before = read(&plan);
    s.send_line("Add to my plan").expect("send");
    s.expect("write a file through brokerd")
        .expect("the card shows what will be written");
    s.expect("[a] approve").expect("the card");
    // Asked, not yet written.
    assert_eq!(read(&plan), before);
    s.send("a").expect("approve");
    s.expect("I added a line to plan.md")
        .expect("the model's answer");
    assert_eq!(
        read(&plan),
        format!("{before}- write a file through brokerd\n")
    );
    let audit = std::fs::read_dir(state.join("home/audit"))
        .expect("audit")
        .flatten()
        .map(|f| std::fs::read_to_string(f.path()).unwrap_or_default())
        .collect::<String>();
    assert!(
        audit.contains("write_file") && audit.contains("plan.md"),
        "{audit}"
    );
    quit(&mut s, &state);
    let _ = std::fs::remove_dir_all(&state);
}
