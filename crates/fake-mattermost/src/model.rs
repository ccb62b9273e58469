//! What the server holds and the shapes it writes, as Mattermost writes them: users, posts,
//! reactions and post lists (REST API v4, `api/v4/source/definitions.yaml`, with the JSON
//! names of `server/public/model/{user,post,reaction}.go`), and the WebSocket events with
//! their broadcast (`server/public/model/websocket_message.go`), sent to every live
//! connection of a user who may see them.

use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// Mattermost's limit on a post's message, in characters (runes).
pub const MAX_MESSAGE: usize = 16_383;

/// A user and the personal access token it authenticates with.
#[derive(Debug, Clone)]
pub struct User {
    pub id: String,
    pub username: String,
    pub token: String,
    pub is_bot: bool,
}

/// A live, authenticated WebSocket connection: whose it is, and where its events go.
#[derive(Debug)]
pub struct Socket {
    pub user: String,
    pub events: Sender<Value>,
}

/// Everything the server holds.
#[derive(Debug, Default)]
pub struct State {
    pub users: Vec<User>,
    /// The channels every user is a member of, (id, name, display name): Town Square, which
    /// gatewayd follows, first; Off-Topic, where posts are made that gatewayd must ignore.
    pub channels: Vec<(String, String, String)>,
    pub team: String,
    /// The team's name (its URL part) and display name.
    pub team_name: String,
    pub team_display: String,
    pub posts: Vec<Value>,
    pub reactions: Vec<Value>,
    /// How often each post was edited.
    pub edits: HashMap<String, u64>,
    /// Typing notices received (REST `POST /users/{id}/typing` and the `user_typing` action).
    pub typing: u64,
    /// Posts to let through, then posts to refuse (`/fake/fail`).
    pub fail_after: u64,
    pub fail_posts: u64,
    /// Bumped by `/fake/drop`: connections of an older generation close.
    pub generation: u64,
    pub sockets: Vec<Socket>,
    /// Connections that authenticated, ever.
    pub connections: u64,
    next_id: u64,
    last_ms: i64,
}

impl State {
    pub fn new(users: Vec<User>, channels: Vec<(String, String, String)>, team: String) -> Self {
        Self {
            users,
            channels,
            team,
            team_name: "home".to_owned(),
            team_display: "Home".to_owned(),
            ..Self::default()
        }
    }
}

pub type Shared = Arc<Mutex<State>>;

pub fn lock(s: &Shared) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Mattermost's id alphabet (`model.NewId`: base32 with this encoding, 26 characters).
const ID_ALPHABET: &[u8; 32] = b"ybndrfg8ejkmcpqxot1uwisza345h769";

/// A 26-character id in Mattermost's alphabet for 128 bits.
pub fn encode_id(mut bits: u128) -> String {
    let mut out = [0u8; 26];
    for slot in out.iter_mut().rev() {
        *slot = ID_ALPHABET[usize::try_from(bits & 31).unwrap_or(0)];
        bits >>= 5;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The error body of every refusal (`AppError`).
pub fn app_error(status: u16, id: &str, message: &str) -> (u16, Value) {
    let body = json!({"id": id, "message": message, "detailed_error": "",
                      "request_id": "fakerequestid0000000000000", "status_code": status});
    (status, body)
}

pub fn forbidden() -> (u16, Value) {
    app_error(
        403,
        "api.context.permissions.app_error",
        "You do not have the appropriate permissions.",
    )
}

pub fn status_ok() -> Value {
    json!({"status": "OK"})
}

/// A `PostList`: these posts, newest first in `order`.
pub fn post_list(posts: &[&Value]) -> Value {
    let mut sorted: Vec<&Value> = posts.to_vec();
    sorted.sort_by_key(|p| std::cmp::Reverse(p["create_at"].as_i64()));
    let order: Vec<&Value> = sorted.iter().map(|p| &p["id"]).collect();
    let map: serde_json::Map<String, Value> = sorted
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or_default().to_owned(),
                (*p).clone(),
            )
        })
        .collect();
    json!({"order": order, "posts": map, "next_post_id": "", "prev_post_id": "", "has_next": false})
}

impl State {
    /// Strictly increasing milliseconds, as ids and `create_at` order posts.
    pub fn now(&mut self) -> i64 {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self.last_ms = ms.max(self.last_ms + 1);
        self.last_ms
    }

    /// A fresh id: unique in this server, in Mattermost's form.
    pub fn new_id(&mut self) -> String {
        self.next_id += 1;
        let ms = u128::try_from(self.now()).unwrap_or(0);
        // An odd multiplier is a bijection on 128 bits: the ids stay unique and look random.
        let bits = ((ms << 64) | u128::from(self.next_id))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
        encode_id(bits)
    }

