//! What a run came to, before it is delivered. Each line keeps apart what the runner says
//! from typed data (a call's number, its tool, the reason; the time limit) and what loopd
//! wrote (a detail): a note is labelled by brokerd from the answer it carries, so the note's
//! text holds no other text loopd wrote (docs/decisions.md X9); the Mattermost delivery and
//! the journal show it whole.

use proto::job::JobOutcome;

/// One line of a report: the runner's own words, and loopd's detail, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Said {
    pub own: String,
    pub detail: Option<String>,
    /// Whether the detail goes inside the closing parenthesis that ends `own`
    /// (`denied (no_grant: DETAIL)`) rather than after it.
    pub inside: bool,
}

impl Said {
    /// A line of the runner's own words only.
    pub fn own(text: impl Into<String>) -> Self {
        Self {
            own: text.into(),
            ..Self::default()
        }
    }

    /// The runner's words `own`, and loopd's `detail` after them.
    pub fn with(own: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            own: own.into(),
            detail: Some(detail.into()),
            inside: false,
        }
    }

    /// The whole line: `own: detail` (`own` without its final period), or with
    /// [`Said::inside`] `own` with `: detail` before its closing parenthesis.
    pub fn full(&self) -> String {
        match (&self.detail, self.own.strip_suffix(')')) {
            (Some(d), Some(open)) if self.inside => format!("{open}: {d})"),
            (Some(d), _) => format!("{}: {d}", self.own.trim_end_matches('.')),
            (None, _) => self.own.clone(),
        }
    }

    /// The line without loopd's words: they are in the journal.
    fn own_only(&self) -> String {
        match &self.detail {
            Some(_) => format!(
                "{} (the detail is in the journal).",
                self.own.trim_end_matches('.')
            ),
            None => self.own.clone(),
        }
    }
}

/// What the run came to, before it is delivered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The agent's answer (empty when it gave none).
    pub answer: String,
    /// Each call that was denied or not approved: `Call N (tool) ... (reason)`.
    pub denied: Vec<Said>,
    /// What failed besides: brokerd's refusal, the model, the time limit.
    pub failure: Option<Said>,
}

impl Report {
    pub fn outcome(&self) -> JobOutcome {
        if self.failure.is_none() && self.denied.is_empty() {
            JobOutcome::Done
        } else {
            JobOutcome::Failed
        }
    }

    /// The text delivered on Mattermost and logged: what failed first, then the calls not
    /// allowed, then the answer.
    pub fn text(&self) -> String {
        self.compose(Said::full)
    }

    /// The text a note holds: as [`Report::text`], but of what loopd wrote only the answer,
    /// which brokerd labels (the details stay in the journal).
    pub fn note_text(&self) -> String {
        self.compose(Said::own_only)
    }

    fn compose(&self, line: impl Fn(&Said) -> String) -> String {
        let mut text = String::new();
        if let Some(f) = &self.failure {
            text.push_str(&line(f));
            text.push_str("\n\n");
        }
        for d in &self.denied {
            text.push_str(&line(d));
            text.push('\n');
        }
        if !self.denied.is_empty() {
            text.push('\n');
        }
        text.push_str(&self.answer);
        text.trim_end().to_owned()
    }
}
