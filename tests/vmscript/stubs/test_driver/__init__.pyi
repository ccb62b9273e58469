# The NixOS test driver's package, as far as the VM scenarios' scripts see it (see
# machine.pyi). Written for boxmaker from nixpkgs' nixos/lib/test-driver; not a copy.
