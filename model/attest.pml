/*
 * model/attest.pml: the attested-context protocol of issue 17 (docs/attest-model.md), checked
 * by Debian's spin in the gate (tests/model/check.sh, gate step `model`).
 *
 * A compromised loopd, the model (any answer, any call), inferproxy as the witness, brokerd
 * (witness store, at-most-once use, prompt accounting failing closed, the grant, approvals),
 * the owner's channel and the owner. Content is abstracted as labels: a class (public,
 * private, secret) and an untrusted flag, joined (highest class, OR of the flag). Each step
 * names the code on main it stands for (docs/attest-model.md has the table).
 *
 * Properties (assertions, each marked in a comment on its line):
 *   P1a an http_fetch the owner did not approve carries only content whose label its grant
 *       allows (at or below max_taint, and in the grant's auto mode for that label);
 *   P1b a call the owner approved is the exact call the card showed (that completion, tool
 *       and arguments), shown at a label at least that of what it carries;
 *   P2  an approval is used at most once;
 *   P3  a witnessed call runs at most once.
 * Mutants (-D), each must give a counterexample to its property: LABEL_BY_SESSION (P1a),
 * ACCEPT_UNWITNESSED (P1a), WITNESS_FORCING (P1a), CARD_BY_SESSION (P1b), REUSE_APPROVAL
 * (P2), RUN_TWICE (P3).
 */

#ifndef NC
#define NC 3            /* completions inferproxy witnesses in one run (the bound) */
#endif
#define NS 2            /* session ids: one loopd has used, one fresh */

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

/* ---- tools and modes ------------------------------------------------------------------- */
#define NONE  0         /* an answer without a tool call */
#define READ  1         /* read_file: a grant with result_class secret, auto, max_taint secret */
#define FETCH 2         /* http_fetch, the egress: its result is public and untrusted */
#define AUTO  0         /* modes ranked as policy.rs `rank` does */
#define ASK   1
#define DENY  2

/* ---- messages of a prompt, as brokerd tells them apart by digest (a bit each) ---------- */
#define M_SYSTEM   1    /* the configured prompt head and the pinned core memory */
#define M_OWNER    2    /* an owner's message, handed over by a channel */
#define M_READ     4    /* a read_file result brokerd returned */
#define M_FETCH    8    /* an http_fetch result brokerd returned */
#define M_COMPOSED 16   /* anything else loopd writes: any content it holds */
#define M_ANSWER(c) (32 << (c))   /* the assistant message replaying answer c */

/* ---- the approval slot's states (today: approvals.rs `Approvals`) ---------------------- */
#define A_FREE     0
#define A_PENDING  1
#define A_APPROVED 2
#define A_REFUSED  3

/* The owner's grant for http_fetch, fixed for a run (init: one grant, or with EVERY_GRANT
 * each of the 18 combinations). */
byte g_mode;            /* AUTO or ASK */
byte g_max;             /* max_taint (a class) */
byte g_unt;             /* if_untrusted: AUTO (none), ASK or DENY */

/* brokerd's state */
byte taint[NS] = PRIV;  /* today: sessions.rs SessionState::new (private), Sessions::record */
byte hs = PRIV;         /* brokerd accounting/mod.rs `Accounting::sent`: the highest label brokerd ever sent loopd */
bit owner_registered;   /* brokerd chat_socket.rs, `Attested::owner`: the channel registered the owner message's digest */
bit returned_read;      /* brokerd returned a read_file result (it knows its digest) */
bit returned_fetch;     /* ... an http_fetch result */
bit w_rec[NC];          /* brokerd witness/store.rs `Store`: a record for completion c */
byte w_tool[NC];        /*   its call (one per answer, at index 0): tool */
byte w_args[NC];        /*   and arguments (abstracted to the label of what they carry) */
byte w_label[NC];       /*   the label of its prompt, as accounting gave it */
bit w_used[NC];         /*   (completion, 0) was used: witness/mod.rs `Witness::claim` marks it under the store's lock; durable in the
                         *   decision's audit line (`AuditRecord::witness`), rebuilt at start by store.rs `Store::mark_audited` */
byte a_state;           /* the approval waiting or last answered, and its card */
byte a_s;
byte a_c;
byte a_tool;
byte a_args;
byte a_label;

/* ghost state: what the properties look at, never read by brokerd */
byte g_runs[NC];        /* how often the witnessed call of completion c ran */
byte a_uses;            /* how often the approval in the slot let a call run */
byte g_truth[NC];       /* the label of what completion c's prompt carried */

