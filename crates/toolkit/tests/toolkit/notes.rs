//! The note tools: a write makes only `<name>.md` in its directory (readable by brokerd,
//! never through a link already there); a read takes the file brokerd names, never a link;
//! a listing names the notes alone.

use std::os::unix::fs::PermissionsExt;

use proto::tools::{NoteListArgs, NoteMode, NoteReadArgs, NoteWriteArgs, ToolArgs};

use crate::support::{TempDir, failed, invocation, ok, run};

fn with_notes(call: ToolArgs, notes: String) -> proto::toolrun::ToolInvocation {
    let mut inv = invocation(call);
    inv.notes = Some(notes);
    inv
}

fn write(name: &str, text: &str) -> ToolArgs {
    ToolArgs::NoteWrite(NoteWriteArgs {
        mode: NoteMode::Replace,
        name: name.into(),
        text: text.into(),
    })
}

#[test]
fn a_write_makes_its_one_file_0644_and_never_writes_through_a_link() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("out")).expect("mkdir");
    let out = run(&with_notes(write("todo", "two pears"), t.s("out")), None);
    assert_eq!(ok(out).0, "9 bytes for note todo");
    assert_eq!(
        std::fs::read_to_string(t.path("out/todo.md")).expect("note"),
        "two pears"
    );
    let mode = std::fs::metadata(t.path("out/todo.md"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
    std::fs::write(t.path("victim"), "the owner's").expect("victim");
    std::os::unix::fs::symlink(t.path("victim"), t.path("out/evil.md")).expect("link");
    failed(
        run(&with_notes(write("evil", "forged"), t.s("out")), None),
        "exists",
    );
    assert_eq!(
        std::fs::read_to_string(t.path("victim")).expect("victim"),
        "the owner's"
    );
    failed(
        run(&with_notes(write("../x", "y"), t.s("out")), None),
        "outside",
    );
    failed(
        run(&invocation(write("todo", "y")), None),
        "names no notes directory",
    );
}

#[test]
fn a_read_takes_the_file_brokerd_names_and_a_listing_only_notes() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("notes")).expect("mkdir");
    std::fs::write(t.path("notes/a.md"), "alpha").expect("a");
    std::fs::write(t.path("notes/.a.md.tmp"), "half").expect("tmp");
    std::fs::write(t.path("notes/readme.txt"), "x").expect("txt");
    std::fs::create_dir(t.path("notes/dir.md")).expect("dir");
    std::os::unix::fs::symlink(t.path("notes/a.md"), t.path("notes/b.md")).expect("link");
    let read = |file: &str| {
        let call = ToolArgs::NoteRead(NoteReadArgs { name: "a".into() });
        run(&with_notes(call, t.s(file)), None)
    };
    assert_eq!(ok(read("notes/a.md")).0, "alpha");
    failed(read("notes/b.md"), "symlink");
    failed(read("notes/dir.md"), "not a regular file");
    let list = ToolArgs::NoteList(NoteListArgs {});
    assert_eq!(ok(run(&with_notes(list, t.s("notes")), None)).0, "a\n");
}
