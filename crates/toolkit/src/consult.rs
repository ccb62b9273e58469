//! `consult`: one OpenAI-compatible chat completion to the remote model the grant names.
//!
//! The API key is the grant's secret. systemd's LoadCredential puts it in
//! `$CREDENTIALS_DIRECTORY/<credential>`; it never passes through the model, brokerd's
//! arguments or this process's command line (BRIEF decision 3), and no message here ever
//! contains it.

use std::fs::File;
use std::path::Path;

use proto::toolrun::{ConsultTarget, ToolInvocation, cap_str};
use serde::{Deserialize, Serialize};

use crate::net::{agent_for, parse_url};
use crate::text::read_capped;
use crate::{ConsultError, Content, Failure, NetError, max_bytes};

/// A credential is a key, not a document.
const MAX_KEY: usize = 16 * 1024;
/// The completion's JSON is larger than its text (escapes, metadata); this bounds memory
/// without depending on `max_bytes`, which caps the text afterwards.
const MAX_RESPONSE: usize = 16 * 1024 * 1024;
/// How much of an API error message to pass on.
const MAX_ERROR_DETAIL: usize = 500;

#[derive(Debug, Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: [ChatMessage<'a>; 1],
}

#[derive(Debug, Serialize)]
struct ChatMessage<'a> {
    role: &'a str,
    content: &'a str,
}

// The response types ignore unknown fields on purpose: this is a third party's API, which
// adds fields freely (usage, ids, timings); only the answer's text is taken from it.
#[derive(Debug, Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: AnswerMessage,
}

#[derive(Debug, Deserialize)]
struct AnswerMessage {
    content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ErrorResponse {
    error: ErrorDetail,
}

#[derive(Debug, Deserialize)]
struct ErrorDetail {
    message: String,
}

pub fn consult(
    prompt: &str,
    inv: &ToolInvocation,
    credentials: Option<&Path>,
) -> Result<Content, Failure> {
    let target = inv.consult.as_ref().ok_or(ConsultError::NoTarget)?;
    let key = read_key(target, credentials)?;
    let endpoint = format!("{}/chat/completions", target.url.trim_end_matches('/'));
    let url = parse_url(&endpoint)?;
    let agent = agent_for(&url, inv)?;
    let body = serde_json::to_vec(&ChatRequest {
        model: &target.model,
        messages: [ChatMessage {
            role: "user",
            content: prompt,
        }],
    })
    .map_err(ConsultError::Encode)?;
    let response = agent
        .post(url.as_str())
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .send(&body[..])
        .map_err(|source| NetError::Request {
            url: url.clone(),
            timeout_ms: inv.timeout_ms,
            error: Box::new(source),
        })?;
    let status = response.status();
    let reader = response.into_body().into_reader();
    let (bytes, more) = read_capped(reader, MAX_RESPONSE).map_err(|source| NetError::Body {
        url: url.clone(),
        timeout_ms: inv.timeout_ms,
        error: source,
    })?;
    if !status.is_success() {
        let detail = error_detail(&bytes, &key);
        return Err(NetError::Status {
            url,
            status,
            detail,
        }
        .into());
    }
    if more {
        return Err(ConsultError::ResponseTooLarge {
            url,
            limit: MAX_RESPONSE,
        }
        .into());
    }
    let parsed: ChatResponse = match serde_json::from_slice(&bytes) {
        Ok(parsed) => parsed,
        Err(error) => return Err(ConsultError::NotCompletion { url, error }.into()),
    };
    let Some(choice) = parsed.choices.into_iter().next() else {
        return Err(ConsultError::NoChoices { url }.into());
    };
    let Some(text) = choice.message.content else {
        return Err(ConsultError::NoContent { url }.into());
    };
    let (content, truncated) = cap_str(text, max_bytes(inv));
    Ok(Content { content, truncated })
}

/// Reads the API key from the credentials directory. Errors name the credential, never
/// its value.
fn read_key(target: &ConsultTarget, credentials: Option<&Path>) -> Result<String, ConsultError> {
    let name = target.credential.clone();
    // A credential name is one file name in the directory systemd made, nothing more.
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(ConsultError::CredentialName { name });
    }
    let Some(dir) = credentials else {
        return Err(ConsultError::NoCredentials { name });
    };
    let file = match File::open(dir.join(&name)) {
        Ok(file) => file,
        Err(error) => return Err(ConsultError::CredentialOpen { name, error }),
    };
    let (bytes, more) = match read_capped(file, MAX_KEY) {
        Ok(read) => read,
        Err(error) => return Err(ConsultError::CredentialRead { name, error }),
    };
    if more {
        return Err(ConsultError::CredentialTooLarge {
            name,
            limit: MAX_KEY,
        });
    }
    // Only the position of the bad byte is kept, never the bytes (a FromUtf8Error holds them).
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        Err(error) => return Err(ConsultError::CredentialNotUtf8 { name, error }),
    };
    // Files written with `echo` or an editor end in a newline that is not part of the key.
    let key = text.trim_end_matches(['\n', '\r']);
    if key.is_empty() {
        return Err(ConsultError::CredentialEmpty { name });
    }
    // It goes into a header: refuse anything a header cannot carry rather than let the
    // HTTP library reject it with a message that might quote it.
    if !key.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
        return Err(ConsultError::CredentialNotHeader { name });
    }
    Ok(key.to_owned())
}

