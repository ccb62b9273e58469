use super::*;

const SOCKETS: &str = r#"
pub const INFER_SOCK: &str = "infer.sock";
impl Sockets {
    pub fn chat_loop_sock(&self) -> PathBuf {
        self.chat_loop.join("loop.sock")
    }
    pub fn loop_infer_sock(&self) -> PathBuf {
        self.loop_infer.join(INFER_SOCK)
    }
}
"#;

fn files() -> Vec<String> {
    let mut files: Vec<String> = [
        "README.md",
        "crates/brokerd/src/ask/desk.rs",
        "docs/broker.md",
        "docs/examples/grants/notes.toml",
        "nix/module.nix",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    files.sort();
    files
}

fn problems(path: &str, text: &str) -> Vec<String> {
    let files = files();
    check_doc(path, text, &Tree::new(&files), &sockets(SOCKETS))
}

#[test]
fn spans_and_links_are_read_outside_fences() {
    let text = "a `x/y.rs` and ``b `c` d`` and [l](docs/z.md)\n```\n`fenced.rs`\n```\n`after`";
    let found: Vec<(usize, String, bool)> = mentions(text)
        .into_iter()
        .map(|m| (m.line, m.text, m.link))
        .collect();
    assert_eq!(
        found,
        vec![
            (1, "x/y.rs".to_owned(), false),
            (1, "b `c` d".to_owned(), false),
            (1, "docs/z.md".to_owned(), true),
            (5, "after".to_owned(), false),
        ]
    );
}

#[test]
fn the_sockets_are_read_with_their_directories() {
    let socks = sockets(SOCKETS);
    assert_eq!(
        socks.files.iter().collect::<Vec<_>>(),
        ["infer.sock", "loop.sock"]
    );
    assert!(socks.in_dir["chat-loop"].contains("loop.sock"));
    assert!(socks.in_dir["loop-infer"].contains("infer.sock"));
}

#[test]
fn what_exists_passes() {
    let text = "See `crates/brokerd/src/ask/desk.rs:12`, `ask/desk.rs`, `desk.rs`, \
                `nix/module.nix`, `docs/examples/grants/`, `crates/brokerd`, \
                [broker](broker.md), [readme](../README.md#top), `loop.sock`, \
                `chat-loop/loop.sock`, `/run/boxmaker/loop-infer/infer.sock`, \
                `/etc/boxmaker/config.toml`, `nix/tests/NAME.nix`, `STATE/x.rs`, \
                `crates/*/src`, [web](https://example.org/a.md), `a/b.toml`.";
    assert_eq!(problems("docs/x.md", text), Vec::<String>::new());
}

#[test]
fn a_missing_repository_path_is_named() {
    let found = problems("docs/x.md", "line one\n`crates/brokerd/src/server.rs` here");
    assert_eq!(
        found,
        ["docs/x.md:2: names crates/brokerd/src/server.rs, which does not exist"]
    );
    let found = problems("README.md", "`docs/gone.md`");
    assert_eq!(
        found,
        ["README.md:1: names docs/gone.md, which does not exist"]
    );
}

#[test]
fn a_source_file_named_by_a_stale_tail_is_named() {
    let found = problems(
        "docs/x.md",
        "`brokerd/src/witness_socket.rs` and `start.rs`",
    );
    assert_eq!(
        found,
        [
            "docs/x.md:1: names brokerd/src/witness_socket.rs, which no tracked file's path ends in",
            "docs/x.md:1: names start.rs, which no tracked file's path ends in",
        ]
    );
}

#[test]
fn a_broken_link_is_named() {
    let found = problems(
        "docs/x.md",
        "[a](gone.md) [b](../docs/broker.md) [c](examples/grants)",
    );
    assert_eq!(
        found,
        ["docs/x.md:1: links to gone.md, which does not exist"]
    );
}

#[test]
fn an_unknown_socket_or_one_in_the_wrong_directory_is_named() {
    let found = problems("docs/x.md", "`admin.sock` and `chat-loop/infer.sock`");
    assert_eq!(
        found,
        [
            "docs/x.md:1: names the socket admin.sock, which crates/config/src/sockets.rs does not define",
            "docs/x.md:1: names the socket chat-loop/infer.sock, but crates/config/src/sockets.rs puts no infer.sock in chat-loop",
        ]
    );
}
