# (k) Scheduled jobs: a job's timer is installed and its oneshot unit runs as the job's own
# DynamicUser; the run gets the job's grant (and not the ordinary one), its result is
# posted inert in the job's own Mattermost thread, and the run's start and end are audited.
# A second job whose ask grant nobody answers fails its unit, and its post says which call
# was not approved.
{
  nodes.machine = {
    imports = [ ./lib/gateway-node.nix ];

    services.boxmaker = {
      # An approval expires fast here; each job's time limit stays above it.
      settings.broker.approval_ttl = "5s";
      jobs = {
        morning-brief = {
          # Never on its own during the test: it is started by hand below.
          schedule = "2099-01-01 00:00:00";
          prompt = "what is on my todo list?";
          grants.brief-notes = {
            tool = "read_file";
            mode = "auto";
            max_taint = "secret";
            constraints.paths = [ "/srv/notes" ];
          };
        };
        watch-inbox = {
          schedule = "2099-01-01 00:00:00";
          prompt = "what is in my inbox?";
          timeLimitSec = 120;
          grants.watch-inbox-read = {
            tool = "read_file";
            mode = "ask";
            max_taint = "secret";
            constraints.paths = [ "/srv/inbox" ];
          };
        };
      };
    };
  };

  testScript = ''
    import json

    BOT = "botkm8ecqs6ua9xrndy7w1ft5h"
    AUDIT = "/var/lib/private/boxmaker/audit/*.jsonl"

    def bot_posts():
        state = json.loads(machine.succeed("curl -sf http://127.0.0.1:8065/fake/state"))
        return [p for p in state["posts"] if p["user_id"] == BOT]

    def thread(job):
        roots = [p for p in bot_posts() if not p.get("root_id") and p["message"].startswith(f"**Job {job}**")]
        assert len(roots) == 1, roots
        return [p["message"] for p in bot_posts() if p.get("root_id") == roots[0]["id"]]

    machine.wait_for_unit("boxmaker-gatewayd.service")
    machine.wait_for_unit("boxmaker-fake-llama-server.service")

    with subtest("each job has its timer, persistent, and its jobs sockets"):
        machine.succeed("systemctl is-active --quiet boxmaker-job-morning-brief.timer")
        machine.succeed("systemctl show -p Persistent --value boxmaker-job-morning-brief.timer | grep -qx yes")
        for s in ["brokerd-jobs", "loopd-jobs", "gatewayd-jobs"]:
            machine.wait_for_unit(f"boxmaker-{s}.socket")
        machine.succeed("bxctl grants check | grep -q 'brief-notes: job morning-brief'")

    with subtest("a run uses the job's grant and delivers its result in the job's thread"):
        machine.succeed("systemctl start boxmaker-job-morning-brief.service")
        machine.succeed("systemctl show -p Result --value boxmaker-job-morning-brief | grep -qx success")
        posts = thread("morning-brief")
        assert len(posts) == 1 and "Your todo list says: buy milk." in posts[0], posts
        machine.succeed(f"grep -h job_run_started {AUDIT} | grep -q 'boxmaker-job-morning-brief'")
        machine.succeed(f"grep -h job_run_ended {AUDIT} | grep -q finished")
        machine.succeed(f"grep -h '\"grant\":\"brief-notes\"' {AUDIT} | grep -q job-morning-brief-")

    with subtest("the next run is independent and posts in the same thread"):
        machine.succeed("systemctl start boxmaker-job-morning-brief.service")
        assert len(thread("morning-brief")) == 2

    with subtest("an unanswered ask fails the unit, and the post names the call"):
        machine.fail("systemctl start boxmaker-job-watch-inbox.service")
        machine.succeed("systemctl --failed | grep -q boxmaker-job-watch-inbox")
        posts = thread("watch-inbox")
        assert "not approved" in posts[0] and "approval_expired" in posts[0], posts
        machine.succeed(f"grep -h approval_expired {AUDIT} | grep -q job-watch-inbox-")
        machine.succeed("bxctl audit verify | grep -q 'audit chain good'")
  '';
}
