//! What gatewayd's threads work through, apart from the approval desk: the Mattermost channel
//! it serves (the REST client, the server's URL for links, the channel's id) and its durable
//! state. Built once at start; the desk, the dispatcher and the follower each hold it.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::mm::{self, Client};
use crate::state::Store;

#[derive(Debug)]
pub struct Context {
    client: Client,
    server: String,
    channel: String,
    store: Mutex<Store>,
}

impl Context {
    pub fn new(client: Client, server: String, channel: String, store: Store) -> Self {
        Self {
            client,
            server,
            channel,
            store: Mutex::new(store),
        }
    }

    /// The Mattermost REST client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The Mattermost base URL, for links.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The channel gatewayd follows and posts in.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// Posts `message` in the channel, in `root`'s thread (`""`: a root post). Returns its id.
    pub fn post(&self, root: &str, message: &str) -> Result<String, mm::Error> {
        self.client.create(&self.channel, root, message)
    }

    /// The durable state, locked.
    pub fn store(&self) -> MutexGuard<'_, Store> {
        daemon::lock(&self.store)
    }

    /// Whether the state can be locked within `within` (the watchdog's test: every post,
    /// reaction and card goes through it, and a thread stuck saving it holds it).
    pub fn reachable(&self, within: Duration) -> bool {
        daemon::reachable(&self.store, within)
    }
}
