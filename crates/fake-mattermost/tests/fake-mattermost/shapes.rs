//! Every call gatewayd makes, and every event a server sends it (asked or not), in the
//! shapes of the fixtures.

use serde_json::{Value, json};

use crate::{BOT, CHANNEL, OWNER, STRANGER, assert_shape, departures, embedded, start};

#[test]
fn the_shape_check_finds_a_missing_field_a_wrong_type_and_a_wrong_value() {
    let shape = json!({"id": "", "n": 0, "ok": "=OK", "list": [""], "inner": {"a": true}});
    let good = json!({"id": "x", "n": 3, "ok": "OK", "list": ["a", "b"], "inner": {"a": false}, "more": 1});
    assert!(departures(&good, &shape, "t").is_empty());
    let bad = json!({"n": 1.5, "ok": "FAIL", "list": ["a", 2], "inner": {"a": "yes"}});
    let off = departures(&bad, &shape, "t");
    assert_eq!(off.len(), 5, "{off:?}");
    assert!(off.iter().any(|o| o == "t.id is missing"), "{off:?}");
}

#[test]
fn rest_answers_in_the_documented_shapes_and_codes() {
    let fake = start();
    let (status, ping) = fake.call("GET", "/api/v4/system/ping", "", &Value::Null);
    assert_shape("system_ping", Some(status), &ping);

    let (status, me) = fake.call("GET", "/api/v4/users/me", BOT.1, &Value::Null);
    assert_shape("user", Some(status), &me);
    assert_eq!(
        (me["id"].as_str(), me["is_bot"].as_bool()),
        (Some(BOT.0), Some(true))
    );
    let (status, owner) = fake.call(
        "GET",
        &format!("/api/v4/users/{}", OWNER.0),
        BOT.1,
        &Value::Null,
    );
    assert_shape("user", Some(status), &owner);
    assert_eq!(
        (owner["username"].as_str(), owner["is_bot"].as_bool()),
        (Some("owner"), Some(false))
    );

    let root = fake.post(OWNER, "hello", "");
    assert_shape("post", Some(201), &root);
    let root_id = root["id"].as_str().expect("id");
    assert_eq!(root_id.len(), 26, "{root_id}");
    let body = json!({"channel_id": CHANNEL, "root_id": root_id, "message": "see attached",
                      "file_ids": ["fileid5kqe8ua1xwmcdpynbsot7"]});
    let (status, reply) = fake.call("POST", "/api/v4/posts", BOT.1, &body);
    assert_shape("post", Some(status), &reply);
    assert_eq!(reply["file_ids"], json!(["fileid5kqe8ua1xwmcdpynbsot7"]));
    assert_eq!(
        reply["user_id"], BOT.0,
        "the session's user, not the body's, posts"
    );
    assert_eq!(root["file_ids"], json!([]));

    let (status, got) = fake.call(
        "GET",
        &format!("/api/v4/posts/{root_id}"),
        BOT.1,
        &Value::Null,
    );
    assert_eq!(status, 200);
    assert_shape("post", None, &got);
    let patch = format!("/api/v4/posts/{}/patch", reply["id"].as_str().expect("id"));
    let (status, edited) = fake.call("PUT", &patch, BOT.1, &json!({"message": "edited"}));
    assert_eq!(status, 200);
    assert_shape("post", None, &edited);
    assert!(edited["edit_at"].as_i64() > Some(0), "{edited}");

    let (status, thread) = fake.call(
        "GET",
        &format!("/api/v4/posts/{root_id}/thread"),
        BOT.1,
        &Value::Null,
    );
    assert_shape("post_list", Some(status), &thread);
    assert_eq!(
        thread["order"],
        json!([reply["id"], root_id]),
        "newest first"
    );
    for p in thread["posts"].as_object().expect("posts").values() {
        assert_shape("post", None, p);
    }
    let (status, list) = fake.call(
        "GET",
        &format!("/api/v4/channels/{CHANNEL}/posts?since=0"),
        BOT.1,
        &Value::Null,
    );
    assert_shape("post_list", Some(status), &list);

    let reaction = json!({"user_id": OWNER.0, "post_id": root_id, "emoji_name": "+1"});
    let (status, saved) = fake.call("POST", "/api/v4/reactions", OWNER.1, &reaction);
    assert_shape("reaction", Some(status), &saved);
    let (status, on) = fake.call(
        "GET",
        &format!("/api/v4/posts/{root_id}/reactions"),
        BOT.1,
        &Value::Null,
    );
    assert_eq!(status, 200);
    assert_shape("reaction", None, &on[0]);
    let gone = format!("/api/v4/users/{}/posts/{root_id}/reactions/+1", OWNER.0);
    let (status, ok) = fake.call("DELETE", &gone, OWNER.1, &Value::Null);
    assert_shape("status_ok", Some(status), &ok);
    let (_, on) = fake.call(
        "GET",
        &format!("/api/v4/posts/{root_id}/reactions"),
        BOT.1,
        &Value::Null,
    );
    assert_eq!(on, json!([]), "an empty list, not null");

    let typing = json!({"channel_id": CHANNEL, "parent_id": root_id});
    let (status, ok) = fake.call(
        "POST",
        &format!("/api/v4/users/{}/typing", BOT.0),
        BOT.1,
        &typing,
    );
    assert_shape("status_ok", Some(status), &ok);

    for (method, path, token) in [
        ("GET", "/api/v4/users/me".to_owned(), ""),
        ("GET", format!("/api/v4/posts/{root_id}"), "no-such-token"),
        (
            "GET",
            "/api/v4/users/strangerq8ek1ycmw4pxduob70".to_owned(),
            STRANGER.1,
        ),
    ] {
        let (status, error) = fake.call(method, &path, token, &Value::Null);
        assert_shape("app_error", None, &error);
        assert_eq!(error["status_code"], status, "{path}");
    }
}

