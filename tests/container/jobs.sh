# tests/container/jobs.sh: scenario (k), sourced by inside.sh; mirrors nix/tests/jobs.nix.
# shellcheck shell=bash
# The job units are the ones rendered from nix/units.nix (nix/jobs.nix) for two jobs,
# morning-brief and watch-inbox. A drop-in gives morning-brief's timer OnActiveSec=2s (its
# rendered schedule is in 2099), so the timer fires under real systemd; the run goes
# through brokerd, loopd and gatewayd on their jobs sockets, as the job's own DynamicUser,
# and its result lands in the job's thread in fake-mattermost. Then watch-inbox's user
# claims morning-brief, to brokerd and to gatewayd, and is refused by both; and watch-inbox's
# own run, with no grant of its own, fails its unit.

scenario "(k) scheduled jobs: a timer fires, the run has the job's grant only, its post lands"
for s in boxmaker-brokerd-jobs boxmaker-loopd-jobs boxmaker-gatewayd-jobs; do
    expect "$s.socket listens (FileDescriptorName=jobs)" \
        "systemctl is-active --quiet $s.socket && test \"\$(systemctl show -p FileDescriptorName --value $s.socket)\" = jobs"
done
expect "the job's timer is enabled (timers.target wants it), persistent" \
    "systemctl is-enabled --quiet boxmaker-job-morning-brief.timer && test \"\$(systemctl show -p Persistent --value boxmaker-job-morning-brief.timer)\" = yes"
refuse "the owner (in no jobs group) cannot reach the jobs socket" \
    "owner python3 -c \"\$PROBE\" unix:/run/boxmaker/jobs-broker/jobs.sock"
mkdir -p /run/systemd/system/boxmaker-job-morning-brief.timer.d
printf '[Timer]\nOnActiveSec=2s\n' >/run/systemd/system/boxmaker-job-morning-brief.timer.d/fire.conf
systemctl daemon-reload
systemctl restart boxmaker-job-morning-brief.timer
wait_for 60 "the timer fired: the job's thread holds the run's result, from the job's own grant" \
    "root=\$(mm root-post '**Job morning-brief**') && mm reply \$root 'Your todo list says: buy milk.'"
sed 's/^/    | /' "$OUT"
wait_for 10 "the run ended and its unit succeeded (a oneshot, inactive again)" \
    "test \"\$(systemctl show -p Result --value boxmaker-job-morning-brief.service)\" = success && test \"\$(systemctl show -p ExecMainStatus --value boxmaker-job-morning-brief.service)\" = 0 && ! active boxmaker-job-morning-brief.service && journal -u boxmaker-job-morning-brief.service | grep -q 'done, result delivered'"
expect "brokerd took the job from the runner's DynamicUser, and audited the run's start and end" \
    "grep -h job_run_started /var/lib/private/boxmaker/audit/*.jsonl | grep -q '(boxmaker-job-morning-brief)' && grep -h job_run_ended /var/lib/private/boxmaker/audit/*.jsonl | grep -q finished"
expect "the run's read was allowed by the job's grant (brief-notes), not the ordinary notes-read" \
    "grep -h '\"session\":\"job-morning-brief-' /var/lib/private/boxmaker/audit/*.jsonl | grep -q '\"grant\":\"brief-notes\"' && ! grep -h '\"session\":\"job-morning-brief-' /var/lib/private/boxmaker/audit/*.jsonl | grep -q '\"grant\":\"notes-read\"'"
refuse "one job's user (watch-inbox) cannot register as another job (morning-brief)" \
    "systemd-run --wait --pipe --quiet -p DynamicUser=yes -p User=boxmaker-job-watch-inbox -p SupplementaryGroups=boxmaker-jobs-broker python3 /opt/boxmaker-test/register.py morning-brief"
expect "the refusal was audited with the runner's user" \
    "grep -h job_run_refused /var/lib/private/boxmaker/audit/*.jsonl | grep -q 'the runner of job watch-inbox may not speak for job morning-brief'"
refuse "nor post in another job's thread through gatewayd" \
    "systemd-run --wait --pipe --quiet -p DynamicUser=yes -p User=boxmaker-job-watch-inbox -p SupplementaryGroups=boxmaker-jobs-gateway python3 /opt/boxmaker-test/register.py morning-brief result"
expect "gatewayd logged the refusal, and nothing forged reached the thread" \
    "journal -u boxmaker-gatewayd.service | grep -q 'result refused: the runner of job watch-inbox may not speak for job morning-brief' && ! mm reply \$(mm root-post '**Job morning-brief**') forged"
# watch-inbox has no grant of its own: the ordinary inbox-read does not apply to its run, so
# its read is denied and the run fails, and so does its unit.
refuse "a run whose call is denied fails its unit" "systemctl start boxmaker-job-watch-inbox.service"
expect "systemctl --failed shows it, and its journal says why" \
    "systemctl --failed --no-legend | grep -q boxmaker-job-watch-inbox.service && journal -u boxmaker-job-watch-inbox.service | grep -q 'failed (delivered)'"
expect "its post says the run failed and names the denied call" \
    "mm reply \$(mm root-post '**Job watch-inbox**') 'FAILED' && mm reply \$(mm root-post '**Job watch-inbox**') 'denied (no_grant'"
expect "the chain still verifies" "bxctl audit verify | grep -q 'audit chain good'"
