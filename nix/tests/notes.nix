# (j) The agent's notes: a note the agent writes is brokerd's file, in brokerd's own
# StateDirectory, labelled by brokerd with the writing session's label; a note edited on
# disk reads as secret and untrusted until the owner relabels it (audited). The container
# tier runs the same on Debian (tests/container/notes.sh), with a compromised note tool too.
{
  nodes.machine = {
    imports = [ ./lib/node.nix ];
    services.boxmaker.grants =
      let
        note = tool: {
          inherit tool;
          mode = "auto";
          max_taint = "secret";
          result_class = "public";
          untrusted = false;
        };
      in
      {
        note-write = note "note_write";
        note-read = note "note_read";
        note-list = note "note_list";
      };
  };

  testScript = ''
    notes = "/var/lib/private/boxmaker/notes"
    machine.wait_for_unit("boxmaker-loopd.socket")
    machine.wait_for_unit("boxmaker-fake-llama-server.service")
    machine.wait_for_open_port(8080)

    with subtest("a note the agent writes is brokerd's file, labelled by brokerd"):
        machine.succeed("runuser -u owner -- bxctl chat -m 'remember the pears'")
        machine.succeed(f"test \"$(cat {notes}/groceries.md)\" = 'two pears'")
        machine.succeed(f"test \"$(stat -c %U {notes}/groceries.md)\" = boxmaker-brokerd")
        out = machine.succeed("runuser -u owner -- bxctl notes list")
        assert "groceries.md  private  last written" in out, out

    with subtest("a note edited on disk reads as secret and untrusted until relabelled"):
        machine.succeed(f"echo 'three pears' > {notes}/groceries.md")
        out = machine.succeed("runuser -u owner -- bxctl notes list")
        assert "groceries.md  secret, untrusted  (NOT as brokerd wrote it" in out, out
        machine.succeed("runuser -u owner -- bxctl notes relabel groceries --class private")
        out = machine.succeed("runuser -u owner -- bxctl notes show groceries")
        assert "groceries.md  private  relabelled" in out, out
        assert "| three pears" in out, out
        machine.succeed("bxctl audit show | grep -q 'note groceries relabelled by'")

    with subtest("the notes are brokerd's alone"):
        machine.fail(f"runuser -u owner -- ls {notes}")
  '';
}