/* what loopd holds: the messages it may put in a prompt, and the label of all it knows */
byte l_has = M_SYSTEM | M_COMPOSED;
byte l_know = PRIV;
byte next_c;            /* inferproxy: the next CompletionId it assigns */
bit i_busy;             /* inferproxy is between a prompt and its report */
bit b_busy;             /* brokerd is serving a request */

/* Scratch for steps that run whole (atomic), kept out of the state vector. */
hidden byte h_mask, h_truth, h_s, h_c, h_i, h_tool, h_args, h_b, k;

/* loopd's two sockets: a prompt (its digests as a set of message bits, the label of what it
 * carries, whether a field forces the answer), a tool request (session, completion, index,
 * tool, arguments) */
chan to_infer = [0] of { byte, byte, bit };
chan to_broker = [0] of { byte, byte, byte, byte, byte };

/* brokerd accounting/mod.rs `Accounting::label_of`: the label of a prompt from its message digests, each accounted
 * from what brokerd itself returned or registered; what it cannot account for gets the
 * highest label brokerd ever sent loopd (fail closed). Computed when the record is stored. */
inline account(mask, out) {
    out = PUB;
    if :: mask & M_SYSTEM -> out = JOIN(out, PRIV) :: else fi;
    if :: mask & M_OWNER -> out = JOIN(out, (owner_registered -> PRIV : hs)) :: else fi;
    if :: mask & M_READ -> out = JOIN(out, (returned_read -> SEC : hs)) :: else fi;
    if :: mask & M_FETCH -> out = JOIN(out, (returned_fetch -> UNTR : hs)) :: else fi;
    if :: mask & M_COMPOSED -> out = JOIN(out, hs) :: else fi;
    k = 0;
    do
    :: k < NC ->
        if :: mask & M_ANSWER(k) -> out = JOIN(out, (w_rec[k] -> w_label[k] : hs)) :: else fi;
        k++
    :: else -> break
    od
}

/* The label of what a prompt carries (ghost): what loopd composed carries all it knows, an
 * answer what its own prompt carried. */
inline truth_of(mask, out) {
    out = PUB;
    if :: mask & M_SYSTEM -> out = JOIN(out, PRIV) :: else fi;
    if :: mask & M_OWNER -> out = JOIN(out, PRIV) :: else fi;
    if :: mask & M_READ -> out = JOIN(out, SEC) :: else fi;
    if :: mask & M_FETCH -> out = JOIN(out, UNTR) :: else fi;
    if :: mask & M_COMPOSED -> out = JOIN(out, l_know) :: else fi;
    k = 0;
    do
    :: k < NC ->
        if :: mask & M_ANSWER(k) -> out = JOIN(out, g_truth[k]) :: else fi;
        k++
    :: else -> break
    od
}

/* The owner's channel (bxctl owner.rs `register`, gatewayd reply.rs, and for a job brokerd jobs_socket.rs from its own configuration, register the digest
 * of each owner message with brokerd when they hand it to loopd). */
proctype owner_channel() {
    owner_registered = 1;                       /* daemon owner.rs `register` on chat-broker/broker.sock */
    atomic { l_has = l_has | M_OWNER; l_know = JOIN(l_know, PRIV) }   /* handed to loopd */
}

/* The owner answering approvals (today: bxctl approve/deny or a Mattermost reaction reach
 * desk.rs Desk::answer, then approvals.rs Approvals::answer; the owner may say either). */
proctype owner() {
end:
    do
    :: a_state == A_PENDING ->
        if
        :: atomic { a_state = A_APPROVED; printf("owner: approves\n") }
        :: atomic { a_state = A_REFUSED; printf("owner: refuses\n") }
        fi
    od
}

/* A compromised loopd: sends inferproxy any prompt built from what it was sent, and brokerd
 * any tool request naming any session, completion, index, tool and arguments it can write.
 * It has no other socket (today: server.rs `handle` takes only `tool_request` on loop.sock;
 * witness_socket.rs `policy`: witness.sock admits inferproxy's peer alone). */