#[test]
fn events_come_in_the_documented_envelope_with_the_documented_data() {
    let fake = start();
    let (mut bot, hello) = fake.socket(BOT);
    assert_shape("ws_event", None, &hello);
    assert_shape("event_hello", None, &hello);
    assert_eq!(
        (
            hello["broadcast"]["user_id"].as_str(),
            hello["seq"].as_u64()
        ),
        (Some(BOT.0), Some(0))
    );

    let root = fake.post(OWNER, "hello", "");
    let posted = bot.event();
    assert_shape("ws_event", None, &posted);
    assert_shape("event_posted", None, &posted);
    assert_shape("post", None, &embedded(&posted, "post"));
    assert_eq!(
        (
            posted["seq"].as_u64(),
            posted["broadcast"]["channel_id"].as_str()
        ),
        (Some(1), Some(CHANNEL))
    );
    assert_eq!(posted["data"]["sender_name"], "@owner");

    // The bot's own post comes back to it, as from a real server.
    let reply = fake.post(BOT, "hi", root["id"].as_str().expect("id"));
    let echo = bot.event();
    assert_shape("event_posted", None, &echo);
    assert_eq!(embedded(&echo, "post")["id"], reply["id"]);

    let patch = format!("/api/v4/posts/{}/patch", reply["id"].as_str().expect("id"));
    fake.call("PUT", &patch, BOT.1, &json!({"message": "hi again"}));
    let edited = bot.event();
    assert_shape("ws_event", None, &edited);
    assert_shape("event_post_edited", None, &edited);
    assert_eq!(embedded(&edited, "post")["message"], "hi again");

    let reaction =
        json!({"user_id": STRANGER.0, "post_id": root["id"], "emoji_name": "white_check_mark"});
    fake.call("POST", "/api/v4/reactions", STRANGER.1, &reaction);
    let added = bot.event();
    assert_shape("event_reaction", None, &added);
    assert_eq!(added["event"], "reaction_added");
    assert_shape("reaction", None, &embedded(&added, "reaction"));
    let gone = format!(
        "/api/v4/users/{}/posts/{}/reactions/white_check_mark",
        STRANGER.0,
        root["id"].as_str().expect("id")
    );
    fake.call("DELETE", &gone, STRANGER.1, &Value::Null);
    let removed = bot.event();
    assert_shape("event_reaction", None, &removed);
    assert_eq!(removed["event"], "reaction_removed");
    assert_eq!(
        embedded(&removed, "reaction")["emoji_name"],
        "white_check_mark"
    );

    let typing = json!({"channel_id": CHANNEL, "parent_id": root["id"]});
    fake.call(
        "POST",
        &format!("/api/v4/users/{}/typing", OWNER.0),
        OWNER.1,
        &typing,
    );
    let typed = bot.event();
    assert_shape("ws_event", None, &typed);
    assert_shape("event_typing", None, &typed);
    assert_eq!(
        (
            typed["data"]["user_id"].as_str(),
            typed["broadcast"]["omit_users"][OWNER.0].as_bool()
        ),
        (Some(OWNER.0), Some(true))
    );
    assert_eq!(
        typed["seq"].as_u64(),
        Some(6),
        "one seq per event on this connection"
    );

    let answer = bot.request(
        "user_typing",
        json!({"channel_id": CHANNEL, "parent_id": ""}),
    );
    assert_shape("ws_response", None, &answer);
    let answer = bot.request("no_such_action", json!({}));
    assert_shape("ws_error", None, &answer);
    assert_eq!(
        answer["error"]["id"],
        "api.web_socket_router.bad_action.app_error"
    );
}

