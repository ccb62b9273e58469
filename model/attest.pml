/*
 * model/attest.pml: attested context (issue 17) and the labels that follow a call's decision
 * (issue 23), checked by Debian's spin in the gate (tests/model/check.sh, gate step `model`).
 *
 * A compromised loopd, the model (any answer, any call), inferproxy as the witness, brokerd
 * (witness store, at-most-once use, prompt accounting failing closed, the grant, approvals,
 * the labels of what a call produces: its result, its note, its denial), the owner's channel
 * and the owner. Content is abstracted as labels: a class (public, private, secret) and an
 * untrusted flag, joined (highest class, OR of the flag). Each step names the code it stands
 * for (docs/attest-model.md has the table).
 *
 * Properties (assertions, each marked in a comment on its line):
 *   P1a an http_fetch the owner did not approve carries only content whose label its grant
 *       allows (at or below max_taint, and in the grant's auto mode for that label);
 *   P1b a call the owner approved is the exact call the card showed (that completion, tool
 *       and arguments), shown at a label at least that of what it carries;
 *   P2  an approval is used at most once;
 *   P3  a witnessed call runs at most once;
 *   P4  the owner's approve of the card it saw, with the binding the card showed, runs the
 *       call: it is never turned into a denial unless the labels rose after it was shown;
 *   P5  a denial is recorded as the owner's only if the owner denied.
 * Mutants (-D), each must give a counterexample to its property: LABEL_BY_SESSION (P1a),
 * ACCEPT_UNWITNESSED (P1a or P1b), WITNESS_FORCING (P1a), PRODUCE_BY_SESSION (P1a),
 * NOTE_BY_SESSION (P1a), CARD_BY_SESSION (P1b), REUSE_APPROVAL (P2), RUN_TWICE (P3),
 * ANSWER_UNRAISED (P4), ANSWER_BY_SESSION (P5). The definitions they change, with the
 * bounds and the labels, are in model/labels.pml.
 */

#include "labels.pml"

/* The owner's grant for http_fetch, fixed for a run (init: one grant, or with EVERY_GRANT
 * each of the 18 combinations). */
byte g_mode;            /* AUTO or ASK */
byte g_max;             /* max_taint (a class) */
byte g_unt;             /* if_untrusted: AUTO (none), ASK or DENY */

/* brokerd's state */
byte taint[NS] = PRIV;  /* sessions.rs SessionState::new (private), Sessions::raise, ::record */
byte hs = PRIV;         /* accounting/mod.rs `Accounting::sent`: the highest label brokerd ever sent loopd */
bit owner_registered;   /* chat_socket.rs, `Attested::owner`: the channel registered the owner message's digest */
bit w_rec[NC];          /* witness/store.rs `Store`: a record for completion c */
byte w_tool[NC];        /*   its call (one per answer, at index 0): tool */
byte w_args[NC];        /*   and arguments: all its prompt carried (abstracted to that label) */
byte w_label[NC];       /*   the label of its prompt, as accounting gave it */
bit w_used[NC];         /*   (completion, 0) was used: witness/mod.rs `Witness::claim` marks it under the store's lock; durable in the
                         *   decision's audit line (`AuditRecord::witness`), rebuilt at start by store.rs `Store::mark_audited` */
byte p_label[NC];       /* accounting `returned`: the label of the tool message brokerd returned for c's call */
byte n_label;           /* notes/write.rs `commit`: the note's record (one note, replaced by each write) */
byte a_state;           /* the approval waiting or last answered, and its card */
byte a_s;
byte a_c;
byte a_tool;
byte a_args;
byte a_label;           /* the labels the card shows: its binding (`ApprovalCard::bound`) */

/* ghost state: what the properties look at, never read by brokerd */
byte g_runs[NC];        /* how often the witnessed call of completion c ran */
byte a_uses;            /* how often the approval in the slot let a call run */
byte a_own;             /* the session's own label when the card was shown */
byte g_said;            /* the owner's verdict on the card */
byte p_truth[NC];       /* the label of what c's tool message carries */
byte n_truth;           /* ... of what the note holds */

