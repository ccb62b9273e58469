# The development shell: the same toolchain the package and the lint checks
# use, so a local `cargo clippy` reports what the gate reports.
{ pkgs }:
pkgs.mkShell {
  packages = with pkgs; [
    rustc
    cargo
    clippy
    rustfmt
    rust-analyzer
    cargo-deny
    nixfmt-tree
    nil
  ];

  # rust-analyzer needs the standard library's source, which rustc does not ship.
  env.RUST_SRC_PATH = "${pkgs.rustPlatform.rustLibSrc}";
}
