# The names of the appliance's binaries, read from the crates themselves (builtins only, so
# the gate's `units` step evaluates it with Debian's nix and compares it with what cargo
# builds): each crate's [[bin]] entries, or its package name when it has a src/main.rs.
# flake.nix exports one package per name, so no hand-kept list can miss a binary.
let
  crates = ../crates;
  dirs = builtins.filter (d: (builtins.readDir crates).${d} == "directory") (
    builtins.attrNames (builtins.readDir crates)
  );
  bins =
    dir:
    let
      manifest = builtins.fromTOML (builtins.readFile (crates + "/${dir}/Cargo.toml"));
    in
    if manifest ? bin then
      map (b: b.name) manifest.bin
    else if builtins.pathExists (crates + "/${dir}/src/main.rs") then
      [ manifest.package.name ]
    else
      [ ];
in
builtins.concatMap bins dirs
