//! The consult model's answer as a source (docs/decisions.md V46): with a consult model
//! configured, for each consult grant of an ordinary session whose results are private or
//! secret, a `consult` whose prompt ends in `c=TOKEN` (`sink::ASK`), which the sink, standing
//! for the consult model, answers with `BXWRITE-TOKEN` (as it answers an untrusted-write
//! chain's); once the answer holds it, a send of it to every sink but a consult (each host of
//! a fetch grant, an MCP tool or a program listing hosts; no look-alikes). The consult's
//! request carries `TOKEN` only, never `BXWRITE-TOKEN`, so that at the sink means the answer
//! went out. Never to a consult: every consult grant asks the one configured model, which
//! is where the answer came from (and brokerd decides both calls by the same grant, a call
//! the analysis never pairs with itself). Never from a grant whose results are public
//! (public data going out is no flow).

use super::chains::{CONSULT, Chain, Source, Target, canary, send_subject};
use super::rewrite::Rewritten;
use super::sink::{ASK, WRITE};

/// Adds a chain from each consult grant's answer to each of `targets` but its own and the
/// look-alikes, numbered after `chains`; none without a consult model (`consult`).
pub fn plan(
    r: &Rewritten,
    targets: &[Target],
    port: u16,
    nonce: &str,
    consult: bool,
    chains: &mut Vec<Chain>,
) {
    if !consult {
        return;
    }
    let sources = r.grants.iter().filter(|(_, g)| {
        g.tool == "consult"
            && g.mode != proto::Mode::Deny
            && g.result_class != proto::DataClass::Public
    });
    for _ in sources {
        // Never to a consult: every consult grant's model is the one configured, so that
        // is back where the answer came from (and the analysis pairs no call with itself).
        for sink in targets
            .iter()
            .filter(|t| t.lookalike.is_none() && t.tool != "consult")
        {
            let n = chains.len() + 1;
            let token = canary(nonce, n);
            let answer = format!("{WRITE}{token}");
            chains.push(Chain {
                n,
                source: Source {
                    tool: "consult",
                    owner: CONSULT.into(),
                    path: format!("{ASK}{token}"),
                },
                sink: sink.clone(),
                url: send_subject(sink, port, &answer),
                canary: answer,
                note: None,
                restart: None,
                smuggle: None,
                write_mode: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `c` starts from the consult model's answer and sends it out (an
    /// untrusted-write chain's consult is a source too, but its sink writes).
    fn is(c: &Chain) -> bool {
        c.source.tool == "consult" && !matches!(c.sink.tool, "write_file" | "edit_file")
    }

    const CONSULT_GRANT: &str = "tool = \"consult\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
        secret = \"consult-key\"\n";

    fn shadow(consults: &[(&str, &str)]) -> Rewritten {
        let mut r = super::super::tests::rewritten();
        for (id, text) in consults {
            r.grants
                .insert((*id).into(), super::super::tests::grant(text));
        }
        r
    }

    /// Each consult grant's answer goes to every fetch host, never to a consult (the one
    /// model it came from); the canary is the sink's answer to the prompt's token, in no request
    /// of the consult; a public grant is no source, and without a consult model there is
    /// none.
    #[test]
    fn the_consult_answer_is_a_source_to_every_other_sink() {
        let public = format!("{CONSULT_GRANT}result_class = \"public\"\n");
        let r = shadow(&[
            ("ask", CONSULT_GRANT),
            ("ask2", CONSULT_GRANT),
            ("pub", &public),
        ]);
        let plan = super::super::chains::plan(&r, 4321, "n0", true);
        let asked: Vec<&Chain> = plan.iter().filter(|c| is(c)).collect();
        let pairs: Vec<(&str, &str)> = asked
            .iter()
            .map(|c| (c.sink.grant.as_str(), c.sink.entry.as_str()))
            .collect();
        // ask: web's two hosts; ask2 likewise; pub is none.
        assert_eq!(
            pairs,
            [
                ("web", "api.example.org"),
                ("web", "*.wikipedia.org"),
                ("web", "api.example.org"),
                ("web", "*.wikipedia.org"),
            ]
        );
        for c in &asked {
            let token = canary("n0", c.n);
            assert_eq!(c.source.path, format!("{ASK}{token}"));
            assert_eq!(c.canary, format!("{WRITE}{token}"));
            assert!(!c.source.path.contains(&c.canary));
            assert!(c.url.contains(&c.canary), "{}", c.url);
        }
        let last = plan.iter().filter(|c| !is(c)).map(|c| c.n).max();
        assert!(asked.iter().all(|c| Some(c.n) > last));
        assert!(
            !super::super::chains::plan(&r, 4321, "n0", false)
                .iter()
                .any(is)
        );
    }
}
