//! Looking users, the team and channels up by name, as an admin tool does before it can name
//! them by id (`bxctl gateway setup`): exactly the three calls Mattermost documents for it
//! (`api/v4/source/{users,teams,channels}.yaml`), in the `User`, `Team` and `Channel` shapes
//! of `definitions.yaml`, with the not-found errors of `server/channels/app/{user,team,
//! channel}.go` and their English texts (`server/i18n/en.json`).

use serde_json::{Value, json};

use crate::model::{State, app_error};

/// `GET /users/username/{username}`: any session may look a user up.
pub fn user_by_name(s: &State, username: &str) -> Result<(u16, Value), (u16, Value)> {
    s.users
        .iter()
        .find(|u| u.username == username)
        .and_then(|u| s.user_json(&u.id))
        .map(|u| (200, u))
        .ok_or_else(|| {
            app_error(
                404,
                "app.user.get_by_username.app_error",
                "Unable to find an existing account matching your username for this team. This \
                 team may require an invite from the team owner to join.",
            )
        })
}

fn team_missing() -> (u16, Value) {
    app_error(
        404,
        "app.team.get_by_name.missing.app_error",
        "Unable to find the existing team.",
    )
}

/// `GET /teams/name/{name}`: the one team, open, every user a member.
pub fn team_by_name(s: &State, name: &str) -> Result<(u16, Value), (u16, Value)> {
    if name != s.team_name {
        return Err(team_missing());
    }
    Ok((200, team_json(s)))
}

/// `GET /teams/{team_id}/channels/name/{channel_name}`.
pub fn channel_by_name(s: &State, team_id: &str, name: &str) -> Result<(u16, Value), (u16, Value)> {
    let channel = s
        .channels
        .iter()
        .find(|c| c.1 == name && team_id == s.team)
        .ok_or_else(|| {
            app_error(
                404,
                "app.channel.get_by_name.missing.app_error",
                "Channel does not exist.",
            )
        })?;
    Ok((
        200,
        json!({
            "id": channel.0, "create_at": 1, "update_at": 1, "delete_at": 0,
            "team_id": s.team, "type": "O", "display_name": channel.2, "name": channel.1,
            "header": "", "purpose": "", "last_post_at": 0, "total_msg_count": 0,
            "extra_update_at": 0, "creator_id": ""
        }),
    ))
}

fn team_json(s: &State) -> Value {
    json!({
        "id": s.team, "create_at": 1, "update_at": 1, "delete_at": 0,
        "display_name": s.team_display, "name": s.team_name, "description": "", "email": "",
        "type": "O", "allowed_domains": "", "invite_id": "teaminvite5kqe8ua1xwmcdpyn",
        "allow_open_invite": true
    })
}
