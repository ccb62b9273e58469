# What the scenarios with the Mattermost gateway add to ./node.nix (a helper, not a
# scenario): gatewayd following fake-mattermost (a systemd service on the node) as its
# default owner and channel, the bot's token where a secret manager would leave it, and curl
# for the test scripts to talk to the fake's REST API v4.
{ pkgs, ... }:
{
  imports = [ ./node.nix ];

  services.boxmaker = {
    fakeMattermost.enable = true;
    gateway = {
      enable = true;
      # server and allowedAddresses default to the fake's (fakeMattermost.enable).
      # fake-mattermost's default owner and channel.
      owners = [ "ownerkp1dx4oy7wqbsm3e9t6ua" ];
      channel = "chan4mqx8ekdy1bwpu7s9ront3";
      # Outside the store and root-only, where agenix or sops-nix would leave it.
      tokenFile = "/var/lib/boxmaker-secrets/mattermost-token";
    };
  };

  # The fake's token (test only: this rule puts it in the store; a real one never is).
  systemd.tmpfiles.rules = [
    "d /var/lib/boxmaker-secrets 0700 root root -"
    "f /var/lib/boxmaker-secrets/mattermost-token 0400 root root - bot-token"
  ];

  environment.systemPackages = [ pkgs.curl ];
}
