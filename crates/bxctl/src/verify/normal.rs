//! One form for both sides of a compared property (`props.rs`): the generated unit's
//! assignments, in unit-file syntax and order, and the live value as `systemctl show`
//! prints it (systemd 252 to 257). Lists come out sorted, so order never counts.

use super::props::Kind;

/// `values` in their one form: the generated assignments (`live` false), or the one value
/// `systemctl show` printed (`live` true).
pub fn normal(kind: Kind, values: &[String], live: bool) -> Vec<String> {
    let mut out = match kind {
        Kind::Word => last(values).map(|v| boolean(&v)).into_iter().collect(),
        Kind::Words => words(values, live, |w| vec![w.to_owned()]),
        Kind::Caps => words(values, live, |w| vec![w.to_ascii_uppercase()]),
        Kind::Binds => words(values, live, |w| vec![bind(w, live)]),
        Kind::Addrs => words(values, live, addresses),
        Kind::Env => {
            let mut all = Vec::new();
            for v in values {
                if v.is_empty() && !live {
                    all.clear();
                } else {
                    all.extend(split(v));
                }
            }
            all
        }
        // Commands run in order: not sorted.
        Kind::Exec if live => return values.iter().flat_map(|v| shown_commands(v)).collect(),
        Kind::Exec => {
            let mut all = Vec::new();
            for v in values {
                if v.is_empty() {
                    all.clear();
                } else {
                    all.push(command(v));
                }
            }
            return all;
        }
        Kind::Families if live => {
            let v = values.first().map(String::as_str).unwrap_or("");
            let (deny, rest) = match v.strip_prefix('~') {
                Some(r) => (true, r),
                None => (false, v),
            };
            let mut fams: Vec<String> = rest.split_whitespace().map(str::to_owned).collect();
            fams.sort();
            let mut out = vec![if deny { "deny" } else { "allow" }.to_owned()];
            out.extend(fams);
            return out;
        }
        Kind::Families => return families(values),
        Kind::Errno => last(values).map(|v| errno(&v)).into_iter().collect(),
        Kind::Listen if live => values.iter().filter(|v| !v.is_empty()).cloned().collect(),
        Kind::Listen => {
            let all: Vec<&str> = values.iter().map(String::as_str).collect();
            if all.is_empty() {
                Vec::new()
            } else {
                vec![all.join(" ")]
            }
        }
        Kind::Credentials if live => words(values, true, |w| vec![w.to_owned()]),
        Kind::Credentials => values.iter().filter(|v| !v.is_empty()).cloned().collect(),
        Kind::CredentialIds if live => words(values, true, |w| vec![w.to_owned()]),
        Kind::CredentialIds => values
            .iter()
            .filter(|v| !v.is_empty())
            .map(|v| v.split(':').next().unwrap_or_default().to_owned())
            .collect(),
    };
    out.sort();
    if kind == Kind::Addrs {
        out.dedup();
    }
    out
}

/// The value of the last assignment (an empty one resets to nothing).
fn last(values: &[String]) -> Option<String> {
    values.last().filter(|v| !v.is_empty()).cloned()
}

/// systemd's booleans as `systemctl show` prints them.
fn boolean(v: &str) -> String {
    match v {
        "true" | "on" | "yes" => "yes".to_owned(),
        "false" | "off" | "no" => "no".to_owned(),
        other => other.to_owned(),
    }
}

/// Words accumulated over assignments, an empty assignment clearing them; each word mapped.
fn words(values: &[String], live: bool, map: impl Fn(&str) -> Vec<String>) -> Vec<String> {
    let mut all = Vec::new();
    for v in values {
        if v.is_empty() && !live {
            all.clear();
            continue;
        }
        for w in v.split_whitespace() {
            all.extend(map(w));
        }
    }
    all
}

/// `-SRC`, `SRC:DST` and `SRC:DST:OPTS` as `systemctl show` prints a bind: always with its
/// destination and options (`rbind` unless said).
fn bind(w: &str, live: bool) -> String {
    if live {
        return w.to_owned();
    }
    let (dash, rest) = match w.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", w),
    };
    let mut parts = rest.splitn(3, ':');
    let src = parts.next().unwrap_or_default();
    let dst = parts.next().filter(|d| !d.is_empty()).unwrap_or(src);
    let opts = parts.next().unwrap_or("rbind");
    format!("{dash}{src}:{dst}:{opts}")
}

