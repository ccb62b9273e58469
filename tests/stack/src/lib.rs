//! The stack-test harness: the real binaries (`brokerd`, `bxctl`, `boxmaker-tool`) as
//! processes on a temporary directory, talking over real Unix sockets. Each test names the
//! behaviour it proves; the harness only starts, waits and cleans up.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

mod agent;
pub mod corpus;
mod gateway;
pub mod long_audit;
pub mod mcp;
pub mod overhead;
pub mod real_server;
pub mod real_session;
pub mod recorder;
mod requests;
mod systemd;
mod verify_json;
mod wait;
pub mod witness;
pub use agent::{Agent, Turn};
pub use gateway::{
    BOT, BOT_USER, CHANNEL, Gateway, OFF_TOPIC, OWNER, STRANGER, User, http, http_as, post_id,
    posts, replies, replies_with,
};
use proto::{AuditEvent, AuditLine};
pub use requests::{request, request_as, response, tool};
pub use systemd::root;
pub use verify_json::{stdout_text, verify_checks};
pub use wait::{Ready, poll_until, wait_until};
pub use witness::{
    chat_body, complete, fresh_completion, report_witness, try_witnessed, witnessed,
};

/// A built binary of this workspace. `cargo test --workspace` builds them next to the test
/// executables' `deps/` directory.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile directory");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --workspace --bins` (the gate does)",
        path.display()
    );
    path
}

/// Whether an optional outside tool is here. In the gate (BOXMAKER_GATE=1) a missing tool
/// is a failure, never a silent skip.
pub fn have(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("BOXMAKER_GATE").is_none(),
            "{tool} is missing, and the gate needs it"
        );
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipping: {tool} is not installed\n").as_bytes(),
        );
    }
    found
}