/* what loopd holds: the messages it may put in a prompt, and the label of all it knows */
short l_has = M_COMPOSED;
byte l_know = PRIV;
byte next_c;            /* inferproxy: the next CompletionId it assigns */
bit b_busy;             /* brokerd is serving a request */

/* Scratch for steps that run whole (atomic), kept out of the state vector. */
hidden byte h_truth, h_s, h_c, h_i, h_tool, h_args, h_b, h_label, h_t, h_l, k;
hidden int h_set, h_add;

/* loopd's two sockets: a prompt (the label of what it carries, the label brokerd accounts
 * it at, whether a field forces the answer), a tool request (session, completion, index,
 * tool, arguments) */
chan to_infer = [0] of { byte, byte, bit };
chan to_broker = [0] of { byte, byte, byte, byte, byte };

/* Message bit b of what loopd holds: the label of what it carries (h_t, a ghost) and the
 * label brokerd accounts it at (h_l: accounting/mod.rs `Accounting::label_of`, each digest
 * from what brokerd itself returned or registered; what it cannot account for gets the
 * highest label brokerd ever sent loopd, fail closed). What loopd composed carries all it
 * knows, an answer what its own prompt carried, a tool message what brokerd put in it. */
inline pair_of(b) {
    if
    :: b == 0 -> h_t = PRIV; h_l = (owner_registered -> PRIV : hs)
    :: b == 1 -> h_t = l_know; h_l = hs
    :: b >= 2 && b < 2 + NC -> h_t = w_args[b - 2]; h_l = (w_rec[b - 2] -> w_label[b - 2] : hs)
    :: b >= 2 + NC -> h_t = p_truth[b - 2 - NC]; h_l = p_label[b - 2 - NC]
    fi
}

/* The prompts loopd can make now: the system message and any of the messages it holds.
 * What a prompt carries and how brokerd accounts it are both joins over its messages, so
 * the pairs its prompts can have are the joins of its messages' pairs: h_set, a bit per
 * pair (one prompt each stands for all the prompts with that pair). */
inline prompts() {
    h_set = 1 << PAIR(PRIV, PRIV);
    h_b = 0;
    do
    :: h_b < NBITS ->
        if
        :: l_has & (1 << h_b) ->
            pair_of(h_b);
            h_add = 0;
            k = 0;
            do
            :: k < 16 ->
                if
                :: h_set & (1 << k) ->
                    h_add = h_add | (1 << PAIR(JOIN(LAB(k / 4), h_t), JOIN(LAB(k % 4), h_l)))
                :: else
                fi;
                k++
            :: else -> break
            od;
            h_set = h_set | h_add
        :: else
        fi;
        h_b++
    :: else -> break
    od
}

/* The owner's channel (bxctl owner.rs `register`, gatewayd reply.rs, and for a job brokerd jobs_socket.rs from its own configuration, register the digest
 * of each owner message with brokerd when they hand it to loopd). */
proctype owner_channel() {
    owner_registered = 1;                       /* daemon owner.rs `register` on chat-broker/broker.sock */
    atomic { l_has = l_has | M_OWNER; l_know = JOIN(l_know, PRIV) }   /* handed to loopd */
}

/* The owner answering the card it was shown (bxctl approve/deny or a Mattermost reaction:
 * the answer names the shown card's binding, so `claimed` equals the card's), then
 * broker.rs `Broker::answer` recomputes the binding and approvals.rs `Approvals::answer`
 * checks it (`still`) and wakes the waiter. */
proctype owner() {
end:
    do
    :: a_state == A_PENDING ->
        atomic {
            if :: g_said = APPROVE :: g_said = NAY fi;
            a_state = (REBOUND(a_s, a_c) != a_label -> CHANGED :
                       (g_said == APPROVE -> A_APPROVED : A_REFUSED));
            printf("owner: says %d (1 approve, 2 deny); Broker::answer binds %d, the card %d\n",
                g_said, REBOUND(a_s, a_c), a_label)
        }
    od
}

