{
  description = "boxmaker: a personal AI agent appliance with one policy point for every tool call";

  # The 26.05 release branch ships rustc 1.95, the workspace's rust-version, and
  # keeps it for the life of the release: `nix flake update` brings fixes
  # without moving the toolchain (or clippy's lints) under the gate.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-26.05";

  outputs =
    { self, nixpkgs }:
    let
      # straylight is the only deployment target; the VM tests need KVM on it too.
      system = "x86_64-linux";
      pkgs = nixpkgs.legacyPackages.${system};
      boxmaker = pkgs.callPackage ./nix/package.nix { };
    in
    {
      # One derivation holds every binary; the per-binary names are the same package,
      # so `nix run .#bxctl` and friends work without building anything twice. The names
      # come from the crates (nix/binaries.nix), never from a list kept by hand.
      packages.${system} = {
        inherit boxmaker;
        default = boxmaker;
      }
      // pkgs.lib.genAttrs (import ./nix/binaries.nix) (
        name: boxmaker // { meta = boxmaker.meta // { mainProgram = name; }; }
      );

      # The package option defaults to this flake's package (nix/package.nix with the
      # user's nixpkgs), so importing the module is all a host needs.
      nixosModules = {
        boxmaker = ./nix/module.nix;
        default = self.nixosModules.boxmaker;
      };

      checks.${system} = import ./nix/checks.nix { inherit pkgs self; };

      devShells.${system}.default = import ./nix/shell.nix { inherit pkgs; };

      formatter.${system} = pkgs.nixfmt-tree;
    };
}