/// `{prefix}-{n}`, with an `n` no other call in this process gets: the names of homes, logs
/// and notify sockets never collide, however fast they are made.
pub(crate) fn unique(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A temporary boxmaker home with a config, an empty grants directory (`write_grant` fills
/// it), and socket directories.
#[derive(Debug)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    /// `broker` is extra TOML for the `[broker]` table.
    pub fn new(name: &str, broker: &str) -> Self {
        let root =
            std::env::temp_dir().join(unique(&format!("bx-stack-{name}-{}", std::process::id())));
        let _ = std::fs::remove_dir_all(&root);
        for d in [
            "home",
            "grants",
            "run/loop-broker",
            "run/admin-broker",
            "run/loop-infer",
            "run/chat-loop",
            "run/chat-broker",
            "run/broker-gateway",
            "run/infer-broker",
        ] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        let uid = nix::unistd::getuid().as_raw();
        let config = format!(
            "home = \"{r}/home\"\ngrants = \"{r}/grants\"\n\
             [sockets]\nloop_broker = \"{r}/run/loop-broker\"\nadmin_broker = \"{r}/run/admin-broker\"\n\
             loop_infer = \"{r}/run/loop-infer\"\nchat_loop = \"{r}/run/chat-loop\"\n\
             chat_broker = \"{r}/run/chat-broker\"\nbroker_gateway = \"{r}/run/broker-gateway\"\ninfer_broker = \"{r}/run/infer-broker\"\n\
             [peers]\nloopd = {{ uid = {uid} }}\nadmin = {{ uid = {uid} }}\nchat = {{ uid = {uid} }}\n\
             gateway = {{ uid = {uid} }}\nbroker = {{ uid = {uid} }}\ninfer = {{ uid = {uid} }}\n\
             [broker]\nrunner = \"direct\"\ntool = \"{tool}\"\n{broker}\n",
            r = root.display(),
            tool = bin("boxmaker-tool").display(),
        );
        std::fs::write(root.join("config.toml"), config).expect("config");
        Self { root }
    }

    /// Adds tables to the config (before the daemons start).
    pub fn append_config(&self, text: &str) {
        let mut config = std::fs::read_to_string(self.config()).expect("config");
        config.push_str(text);
        std::fs::write(self.config(), config).expect("config");
    }

    /// Makes brokerd run `script` (a shell script, written executable as NAME) instead of
    /// `boxmaker-tool` (before the daemons start).
    pub fn tool_script(&self, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.root.join(name);
        std::fs::write(&path, script).expect("tool script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let config = std::fs::read_to_string(self.config())
            .expect("config")
            .replace(
                &format!("tool = \"{}\"", bin("boxmaker-tool").display()),
                &format!("tool = \"{}\"", path.display()),
            );
        std::fs::write(self.config(), config).expect("config");
    }

    pub fn chat_sock(&self) -> PathBuf {
        self.root.join("run/chat-loop/loop.sock")
    }

    pub fn config(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    pub fn loop_sock(&self) -> PathBuf {
        self.root.join("run/loop-broker/broker.sock")
    }

    /// brokerd's witness.sock, inferproxy's side.
    pub fn witness_sock(&self) -> PathBuf {
        self.root.join("run/infer-broker/witness.sock")
    }

    pub fn admin_sock(&self) -> PathBuf {
        self.root.join("run/admin-broker/broker.sock")
    }

    pub fn audit_dir(&self) -> PathBuf {
        self.root.join("home/audit")
    }

    pub fn write_grant(&self, id: &str, text: &str) {
        std::fs::write(self.root.join("grants").join(format!("{id}.toml")), text).expect("grant");
    }

    /// A directory of files the tools may read, under this home.
    pub fn files(&self, dir: &str, files: &[(&str, &str)]) -> PathBuf {
        let d = self.root.join(dir);
        std::fs::create_dir_all(&d).expect("mkdir");
        for (name, text) in files {
            std::fs::write(d.join(name), text).expect("file");
        }
        d
    }

    /// Starts brokerd and waits for READY=1 on a test NOTIFY_SOCKET.
    pub fn start(&self) -> Daemon {
        self.daemon("brokerd")
    }

    /// Starts the role daemon `name` with this home's config and waits for READY=1.
    pub fn daemon(&self, name: &str) -> Daemon {
        let mut cmd = Command::new(bin(name));
        cmd.arg("--config").arg(self.config());
        Daemon::spawn(cmd, &self.root)
    }

    /// Starts a test peer that prints `listening on HOST:PORT` first, its stderr to `log`
    /// under this home; returns it and the address.
    pub fn spawn_peer(&self, mut cmd: Command, log: &str) -> (Daemon, String) {
        let stderr = self.root.join(log);
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("peer stderr file"))
            .spawn()
            .expect("test peer");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("port");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .expect("a `listening on` line")
            .to_owned();
        let daemon = Daemon { child, stderr };
        (daemon, addr)
    }

    /// Starts the fake llama-server with `script`, then inferproxy, brokerd and loopd.
    pub fn start_agent(&self, script: &str, loop_config: &str) -> Agent {
        let script_path = self.root.join("script.toml");
        std::fs::write(&script_path, script).expect("script");
        let mut cmd = Command::new(bin("fake-llama-server"));
        cmd.args(["--listen", "127.0.0.1:0", "--script"])
            .arg(&script_path);
        let (fake, addr) = self.spawn_peer(cmd, "fake.log");
        self.agent_on(fake, &addr, loop_config)
    }

    /// [`Home::start_stack`] in front of `server` (a llama-server, fake or real, at `addr`),
    /// which the agent then owns and stops with the rest.
    pub fn agent_on(&self, server: Daemon, addr: &str, loop_config: &str) -> Agent {
        let mut agent = self.start_stack(addr, loop_config);
        agent.daemons.push(server);
        agent
    }

    /// Starts inferproxy (its upstream the model server at `addr`), brokerd and loopd, with
    /// `loop_config` as the `[loop]` section.
    pub fn start_stack(&self, addr: &str, loop_config: &str) -> Agent {
        self.append_config(&format!(
            "[infer]\nupstream = \"http://{addr}\"\n[loop]\n{loop_config}\n"
        ));
        let inferproxy = self.daemon("inferproxy");
        let brokerd = self.daemon("brokerd");
        let loopd = self.daemon("loopd");
        Agent {
            addr: addr.to_owned(),
            chat: self.chat_sock(),
            broker: self.chat_broker_sock(),
            daemons: vec![loopd, brokerd, inferproxy],
        }
    }

    /// Sends brokerd SIGHUP and waits (up to 10 s) until the audit log holds `loaded`
    /// grants-loaded events (the start's included).
    pub fn reload(&self, brokerd: &Daemon, loaded: usize) {
        brokerd.hup();
        let count = || {
            self.audit_lines()
                .iter()
                .filter(|l| matches!(l, AuditLine::Event(AuditEvent::GrantsLoaded { .. })))
                .count()
        };
        let reloaded = poll_until(Duration::from_secs(10), || count() >= loaded);
        assert!(reloaded.is_some(), "no reload: {}", brokerd.log());
    }

    /// Runs the indexer once with this home's config, as its oneshot unit does, and
    /// asserts that it succeeded; returns its log.
    pub fn index(&self) -> String {
        let out = Command::new(bin("boxmaker-indexer"))
            .arg("--config")
            .arg(self.config())
            .output()
            .expect("boxmaker-indexer");
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "boxmaker-indexer failed: {log}");
        log
    }

    /// Runs bxctl with this home's config.
    pub fn bxctl(&self, args: &[&str]) -> Output {
        Command::new(bin("bxctl"))
            .arg("--config")
            .arg(self.config())
            .args(args)
            .output()
            .expect("bxctl")
    }

    /// `bxctl audit verify`, asserted good.
    pub fn assert_audit_good(&self) -> String {
        let out = self.bxctl(&["audit", "verify"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "audit verify failed: {text}");
        text
    }

    /// Every audit line, parsed.
    pub fn audit_lines(&self) -> Vec<AuditLine> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.audit_dir())
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.retain(|p| p.extension().is_some_and(|x| x == "jsonl"));
        files.sort();
        files
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .expect("audit file")
                    .lines()
                    .filter_map(|l| AuditLine::from_slice(l.as_bytes()).ok())
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A running daemon, killed on drop.
#[derive(Debug)]
pub struct Daemon {
    pub child: Child,
    pub stderr: PathBuf,
}

impl Daemon {
    /// Spawns `cmd` with a NOTIFY_SOCKET bound here and waits until it says READY=1.
    pub fn spawn(cmd: Command, dir: &Path) -> Self {
        let (daemon, sock) = Self::spawn_notified(cmd, dir);
        if let Ok(addr) = sock.local_addr()
            && let Some(path) = addr.as_pathname()
        {
            let _ = std::fs::remove_file(path);
        }
        daemon
    }

    /// [`Daemon::spawn`], keeping the notify socket for what the daemon says after READY=1.
    pub fn spawn_notified(mut cmd: Command, dir: &Path) -> (Self, UnixDatagram) {
        let program = Path::new(cmd.get_program())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let notify = dir.join(format!("{}.sock", unique(&format!("notify-{program}"))));
        let stderr = dir.join(format!("{}.log", unique(&format!("stderr-{program}"))));
        cmd.stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"));
        match supervise::spawn_ready(&mut cmd, &notify, Duration::from_secs(20)) {
            Ok((child, sock)) => (Self { child, stderr }, sock),
            Err(why) => panic!(
                "{why}: {}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            ),
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Sends SIGHUP (brokerd: load the grants again).
    pub fn hup(&self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid"));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).expect("hup");
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A read_file grant on `dir`.
pub fn read_grant(mode: &str, dir: &Path, extra: &str) -> String {
    format!(
        "tool = \"read_file\"\nmode = \"{mode}\"\nmax_taint = \"secret\"\n{extra}\n\
         [constraints]\npaths = [\"{}\"]\n",
        dir.display()
    )
}

/// Waits (up to 10 s) until bxctl lists a pending approval for the stack configured by
/// `config`, and returns its id.
pub fn wait_for_approval(config: &Path) -> String {
    wait_until("a pending approval", Duration::from_secs(10), || {
        let out = Command::new(bin("bxctl"))
            .arg("--config")
            .arg(config)
            .arg("approvals")
            .output()
            .expect("bxctl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix("approval "))
            .map(|id| id.trim().to_owned())
    })
}