/* Any one of the bits set in `set` (never empty), one way each. */
inline pick(set, out) {
    out = 0;
    do
    :: set & (1 << out) -> break
    :: (set >> (out + 1)) != 0 -> out++
    od
}

/* A compromised loopd: sends inferproxy any prompt built from what it was sent, and brokerd
 * any tool request naming any session, completion, index, tool and arguments it can write.
 * It has no other socket (server.rs `handle` takes only `tool_request` on loop.sock;
 * witness_socket.rs `policy`: witness.sock admits inferproxy's peer alone). */
proctype loopd() {
end:
    do
    :: next_c < NC ->                           /* POST /v1/chat/completions */
        atomic {
            prompts();
            pick(h_set, h_b);                   /* any of them */
            h_truth = LAB(h_b / 4); h_label = LAB(h_b % 4);
            /* with or without a field that forces the answer (a grammar, a JSON schema or
             * response format, logit bias, a template, other tools, a prefill) */
            if :: h_b = 0 :: h_b = 1 fi;
            printf("loopd: a prompt carrying label %d, accounted at %d, forcing %d\n",
                h_truth, h_label, h_b);
            to_infer ! h_truth, h_label, h_b
        }
    :: !b_busy ->                               /* tool_request on loop.sock */
        atomic {
            /* any session id (brokerd keeps nothing of a session but its label, and nothing
             * else names one while loopd can send: of the ids at one label, the lowest
             * stands for each; they are sorted by label, canon below) */
            h_set = 1;
            h_b = 1;
            do
            :: h_b < NS -> h_set = h_set | (taint[h_b] != taint[h_b - 1] -> 1 << h_b : 0); h_b++
            :: else -> break
            od;
            pick(h_set, h_s);
            /* a call inferproxy witnessed (completion c, index 0), or one it never did (index
             * 1, or a completion not answered yet: brokerd treats each alike, so one stands
             * for all) */
            if
            :: next_c > 0 -> select(h_c : 0 .. next_c - 1); h_i = 0
            :: h_c = 0; h_i = 1
            fi;
            select(h_tool : READ .. NREAD);
            /* arguments carrying any content it holds */
            select(h_args : PRIV .. CLASS(l_know));
            if :: l_know & UNTR -> h_args = h_args | UNTR :: skip fi;
            printf("loopd: tool_request session %d completion %d index %d tool %d arguments %d\n",
                h_s, h_c, h_i, h_tool, h_args);
            to_broker ! h_s, h_c, h_i, h_tool, h_args
        }
    od
}

/* inferproxy as the witness, and the model behind it. The answer's relay to loopd and its
 * record are one step: meanwhile loopd can make no prompt (one completion at a time), a
 * request naming the completion is not_witnessed, and what brokerd does for earlier calls
 * commutes with it (docs/attest-model.md, "What it abstracts away"). */