proctype loopd() {
end:
    do
    :: next_c < NC && !i_busy ->                /* POST /v1/chat/completions */
        atomic {
            h_mask = 0;
            h_b = 0;
            do                                  /* any of the messages it holds */
            :: h_b < 8 ->
                if
                :: l_has & (1 << h_b) -> if :: h_mask = h_mask | (1 << h_b) :: skip fi
                :: else
                fi;
                h_b++
            :: else -> break
            od;
            truth_of(h_mask, h_truth);
            /* with or without a field that forces the answer (a grammar, a JSON schema or
             * response format, logit bias, a template, other tools, a prefill) */
            if :: h_b = 0 :: h_b = 1 fi;
            printf("loopd: prompt of messages %d, carrying label %d, forcing %d\n",
                h_mask, h_truth, h_b);
            to_infer ! h_mask, h_truth, h_b
        }
    :: !b_busy ->                               /* tool_request on loop.sock */
        atomic {
            select(h_s : 0 .. NS - 1);
            select(h_c : 0 .. NC - 1);
            select(h_i : 0 .. 1);
            select(h_tool : READ .. FETCH);
            /* arguments carrying any content it holds */
            select(h_args : PUB .. SEC);
            if :: h_args > CLASS(l_know) -> h_args = CLASS(l_know) :: else fi;
            if :: l_know & UNTR -> h_args = h_args | UNTR :: skip fi;
            printf("loopd: tool_request session %d completion %d index %d tool %d arguments %d\n",
                h_s, h_c, h_i, h_tool, h_args);
            to_broker ! h_s, h_c, h_i, h_tool, h_args
        }
    od
}

/* inferproxy as the witness, and the model behind it. */
proctype inferproxy() {
    byte mask, c, tool;
end:
    do
#ifndef WITNESS_FORCING
    :: atomic {
        /* inferproxy forward.rs with proto attest/request.rs `witnessable`: a request that is not witnessable is refused with HTTP 400
         * (`unwitnessable_request`) and never forwarded */
        to_infer ? mask, h_truth, 1;
        printf("inferproxy: refused, unwitnessable_request\n");
        mask = 0
       }
#endif
    :: atomic {
        /* inferproxy witness.rs `Witnessing::start`: a witnessable request (fields on the fixed list, tools by
         * hash, no prefill) gets `x-boxmaker-completion`; forward.rs `exchange` sends it on */
#ifndef WITNESS_FORCING
        to_infer ? mask, h_truth, 0;
#else
        to_infer ? mask, h_truth, h_b;          /* mutant: witnessed all the same, and the */
        if :: h_b -> h_truth = JOIN(h_truth, l_know) :: else fi;   /* answer is loopd's */
#endif
        i_busy = 1;
        c = next_c;
        next_c++;
        g_truth[c] = h_truth;
        /* the model: any answer, no call or one call, an http_fetch carrying its prompt */
        if
        :: tool = NONE
        :: tool = READ
        :: tool = FETCH
        fi;
        /* today: forward.rs `relay`: the answer reaches loopd while a copy is parsed */
        l_has = l_has | M_ANSWER(c)
       };
        /* inferproxy witness.rs `report`: at [DONE], the witness_report; brokerd witness_socket.rs and `Attested::record` store it
         * (fsync) before witness_recorded, and only then is [DONE] forwarded */
        atomic {
            w_tool[c] = tool;
            w_args[c] = g_truth[c];
            account(mask, w_label[c]);
            w_rec[c] = 1;
            printf("inferproxy: completion %d answered with tool %d; its prompt accounted at %d\n",
                c, tool, w_label[c]);
            mask = 0; c = 0; tool = 0;
            i_busy = 0
        }
    od
}

/* brokerd serving one tool request at a time (today: server.rs `handle`, broker.rs
 * Broker::tool_request under the session's lock, `serve_call`). */
