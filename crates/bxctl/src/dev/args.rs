//! What `bxctl dev` takes on its command line.

use std::path::PathBuf;

#[derive(Debug, Clone, clap::Args)]
pub struct DevArgs {
    /// Where the stack keeps its state, sockets and logs.
    #[arg(long, default_value = ".state")]
    pub state: PathBuf,
    /// Use a real llama-server at this loopback URL instead of the fake one.
    #[arg(long, value_name = "URL", conflicts_with_all = ["script", "model"])]
    pub llama_url: Option<String>,
    /// Start llama-server with this model (GGUF) and the settings boxmaker needs
    /// (docs/model.md), as part of the stack.
    #[arg(long, value_name = "FILE.gguf", conflicts_with = "script")]
    pub model: Option<PathBuf>,
    /// The llama-server program for --model (default: `llama-server` on PATH).
    #[arg(long, value_name = "PATH", requires = "model")]
    pub llama_server: Option<PathBuf>,
    /// A chat template with tool support for --model, when the model's own has none
    /// (llama-server's --chat-template-file).
    #[arg(long, value_name = "FILE", requires = "model")]
    pub chat_template: Option<PathBuf>,
    /// The context llama-server keeps for --model, in tokens, shared by its 2 slots.
    #[arg(
        long,
        value_name = "TOKENS",
        default_value_t = 16384,
        requires = "model"
    )]
    pub ctx_size: u32,
    /// Have the fake llama-server play this script instead of the demo
    /// (docs/fake-llama-server.md).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Use the grants in this directory (read, never written) instead of STATE/grants.
    #[arg(long, value_name = "DIR")]
    pub grants: Option<PathBuf>,
    /// Write the sample grants and demo notes again, over any edits of them.
    #[arg(long)]
    pub reset: bool,
    /// Send this one message instead of opening the prompt.
    #[arg(short, long)]
    pub message: Option<String>,
    /// Try Mattermost locally: a fake Mattermost server and gatewayd join the stack, and the
    /// chat posts as the owner in its channel (docs/gateway.md).
    #[arg(long, conflicts_with_all = ["message", "session", "resume"])]
    pub mattermost: bool,
    /// Continue this session, showing its last turns (default: a new one).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Continue the most recently active session, showing its last turns.
    #[arg(long = "continue", short = 'c', conflicts_with = "session")]
    pub resume: bool,
}