proctype inferproxy() {
    byte c;
end:
    do
#ifndef WITNESS_FORCING
    :: atomic {
        /* inferproxy forward.rs with proto attest/request.rs `witnessable`: a request that is not witnessable is refused with HTTP 400
         * (`unwitnessable_request`) and never forwarded */
        to_infer ? h_truth, h_label, 1;
        printf("inferproxy: refused, unwitnessable_request\n")
       }
#endif
    :: atomic {
        /* inferproxy witness.rs `Witnessing::start`: a witnessable request (fields on the fixed list, tools by
         * hash, no prefill) gets `x-boxmaker-completion`; forward.rs `exchange` sends it on */
#ifndef WITNESS_FORCING
        to_infer ? h_truth, h_label, 0;
#else
        to_infer ? h_truth, h_label, h_b;       /* mutant: witnessed all the same, and the */
        if :: h_b -> h_truth = JOIN(h_truth, l_know) :: else fi;   /* answer is loopd's */
#endif
        c = next_c;
        next_c++;
        w_args[c] = h_truth;
        /* the model: any answer with one call (an answer without one is an answer whose
         * call loopd never sends), the call carrying all its prompt carried */
        select(h_tool : READ .. NREAD);
        w_tool[c] = h_tool;
        /* forward.rs `relay`: the answer reaches loopd while a copy is parsed; witness.rs
         * `report`: at [DONE], the witness_report; brokerd witness_socket.rs and
         * `Attested::record` store it (fsync) before witness_recorded, and only then is
         * [DONE] forwarded */
        l_has = l_has | M_ANSWER(c);
        w_label[c] = h_label;                   /* accounted when the record is stored */
        w_rec[c] = 1;
        printf("inferproxy: completion %d answered with tool %d; its prompt accounted at %d\n",
            c, h_tool, w_label[c]);
        c = 0
       }
    od
}

/* broker.rs Broker::run: the runner runs the call; its result is labelled by the grant's
 * result labels joined with `decided`, the session is raised by them (Sessions::record) and
 * accounting `returned` records them, before the result leaves. (Inlined in brokerd: its
 * locals.) */
inline run_call() {
    printf("brokerd: runs tool %d in session %d carrying %d (approved %d)\n",
        tool, s, args, approved);
    if
    :: approved ->
        a_uses++;
        assert(a_uses <= 1);                    /* P2 */
        assert(CARD_IS(c, tool, args));         /* P1b */
#ifndef REUSE_APPROVAL
        /* approvals.rs `answer` removes it (`remember`: AlreadyUsed) */
        free_card()
#else
        skip
#endif
    :: else
    fi;
    if
    :: witnessed ->
        g_runs[c]++;
        assert(g_runs[c] <= 1)                  /* P3 */
    :: else
    fi;
    if
    :: tool == FETCH && !approved ->
        assert(GRANT_ALLOWS(args))              /* P1a */
    :: else
    fi;
    /* what a tool returns may echo its arguments (a path, a note's name, a server's echo) */
    if
    :: tool == READ -> h_label = SEC; h_truth = JOIN(SEC, args)
    :: tool == FETCH -> h_label = UNTR; h_truth = JOIN(UNTR, args)
    :: tool == WRITE ->                         /* notes/write.rs `commit` (run.rs `finish`) */
        n_label = NOTE_FROM(s, label); n_truth = args;
        h_label = PUB; h_truth = args
    :: tool == NREAD -> h_label = n_label; h_truth = JOIN(n_truth, args)
    fi;
    h_label = JOIN(h_label, FROM(s, label));
    taint[s] = JOIN(taint[s], h_label);
    hs = JOIN(hs, h_label);
    l_know = JOIN(l_know, h_truth);
    if
    :: claimed -> p_label[c] = h_label; p_truth[c] = h_truth; l_has = l_has | M_PRODUCT(c)
    :: else                                     /* not accounted: loopd's word (fail closed) */
    fi
}

/* A typed DenyReason, audited, to loopd. After the claim, the denial's tool message (its
 * detail echoes the arguments) is accounted (`returned`, `of_response`) at `decided`. */
inline deny_call() {
    if
    :: claimed ->
        p_label[c] = FROM(s, label); p_truth[c] = JOIN(PRIV, args);
        l_has = l_has | M_PRODUCT(c); hs = JOIN(hs, p_label[c]);
        printf("brokerd: denied, the tool message accounted at %d\n", p_label[c])
    :: else -> printf("brokerd: denied before the claim (not accounted)\n")
    fi
}

inline free_card() {
    a_state = A_FREE; a_s = 0; a_c = 0; a_tool = 0; a_args = 0; a_label = 0; a_uses = 0;
    a_own = 0; g_said = 0
}

/* Session ids are interchangeable (brokerd keeps nothing of a session but its label, and
 * no property names one): after each request the sessions are sorted by label, the
 * approval slot's session renamed with them, so that states that differ only in the names
 * of sessions are one (a symmetry reduction). */