proctype brokerd() {
    byte s, c, tool, args, label;
    bit witnessed, approved, ran;
end:
    do
    :: atomic {
        to_broker ? s, c, h_i, tool, args;
        b_busy = 1;
        /* brokerd broker.rs `serve_call`, `Attested::claim` (witness/ lookup), before any grant (the wait
         * for the record is abstracted: a record not there now is never there in time) */
        if
        :: !w_rec[c] || h_i != 0 || w_tool[c] == NONE ->
#ifdef ACCEPT_UNWITNESSED
            label = JOIN(hs, taint[s])          /* mutant: runs anyway, fail closed */
#else
            goto denied                         /* not_witnessed */
#endif
        :: else ->
            if
            :: w_tool[c] != tool || w_args[c] != args ->
#ifndef ACCEPT_UNWITNESSED
                goto denied                     /* witness_mismatch */
#else
                skip                            /* mutant: believes the named completion */
#endif
            :: else
            fi;
            if
            :: w_used[c] ->
#ifndef RUN_TWICE
                goto denied                     /* already_run */
#else
                skip                            /* mutant: no at-most-once */
#endif
            :: else
            fi;
            w_used[c] = 1;                      /* `Witness::claim`: `Store::mark_used`; broker.rs `serve_call` fsyncs the audit line naming it before anything runs or is answered */
            witnessed = (w_tool[c] == tool && w_args[c] == args);
#ifdef LABEL_BY_SESSION
            label = taint[s]                    /* mutant: today's serve_call, session taint only */
#else
            label = JOIN(w_label[c], taint[s])  /* the prompt's label and the session's */
#endif
        fi;
        printf("brokerd: decides at label %d (witnessed %d)\n", label, witnessed);
        /* today: policy.rs decide_in (read_file's grant allows at any taint) */
        if
        :: tool == READ -> goto running
        :: else
        fi;
        if
        :: CLASS(label) > g_max -> goto denied  /* taint_too_high */
        :: else
        fi;
        h_b = g_mode;                           /* today: policy.rs effective_mode */
        if :: (label & UNTR) && g_unt > h_b -> h_b = g_unt :: else fi;
        if
        :: h_b == DENY -> goto denied           /* denied_by_grant */
        :: h_b == AUTO -> goto running
        :: else
        fi;
        /* today: broker.rs Broker::ask, desk.rs Desk::put, approvals.rs register */
#ifdef REUSE_APPROVAL
        if
        :: a_state == A_APPROVED && a_s == s && a_tool == tool && a_args == args &&
           a_label == label ->
            approved = 1;                       /* mutant: an equal card's approval again */
            goto running
        :: else
        fi;
#endif
        a_state = A_PENDING; a_s = s; a_c = c; a_tool = tool; a_args = args;
#ifdef CARD_BY_SESSION
        a_label = taint[s];                     /* mutant: the card shows the session's labels */
#else
        a_label = label;                        /* the card shows the call's decided labels */
#endif
        a_uses = 0;
        printf("brokerd: asks the owner, the card shows label %d\n", a_label)
       };
        /* today: desk.rs Desk::put: the waiter wakes on the owner's answer */
        atomic {
            a_state == A_APPROVED || a_state == A_REFUSED;
            if
            :: a_state == A_APPROVED -> approved = 1   /* today: policy.rs approve */
            :: else ->                          /* approval_refused */
                a_state = A_FREE; a_s = 0; a_c = 0; a_tool = 0; a_args = 0; a_label = 0;
                goto denied
            fi
        };
running:
        /* today: broker.rs Broker::run: the runner runs it, the session is raised by the
         * result's labels (Sessions::record) before the result leaves */
        atomic {
            printf("brokerd: runs tool %d in session %d carrying %d (approved %d)\n",
                tool, s, args, approved);
            ran = 1;
            if
            :: approved ->
                a_uses++;
                assert(a_uses <= 1);            /* P2 */
                assert(CARD_IS(c, tool, args));  /* P1b */
#ifndef REUSE_APPROVAL
                /* today: approvals.rs `answer` removes it (`remember`: AlreadyUsed) */
                a_state = A_FREE; a_s = 0; a_c = 0; a_tool = 0; a_args = 0; a_label = 0; a_uses = 0
#endif
            :: else
            fi;
            if
            :: witnessed ->
                g_runs[c]++;
                assert(g_runs[c] <= 1)          /* P3 */
            :: else
            fi;
            if
            :: tool == FETCH && !approved ->
                assert(GRANT_ALLOWS(args))      /* P1a */
            :: else
            fi;
            if
            :: tool == READ ->
                returned_read = 1;
                taint[s] = JOIN(taint[s], SEC); hs = JOIN(hs, SEC);
                l_has = l_has | M_READ; l_know = JOIN(l_know, SEC)
            :: else ->
                returned_fetch = 1;
                taint[s] = JOIN(taint[s], UNTR); hs = JOIN(hs, UNTR);
                l_has = l_has | M_FETCH; l_know = JOIN(l_know, UNTR)
            fi;
            goto done
        };
denied:                                         /* a typed DenyReason, audited, to loopd */
done:
        atomic {
            if :: !ran -> printf("brokerd: denied\n") :: else fi;
            ran = 0; s = 0; c = 0; tool = 0; args = 0; label = 0; witnessed = 0; approved = 0;
            b_busy = 0
        }
    od
}

init {
    atomic {
        /* the owner's grant for http_fetch (today: grants::Snapshot, policy.rs decide_in) */
#ifdef EVERY_GRANT
        if :: g_mode = AUTO :: g_mode = ASK fi;
        if :: g_max = PUB :: g_max = PRIV :: g_max = SEC fi;
        if :: g_unt = AUTO :: g_unt = ASK :: g_unt = DENY fi;
#else
        g_mode = AUTO; g_max = PRIV; g_unt = ASK;
#endif
        run owner_channel();
        run owner();
        run loopd();
        run inferproxy();
        run brokerd()
    }
}
