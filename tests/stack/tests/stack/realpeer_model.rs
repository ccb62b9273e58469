//! Real-peer tier (issue 28 point 1): `bxctl dev --model FILE.gguf` starts llama.cpp's server
//! itself (here xllamacpp behind llama-server's command line, `tests/realpeer/llama-server`)
//! with exactly the settings witnessing and the prompt cache rely on, as a role of the stack:
//! it answers through inferproxy, `bxctl status` names its model, and it ends with bxctl
//! however bxctl dies. Ignored under a plain `cargo test`; `tests/gate` step `realpeer`
//! runs it.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use expectrl::Expect;
use expectrl::process::unix::{Signal as PtySignal, WaitStatus};

use crate::dev::{all_gone, dev, roles, state_dir};

fn env_path(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run `eval \"$(tests/realpeer/setup.sh)\"` and export it")
    })
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn dev_model_starts_llama_server_with_the_settings_and_it_ends_with_bxctl() {
    let model = env_path("BOXMAKER_REALPEER_MODEL");
    let _ = env_path("BOXMAKER_REALPEER_PYTHON");
    let realpeer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../realpeer");
    let shim = realpeer.join("llama-server");
    let template = realpeer.join("chatml-tools.jinja");
    let state = state_dir("model");
    let mut s = dev(
        &state,
        &[
            "--model",
            &model,
            "--llama-server",
            &shim.display().to_string(),
            "--chat-template",
            &template.display().to_string(),
        ],
    );
    // llama-server is a role of the stack, started with exactly boxmaker's settings.
    let (_, pid) = roles(&state)
        .into_iter()
        .find(|(name, _)| name == "llama-server")
        .expect("llama-server in dev.lock");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
    let words: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    let at = words.iter().position(|w| w == "--model").expect("--model");
    let port = words
        .iter()
        .position(|w| w == "--port")
        .map(|i| words[i + 1].clone())
        .expect("--port");
    assert_eq!(
        words[at..].join(" "),
        format!(
            "--model {model} --host 127.0.0.1 --port {port} --ctx-size 16384 --parallel 2 \
             --cache-reuse 0 --no-context-shift --jinja --chat-template-file {}",
            template.display()
        )
    );
    // The model answers through the stack, and bxctl status names it.
    let status = Command::new(stack::bin("bxctl"))
        .arg("status")
        .env("BOXMAKER_CONFIG", state.join("config.toml"))
        .output()
        .expect("bxctl status");
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{status:?}");
    assert!(
        said.contains(&format!("model       ok: {model}\n")),
        "{said}"
    );
    s.set_expect_timeout(Some(Duration::from_secs(300)));
    s.send_line("Say hello.").expect("send");
    s.expect("you> ")
        .expect("the turn ended and the prompt came back");
    // However bxctl dies, llama-server goes with the stack.
    s.get_process_mut()
        .signal(PtySignal::SIGKILL)
        .expect("kill -9");
    let killed = stack::poll_until(Duration::from_secs(5), || {
        matches!(
            s.get_process().status(),
            Ok(WaitStatus::Signaled(_, PtySignal::SIGKILL, _))
        )
    });
    assert!(killed.is_some(), "bxctl was not killed");
    all_gone(&state, Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&state);
}