/// The look-ups by name an admin tool makes (`bxctl gateway setup`): users/username,
/// teams/name, teams/{id}/channels/name, each found and not found, the errors with the ids
/// and texts of Mattermost's server (`server/channels/app/{user,team,channel}.go`,
/// `server/i18n/en.json`).
#[test]
fn users_teams_and_channels_are_found_by_name_in_the_documented_shapes() {
    let fake = start();
    let get = |path: &str| fake.call("GET", path, BOT.1, &Value::Null);
    let (status, owner) = get("/api/v4/users/username/owner");
    assert_shape("user", Some(status), &owner);
    assert_eq!(owner["id"], OWNER.0);
    let (status, missing) = get("/api/v4/users/username/nobody");
    assert_eq!(status, 404);
    assert_shape("app_error", None, &missing);
    assert_eq!(
        (missing["id"].as_str(), missing["message"].as_str()),
        (
            Some("app.user.get_by_username.app_error"),
            Some(
                "Unable to find an existing account matching your username for this team. This \
                 team may require an invite from the team owner to join."
            )
        )
    );

    let (status, team) = get("/api/v4/teams/name/home");
    assert_shape("team", Some(status), &team);
    let team_id = team["id"].as_str().expect("team id").to_owned();
    let (status, missing) = get("/api/v4/teams/name/away");
    assert_eq!(status, 404);
    assert_eq!(
        (missing["id"].as_str(), missing["message"].as_str()),
        (
            Some("app.team.get_by_name.missing.app_error"),
            Some("Unable to find the existing team.")
        )
    );

    let (status, channel) = get(&format!(
        "/api/v4/teams/{team_id}/channels/name/town-square"
    ));
    assert_shape("channel", Some(status), &channel);
    assert_eq!(
        (channel["id"].as_str(), channel["team_id"].as_str()),
        (Some(CHANNEL), Some(team_id.as_str()))
    );
    let (status, missing) = get(&format!("/api/v4/teams/{team_id}/channels/name/nowhere"));
    assert_eq!(status, 404);
    assert_eq!(
        (missing["id"].as_str(), missing["message"].as_str()),
        (
            Some("app.channel.get_by_name.missing.app_error"),
            Some("Channel does not exist.")
        )
    );
    // A session is needed, as for every call but the ping.
    let (status, _) = fake.call("GET", "/api/v4/users/username/owner", "", &Value::Null);
    assert_eq!(status, 401);
}
