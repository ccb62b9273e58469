# (l) The indexer under the module: boxmaker-indexer.path starts the oneshot
# boxmaker-indexer.service when brokerd writes a note's label record, the note becomes
# searchable with brokerd's label, and index/ is the indexer's own (its DynamicUser), 0644
# files in a 0755 directory, which brokerd sees read-only. The container tier runs the same
# on Debian (tests/container/indexer.sh), with a stand-in that proves what the unit cannot
# reach (docs/decisions.md M13).
{
  nodes.machine = {
    imports = [ ./lib/node.nix ];
    services.boxmaker.grants.note-write = {
      tool = "note_write";
      mode = "auto";
      max_taint = "secret";
      result_class = "public";
      untrusted = false;
    };
  };

  testScript = ''
    index = "/var/lib/private/boxmaker/index"
    machine.wait_for_unit("boxmaker-loopd.socket")
    machine.wait_for_unit("boxmaker-indexer.path")
    machine.wait_for_unit("boxmaker-fake-llama-server.service")
    machine.wait_for_open_port(8080)

    with subtest("a note's label record starts the indexer, and the note is found with its label"):
        machine.succeed("runuser -u owner -- bxctl chat -m 'remember the pears'")
        machine.wait_until_succeeds(
            "runuser -u owner -- bxctl search pears | grep -qxF 'groceries  private'", timeout=60
        )
        machine.wait_until_succeeds(
            "test \"$(systemctl show -p Result --value boxmaker-indexer.service)\" = success"
            + " && ! systemctl is-active --quiet boxmaker-indexer.service",
            timeout=60,
        )

    with subtest("index/ is the indexer's, published for other users, read-only for brokerd"):
        uid = machine.succeed(f"stat -c %u {index}").strip()
        brokerd = machine.succeed("id -u boxmaker-brokerd").strip()
        assert uid != brokerd, f"index/ is brokerd's uid {brokerd}"
        machine.succeed(f"test \"$(stat -c %a {index})\" = 755")
        machine.succeed(f"for f in {index}/*.sqlite; do test \"$(stat -c '%u %a' $f)\" = '{uid} 644' || exit 1; done")
        pid = machine.succeed("systemctl show -p MainPID --value boxmaker-brokerd.service").strip()
        machine.fail(f"nsenter -t {pid} -m touch {index}/probe")
        machine.fail(f"runuser -u owner -- ls {index}")
  '';
}
