//! The Mattermost REST API v4 subset gatewayd uses, over ureq (blocking).

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

/// A post, as Mattermost sends it (unknown fields are ignored: the server adds them freely).
#[derive(Debug, Clone, Deserialize)]
pub struct Post {
    pub id: String,
    pub create_at: i64,
    pub user_id: String,
    pub channel_id: String,
    #[serde(default)]
    pub root_id: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub props: Value,
}

/// A reaction, as Mattermost sends it.
#[derive(Debug, Clone, Deserialize)]
pub struct Reaction {
    pub user_id: String,
    pub post_id: String,
    pub emoji_name: String,
}

/// Now, in Mattermost's unit (milliseconds since the epoch).
pub fn now_ms() -> i64 {
    i64::try_from(proto::Timestamp::now().as_millis()).unwrap_or(i64::MAX)
}

/// Why a call to Mattermost's REST API failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No answer, or the answer's body could not be read.
    #[error("Mattermost unreachable: {0}")]
    Http(ureq::Error),
    /// An answer of 300 or more, with Mattermost's `message`.
    #[error("Mattermost answered {status}: {detail}")]
    Status { status: u16, detail: String },
    /// The body is not the JSON asked for.
    #[error("Mattermost sent a body not understood: {0}")]
    Body(serde_json::Error),
    /// The body lacks what the call is for (`what`: "no post id", say).
    #[error("Mattermost sent a body not understood: {0}")]
    Lacks(&'static str),
}

#[derive(Debug, Clone)]
pub struct Client {
    agent: ureq::Agent,
    base: String,
    auth: String,
}

impl Client {
    pub fn new(server: &str, token: &str) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .http_status_as_error(false)
            .build()
            .into();
        Self {
            agent,
            base: format!("{}/api/v4", server.trim_end_matches('/')),
            auth: format!("Bearer {token}"),
        }
    }

    /// The WebSocket URL for this server.
    pub fn websocket_url(&self) -> String {
        let url = format!("{}/websocket", self.base);
        if let Some(rest) = url.strip_prefix("https://") {
            format!("wss://{rest}")
        } else {
            url.replacen("http://", "ws://", 1)
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, Error> {
        let url = format!("{}{path}", self.base);
        let result = match (method, body) {
            ("GET", _) => self
                .agent
                .get(&url)
                .header("Authorization", &self.auth)
                .call(),
            (_, body) => {
                let text = body.map(Value::to_string).unwrap_or_default();
                let req = if method == "PUT" {
                    self.agent.put(&url)
                } else {
                    self.agent.post(&url)
                };
                req.header("Authorization", &self.auth)
                    .content_type("application/json")
                    .send(text.as_str())
            }
        };
        let mut resp = result.map_err(Error::Http)?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(32 * 1024 * 1024)
            .read_to_string()
            .map_err(Error::Http)?;
        let value: Value = serde_json::from_str(&text).map_err(Error::Body)?;
        if status >= 300 {
            let detail = value["message"].as_str().unwrap_or("no message").to_owned();
            return Err(Error::Status { status, detail });
        }
        Ok(value)
    }

    /// The bot's own user id.
    pub fn me(&self) -> Result<String, Error> {
        let me = self.call("GET", "/users/me", None)?;
        me["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or(Error::Lacks("no user id"))
    }

    pub fn create(&self, channel: &str, root: &str, message: &str) -> Result<String, Error> {
        let body = json!({"channel_id": channel, "root_id": root, "message": message});
        let post = self.call("POST", "/posts", Some(&body))?;
        post["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or(Error::Lacks("no post id"))
    }

    pub fn edit(&self, id: &str, message: &str) -> Result<(), Error> {
        let body = json!({"message": message});
        self.call("PUT", &format!("/posts/{id}/patch"), Some(&body))
            .map(drop)
    }

    /// One post's message.
    pub fn message(&self, id: &str) -> Result<String, Error> {
        let post = self.call("GET", &format!("/posts/{id}"), None)?;
        post["message"]
            .as_str()
            .map(str::to_owned)
            .ok_or(Error::Lacks("no message"))
    }

    /// The reactions on one post.
    pub fn reactions(&self, id: &str) -> Result<Vec<Reaction>, Error> {
        let list = self.call("GET", &format!("/posts/{id}/reactions"), None)?;
        // A post without reactions may come back as `null` rather than `[]`.
        if list.is_null() {
            return Ok(Vec::new());
        }
        serde_json::from_value(list).map_err(Error::Body)
    }

    pub fn typing(&self, user: &str, channel: &str, root: &str) -> Result<(), Error> {
        let body = json!({"channel_id": channel, "parent_id": root});
        self.call("POST", &format!("/users/{user}/typing"), Some(&body))
            .map(drop)
    }

    /// Posts in `channel` created or changed since `since` (ms), oldest first.
    pub fn since(&self, channel: &str, since: i64) -> Result<Vec<Post>, Error> {
        let list = self.call(
            "GET",
            &format!("/channels/{channel}/posts?since={since}"),
            None,
        )?;
        let mut posts: Vec<Post> = list["posts"]
            .as_object()
            .map(|m| {
                m.values()
                    .filter_map(|p| serde_json::from_value(p.clone()).ok())
                    .collect()
            })
            .unwrap_or_default();
        posts.sort_by_key(|p| p.create_at);
        Ok(posts)
    }
}
