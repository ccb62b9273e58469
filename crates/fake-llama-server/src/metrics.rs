//! `GET /metrics` as llama-server serves it: with `server.metrics = true` in the script (the
//! real server's `--metrics`), its Prometheus text with the same metrics in the same order;
//! otherwise its 501 `not_supported_error`. The counters add up what the fake "processed":
//! every completion's `prompt_n`, `cache_n` and `predicted_n`, at the simulated 0.5 ms per
//! prompt token and 5 ms per generated token.

use crate::completion::Counts;

/// The counters since start.
#[derive(Debug, Clone, Copy, Default)]
pub struct Metrics {
    prompt_tokens: u64,
    cached_tokens: u64,
    predicted_tokens: u64,
    decodes: u64,
    tokens_max: u64,
}

fn n(x: usize) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

impl Metrics {
    /// Adds one completion.
    pub fn add(&mut self, c: &Counts) {
        self.prompt_tokens += n(c.prompt_n);
        self.cached_tokens += n(c.cache_n);
        self.predicted_tokens += n(c.predicted_n);
        // One decode for the prompt batch, one per generated token.
        self.decodes += 1 + n(c.predicted_n);
        self.tokens_max = self.tokens_max.max(n(c.prompt_tokens + c.predicted_n));
    }

    /// The Prometheus text, with `processing` requests under way.
    pub fn text(&self, processing: usize) -> String {
        #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
        let (prompt_s, predicted_s) = (
            self.prompt_tokens as f64 * 0.0005,
            self.predicted_tokens as f64 * 0.005,
        );
        let per_second = |tokens: u64, s: f64| {
            #[allow(clippy::cast_precision_loss)]
            let t = tokens as f64;
            if s > 0.0 { t / s } else { 0.0 }
        };
        let busy_per_decode = if self.decodes > 0 { 1.0 } else { 0.0 };
        let rows: [(&str, &str, &str, String); 15] = [
            (
                "prompt_tokens_total",
                "counter",
                "Number of prompt tokens processed, excluding cached tokens",
                self.prompt_tokens.to_string(),
            ),
            (
                "prompt_tokens_cached_total",
                "counter",
                "Number of prompt tokens reused from the cache",
                self.cached_tokens.to_string(),
            ),
            (
                "prompt_seconds_total",
                "counter",
                "Total time spent processing prompts",
                prompt_s.to_string(),
            ),
            (
                "tokens_predicted_total",
                "counter",
                "Number of generation tokens processed",
                self.predicted_tokens.to_string(),
            ),
            (
                "tokens_predicted_seconds_total",
                "counter",
                "Total time spent generating tokens",
                predicted_s.to_string(),
            ),
            (
                "n_decode_total",
                "counter",
                "Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding",
                self.decodes.to_string(),
            ),
            (
                "n_tokens_max",
                "counter",
                "Largest observed sequence length (prompt + generation)",
                self.tokens_max.to_string(),
            ),
            (
                "spec_decode_num_draft_tokens_total",
                "counter",
                "Speculative: Total draft tokens generated",
                "0".into(),
            ),
            (
                "spec_decode_num_accepted_tokens_total",
                "counter",
                "Speculative: Total draft tokens accepted by the target model",
                "0".into(),
            ),
            (
                "spec_decode_num_drafts_total",
                "counter",
                "Speculative: Total speculative decoding verification steps",
                "0".into(),
            ),
            (
                "prompt_tokens_seconds",
                "gauge",
                "Average prompt throughput in tokens/s",
                per_second(self.prompt_tokens, prompt_s).to_string(),
            ),
            (
                "predicted_tokens_seconds",
                "gauge",
                "Average generation throughput in tokens/s",
                per_second(self.predicted_tokens, predicted_s).to_string(),
            ),
            (
                "requests_processing",
                "gauge",
                "Number of requests processing",
                processing.to_string(),
            ),
            (
                "requests_deferred",
                "gauge",
                "Number of requests deferred",
                "0".into(),
            ),
            (
                "n_busy_slots_per_decode",
                "gauge",
                "Average number of busy slots per llama_decode() call",
                busy_per_decode.to_string(),
            ),
        ];
        let mut out = String::new();
        for (name, kind, help, value) in rows {
            out.push_str(&format!(
                "# HELP llamacpp:{name} {help}\n# TYPE llamacpp:{name} {kind}\nllamacpp:{name} {value}\n"
            ));
        }
        out
    }
}