/// The API's own error message (`{"error":{"message":…}}`), shortened, with the key blanked
/// out in case the server echoes it.
fn error_detail(body: &[u8], key: &str) -> Option<String> {
    let parsed: ErrorResponse = serde_json::from_slice(body).ok()?;
    let redacted = parsed.error.message.replace(key, "[credential]");
    let printable: String = redacted.chars().filter(|c| !c.is_control()).collect();
    let (detail, cut) = cap_str(printable, MAX_ERROR_DETAIL);
    Some(if cut { format!("{detail}…") } else { detail })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(credential: &str) -> ConsultTarget {
        ConsultTarget {
            url: "https://api.example.com/v1".into(),
            model: "m".into(),
            credential: credential.into(),
        }
    }

    fn temp_dir(tag: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("toolkit-consult-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn key_is_read_trimmed_and_never_echoed() {
        let dir = temp_dir("key");
        std::fs::write(dir.join("api"), "sk-secret\n").expect("write");
        assert_eq!(
            read_key(&target("api"), Some(&dir)).expect("key"),
            "sk-secret"
        );
        std::fs::write(dir.join("bad"), "sk-\u{1}secret").expect("write");
        let err = read_key(&target("bad"), Some(&dir)).expect_err("control char");
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(!format!("{err:?}").contains("secret"), "{err:?}");
        assert!(
            matches!(&err, ConsultError::CredentialNotHeader { name } if name == "bad"),
            "{err:?}"
        );
        std::fs::write(dir.join("latin1"), b"sk-secret\xe9").expect("write");
        let err = read_key(&target("latin1"), Some(&dir)).expect_err("not UTF-8");
        assert!(!format!("{err:?}").contains("secret"), "{err:?}");
        assert!(
            matches!(&err, ConsultError::CredentialNotUtf8 { name, .. } if name == "latin1"),
            "{err:?}"
        );
        std::fs::write(dir.join("empty"), "\n").expect("write");
        assert!(matches!(
            read_key(&target("empty"), Some(&dir)),
            Err(ConsultError::CredentialEmpty { .. })
        ));
        let err = read_key(&target("missing"), Some(&dir)).expect_err("missing");
        assert!(err.to_string().contains("\"missing\""), "{err}");
        assert!(
            matches!(&err, ConsultError::CredentialOpen { name, error: source }
                if name == "missing" && source.kind() == std::io::ErrorKind::NotFound),
            "{err:?}"
        );
        let err = read_key(&target("api"), None).expect_err("no dir");
        assert!(err.to_string().contains("CREDENTIALS_DIRECTORY"), "{err}");
        assert!(
            matches!(&err, ConsultError::NoCredentials { name } if name == "api"),
            "{err:?}"
        );
        for bad in ["", ".", "..", "../api", "a/b"] {
            assert!(
                matches!(read_key(&target(bad), Some(&dir)),
                    Err(ConsultError::CredentialName { name }) if name == bad),
                "{bad}"
            );
        }
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn error_detail_blanks_the_key() {
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-secret","type":"x"}}"#;
        assert_eq!(
            error_detail(body, "sk-secret").as_deref(),
            Some("Incorrect API key provided: [credential]")
        );
        assert_eq!(error_detail(b"<html>", "k"), None);
    }

    #[test]
    fn request_shape_is_openai_compatible() {
        let body = serde_json::to_string(&ChatRequest {
            model: "m",
            messages: [ChatMessage {
                role: "user",
                content: "hi",
            }],
        })
        .expect("encode");
        assert_eq!(
            body,
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#
        );
    }

    #[test]
    fn response_parse_ignores_extra_fields() {
        let body = br#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{}}"#;
        let parsed: ChatResponse = serde_json::from_slice(body).expect("parse");
        assert_eq!(parsed.choices[0].message.content.as_deref(), Some("ok"));
    }
}
