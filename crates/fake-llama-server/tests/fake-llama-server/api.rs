//! Error and endpoint shapes (`api`): errors, `/props`.

use fake_llama_server::api::{ApiError, props};
use fake_llama_server::script::ServerSettings;
use serde_json::json;

#[test]
fn errors_have_the_real_shape() {
    assert_eq!(
        ApiError::loading().to_json(),
        json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})
    );
    assert_eq!(
        ApiError::not_found().to_json()["error"]["type"],
        "not_found_error"
    );
    assert_eq!(ApiError::new(500, "x").kind, "server_error");
    assert_eq!(ApiError::new(429, "x").kind, "invalid_request_error");
    let exceed = ApiError::exceeds_context(5010, 4096).to_json();
    assert_eq!(exceed["error"]["n_prompt_tokens"], 5010);
    assert_eq!(exceed["error"]["type"], "exceed_context_size_error");
}

#[test]
fn props_report_the_scripted_context_and_slots() {
    let settings = ServerSettings {
        n_ctx: 1234,
        total_slots: 3,
        ..ServerSettings::default()
    };
    let props = props(&settings);
    assert_eq!(props["default_generation_settings"]["n_ctx"], 1234);
    assert_eq!(props["total_slots"], 3);
    assert_eq!(props["chat_template_caps"]["supports_tools"], true);
}
