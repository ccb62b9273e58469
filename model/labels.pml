/*
 * model/labels.pml: the definitions model/attest.pml includes: the bounds, labels and their
 * join, the tools, the messages of a prompt, the approval slot's states, and the decided-at
 * label with what follows it, which the mutants change (docs/attest-model.md).
 */

#ifndef NC
#define NC 4            /* completions inferproxy witnesses in one run (the bound) */
#endif
#ifndef NS
#define NS 3            /* session ids: enough for a secret, a write and a fresh reader */
#endif

/* ---- labels: class in bits 0-1, untrusted in bit 2 (proto::DataClass, Labels) ---------- */
#define PUB   0
#define PRIV  1
#define SEC   2
#define UNTR  4
#define CLASS(l)   ((l) & 3)
#define JOIN(a, b) ((CLASS(a) > CLASS(b) -> CLASS(a) : CLASS(b)) | (((a) | (b)) & UNTR))
#define LEQ(a, b)  (CLASS(a) <= CLASS(b) && ((a) & UNTR) <= ((b) & UNTR))

/* P1a: the http_fetch grant lets content of label l out without the owner: l's class at or
 * below max_taint, and the mode for l (if_untrusted applied) auto */
#define GRANT_ALLOWS(l) (CLASS(l) <= g_max && g_mode == AUTO && (!((l) & UNTR) || g_unt == AUTO))
/* P1b: the card the owner approved shows this call, at a label at least what it carries */
#define CARD_IS(c, t, a) (a_c == (c) && a_tool == (t) && a_args == (a) && LEQ(a, a_label))

/* ---- tools (the grants are fixed: only http_fetch's is the owner's choice) -------------- */
#define READ  1         /* read_file: auto at any taint, results secret and trusted */
#define FETCH 2         /* http_fetch, the egress: the owner's grant, results public, untrusted */
#define WRITE 3         /* note_write (replace): auto at any taint, its result public, trusted */
#define NREAD 4         /* note_read: auto at any taint, its result at the note's labels */
#define AUTO  0         /* modes ranked as policy.rs `rank` does */
#define ASK   1
#define DENY  2

/* ---- messages of a prompt, as brokerd tells them apart by digest (a bit each) ---------- */
#define M_OWNER      1  /* an owner's message, handed over by a channel */
#define M_COMPOSED   2  /* anything else loopd writes: any content it holds */
#define M_ANSWER(c)  (4 << (c))         /* the assistant message replaying answer c */
#define M_PRODUCT(c) (4 << (NC + (c)))  /* the tool message of completion c's call: its
                                         * result or its denial (brokerd returned it) */
#define NBITS (2 + 2 * NC)
/* Every prompt holds the system message (the configured head and the pinned core memory,
 * private and trusted): every label in the model is at least private (docs/attest-model.md),
 * so a label is one of four, numbered 0-3 here, and a pair of them (what a prompt carries,
 * how brokerd accounts it) one of 16. */
#define IDX(l)       ((CLASS(l) - 1) | (((l) & UNTR) >> 1))
#define LAB(i)       ((((i) & 1) + 1) | (((i) & 2) << 1))
#define PAIR(t, l)   (IDX(t) * 4 + IDX(l))

/* ---- the approval slot's states (approvals.rs `Approvals`, desk.rs `Wake`) ------------- */
#define A_FREE     0
#define A_PENDING  1
#define A_APPROVED 2    /* the owner's approve reached the waiter */
#define A_REFUSED  3    /* the owner's denial reached it: approval_refused, in the owner's name */
#define A_CHANGED  4    /* the binding changed after the card was shown: approval_changed */
#define APPROVE    1    /* the owner's verdict (ghost) */
#define NAY        2

/* ---- the decided-at label and what follows it (mutants change these) ------------------- */
/* broker.rs `serve_call`, policy.rs `SessionView::raised`: the session's own label joined
 * with the accounted label of the prompt that produced the call */
#ifdef LABEL_BY_SESSION
#define DECIDED(s, c) (taint[s])                /* mutant: the session's own label only */
#else
#define DECIDED(s, c) JOIN(w_label[c], taint[s])
#endif
/* broker.rs `Broker::answer`: the binding recomputed when the owner answers */
#if defined(ANSWER_BY_SESSION) || defined(ANSWER_UNRAISED) || defined(CARD_BY_SESSION)
#define REBOUND(s, c) (taint[s])                /* mutants: the session's own label only */
#else
#define REBOUND(s, c) DECIDED(s, c)             /* its own now, joined with the prompt's */
#endif
/* approvals.rs `Approvals::answer`, `still` false: how the waiter is woken */
#ifdef ANSWER_BY_SESSION
#define CHANGED A_REFUSED                       /* mutant (today's main): a denial in the owner's name */
#else
#define CHANGED A_CHANGED
#endif
/* What the call produces is labelled from `decided`: its result (broker.rs `Broker::run`,
 * accounting `returned`), its denial's tool message (accounting `of_response`), and the
 * note it writes (notes/write.rs `commit`: joined with the session's own label) */
#ifdef PRODUCE_BY_SESSION
#define FROM(s, decided) (taint[s])             /* mutant: from the session's own label */
#else
#define FROM(s, decided) (decided)
#endif
#if defined(PRODUCE_BY_SESSION) || defined(NOTE_BY_SESSION)
#define NOTE_FROM(s, decided) (taint[s])        /* mutant: the note at the session's own label */
#else
#define NOTE_FROM(s, decided) JOIN(decided, taint[s])
#endif
/* sessions.rs `Sessions::raise` at the decision (the mutants that stand for today's main
 * leave it out: with it, the session's own label is already `decided`) */
#if defined(ANSWER_BY_SESSION) || defined(ANSWER_UNRAISED) || defined(CARD_BY_SESSION) || \
    defined(PRODUCE_BY_SESSION) || defined(NOTE_BY_SESSION)
#define RAISE(s, decided) skip
#else
#define RAISE(s, decided) taint[s] = JOIN(taint[s], decided)
#endif