/// An address word as prefixes: the symbolic names systemd knows, a bare address as one
/// host.
fn addresses(w: &str) -> Vec<String> {
    let pair = |a: &str, b: &str| vec![a.to_owned(), b.to_owned()];
    match w {
        "any" => pair("0.0.0.0/0", "::/0"),
        "localhost" => pair("127.0.0.0/8", "::1/128"),
        "link-local" => pair("169.254.0.0/16", "fe80::/64"),
        "multicast" => pair("224.0.0.0/4", "ff00::/8"),
        a if a.contains('/') => vec![a.to_owned()],
        a if a.contains(':') => vec![format!("{a}/128")],
        a => vec![format!("{a}/32")],
    }
}

/// `RestrictAddressFamilies=` as systemd folds its assignments: the first non-empty one
/// decides allow (`AF_X`) or deny (`~AF_X`); a later one adds to the list in its own mode and
/// takes away in the other; an empty one resets. No assignment is a deny list of nothing.
fn families(values: &[String]) -> Vec<String> {
    let mut state: Option<(bool, Vec<String>)> = None;
    for v in values {
        if v.is_empty() {
            state = None;
            continue;
        }
        let (invert, rest) = match v.strip_prefix('~') {
            Some(r) => (true, r),
            None => (false, v.as_str()),
        };
        let (allow, set) = match state.take() {
            Some((allow, set)) if !set.is_empty() => (allow, set),
            _ => (!invert, Vec::new()),
        };
        let mut set = set;
        for w in rest.split_whitespace() {
            if allow != invert {
                if !set.iter().any(|s| s == w) {
                    set.push(w.to_owned());
                }
            } else {
                set.retain(|s| s != w);
            }
        }
        state = Some((allow, set));
    }
    let (allow, mut set) = state.unwrap_or((false, Vec::new()));
    set.sort();
    let mut out = vec![if allow { "allow" } else { "deny" }.to_owned()];
    out.extend(set);
    out
}

/// An errno name or number as its number (the ones a unit is likely to name).
fn errno(v: &str) -> String {
    let n = match v {
        "EPERM" => "1",
        "ENOENT" => "2",
        "EIO" => "5",
        "EACCES" => "13",
        "EINVAL" => "22",
        "ENOSYS" => "38",
        other => other,
    };
    n.to_owned()
}

