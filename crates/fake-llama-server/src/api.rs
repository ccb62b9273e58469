//! llama-server's JSON shapes for everything but the completion itself: errors, `/health`,
//! `/props`, `/slots`, `/v1/models`. Shapes follow the captured transcripts and what
//! xllamacpp's build of the same server answers (the real-peer tests compare them).

use serde_json::{Value, json};

use crate::script::ServerSettings;
use crate::slots::SlotView;

/// An error answered in llama-server's shape:
/// `{"error":{"code":N,"message":"...","type":"..."}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// `error.message`.
    pub message: String,
    /// `error.type`.
    pub kind: String,
    /// `n_prompt_tokens` and `n_ctx` of an `exceed_context_size_error`.
    pub context: Option<(usize, usize)>,
}

impl ApiError {
    /// An error with the type llama-server gives `status`.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            kind: type_for(status).to_owned(),
            context: None,
        }
    }

    /// 400 `invalid_request_error`.
    pub fn invalid_request(message: &str) -> Self {
        Self::new(400, message)
    }

    /// 400 for a body that is not JSON, worded like nlohmann::json's parse error.
    pub fn invalid_json(e: &serde_json::Error) -> Self {
        Self::new(
            400,
            format!(
                "[json.exception.parse_error.101] parse error at line {}, column {}: {e}",
                e.line(),
                e.column()
            ),
        )
    }

    /// 500 for a message llama-server cannot turn into a conversation (a missing role).
    pub fn bad_messages(detail: &str) -> Self {
        Self::new(500, format!("Failed to parse messages: {detail}"))
    }

    /// 500 for a tool call whose arguments text is not JSON: the real server cannot render
    /// the history (`detail` is nlohmann::json's parse error, `nljson::parse_error`).
    pub fn unrenderable_arguments(detail: &str) -> Self {
        Self::new(
            500,
            format!("Failed to parse tool call arguments as JSON: {detail}"),
        )
    }

    /// 404 for an unknown path.
    pub fn not_found() -> Self {
        Self::new(404, "File Not Found")
    }

    /// 501 for `/metrics` on a server started without `--metrics`.
    pub fn metrics_off() -> Self {
        Self::new(
            501,
            "This server does not support metrics endpoint. Start it with `--metrics`",
        )
    }

    /// 503 while the model is "loading".
    pub fn loading() -> Self {
        Self::new(503, "Loading model")
    }

    /// 400 when the prompt does not fit a slot.
    pub fn exceeds_context(n_prompt_tokens: usize, n_ctx: usize) -> Self {
        Self {
            status: 400,
            message: format!(
                "request ({n_prompt_tokens} tokens) exceeds the available context size \
                 ({n_ctx} tokens), try increasing it"
            ),
            kind: "exceed_context_size_error".to_owned(),
            context: Some((n_prompt_tokens, n_ctx)),
        }
    }

    /// The JSON body.
    pub fn to_json(&self) -> Value {
        let mut error = json!({ "code": self.status, "message": self.message, "type": self.kind });
        if let (Some((n_prompt, n_ctx)), Value::Object(map)) = (self.context, &mut error) {
            map.insert("n_prompt_tokens".into(), n_prompt.into());
            map.insert("n_ctx".into(), n_ctx.into());
        }
        json!({ "error": error })
    }
}

/// The `error.type` llama-server uses for a status.
pub fn type_for(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        501 => "not_supported_error",
        503 => "unavailable_error",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    }
}

/// `GET /health` when ready.
pub fn health() -> Value {
    json!({ "status": "ok" })
}

/// The sampling parameters block of `/props` and `/slots`, as the real server reports its
/// defaults (`max_tokens` / `n_predict` from the request when a slot has served one).
pub fn params(n_predict: i64) -> Value {
    let mut sampling = json!({
        "seed": 4_294_967_295_u64, "temperature": 0.800000011920929, "dynatemp_range": 0.0,
        "dynatemp_exponent": 1.0, "top_k": 40, "top_p": 0.949999988079071,
        "min_p": 0.05000000074505806, "top_n_sigma": -1.0, "xtc_probability": 0.0,
        "xtc_threshold": 0.10000000149011612, "typical_p": 1.0, "repeat_last_n": 64,
        "repeat_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0,
        "dry_multiplier": 0.0, "dry_base": 1.75, "dry_allowed_length": 2,
        "dry_penalty_last_n": 64, "mirostat": 0, "mirostat_tau": 5.0,
        "mirostat_eta": 0.10000000149011612, "adaptive_target": -1.0,
        "adaptive_decay": 0.8999999761581421,
    });
    let rest = json!({
        "max_tokens": n_predict, "n_predict": n_predict,
        "n_keep": 0, "n_discard": 0, "ignore_eos": false, "stream": false, "n_probs": 0,
        "min_keep": 0, "chat_format": "Content-only", "reasoning_format": "none",
        "reasoning_in_content": false, "generation_prompt": "",
        "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p",
                     "xtc", "temperature"],
        "speculative.types": "none", "timings_per_token": false,
        "post_sampling_probs": false, "backend_sampling": false, "lora": []
    });
    if let (Value::Object(map), Value::Object(more)) = (&mut sampling, rest) {
        map.extend(more);
    }
    sampling
}

