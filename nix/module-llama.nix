# services.boxmaker beside nixpkgs' services.llama-cpp on the same host (docs/model.md).
# When both are enabled: boxmaker's llamaUrl follows llama-cpp's host and port; llama-server
# is given the flags tool calls and witnessing rely on, appended to the owner's extraFlags so
# that they win (llama.cpp takes the last of a repeated flag): `--jinja` (tool calls go through
# the Jinja template), `--cache-reuse 0` and `--no-context-shift` (an answer depends on the
# prompt inferproxy witnessed alone, docs/threat-model.md); and a llama-cpp listening beyond
# loopback is refused, since inferproxy reaches it on loopback only and nothing else should.
{ config, lib, ... }:
let
  cfg = config.services.boxmaker;
  llama = config.services.llama-cpp;
  loopback =
    h: h == "localhost" || h == "::1" || h == "[::1]" || lib.hasPrefix "127." h;
in
{
  config = lib.mkIf (cfg.enable && llama.enable) {
    services.boxmaker.llamaUrl = lib.mkDefault (
      if lib.hasInfix ":" llama.host && !(lib.hasPrefix "[" llama.host) then
        "http://[${llama.host}]:${toString llama.port}"
      else
        "http://${llama.host}:${toString llama.port}"
    );
    services.llama-cpp.extraFlags = lib.mkAfter [
      "--jinja"
      "--cache-reuse"
      "0"
      "--no-context-shift"
    ];
    assertions = [
      {
        assertion = loopback llama.host;
        message =
          "services.llama-cpp.host is ${llama.host}: with services.boxmaker, llama-server must "
          + "listen on loopback only (127.0.0.1), where inferproxy reaches it.";
      }
      {
        assertion = !llama.openFirewall;
        message =
          "services.llama-cpp.openFirewall is set: with services.boxmaker, llama-server is "
          + "reached through inferproxy only; leave the firewall closed.";
      }
    ];
  };
}
