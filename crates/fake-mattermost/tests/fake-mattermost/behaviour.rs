//! What a Mattermost server refuses, and whom it tells what.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{BOT, CHANNEL, OFF_TOPIC, OWNER, STRANGER, assert_shape, embedded, start};

#[test]
fn each_user_acts_only_as_itself() {
    let fake = start();
    let post = fake.post(OWNER, "mine", "");
    let id = post["id"].as_str().expect("id");
    let patch = format!("/api/v4/posts/{id}/patch");
    let forged = json!({"user_id": OWNER.0, "post_id": id, "emoji_name": "+1"});
    let typing = json!({"channel_id": CHANNEL, "parent_id": ""});
    let gone = format!("/api/v4/users/{}/posts/{id}/reactions/+1", OWNER.0);
    for (method, path, body) in [
        ("PUT", patch.as_str(), json!({"message": "not yours"})),
        ("POST", "/api/v4/reactions", forged.clone()),
        ("POST", &format!("/api/v4/users/{}/typing", OWNER.0), typing),
        ("DELETE", gone.as_str(), Value::Null),
    ] {
        let (status, error) = fake.call(method, path, STRANGER.1, &body);
        assert_eq!(status, 403, "{method} {path}: {error}");
        assert_shape("app_error", None, &error);
        assert_eq!(error["id"], "api.context.permissions.app_error");
    }
    let (status, _) = fake.call("POST", "/api/v4/reactions", OWNER.1, &forged);
    assert_eq!(status, 201, "the owner reacts as itself");
}

#[test]
fn bad_posts_and_reactions_are_refused_with_mattermosts_codes() {
    let fake = start();
    let reply = fake.post(OWNER, "root", "");
    let reply = fake.post(OWNER, "reply", reply["id"].as_str().expect("id"));
    let long = "x".repeat(16_384);
    for (body, status, id) in [
        (
            json!({"message": "no channel"}),
            400,
            "api.context.invalid_body_param.app_error",
        ),
        (
            json!({"channel_id": "othrchan5kqe8ua1xwmcdpynbs", "message": "x"}),
            403,
            "api.context.permissions.app_error",
        ),
        (
            json!({"channel_id": CHANNEL, "message": long}),
            400,
            "model.post.is_valid.message_length.app_error",
        ),
        (
            json!({"channel_id": CHANNEL, "root_id": reply["id"], "message": "x"}),
            400,
            "api.post.create_post.root_id.app_error",
        ),
        (
            json!({"channel_id": CHANNEL, "root_id": "nosuchpost5kqe8ua1xwmcdpyn", "message": "x"}),
            400,
            "api.post.create_post.root_id.app_error",
        ),
    ] {
        let (got, error) = fake.call("POST", "/api/v4/posts", OWNER.1, &body);
        assert_eq!((got, error["id"].as_str()), (status, Some(id)), "{body}");
    }
    let (status, _) = fake.call(
        "POST",
        "/api/v4/posts",
        OWNER.1,
        &json!({"channel_id": CHANNEL, "message": "x".repeat(16_383)}),
    );
    assert_eq!(status, 201, "16383 characters are allowed");
    let bad = json!({"user_id": OWNER.0, "post_id": reply["id"], "emoji_name": "no spaces"});
    let (status, error) = fake.call("POST", "/api/v4/reactions", OWNER.1, &bad);
    assert_eq!(
        (status, error["id"].as_str()),
        (400, Some("model.reaction.is_valid.emoji_name.app_error"))
    );
    let (status, error) = fake.call(
        "GET",
        "/api/v4/posts/nosuchpost5kqe8ua1xwmcdpyn",
        OWNER.1,
        &Value::Null,
    );
    assert_eq!(
        (status, error["id"].as_str()),
        (404, Some("app.post.get.app_error"))
    );
}

#[test]
fn the_typer_is_not_told_of_its_own_typing_and_others_are() {
    let fake = start();
    let (mut bot, _) = fake.socket(BOT);
    let (mut owner, _) = fake.socket(OWNER);
    let answer = owner.request(
        "user_typing",
        json!({"channel_id": CHANNEL, "parent_id": ""}),
    );
    assert_eq!(answer["status"], "OK");
    let typed = bot.event();
    assert_eq!(
        (typed["event"].as_str(), typed["data"]["user_id"].as_str()),
        (Some("typing"), Some(OWNER.0))
    );
    assert_eq!(
        owner.quiet_for(Duration::from_millis(300)),
        None,
        "no typing event for the typer"
    );
    let answer = owner.request(
        "user_typing",
        json!({"channel_id": "othrchan5kqe8ua1xwmcdpynbs"}),
    );
    assert_shape("ws_error", None, &answer);
}