/// A Jinja rendition of the fake's fixed template (see [`crate::render`]), for `/props`.
pub const CHAT_TEMPLATE: &str = "{#- fake-llama-server: fixed ChatML-like template -#}\n\
{%- if tools %}<|im_start|>system\n{% if messages[0].role == 'system' %}{{ messages[0].content }}\
{% endif %}\n\n# Tools\n<tools>\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}</tools><|im_end|>\n\
{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.reasoning_content %}<think>\n\
{{ m.reasoning_content }}\n</think>\n{% endif %}{{ m.content }}{% for c in m.tool_calls %}\n\
<tool_call>\n{\"name\": \"{{ c.function.name }}\", \"arguments\": {{ c.function.arguments }}}\n\
</tool_call>{% endfor %}<|im_end|>\n{% endfor %}<|im_start|>assistant\n";

/// `GET /props`.
pub fn props(s: &ServerSettings) -> Value {
    json!({
        "default_generation_settings": { "params": params(-1), "n_ctx": s.n_ctx },
        "total_slots": s.total_slots,
        "model_alias": s.model,
        "model_ftype": "Q4_1",
        "model_path": s.model,
        "modalities": { "vision": false, "video": false, "audio": false },
        "media_marker": "<__media_fakellamaserverfakellamaserver__>",
        "endpoint_slots": true,
        "endpoint_props": false,
        "endpoint_metrics": false,
        "ui": false,
        "ui_settings": {},
        "chat_template": CHAT_TEMPLATE,
        "chat_template_caps": {
            "supports_object_arguments": s.tools, "supports_parallel_tool_calls": s.tools,
            "supports_preserve_reasoning": s.reasoning, "supports_reasoning_effort": false,
            "supports_string_content": true, "supports_system_role": true,
            "supports_tool_calls": s.tools, "supports_tools": s.tools,
            "supports_typed_content": false
        },
        "bos_token": "<|im_start|>",
        "eos_token": "<|im_end|>",
        "build_info": s.build_info,
        "is_sleeping": false,
        "cors_proxy_enabled": false
    })
}

/// `GET /slots`: idle slots that never served show only four fields, as the real one does.
pub fn slots(s: &ServerSettings, views: &[SlotView]) -> Value {
    let items: Vec<Value> = views
        .iter()
        .enumerate()
        .map(|(id, v)| {
            let mut slot = json!({
                "id": id, "n_ctx": s.n_ctx, "speculative": false, "is_processing": v.busy
            });
            if let (Some(task), Value::Object(map)) = (v.id_task, &mut slot) {
                map.insert("id_task".into(), task.into());
                map.insert("n_prompt_tokens".into(), v.n_prompt_tokens.into());
                map.insert(
                    "n_prompt_tokens_processed".into(),
                    v.n_prompt_processed.into(),
                );
                map.insert("n_prompt_tokens_cache".into(), v.n_prompt_cache.into());
                map.insert("params".into(), params(v.n_predict));
                map.insert(
                    "next_token".into(),
                    json!([{ "has_next_token": false, "has_new_line": false,
                             "n_remain": -1, "n_decoded": 0 }]),
                );
            }
            slot
        })
        .collect();
    Value::Array(items)
}

/// `GET /v1/models` (and `/models`).
pub fn models(s: &ServerSettings, created: u64) -> Value {
    json!({
        "models": [{
            "name": s.model, "model": s.model, "modified_at": "", "size": "", "digest": "",
            "type": "model", "description": "", "tags": [""], "capabilities": ["completion"],
            "parameters": "",
            "details": { "parent_model": "", "format": "gguf", "family": "", "families": [""],
                         "parameter_size": "", "quantization_level": "" }
        }],
        "object": "list",
        "data": [{
            "id": s.model, "aliases": [s.model], "tags": [], "object": "model",
            "architecture": { "input_modalities": ["text"], "output_modalities": ["text"] },
            "created": created, "owned_by": "llamacpp",
            "meta": { "vocab_type": 2, "n_vocab": 49152, "n_ctx": s.n_ctx, "n_ctx_train": 8192,
                      "n_embd": 576, "n_params": 134_515_008_u64, "size": 96_576_768_u64,
                      "ftype": "Q4_1" }
        }]
    })
}
