# The whole workspace as one derivation: every role binary lands in $out/bin,
# which is what the NixOS module will point its units at.
{
  lib,
  rustPlatform,
  installShellFiles,
  stdenv,
}:
let
  cargoToml = lib.importTOML ../Cargo.toml;
in
rustPlatform.buildRustPackage {
  pname = "boxmaker";
  # One version for every crate, read from the workspace so it is written once.
  inherit (cargoToml.workspace.package) version;

  src = (import ./source.nix { inherit lib; }).package;

  # Vendoring from the lock file needs no hash to update when dependencies
  # change; a git dependency would need an entry in cargoLock.outputHashes.
  cargoLock.lockFile = ../Cargo.lock;

  # The check phase is cargoCheckHook: a plain `cargo test` over the workspace
  # (release profile, offline, no extra features). Tests that need root, a
  # network, PyPI or systemd are #[ignore]d or gated by an environment switch
  # in the crates themselves, because this sandbox has none of them.
  doCheck = true;

  nativeBuildInputs = [ installShellFiles ];

  # gatecheck is a workspace member so that `cargo test` covers it, but it is
  # the gate's house-rule checker, not part of the appliance.
  # bxctl's shell completions and man pages are generated from its own clap
  # definition by the binary just built (`bxctl completions`, `bxctl man`), so
  # they say what this very bxctl accepts; not when cross-compiling, where it
  # cannot run here.
  postInstall = ''
    rm -f "$out/bin/gatecheck"
  ''
  + lib.optionalString (stdenv.buildPlatform.canExecute stdenv.hostPlatform) ''
    installShellCompletion --cmd bxctl \
      --bash <("$out/bin/bxctl" completions bash) \
      --zsh <("$out/bin/bxctl" completions zsh) \
      --fish <("$out/bin/bxctl" completions fish)
    mkdir -p man
    "$out/bin/bxctl" man --dir man
    installManPage man/*.1
  '';

  meta = {
    description = "Personal AI agent appliance with one policy point for every tool call";
    license = with lib.licenses; [
      mit
      asl20
    ];
    # The roles rely on SO_PEERCRED, systemd socket activation and transient units.
    platforms = lib.platforms.linux;
  };
}