#[test]
fn a_connection_must_authenticate_first_and_with_a_known_token() {
    let fake = start();
    let (mut ws, _) =
        tungstenite::connect(format!("ws://{}/api/v4/websocket", fake.addr)).expect("ws");
    let mut send = |v: Value| {
        ws.send(tungstenite::Message::text(v.to_string()))
            .expect("send");
        let tungstenite::Message::Text(t) = ws.read().expect("answer") else {
            panic!("not text")
        };
        serde_json::from_str::<Value>(t.as_str()).expect("json")
    };
    let early = send(json!({"seq": 1, "action": "user_typing", "data": {"channel_id": CHANNEL}}));
    assert_shape("ws_error", None, &early);
    assert_eq!(
        (
            early["error"]["id"].as_str(),
            early["error"]["status_code"].as_u64()
        ),
        (
            Some("api.web_socket_router.not_authenticated.app_error"),
            Some(401)
        )
    );
    let wrong =
        send(json!({"seq": 2, "action": "authentication_challenge", "data": {"token": "nope"}}));
    assert_eq!(wrong["status"], "FAIL");
}

#[test]
fn posts_a_dropped_connection_missed_come_back_through_since() {
    let fake = start();
    let (mut bot, _) = fake.socket(BOT);
    let before = fake.post(OWNER, "before", "");
    let seen = embedded(&bot.event(), "post");
    assert_eq!(seen["id"], before["id"]);
    let (status, _) = fake.call("POST", "/fake/drop", "", &Value::Null);
    assert_eq!(status, 200);
    let missed = fake.post(OWNER, "while away", "");
    // A reaction makes an older post "updated" too; a reply brings back its root.
    let reaction = json!({"user_id": OWNER.0, "post_id": before["id"], "emoji_name": "+1"});
    fake.call("POST", "/api/v4/reactions", OWNER.1, &reaction);
    let since = seen["create_at"].as_i64().expect("create_at");
    let path = format!("/api/v4/channels/{CHANNEL}/posts?since={since}");
    let (_, list) = fake.call("GET", &path, BOT.1, &Value::Null);
    let order: Vec<&Value> = list["order"].as_array().expect("order").iter().collect();
    assert_eq!(order, vec![&missed["id"], &before["id"]], "{list:#}");
    let reply = fake.post(STRANGER, "late reply", missed["id"].as_str().expect("id"));
    let since = reply["create_at"].as_i64().expect("create_at") - 1;
    let (_, list) = fake.call(
        "GET",
        &format!("/api/v4/channels/{CHANNEL}/posts?since={since}"),
        BOT.1,
        &Value::Null,
    );
    assert_eq!(
        list["order"],
        json!([reply["id"], missed["id"]]),
        "the reply and its thread's root"
    );
    assert_eq!(
        list["posts"][missed["id"].as_str().expect("id")]["reply_count"],
        1
    );
}

#[test]
fn posts_in_another_channel_reach_its_members_and_stay_out_of_this_ones_lists() {
    let fake = start();
    let (mut bot, _) = fake.socket(BOT);
    let body = json!({"channel_id": OFF_TOPIC, "message": "elsewhere"});
    let (status, post) = fake.call("POST", "/api/v4/posts", OWNER.1, &body);
    assert_eq!(status, 201, "{post}");
    let posted = bot.event();
    assert_eq!(posted["broadcast"]["channel_id"], OFF_TOPIC);
    assert_eq!(posted["data"]["channel_name"], "off-topic");
    let reply = json!({"channel_id": CHANNEL, "root_id": post["id"], "message": "x"});
    let (status, _) = fake.call("POST", "/api/v4/posts", OWNER.1, &reply);
    assert_eq!(status, 400, "a reply stays in its root's channel");
    let (_, list) = fake.call(
        "GET",
        &format!("/api/v4/channels/{CHANNEL}/posts?since=0"),
        BOT.1,
        &Value::Null,
    );
    assert_eq!(list["order"], json!([]), "{list}");
    let (_, list) = fake.call(
        "GET",
        &format!("/api/v4/channels/{OFF_TOPIC}/posts?since=0"),
        BOT.1,
        &Value::Null,
    );
    assert_eq!(list["order"], json!([post["id"]]), "{list}");
}
