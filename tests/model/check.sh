#!/usr/bin/env bash
# tests/model/check.sh: the `model` gate step. Checks the Promela model of attested context
# and of the labels that follow a call's decision (model/attest.pml with model/labels.pml,
# docs/attest-model.md) with Debian's spin: pan compiled with gcc, an exhaustive safety
# search (assertions and invalid end states) per run.
#   honest          the protocol at its main bound (4 completions, 3 session ids, the grant
#                   auto, max_taint private, if_untrusted ask): no error, and a complete search
#   every-grant     the protocol at 3 completions under each of the 18 http_fetch grants
#                   (mode x max_taint x if_untrusted): no error, and a complete search
#   each mutant     spin must find a counterexample, and it must violate the property the
#                   mutant breaks (the failed assertion's line carries that property's mark):
#                   LABEL_BY_SESSION P1a, ACCEPT_UNWITNESSED P1a or P1b, WITNESS_FORCING P1a,
#                   PRODUCE_BY_SESSION P1a, NOTE_BY_SESSION P1a, CARD_BY_SESSION P1b,
#                   REUSE_APPROVAL P2, RUN_TWICE P3, ANSWER_UNRAISED P4, ANSWER_BY_SESSION P5
# A search cut short (depth or memory limit), or a statement it never reached, fails the
# step for the honest runs. Prints each run's state count and time. Needs: spin, gcc.
#
# Usage: tests/model/check.sh [MODEL]   (default model/attest.pml; another path checks a
# scratch copy of model/, as when a property is deleted to see the step fail: every .pml
# file beside MODEL is copied with it, for its #include)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

model=$(realpath "${1:-model/attest.pml}")
work=$(mktemp -d /tmp/boxmaker-model.XXXXXX)
honest=
trap '[[ -z $honest ]] || kill "$honest" 2>/dev/null; rm -rf "$work"' EXIT
# pan's limits: the depth reached is about 2,400 steps, the honest run stores about 0.8
# million states in about 210 MB. Past either limit pan says so, and the honest runs fail.
DEPTH=20000
MEMLIM_MB=3072

now_ms() {
    local t=${EPOCHREALTIME/[.,]/}
    echo $((10#$t / 1000))
}

# run NAME EXPECT CC [SPIN_OPTION...]: EXPECT is `none` or the mark (P1a, P1b, P2 to P5) of
# the property the counterexample must violate, or two marks joined by `|`: either. CC is
# gcc's optimisation for pan: -O2 for a long search, -O0 where compiling costs more than the
# search (a mutant's counterexample within a few thousand states).
run() {
    local name=$1 expect=$2 cc=$3 start took states errors line text unreached
    shift 3
    local dir=$work/$name
    mkdir -p "$dir"
    cp "$(dirname "$model")"/*.pml "$dir/"
    cp "$model" "$dir/attest.pml"
    start=$(now_ms)
    (
        cd "$dir"
        spin "$@" -a attest.pml >spin.out 2>&1 || { cat spin.out >&2; exit 1; }
        gcc "$cc" -w -DSAFETY -DMEMLIM=$MEMLIM_MB -o pan pan.c
        ./pan -m$DEPTH >pan.out 2>&1 || true
    ) || { echo "model: $name: spin or gcc failed" >&2; return 1; }
    took=$(($(now_ms) - start))
    states=$(awk '/states, stored/ { print $1; exit }' "$dir/pan.out")
    errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$dir/pan.out" | head -n1)
    printf 'model: %-20s %10s states %4d.%01ds  errors %s\n' "$name" "${states:-?}" \
        $((took / 1000)) $((took % 1000 / 100)) "${errors:-?}"
    if [[ -z $errors || -z $states ]]; then
        echo "model: $name: pan reported no result:" >&2
        cat "$dir/pan.out" >&2
        return 1
    fi
    if [[ $expect == none ]]; then
        if ((errors != 0)); then
            echo "model: $name: the protocol has an error; spin's trail:" >&2
            (cd "$dir" && spin "$@" -t attest.pml |
                grep -E '^ *(loopd|inferproxy|brokerd|owner):|Error|assertion') >&2 || true
            return 1
        elif grep -Eq 'max search depth too small|Search not completed|MEMLIM|out of memory' \
            "$dir/pan.out"; then
            echo "model: $name: the search was incomplete (a depth or memory limit):" >&2
            grep -E 'depth|MEMLIM|memory|not completed' "$dir/pan.out" >&2
            return 1
        fi
        # Every statement is reached (but the ends of the processes' endless loops): no part
        # of the protocol is left out of the search.
        unreached=$(grep -E '^[[:space:]]+[a-z]+\.pml:[0-9]+, state [0-9]+, ' "$dir/pan.out" |
            grep -v '"-end-"' || true)
        if [[ -n $unreached ]]; then
            echo "model: $name: statements never reached:" >&2
            echo "$unreached" >&2
            return 1
        fi
        return 0
    fi
    if ((errors == 0)); then
        echo "model: $name: spin found no counterexample: the properties miss this mutant" >&2
        return 1
    fi
    # The first assertion the trail violates must be the mutant's property.
    line=$(cd "$dir" && spin "$@" -t attest.pml 2>&1 |
        sed -n 's/^spin: attest\.pml:\([0-9][0-9]*\), Error: assertion violated.*/\1/p' |
        head -n1)
    text=$( [[ -n $line ]] && sed -n "${line}p" "$dir/attest.pml" || true)
    local mark found=
    for mark in ${expect//|/ }; do
        [[ $text == *"/* $mark */"* ]] && found=$mark
    done
    if [[ -z $found ]]; then
        echo "model: $name: the counterexample violates line ${line:-?}, not $expect:" >&2
        echo "  ${text#"${text%%[![:space:]]*}"}" >&2
        return 1
    fi
    echo "model: $name: counterexample violates $found at attest.pml:$line"
}

total_start=$(now_ms)
failed=0
# The honest run is the longest: it takes one core while the others take the second.
run honest none -O2 >"$work/honest.log" 2>&1 &
honest=$!
runs=(honest)
while read -r name expect cc options; do
    runs+=("$name")
    # shellcheck disable=SC2086 # options are words
    run "$name" "$expect" "$cc" $options >"$work/$name.log" 2>&1 || failed=1
done <<'RUNS'
every-grant none -O2 -DNC=3 -DEVERY_GRANT
LABEL_BY_SESSION P1a -O0 -DLABEL_BY_SESSION
ACCEPT_UNWITNESSED P1a|P1b -O0 -DACCEPT_UNWITNESSED
WITNESS_FORCING P1a -O0 -DWITNESS_FORCING
PRODUCE_BY_SESSION P1a -O2 -DPRODUCE_BY_SESSION
NOTE_BY_SESSION P1a -O2 -DNOTE_BY_SESSION
CARD_BY_SESSION P1b -O0 -DCARD_BY_SESSION
REUSE_APPROVAL P2 -O2 -DREUSE_APPROVAL
RUN_TWICE P3 -O0 -DRUN_TWICE
ANSWER_UNRAISED P4 -O0 -DANSWER_UNRAISED
ANSWER_BY_SESSION P5 -O0 -DANSWER_BY_SESSION
RUNS
wait "$honest" || failed=1
honest=
for name in "${runs[@]}"; do cat "$work/$name.log"; done
total=$(($(now_ms) - total_start))
printf 'model: all runs %d.%01ds\n' $((total / 1000)) $((total % 1000 / 100))
if ((failed)); then
    echo "model: FAILED" >&2
    exit 1
fi
echo "model: the protocol holds P1a, P1b and P2 to P5, and every mutant breaks its property"
