# The assignments of one section of a unit file's text, builtins only (BRIEF decision 2):
# `section` (`Service`, `Socket`, `Timer`, `Path`) -> key -> values, in the file's order.
# nix/expected.nix reads the unit files NixOS writes with it; tests/units/check.sh checks it
# on the files nix/render-units.nix writes.
let
  inherit (builtins) elemAt filter foldl' isString match split;
in
section: text:
let
  lines = filter isString (split "\n" text);
  step =
    acc: line:
    let
      header = match "\\[([A-Za-z]+)][[:space:]]*" line;
      kv = match "([A-Za-z0-9]+)=(.*)" line;
    in
    if header != null then
      acc // { current = elemAt header 0; }
    else if kv != null && acc.current == section then
      let
        k = elemAt kv 0;
      in
      acc // { set = acc.set // { ${k} = (acc.set.${k} or [ ]) ++ [ (elemAt kv 1) ]; }; }
    else
      acc;
in
(foldl' step { current = ""; set = { }; } lines).set