/// Splits a command line or an `Environment=` value as systemd does: words separated by
/// white space, `"…"` and `'…'` quoting, `\` escaping the next character.
pub fn split(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote = None;
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(match n {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                }
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// A unit file's command (`ExecStart=` and the like) as `flags=F argv=A`: its prefixes as
/// the flags `systemctl show` names in `ExecStartEx=`, its argv joined by spaces.
fn command(v: &str) -> String {
    let mut rest = v.trim_start();
    let mut flags = Vec::new();
    let mut own_argv0 = false;
    loop {
        if let Some(r) = rest.strip_prefix("!!") {
            flags.push("ambient");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('!') {
            flags.push("no-setuid");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('-') {
            flags.push("ignore-failure");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('+') {
            flags.push("privileged");
            rest = r;
        } else if let Some(r) = rest.strip_prefix(':') {
            flags.push("no-env-expand");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('@') {
            own_argv0 = true;
            rest = r;
        } else {
            break;
        }
    }
    let mut argv = split(rest);
    if own_argv0 && !argv.is_empty() {
        argv.remove(0);
    }
    format!("flags={} argv={}", flags.join(" "), argv.join(" "))
}

/// The commands of one `ExecStartEx=` value: `{ path=P ; argv[]=A ; flags=F ; … }` each.
fn shown_commands(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = v;
    while let Some(i) = rest.find("argv[]=") {
        let after = &rest[i + "argv[]=".len()..];
        let Some(end) = after.find(" ; ") else {
            break;
        };
        let argv = &after[..end];
        let tail = &after[end + 3..];
        let flags = tail
            .strip_prefix("flags=")
            .and_then(|t| t.find(" ;").map(|e| &t[..e]))
            .unwrap_or("");
        out.push(format!("flags={flags} argv={argv}"));
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    /// Each kind reads the generated unit and systemd 252's `systemctl show` of it (as the
    /// container tier printed it) as one value, and a drop-in's change as another.
    #[test]
    fn generated_and_shown_values_meet() {
        let same = |kind, generated: &[&str], shown: &str| {
            assert_eq!(
                normal(kind, &s(generated), false),
                normal(kind, &s(&[shown]), true),
                "{kind:?} {generated:?} {shown}"
            );
        };
        same(Kind::Word, &["true"], "yes");
        same(Kind::Word, &["tmpfs"], "tmpfs");
        same(
            Kind::Words,
            &["boxmaker/sessions", "boxmaker/audit"],
            "boxmaker/audit boxmaker/sessions",
        );
        same(
            Kind::Words,
            &["-/run/dbus", "", "-/run/systemd/private"],
            "-/run/systemd/private",
        );
        same(Kind::Caps, &["CAP_DAC_READ_SEARCH"], "cap_dac_read_search");
        same(Kind::Caps, &[""], "");
        same(
            Kind::Binds,
            &["-/srv/notes", "/etc/boxmaker/config.toml"],
            "-/srv/notes:/srv/notes:rbind /etc/boxmaker/config.toml:/etc/boxmaker/config.toml:rbind",
        );
        same(Kind::Addrs, &["localhost"], "127.0.0.0/8 ::1/128");
        same(Kind::Addrs, &["any"], "0.0.0.0/0 ::/0");
        same(
            Kind::Addrs,
            &["203.0.113.7", "2001:db8::7"],
            "203.0.113.7/32 2001:db8::7/128",
        );
        same(Kind::Addrs, &["any", ""], "");
        same(
            Kind::Families,
            &["AF_UNIX AF_INET AF_INET6"],
            "AF_INET AF_INET6 AF_UNIX",
        );
        same(Kind::Families, &["AF_UNIX", "~AF_UNIX"], "");
        same(Kind::Errno, &["EPERM"], "1");
        same(
            Kind::Exec,
            &["/bin/sh -c \"kill -HUP ${MAINPID}\""],
            "{ path=/bin/sh ; argv[]=/bin/sh -c kill -HUP ${MAINPID} ; flags= ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }",
        );
        same(Kind::Exec, &[], "");
        same(Kind::Env, &[], "");
        same(Kind::Env, &["\"FOO=a b\" BAR=c"], "BAR=c \"FOO=a b\"");
        same(
            Kind::Listen,
            &["/run/boxmaker/loop-infer/infer.sock (Stream)"],
            "/run/boxmaker/loop-infer/infer.sock (Stream)",
        );
        // What the container tier's loosening drop-in made of loopd (systemd 252).
        let differ = |kind, generated: &[&str], shown: &str| {
            assert_ne!(
                normal(kind, &s(generated), false),
                normal(kind, &s(&[shown]), true),
                "{kind:?} {generated:?} {shown}"
            );
        };
        differ(
            Kind::Exec,
            &[],
            "{ path=/bin/true ; argv[]=/bin/true ; flags=privileged ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }",
        );
        differ(Kind::Env, &[], "LD_PRELOAD=/tmp/x.so \"FOO=a b\"");
        differ(
            Kind::Words,
            &["boxmaker-loop-broker", "boxmaker-loop-infer"],
            "boxmaker-loop-broker boxmaker-loop-infer boxmaker-admin",
        );
        differ(Kind::Addrs, &["localhost"], "0.0.0.0/0 ::/0");
        differ(Kind::Families, &["AF_UNIX"], "AF_NETLINK AF_UNIX");
        differ(Kind::Caps, &[""], "cap_sys_admin");
        differ(Kind::Errno, &["EPERM"], "13");
        differ(Kind::Word, &["0077"], "0022");
        differ(
            Kind::Binds,
            &[],
            "/var/lib/private/boxmaker/audit:/var/lib/private/boxmaker/audit:rbind",
        );
    }

    #[test]
    fn a_privileged_prefix_is_a_flag() {
        assert_eq!(command("+/bin/true"), "flags=privileged argv=/bin/true");
        assert_eq!(
            command("-!/bin/x a"),
            "flags=ignore-failure no-setuid argv=/bin/x a"
        );
        assert_eq!(split("a 'b c' \"d\\\"e\""), s(&["a", "b c", "d\"e"]));
    }
}
