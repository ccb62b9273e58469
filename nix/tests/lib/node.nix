# The machine every scenario starts from (a helper, not a scenario: checks.nix reads only
# the regular files in nix/tests/). The boxmaker module itself comes from checks.nix's
# nodeModules, exactly as a host imports it.
{ pkgs, ... }:
{
  services.boxmaker = {
    enable = true;
    # Every model answer comes from ./fake-script.toml; the stack never knows.
    fakeLlama.enable = true;
    fakeLlama.script = ./fake-script.toml;
    grants = {
      # The owner's notes: read without asking; only the owner writes them. Not once the
      # session has read something untrusted (the broker-killed scenario relies on it).
      notes-read = {
        tool = "read_file";
        mode = "auto";
        if_untrusted = "deny";
        max_taint = "secret";
        result_class = "private";
        untrusted = false;
        constraints.paths = [ "/srv/notes" ];
      };
      # Listing them asks the owner first.
      notes-list = {
        tool = "list_dir";
        mode = "ask";
        max_taint = "secret";
        untrusted = false;
        constraints.paths = [ "/srv/notes" ];
      };
      # Mail from strangers: readable, but it taints the session as untrusted.
      inbox-read = {
        tool = "read_file";
        mode = "auto";
        max_taint = "secret";
        result_class = "private";
        untrusted = true;
        constraints.paths = [ "/srv/inbox" ];
      };
    };
  };

  users.users.owner = {
    isNormalUser = true;
    extraGroups = [
      "boxmaker-admin"
      "boxmaker-chat"
    ];
  };
  # In no boxmaker group: the socket directories must keep it out.
  users.users.stranger.isNormalUser = true;

  systemd.tmpfiles.rules = [
    "d /srv/notes 0755 root root -"
    "f /srv/notes/todo.md 0644 root root - buy milk, ship boxmaker"
    "d /srv/inbox 0755 root root -"
    "f /srv/inbox/mail.txt 0644 root root - hello from outside"
  ];

  # Probes for the isolation scenario (socat speaks to Unix and TCP sockets).
  environment.systemPackages = [
    pkgs.socat
    pkgs.util-linux
  ];

  virtualisation.memorySize = 1024;
}
