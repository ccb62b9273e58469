//! A granted host name through the real brokerd and tool: what the name resolves to is
//! filtered by the deciding grant's reach before the tool may connect. (Each range, the
//! IPv6 forms and the opt-in are tested against a stand-in resolver in brokerd and daemon;
//! here `localhost`, the one name every test host resolves, to 127.0.0.1.)

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

use proto::ToolResponse;
use stack::{Home, response, tool};

fn fetch_grant(hosts: &str, extra: &str) -> String {
    format!(
        "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \
         \"public\"\n\n[constraints]\nhosts = [{hosts}]\n{extra}\n"
    )
}

fn fetch(home: &Home, url: &str) -> ToolResponse {
    let frames = tool(
        &home.loop_sock(),
        "s-1",
        1,
        "http_fetch",
        &format!(r#"{{"url":"{url}"}}"#),
    );
    response(&frames).clone()
}

#[test]
fn a_name_that_resolves_to_this_host_is_refused_even_with_private_networks() {
    let home = Home::new("resolve-local", "");
    home.write_grant(
        "web",
        &fetch_grant("\"localhost\"", "private_networks = true"),
    );
    let _d = home.start();
    match fetch(&home, "http://localhost:9/") {
        ToolResponse::Failed { message, .. } => {
            assert!(
                message.starts_with("localhost resolves only to addresses a host name may not"),
                "{message}"
            );
            assert!(
                message.contains("127.0.0.1: 127.0.0.0/8 (loopback)"),
                "{message}"
            );
            assert!(!message.contains("private_networks"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    home.assert_audit_good();
}

#[test]
fn a_name_reaches_an_address_its_grant_lists_literally() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut first = String::new();
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        reader.read_line(&mut first).expect("request line");
        let body = "from the listed address";
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        first
    });
    let home = Home::new("resolve-literal", "");
    home.write_grant("web", &fetch_grant("\"localhost\", \"127.0.0.1\"", ""));
    let _d = home.start();
    match fetch(&home, &format!("http://localhost:{port}/x")) {
        ToolResponse::Result { content, .. } => assert_eq!(content, "from the listed address"),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.join().expect("server"), "GET /x HTTP/1.1\r\n");
    home.assert_audit_good();
}
