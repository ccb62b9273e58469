//! Turn tests that need loopd's private items.

use super::*;

#[test]
fn a_turn_in_a_session_not_on_disk_is_no_session_naming_it() {
    let home = std::env::temp_dir().join(format!("bx-turn-none-{}", std::process::id()));
    let text = format!(
        "home = {home:?}\n[sockets]\nloop_broker = \"/run/x/l\"\nadmin_broker = \"/run/x/a\"\n\
         [peers]\nloopd = {{ uid = 1 }}\nadmin = {{ uid = 2 }}\n"
    );
    let config = Config::parse(&home.join("config.toml"), &text).expect("config");
    let looper = Looper::new(config).expect("looper");
    let id = SessionId::new("s-gone").expect("id");
    let send = ChatSend {
        session: Some(id.clone()),
        text: "hello".into(),
        cancel_on_hangup: false,
    };
    match looper.turn(&send, &Cancel::default(), &mut |_| {}) {
        Err(e @ TurnError::NoSession(_)) => {
            assert!(matches!(&e, TurnError::NoSession(s) if *s == id));
            assert_eq!(e.to_string(), "no session s-gone");
        }
        other => panic!("not NoSession: {other:?}"),
    }
    assert!(
        looper.store().ids().expect("ids").is_empty(),
        "nothing written"
    );
    let _ = std::fs::remove_dir_all(&home);
}
