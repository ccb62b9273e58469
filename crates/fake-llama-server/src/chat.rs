//! `POST /v1/chat/completions`: render, pick the rule, simulate the prompt cache, answer.

use std::io;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use crate::api::ApiError;
use crate::completion::{self, Counts, Meta, Reply};
use crate::http;
use crate::render::{common_prefix_tokens, render_prompt, token_count};
use crate::request::ChatRequest;
use crate::respond::{send_error, send_json};
use crate::script::Answer;
use crate::slots::{SlotGuard, SlotView};
use crate::state::{State, unix_now};

/// The line a `malformed_after` fault sends in place of one event.
pub const MALFORMED_LINE: &[u8] =
    b"data: {\"choices\":[{\"delta\":{\"content\": this is not JSON\n\n";

fn sleep_ms(ms: u64) {
    if ms > 0 {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// Answers one chat completion request. Returns whether the connection stays open.
pub fn handle(state: &State, body: &[u8], w: &mut TcpStream, keep: bool) -> io::Result<bool> {
    let (request, raw) = match ChatRequest::parse(body) {
        Ok(parsed) => parsed,
        Err(e) => return send_error(w, &e),
    };
    let settings = &state.script.server;
    let prompt = render_prompt(&request.messages, &request.tools);
    let n_prompt = token_count(prompt.len());
    if n_prompt >= settings.n_ctx {
        return send_error(w, &ApiError::exceeds_context(n_prompt, settings.n_ctx));
    }
    let (label, answer) = state.pick(&request.messages);

    if let Some(error) = &answer.error {
        state.record(json!({
            "rule": label, "slot": null, "error": error.status,
            "prompt": prompt, "request": raw,
        }));
        sleep_ms(answer.delay_ms);
        let mut e = ApiError::new(error.status, error.message.clone());
        if let Some(kind) = &error.kind {
            e.kind.clone_from(kind);
        }
        return send_error(w, &e);
    }

    let slot = state.slots.acquire(request.id_slot, &prompt);
    let cache_n = if request.cache_prompt {
        // The real server always evaluates at least the prompt's last token again.
        common_prefix_tokens(&slot.previous, &prompt).min(n_prompt - 1)
    } else {
        0
    };
    let reply = Reply::from_answer(answer, &request.messages, request.max_tokens, &mut || {
        state.random_id()
    });
    let generated = reply.generated();
    let counts = Counts {
        prompt_tokens: n_prompt,
        cache_n,
        prompt_n: n_prompt - cache_n,
        predicted_n: token_count(generated.len()).max(1),
    };
    let task = state.next_task();
    state.record(json!({
        "rule": label, "slot": slot.id, "id_task": task,
        "cache_n": counts.cache_n, "prompt_n": counts.prompt_n,
        "prompt_tokens": counts.prompt_tokens, "prompt": prompt, "request": raw,
    }));
    // What the slot holds afterwards: the prompt and the reply, unless the "server" died.
    let cache = if answer.truncate_after.is_some() {
        prompt.clone()
    } else {
        prompt + &generated
    };
    let n_predict = request
        .max_tokens
        .and_then(|n| i64::try_from(n).ok())
        .unwrap_or(-1);
    slot.record(
        cache,
        SlotView {
            busy: true,
            id_task: Some(task),
            n_prompt_tokens: counts.prompt_tokens,
            n_prompt_processed: counts.prompt_n,
            n_prompt_cache: counts.cache_n,
            n_predict,
        },
    );
    sleep_ms(answer.delay_ms);

    let meta = Meta {
        id: format!("chatcmpl-{}", state.random_id()),
        created: unix_now(),
        model: settings.model.clone(),
        fingerprint: settings.build_info.clone(),
    };
    if request.stream {
        let events = completion::stream_events(
            &meta,
            &reply,
            counts,
            request.include_usage,
            settings.chunk_chars,
        );
        send_stream(w, &events, answer, keep, slot)
    } else {
        // Generation is over before the answer goes out: the slot is free for the next request
        // the client sends as soon as it has read this one, as with the real server.
        drop(slot);
        send_whole(
            w,
            &completion::completion(&meta, &reply, counts),
            answer,
            keep,
        )
    }
}

/// A non-streaming answer, with the scripted faults: `truncate_after` sends half the body
/// and closes; `malformed_after` sends half the body as if it were all of it.
fn send_whole(w: &mut TcpStream, body: &Value, answer: &Answer, keep: bool) -> io::Result<bool> {
    if answer.truncate_after.is_none() && answer.malformed_after.is_none() {
        return send_json(w, 200, body, keep);
    }
    let bytes = body.to_string().into_bytes();
    let half = &bytes[..bytes.len() / 2];
    let content_type = "application/json; charset=utf-8";
    if answer.truncate_after.is_some() {
        let head = format!(
            "HTTP/1.1 200 OK\r\nServer: llama.cpp\r\nAccess-Control-Allow-Origin: \r\n\
             Content-Type: {content_type}\r\nContent-Length: {}\r\nKeep-Alive: timeout=5, max=100\r\n\r\n",
            bytes.len()
        );
        io::Write::write_all(w, head.as_bytes())?;
        io::Write::write_all(w, half)?;
        io::Write::flush(w)?;
        return Ok(false);
    }
    http::write_response(w, 200, content_type, half, keep)?;
    Ok(keep)
}

/// A stream: one chunk per SSE event, `data: [DONE]` last, with the scripted delays and
/// faults. `truncate_after = N` sends N events and closes without ending the chunked body.
/// The slot is released when generation ends, before the chunk with `finish_reason` goes out.
fn send_stream(
    w: &mut TcpStream,
    events: &[Value],
    answer: &Answer,
    keep: bool,
    slot: SlotGuard<'_>,
) -> io::Result<bool> {
    http::write_stream_head(w, keep)?;
    let mut payloads: Vec<Vec<u8>> = events
        .iter()
        .map(|e| format!("data: {e}\n\n").into_bytes())
        .collect();
    payloads.push(b"data: [DONE]\n\n".to_vec());
    let finish_at = events
        .iter()
        .position(|e| !e["choices"][0]["finish_reason"].is_null())
        .unwrap_or(events.len());
    let mut slot = Some(slot);
    for (sent, payload) in payloads.iter().enumerate() {
        if sent == finish_at {
            drop(slot.take());
        }
        if answer.truncate_after == Some(sent) {
            return Ok(false);
        }
        if answer.malformed_after == Some(sent) {
            http::write_chunk(w, MALFORMED_LINE)?;
        }
        if sent > 0 {
            sleep_ms(answer.chunk_delay_ms);
        }
        http::write_chunk(w, payload)?;
    }
    if answer.truncate_after.is_some() {
        // Past the last event: everything was sent, but the body never ends properly.
        return Ok(false);
    }
    http::write_last_chunk(w)?;
    Ok(keep)
}
