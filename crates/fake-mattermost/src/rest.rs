//! The REST API v4 routes, with Mattermost's status codes (`api/v4/source/{system,users,
//! posts,reactions,channels}.yaml`), and the test controls under `/fake/`, for what the
//! real API has no call for.

use serde_json::{Value, json};

use crate::model::{self, Shared, State, app_error, lock, post_list, status_ok};
use crate::{Request, directory};

fn not_found() -> (u16, Value) {
    app_error(
        404,
        "api.context.404.app_error",
        "Sorry, we could not find the page.",
    )
}

pub fn route(req: &Request, state: &Shared) -> (u16, Value) {
    let mut s = lock(state);
    let segs: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
    if segs.first() == Some(&"fake") {
        return control(req, &mut s, segs.get(1).copied());
    }
    let Some(api) = segs.strip_prefix(&["api", "v4"]) else {
        return not_found();
    };
    if let ("GET", ["system", "ping"]) = (req.method.as_str(), api) {
        // No session needed (a load balancer's health check).
        return (
            200,
            json!({"status": "OK", "AndroidLatestVersion": "", "AndroidMinVersion": "",
                   "DesktopLatestVersion": "", "DesktopMinVersion": "",
                   "IosLatestVersion": "", "IosMinVersion": ""}),
        );
    }
    let token = req.auth.strip_prefix("Bearer ").unwrap_or_default();
    let Some(me) = s.user_by_token(token).filter(|_| !token.is_empty()) else {
        return app_error(
            401,
            "api.context.session_expired.app_error",
            "Invalid or expired session, please login again.",
        );
    };
    let result = match (req.method.as_str(), api) {
        ("GET", ["users", "me"]) => s.user_json(&me.id).ok_or_else(not_found).map(|u| (200, u)),
        ("GET", ["users", "username", name]) => directory::user_by_name(&s, name),
        ("GET", ["teams", "name", name]) => directory::team_by_name(&s, name),
        ("GET", ["teams", team, "channels", "name", name]) => {
            directory::channel_by_name(&s, team, name)
        }
        ("GET", ["users", id]) => s
            .user_json(id)
            .ok_or_else(|| {
                app_error(
                    404,
                    "app.user.missing_account.const",
                    "Unable to find the user.",
                )
            })
            .map(|u| (200, u)),
        ("POST", ["users", id, "typing"]) => {
            // Only for oneself (anyone else's needs manage_system).
            if *id != me.id {
                return model::forbidden();
            }
            let channel = req.body["channel_id"].as_str().unwrap_or_default();
            let parent = req.body["parent_id"].as_str().unwrap_or_default();
            s.typing(&me.id, channel, parent)
                .map(|()| (200, status_ok()))
        }
        ("POST", ["posts"]) => {
            if s.fail_after > 0 {
                s.fail_after -= 1;
            } else if s.fail_posts > 0 {
                s.fail_posts -= 1;
                return app_error(500, "app.post.save.app_error", "Unable to save the post.");
            }
            s.create_post(&me, &req.body).map(|p| (201, p))
        }
        ("GET", ["posts", id]) => s
            .post(id)
            .cloned()
            .ok_or_else(post_missing)
            .map(|p| (200, p)),
        ("PUT", ["posts", id, "patch"]) => s.patch_post(&me, id, &req.body).map(|p| (200, p)),
        ("GET", ["posts", id, "thread"]) => thread(&s, id),
        ("GET", ["posts", id, "reactions"]) => {
            let on: Vec<&Value> = s.reactions.iter().filter(|r| r["post_id"] == *id).collect();
            Ok((200, json!(on)))
        }
        ("POST", ["reactions"]) => s.react(&me, &req.body).map(|r| (201, r)),
        ("DELETE", ["users", by, "posts", post, "reactions", emoji]) => {
            s.unreact(&me, by, post, emoji).map(|b| (200, b))
        }
        ("GET", ["channels", channel, "posts"]) => Ok(since(&s, channel, &req.query)),
        _ => Err(not_found()),
    };
    result.unwrap_or_else(|refusal| refusal)
}

fn post_missing() -> (u16, Value) {
    app_error(404, "app.post.get.app_error", "Unable to get the post.")
}

/// `GET /posts/{id}/thread`: the thread the post is in, root and replies.
fn thread(s: &State, id: &str) -> Result<(u16, Value), (u16, Value)> {
    let post = s.post(id).ok_or_else(post_missing)?;
    let root = match post["root_id"].as_str() {
        Some(r) if !r.is_empty() => r.to_owned(),
        _ => id.to_owned(),
    };
    let posts: Vec<&Value> = s
        .posts
        .iter()
        .filter(|p| p["id"] == root.as_str() || p["root_id"] == root.as_str())
        .collect();
    Ok((200, post_list(&posts)))
}

/// `GET /channels/{id}/posts?since=MS`: as Mattermost, the posts updated after `since`
/// (new, edited, reacted to) and the roots of their threads.
fn since(s: &State, channel: &str, query: &str) -> (u16, Value) {
    let since: i64 = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("since="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if s.channel(channel).is_none() {
        return model::forbidden();
    }
    let changed: Vec<&Value> = s
        .posts
        .iter()
        .filter(|p| p["channel_id"] == channel && p["update_at"].as_i64() > Some(since))
        .collect();
    let hits: Vec<&Value> = s
        .posts
        .iter()
        .filter(|p| {
            changed
                .iter()
                .any(|c| c["id"] == p["id"] || c["root_id"] == p["id"])
        })
        .collect();
    (200, post_list(&hits))
}

/// The test controls: what no Mattermost API call can cause or show.
fn control(req: &Request, s: &mut State, what: Option<&str>) -> (u16, Value) {
    match (req.method.as_str(), what) {
        ("POST", Some("fail")) => {
            s.fail_after = req.body["after"].as_u64().unwrap_or(0);
            s.fail_posts = req.body["posts"].as_u64().unwrap_or(0);
            (200, status_ok())
        }
        ("POST", Some("drop")) => {
            s.generation += 1;
            s.sockets.clear();
            (200, status_ok())
        }
        ("GET", Some("state")) => (
            200,
            json!({"posts": s.posts, "reactions": s.reactions, "edits": s.edits,
                   "typing": s.typing, "connections": s.connections, "live": s.sockets.len()}),
        ),
        _ => not_found(),
    }
}