inline canon() {
    h_b = 1;
    do
    :: h_b < NS && IDX(taint[h_b - 1]) > IDX(taint[h_b]) ->
        k = taint[h_b]; taint[h_b] = taint[h_b - 1]; taint[h_b - 1] = k;
        a_s = (a_state == A_FREE -> a_s : (a_s == h_b -> h_b - 1 : (a_s == h_b - 1 -> h_b : a_s)));
        h_b = 1
    :: h_b < NS && IDX(taint[h_b - 1]) <= IDX(taint[h_b]) -> h_b++
    :: else -> break
    od
}

/* brokerd serving one tool request at a time (server.rs `handle`, broker.rs
 * Broker::tool_request under the session's lock, held through the owner's answer,
 * `serve_call`). A request is one step, or two when it waits for the owner. */
proctype brokerd() {
    byte s, c, tool, args, label;
    bit claimed, witnessed, approved;
end:
    do
    :: atomic {
        to_broker ? s, c, h_i, tool, args;
        b_busy = 1;
        /* broker.rs `serve_call`, `Attested::claim` (witness/ lookup), before any grant (the wait
         * for the record is abstracted: a record not there now is never there in time) */
        if
        :: !w_rec[c] || h_i != 0 ->
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
            w_used[c] = 1;                      /* `Witness::claim`: `Store::mark_used`; `serve_call` fsyncs the audit line naming it before anything runs or is answered */
            claimed = 1;                        /* what it returns is accounted to (c, 0) */
            witnessed = (w_tool[c] == tool && w_args[c] == args);
            label = DECIDED(s, c)
        fi;
        RAISE(s, label);                        /* `Sessions::raise`, durable, before anything else */
        printf("brokerd: decides at label %d (witnessed %d); session %d is at %d\n",
            label, witnessed, s, taint[s]);
        /* policy.rs decide_in (the grants of read_file and the note tools allow at any taint) */
        if
        :: tool != FETCH -> goto running
        :: else
        fi;
        if
        :: CLASS(label) > g_max -> goto denied  /* taint_too_high */
        :: else
        fi;
        h_b = g_mode;                           /* policy.rs effective_mode */
        if :: (label & UNTR) && g_unt > h_b -> h_b = g_unt :: else fi;
        if
        :: h_b == DENY -> goto denied           /* denied_by_grant */
        :: h_b == AUTO -> goto running
        :: else
        fi;
        /* broker.rs Broker::ask, desk.rs Desk::put, approvals.rs register */
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
        a_label = taint[s];                     /* mutant: the card shows the session's own labels */
#else
        a_label = label;                        /* the card is built from `decided` */
#endif
        a_own = taint[s];
        a_uses = 0;
        printf("brokerd: asks the owner, the card shows label %d\n", a_label);
        /* desk.rs Desk::put: the waiter blocks here (the step ends; brokerd serves nothing
         * else meanwhile) and wakes on the owner's answer */
        a_state > A_PENDING;
        assert(a_state != A_REFUSED || g_said == NAY);  /* P5 */
        assert(a_state != A_CHANGED || g_said == NAY || taint[a_s] != a_own);  /* P4 */
        if
        :: a_state == A_APPROVED -> approved = 1   /* policy.rs approve */
        :: else ->                              /* approval_refused (the owner's), approval_changed */
            printf("brokerd: denied after the answer (3 the owner's, 4 changed): %d\n", a_state);
            free_card();
            goto denied
        fi;
running:
        run_call();
        goto done;
denied:
        deny_call();
done:
        s = 0; c = 0; tool = 0; args = 0; label = 0; claimed = 0; witnessed = 0; approved = 0;
        canon();
        b_busy = 0
       }
    od
}

init {
    atomic {
        /* the owner's grant for http_fetch (grants::Snapshot, policy.rs decide_in) */
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
