# What `nix flake check` builds, and so what the gate runs: generated from the
# exported package and from the files in nix/tests/, never listed by hand, so a
# check cannot silently point at something other than what is shipped.
{ pkgs, self }:
let
  inherit (pkgs) lib;
  inherit (pkgs.stdenv.hostPlatform) system;

  # The attribute users install, not a second build of the same source.
  package = self.packages.${system}.default;

  # The lints reuse the package's cargo setup and vendored dependencies and
  # swap only the phases: one Cargo.lock, one toolchain, nothing fetched.
  lint =
    {
      name,
      tool,
      command,
    }:
    package.overrideAttrs (old: {
      pname = "boxmaker-${name}";
      src = (import ./source.nix { inherit lib; }).lint;
      nativeBuildInputs = old.nativeBuildInputs ++ [ tool ];
      buildPhase = ''
        runHook preBuild
        ${command}
        runHook postBuild
      '';
      doCheck = false;
      # Nothing is produced; a successful build is the result.
      installPhase = ''
        mkdir -p "$out"
      '';
      dontFixup = true;
    });

  # nix/tests/ may not exist (git tracks no empty directory), so look before reading.
  testsDir = ./tests;
  scenarioFiles = lib.optionalAttrs (builtins.pathExists testsDir) (
    lib.filterAttrs (file: type: type == "regular" && lib.hasSuffix ".nix" file) (
      builtins.readDir testsDir
    )
  );

  # Modules every VM node imports on top of what its scenario declares: the
  # module exactly as the flake exports it, so the tests deploy what users import.
  nodeModules = [ self.nixosModules.default ];

  # One scenario per file, module-shaped: `{ name, nodes, testScript, ... }`.
  vmTest =
    file:
    let
      scenario = lib.removeSuffix ".nix" file;
    in
    lib.nameValuePair "vm-${scenario}" (
      pkgs.testers.runNixOSTest {
        imports = [ (testsDir + "/${file}") ];
        # Defaults only: a scenario may name itself or take longer on purpose.
        name = lib.mkDefault scenario;
        # A hung unit should fail the gate in minutes, not after the
        # framework's default hour.
        globalTimeout = lib.mkDefault 600;
        defaults.imports = nodeModules;
      }
    );
in
{
  boxmaker = package;

  clippy = lint {
    name = "clippy";
    tool = pkgs.clippy;
    command = "cargo clippy --workspace --all-targets --frozen -- -D warnings";
  };

  rustfmt = lint {
    name = "rustfmt";
    tool = pkgs.rustfmt;
    command = "cargo fmt --all --check";
  };
}
// lib.mapAttrs' (file: _type: vmTest file) scenarioFiles