    pub fn user_by_token(&self, token: &str) -> Option<User> {
        self.users.iter().find(|u| u.token == token).cloned()
    }

    /// A user as `GET /users/{id}` answers it.
    pub fn user_json(&self, id: &str) -> Option<Value> {
        let u = self.users.iter().find(|u| u.id == id)?;
        Some(json!({
            "id": u.id, "create_at": 1, "update_at": 1, "delete_at": 0,
            "username": u.username, "first_name": "", "last_name": "", "nickname": "",
            "email": "", "email_verified": true, "auth_service": "",
            "roles": if u.is_bot { "system_user system_post_all" } else { "system_user" },
            "locale": "en", "notify_props": {}, "props": {}, "last_password_update": 1,
            "last_picture_update": 0, "failed_attempts": 0, "mfa_active": false,
            "timezone": {"automaticTimezone": "", "manualTimezone": "", "useAutomaticTimezone": "true"},
            "is_bot": u.is_bot
        }))
    }

    pub fn post(&self, id: &str) -> Option<&Value> {
        self.posts.iter().find(|p| p["id"] == id)
    }

    /// The channel of this id: (id, name, display name).
    pub fn channel(&self, id: &str) -> Option<&(String, String, String)> {
        self.channels.iter().find(|c| c.0 == id)
    }

    /// Sends `event` (name, data, broadcast) to every connection of a member of `channel`
    /// (every user is one), except those of `omit`, each with its own next `seq` (added by
    /// the connection).
    pub fn publish(&mut self, name: &str, data: Value, channel: &str, omit: Option<&str>) {
        let omit_users = omit.map_or(Value::Null, |u| json!({ u: true }));
        let event = json!({
            "event": name, "data": data,
            "broadcast": {"omit_users": omit_users, "user_id": "", "channel_id": channel,
                          "team_id": "", "connection_id": "", "omit_connection_id": ""}
        });
        self.sockets
            .retain(|s| Some(s.user.as_str()) == omit || s.events.send(event.clone()).is_ok());
    }

    /// `user` posts; the new post, or the refusal (`POST /posts`).
    pub fn create_post(&mut self, user: &User, input: &Value) -> Result<Value, (u16, Value)> {
        let channel = input["channel_id"].as_str().unwrap_or_default();
        if channel.is_empty() {
            return Err(app_error(
                400,
                "api.context.invalid_body_param.app_error",
                "Invalid or missing post in request body.",
            ));
        }
        let Some((_, channel_name, display)) = self.channel(channel).cloned() else {
            return Err(forbidden());
        };
        let message = input["message"].as_str().unwrap_or_default();
        if message.chars().count() > MAX_MESSAGE {
            return Err(app_error(
                400,
                "model.post.is_valid.message_length.app_error",
                "Invalid Message property for post.",
            ));
        }
        let root = input["root_id"].as_str().unwrap_or_default().to_owned();
        if !root.is_empty()
            && !self
                .post(&root)
                .is_some_and(|r| r["root_id"] == "" && r["channel_id"] == channel)
        {
            return Err(app_error(
                400,
                "api.post.create_post.root_id.app_error",
                "Invalid RootId parameter.",
            ));
        }
        let (id, now) = (self.new_id(), self.now());
        let mut props = input.get("props").cloned().unwrap_or_else(|| json!({}));
        if user.is_bot {
            props["from_bot"] = json!("true");
        }
        let file_ids = input.get("file_ids").cloned().unwrap_or_else(|| json!([]));
        let post = json!({
            "id": id, "create_at": now, "update_at": now, "edit_at": 0, "delete_at": 0,
            "is_pinned": false, "user_id": user.id, "channel_id": channel, "root_id": root,
            "original_id": "", "message": message, "type": "", "props": props,
            "hashtags": "", "file_ids": file_ids,
            "pending_post_id": input["pending_post_id"].as_str().unwrap_or_default(),
            "reply_count": 0, "last_reply_at": 0, "metadata": {}
        });
        self.posts.push(post.clone());
        if let Some(r) = self.posts.iter_mut().find(|p| p["id"] == root.as_str()) {
            r["reply_count"] = json!(r["reply_count"].as_i64().unwrap_or(0) + 1);
            r["last_reply_at"] = json!(now);
        }
        let data = json!({
            "channel_display_name": display, "channel_name": channel_name,
            "channel_type": "O", "post": post.to_string(),
            "sender_name": format!("@{}", user.username), "set_online": true,
            "team_id": self.team
        });
        self.publish("posted", data, channel, None);
        Ok(post)
    }

