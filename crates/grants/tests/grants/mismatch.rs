//! A call a grant does not cover: each refusal's kind and what it is about, and its text
//! byte for byte, as the model and the audit read it in a denial's detail
//! (`grant <id>: <why>`).

use grants::constraints::{
    Host, InvalidGrant, LabelError, Mismatch, PathError, Subject, UrlError, check, normalize_url,
};
use proto::Mode::{Auto, Deny};

use crate::constraints::{consult, fetch, grant, list, read};
use crate::invalid::s;

#[test]
fn a_refused_url_names_itself_and_why() {
    for (raw, want, text) in [
        (
            "example.org/x",
            UrlError::NotUrl {
                url: s("example.org/x"),
                error: url::ParseError::RelativeUrlWithoutBase,
            },
            r#""example.org/x" is not a URL: relative URL without a base"#,
        ),
        (
            "ftp://a.org/",
            UrlError::Scheme {
                url: s("ftp://a.org/"),
                scheme: s("ftp"),
            },
            r#""ftp://a.org/": only http and https URLs can be fetched, not ftp:"#,
        ),
        (
            "https://u:p@a.org/",
            UrlError::UserInfo {
                url: s("https://u:p@a.org/"),
            },
            "\"https://u:p@a.org/\" carries a user name or password (user:pass@); such URLs \
             are refused",
        ),
        (
            "https://a..org/",
            UrlError::Label {
                url: s("https://a..org/"),
                error: LabelError::EmptyLabel,
            },
            "\"https://a..org/\": the name has an empty label (`..`, or a leading or second \
             trailing dot)",
        ),
        (
            "https://a.org/docs/..%2fsecret",
            UrlError::HiddenDotSegment {
                url: s("https://a.org/docs/..%2fsecret"),
            },
            "\"https://a.org/docs/..%2fsecret\": the path hides a `.` or `..` segment behind an \
             escaped slash (%2F, %5C) or a `;`, which a server may resolve out of the granted \
             place",
        ),
    ] {
        let err = normalize_url(raw).expect_err(raw);
        assert_eq!(err, want);
        assert_eq!(err.to_string(), text);
        // A call with that URL is covered by no grant, and says the same.
        let g = grant("http_fetch", Deny, &[], &[], &[]);
        assert_eq!(check(&g, &fetch(raw)), Err(Mismatch::Url(want)));
    }
}

#[test]
fn a_call_outside_a_grant_says_what_did_not_match() {
    let files = grant("read_file", Auto, &["/srv", "/home/o"], &[], &["*.md"]);
    let web = grant(
        "http_fetch",
        Auto,
        &[],
        &["a.org", "*.b.org"],
        &["https://a.org/d/*"],
    );
    let ask = grant("consult", Auto, &[], &[], &["Summarise:*"]);
    for (g, args, want, text) in [
        (
            &files,
            list("/srv"),
            Mismatch::OtherTool {
                grant: s("read_file"),
                call: s("list_dir"),
            },
            s("the grant is for read_file, the call is to list_dir"),
        ),
        (
            &files,
            read("srv/a.md"),
            Mismatch::Path(PathError::NotAbsolute {
                path: s("srv/a.md"),
            }),
            s(r#""srv/a.md" is not an absolute path (it must start with /)"#),
        ),
        (
            &files,
            read("//etc/./a.md"),
            Mismatch::NotUnder {
                path: s("/etc/a.md"),
                roots: vec![s("/srv"), s("/home/o")],
            },
            s(r#""/etc/a.md" is not under any of /srv, /home/o"#),
        ),
        (
            &files,
            read("/srv/a.key"),
            Mismatch::NoPattern {
                subject: Subject::Path,
                value: s("/srv/a.key"),
                patterns: vec![s("*.md")],
            },
            s(r#""/srv/a.key" matches none of the patterns "*.md""#),
        ),
        (
            &web,
            fetch("https://EVIL.com./x#f"),
            Mismatch::HostNotListed {
                host: Host::Name(s("evil.com")),
                url: s("https://evil.com/x"),
                hosts: vec![s("a.org"), s("*.b.org")],
            },
            s(r#"the host evil.com of "https://evil.com/x" is not any of a.org, *.b.org"#),
        ),
        (
            &web,
            fetch("https://a.org/e"),
            Mismatch::NoPattern {
                subject: Subject::Url,
                value: s("https://a.org/e"),
                patterns: vec![s("https://a.org/d/*")],
            },
            s(r#""https://a.org/e" matches none of the patterns "https://a.org/d/*""#),
        ),
        (
            &ask,
            consult("a secret prompt"),
            Mismatch::NoPattern {
                subject: Subject::Prompt,
                value: s("a secret prompt"),
                patterns: vec![s("Summarise:*")],
            },
            s(r#"the prompt matches none of the patterns "Summarise:*""#),
        ),
    ] {
        let err = check(g, &args).expect_err(&text);
        assert_eq!(err, want);
        assert_eq!(err.to_string(), text);
    }
}

#[test]
fn each_refusal_keeps_its_cause() {
    // The cause is kept, typed, in the refusal; its text is printed, not chained
    // (docs/decisions.md F16).
    let err =
        check(&grant("read_file", Auto, &["/a/"], &[], &[]), &read("/a/b")).expect_err("invalid");
    let path = match &err {
        Mismatch::Invalid(InvalidGrant::Path { error, .. }) => Some(error),
        _ => None,
    };
    assert_eq!(
        path,
        Some(&PathError::NotNormal {
            entry: s("/a/"),
            normal: s("/a")
        }),
        "{err}"
    );
    let err = normalize_url("https://a!.org/").expect_err("label");
    let label = match &err {
        UrlError::Label { error, .. } => Some(error),
        _ => None,
    };
    assert_eq!(label, Some(&LabelError::Char { found: '!' }));
}
