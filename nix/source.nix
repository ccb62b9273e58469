# Which files each derivation sees. Editing docs/, nix/ or the README must not
# rebuild the workspace, so nothing outside the Cargo inputs is copied in.
#
# In a flake only files git tracks exist: a new crate is invisible to every
# derivation here until it is `git add`ed.
{ lib }:
let
  fs = lib.fileset;
  root = ../.;

  cargoInputs = fs.unions [
    ../Cargo.toml
    ../Cargo.lock
    ../crates
    # tests/ holds the stack tests and gatecheck; maybeMissing keeps evaluation
    # working in a checkout (or a git tree) where it is still empty.
    (fs.maybeMissing ../tests)
  ];

  # Lint settings change what clippy and rustfmt report but not what the
  # package builds, so only the lint checks see them. None exist yet.
  lintConfig = fs.unions (
    map fs.maybeMissing [
      ../clippy.toml
      ../.clippy.toml
      ../rustfmt.toml
      ../.rustfmt.toml
    ]
  );
in
{
  package = fs.toSource {
    inherit root;
    fileset = cargoInputs;
  };

  lint = fs.toSource {
    inherit root;
    fileset = fs.union cargoInputs lintConfig;
  };
}
