# The most exposure `systemd-analyze security` may give each boxmaker service, in tenths (as
# its `--threshold` counts): the one source of these numbers. nix/expected.nix writes each
# service's limit into units.json, which the module installs as /etc/boxmaker/units.json
# (`bxctl verify` holds the live units to it) and tests/units/check.sh reads to score the
# rendered units. Builtins only (BRIEF decision 2).
{
  # A service without outbound network (PrivateNetwork=yes): the class of harmonia's
  # socket-activated cache, which scores 0.2 (docs/nixos.md).
  withoutNetwork = 10;
  # A service in the host's network namespace (PrivateNetwork=no): inferproxy to llama-server
  # on loopback, the test peers, `bxctl verify` reading llama-server's /props.
  withNetwork = 20;
  # Services held closer than their class: gatewayd, just above its loosest figure (1.3,
  # without an address allow list).
  units = {
    boxmaker-gatewayd = 14;
  };
}
