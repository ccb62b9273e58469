//! `http_fetch`: one GET, no redirects followed.
//!
//! Outcomes: a 2xx answer is its body (capped, text rules of the crate); a 3xx answer is
//! reported as content naming its target, because the target needs its own grant check
//! and the model can ask for it as a new call; any other status is a failure
//! `HTTP <code> <reason>` (an error page is rarely worth the model's context).

use proto::toolrun::{ToolInvocation, cap_str};
use ureq::http::{StatusCode, header};

use crate::error::status_words;
use crate::net::{agent_for, parse_url};
use crate::text::{read_capped, to_content};
use crate::{Content, Failure, NetError, max_bytes};

pub fn http_fetch(url: &str, inv: &ToolInvocation) -> Result<Content, Failure> {
    let url = parse_url(url)?;
    let agent = agent_for(&url, inv)?;
    let response = agent
        .get(url.as_str())
        .call()
        .map_err(|source| NetError::Request {
            url: url.clone(),
            timeout_ms: inv.timeout_ms,
            error: Box::new(source),
        })?;
    let status = response.status();
    let max = max_bytes(inv);
    if status.is_redirection() {
        let location = response
            .headers()
            .get(header::LOCATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let text = redirect_text(&url, status, location.as_deref());
        let (content, truncated) = cap_str(text, max);
        return Ok(Content { content, truncated });
    }
    if !status.is_success() {
        return Err(NetError::Status {
            url,
            status,
            detail: None,
        }
        .into());
    }
    let body = response.into_body().into_reader();
    let (bytes, more) = read_capped(body, max).map_err(|source| NetError::Body {
        url: url.clone(),
        timeout_ms: inv.timeout_ms,
        error: source,
    })?;
    to_content(bytes, more, max)
}

/// `redirect (301 Moved Permanently) to https://…`, the target made absolute against the
/// requested URL so the model can ask for exactly that.
fn redirect_text(url: &url::Url, status: StatusCode, location: Option<&str>) -> String {
    let words = status_words(status);
    match location {
        Some(loc) => {
            let target = url
                .join(loc)
                .map(|u| u.to_string())
                .unwrap_or_else(|_| loc.to_owned());
            format!(
                "redirect ({words}) to {target}\n(not followed: fetching the target is a new \
                 http_fetch call, checked against its own grant)"
            )
        }
        None => format!("redirect ({words}) without a Location header"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_targets_are_made_absolute() {
        let base = url::Url::parse("http://example.test:8080/a/b").expect("url");
        let text = redirect_text(&base, StatusCode::FOUND, Some("/c?d=1"));
        assert!(
            text.starts_with("redirect (302 Found) to http://example.test:8080/c?d=1\n"),
            "{text}"
        );
        let text = redirect_text(&base, StatusCode::MOVED_PERMANENTLY, None);
        assert_eq!(
            text,
            "redirect (301 Moved Permanently) without a Location header"
        );
    }

    #[test]
    fn status_words_name_the_reason() {
        assert_eq!(status_words(StatusCode::NOT_FOUND), "404 Not Found");
        let odd = StatusCode::from_u16(599).expect("valid code");
        assert_eq!(status_words(odd), "599");
    }
}
