# services.boxmaker.mcp: MCP servers whose tools the model may be offered (docs/mcp.md).
# Each becomes an `[[mcp]]` entry of the configuration; brokerd starts the server per call
# in a transient unit of its own (no network unless the deciding grant lists hosts), or, for
# a remote server (`url`), reaches it over Streamable HTTP from such a unit (its URL's host
# only, when the deciding grant lists that host; https:// with the webpki roots). A
# server's tools are offered only once pinned: by the owner (`bxctl mcp pin NAME`, written
# under brokerd's state directory) or by a pin file given here, which brokerd's
# `--check-config` reads at build time, so a pin that does not read fails the rebuild.
{ config, lib, ... }:
let
  inherit (lib) mkOption types;
  cfg = config.services.boxmaker;

  server = types.submodule {
    options = {
      command = mkOption {
        type = types.nullOr (types.nonEmptyListOf types.str);
        default = null;
        example = lib.literalExpression ''[ "''${pkgs.mcp-server-time}/bin/mcp-server-time" "--local-timezone" "UTC" ]'';
        description = "The server's program (a store path: the unit binds /nix/store read-only) and its arguments; it speaks MCP over stdio. Exactly one of command and url.";
      };
      url = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "http://192.168.1.20:8931/mcp";
        description = "A remote server's Streamable HTTP endpoint, http[s]://host[:port][/path] (https:// checked against the webpki roots alone). Each call's unit reaches this host alone, and only when the deciding grant lists it in constraints.hosts. Takes no env, secretEnv or binds. Exactly one of command and url.";
      };
      secretHeader = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "Authorization";
        description = "For a remote server (url): the HTTP header that carries the deciding grant's `secret` (a credential of services.boxmaker.secrets; its content as is, e.g. `Bearer …`), read from the unit's credentials.";
      };
      env = mkOption {
        type = types.attrsOf types.str;
        default = { };
        example = { TZ = "UTC"; };
        description = "Environment variables the server gets besides PATH.";
      };
      secretEnv = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "GITHUB_PERSONAL_ACCESS_TOKEN";
        description = "The variable that receives the deciding grant's `secret` (a credential of services.boxmaker.secrets), read from the unit's credentials; never written in a file or an argument.";
      };
      binds = mkOption {
        type = types.listOf types.str;
        default = [ ];
        description = "Paths the server's unit binds read-only besides /nix/store (its files outside the store).";
      };
      pin = mkOption {
        type = types.nullOr types.path;
        default = null;
        example = lib.literalExpression "./mcp/time.json";
        description = "The server's pin as a file (`bxctl mcp pin NAME --out FILE` writes one after showing you every tool). Unset: the pin `bxctl mcp pin NAME` writes under brokerd's state directory.";
      };
    };
  };
in
{
  options.services.boxmaker.mcp = mkOption {
    type = types.attrsOf server;
    default = { };
    example = lib.literalExpression ''
      {
        time = {
          command = [ "''${pkgs.mcp-server-time}/bin/mcp-server-time" ];
          pin = ./mcp/time.json;
        };
      }
    '';
    description = ''
      MCP servers (docs/mcp.md). The name (1 to 24 of a-z, 0-9 and -) names the tools the
      model is offered (`mcp__<name>__<tool>`) and the grants that allow them
      (`tool = "mcp:<name>/<tool>"` or `"mcp:<name>/*"`, in services.boxmaker.grants).
    '';
  };

  config = lib.mkIf (cfg.enable && cfg.mcp != { }) {
    assertions = lib.mapAttrsToList (name: s: {
      assertion = (s.command == null) != (s.url == null);
      message = "services.boxmaker.mcp.${name}: set exactly one of command (a server started per call) and url (a remote server over Streamable HTTP).";
    }) cfg.mcp;
    services.boxmaker.settings.mcp = lib.mapAttrsToList (
      name: s:
      {
        inherit name;
        inherit (s) env binds;
      }
      // lib.optionalAttrs (s.command != null) { inherit (s) command; }
      // lib.optionalAttrs (s.url != null) { inherit (s) url; }
      // lib.optionalAttrs (s.secretEnv != null) { secret_env = s.secretEnv; }
      // lib.optionalAttrs (s.secretHeader != null) { secret_header = s.secretHeader; }
      // lib.optionalAttrs (s.pin != null) { pin = "${s.pin}"; }
    ) cfg.mcp;
  };
}