    /// `user` edits its own post (`PUT /posts/{id}/patch`).
    pub fn patch_post(
        &mut self,
        user: &User,
        id: &str,
        patch: &Value,
    ) -> Result<Value, (u16, Value)> {
        let Some(author) = self.post(id).map(|p| p["user_id"].clone()) else {
            return Err(forbidden());
        };
        if author != user.id.as_str() {
            return Err(forbidden());
        }
        if let Some(m) = patch["message"].as_str()
            && m.chars().count() > MAX_MESSAGE
        {
            return Err(app_error(
                400,
                "model.post.is_valid.message_length.app_error",
                "Invalid Message property for post.",
            ));
        }
        let now = self.now();
        let post = self
            .posts
            .iter_mut()
            .find(|p| p["id"] == id)
            .ok_or_else(forbidden)?;
        for key in ["message", "props", "file_ids", "is_pinned"] {
            if let Some(v) = patch.get(key) {
                post[key] = v.clone();
            }
        }
        post["edit_at"] = json!(now);
        post["update_at"] = json!(now);
        let post = post.clone();
        *self.edits.entry(id.to_owned()).or_default() += 1;
        let channel = post["channel_id"].as_str().unwrap_or_default().to_owned();
        self.publish(
            "post_edited",
            json!({"post": post.to_string()}),
            &channel,
            None,
        );
        Ok(post)
    }

    /// `user` reacts (`POST /reactions`); the reaction saved.
    pub fn react(&mut self, user: &User, input: &Value) -> Result<Value, (u16, Value)> {
        let field = |k: &str| input[k].as_str().unwrap_or_default().to_owned();
        let (by, post_id, emoji) = (field("user_id"), field("post_id"), field("emoji_name"));
        let Some(channel) = self.post(&post_id).map(|p| p["channel_id"].clone()) else {
            return Err(forbidden());
        };
        if by != user.id {
            return Err(forbidden());
        }
        if emoji.is_empty()
            || emoji.len() > 64
            || !emoji
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-+".contains(&b))
        {
            return Err(app_error(
                400,
                "model.reaction.is_valid.emoji_name.app_error",
                "Invalid emoji name.",
            ));
        }
        let now = self.now();
        let reaction = json!({
            "user_id": by, "post_id": post_id, "emoji_name": emoji, "create_at": now,
            "update_at": now, "delete_at": 0, "remote_id": "", "channel_id": channel
        });
        let same =
            |r: &Value| r["user_id"] == by && r["post_id"] == post_id && r["emoji_name"] == emoji;
        if !self.reactions.iter().any(same) {
            self.reactions.push(reaction.clone());
        }
        // As in Mattermost, a reaction makes the post "updated" (it comes back in `since`).
        if let Some(p) = self.posts.iter_mut().find(|p| p["id"] == post_id.as_str()) {
            p["update_at"] = json!(now);
        }
        let channel = channel.as_str().unwrap_or_default().to_owned();
        let data = json!({"reaction": reaction.to_string()});
        self.publish("reaction_added", data, &channel, None);
        Ok(reaction)
    }

    /// `user` takes back a reaction of its own
    /// (`DELETE /users/{user_id}/posts/{post_id}/reactions/{emoji_name}`).
    pub fn unreact(
        &mut self,
        user: &User,
        by: &str,
        post_id: &str,
        emoji: &str,
    ) -> Result<Value, (u16, Value)> {
        if by != user.id || self.post(post_id).is_none() {
            return Err(forbidden());
        }
        let at = self.reactions.iter().position(|r| {
            r["user_id"] == by && r["post_id"] == post_id && r["emoji_name"] == emoji
        });
        if let Some(at) = at {
            let mut reaction = self.reactions.remove(at);
            let now = self.now();
            reaction["delete_at"] = json!(now);
            if let Some(p) = self.posts.iter_mut().find(|p| p["id"] == post_id) {
                p["update_at"] = json!(now);
            }
            let channel = reaction["channel_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let data = json!({"reaction": reaction.to_string()});
            self.publish("reaction_removed", data, &channel, None);
        }
        Ok(status_ok())
    }

    /// `user` is typing in the channel (in `parent`'s thread when not empty): everyone
    /// else's connections hear `typing`.
    pub fn typing(&mut self, user: &str, channel: &str, parent: &str) -> Result<(), (u16, Value)> {
        if self.channel(channel).is_none() {
            return Err(app_error(
                400,
                "api.websocket_handler.invalid_param.app_error",
                "Invalid channel_id parameter.",
            ));
        }
        self.typing += 1;
        let data = json!({"parent_id": parent, "user_id": user});
        self.publish("typing", data, channel, Some(user));
        Ok(())
    }
}
