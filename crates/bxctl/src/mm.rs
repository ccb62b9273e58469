//! A small client of Mattermost's REST API v4 for what bxctl itself asks of a Mattermost
//! server: look-ups by name for `bxctl gateway setup`, and the owner's side of the local trial
//! of `bxctl dev --mattermost` (posting, reacting, reading the channel). Blocking, through
//! ureq (gatewayd's client too). Whatever the server says is a peer's words: callers show it
//! inert.

use std::time::Duration;

use serde_json::Value;

/// One Mattermost server, as one user (a personal access token or the bot's).
#[derive(Debug, Clone)]
pub struct Mattermost {
    agent: ureq::Agent,
    /// The server's base URL, as given.
    pub server: String,
    auth: String,
}

/// Why a call did not give what was asked.
#[derive(Debug, thiserror::Error)]
pub enum MmError {
    /// Nothing usable came back (no connection, TLS, a cut answer).
    #[error("{url}: {}", inert::line(&error.to_string()))]
    Http { url: String, error: ureq::Error },
    /// The server answered with an error status: its `AppError` id and message.
    #[error(
        "{url} answered {status}: {} ({})",
        inert::line(message),
        inert::line(id)
    )]
    Status {
        url: String,
        status: u16,
        id: String,
        message: String,
    },
    /// The body is not JSON.
    #[error("{url}: not JSON: {error}")]
    Body {
        url: String,
        error: serde_json::Error,
    },
}

impl MmError {
    /// The HTTP status the server answered with, if it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl Mattermost {
    pub fn new(server: &str, token: &str) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(20)))
            .http_status_as_error(false)
            .build()
            .into();
        Self {
            agent,
            server: server.trim_end_matches('/').to_owned(),
            auth: format!("Bearer {token}"),
        }
    }

    fn answer(
        &self,
        url: String,
        result: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Value, MmError> {
        let mut resp = result.map_err(|source| MmError::Http {
            url: url.clone(),
            error: source,
        })?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(8 * 1024 * 1024)
            .read_to_string()
            .map_err(|source| MmError::Http {
                url: url.clone(),
                error: source,
            })?;
        let value: Value = serde_json::from_str(&text).map_err(|source| MmError::Body {
            url: url.clone(),
            error: source,
        })?;
        if status >= 300 {
            return Err(MmError::Status {
                url,
                status,
                id: value["id"].as_str().unwrap_or_default().to_owned(),
                message: value["message"].as_str().unwrap_or("no message").to_owned(),
            });
        }
        Ok(value)
    }

    /// `GET /api/v4{path}`.
    pub fn get(&self, path: &str) -> Result<Value, MmError> {
        let url = format!("{}/api/v4{path}", self.server);
        let result = self
            .agent
            .get(&url)
            .header("Authorization", &self.auth)
            .call();
        self.answer(url, result)
    }

    /// `POST /api/v4{path}` with a JSON body.
    pub fn post(&self, path: &str, body: &Value) -> Result<Value, MmError> {
        let url = format!("{}/api/v4{path}", self.server);
        let result = self
            .agent
            .post(&url)
            .header("Authorization", &self.auth)
            .content_type("application/json")
            .send(body.to_string().as_str());
        self.answer(url, result)
    }
}
