# What the grants let a hostile model do without asking (issue 27 point 2, docs/verify.md),
# as the NixOS module reports it at build time: builtins only, so `tests/units/flows.sh`
# evaluates it with Debian's nix against what `brokerd --flows --json` printed.
#
# report:    brokerd's flows report (`brokerd --flows --json`, parsed): { grants, flows }.
# denyFlows: `services.boxmaker.verify.denyFlows`: flow kinds (`secret_out`,
#            `private_out`, `untrusted_write`) or grant ids; a flow whose kind, source
#            grant or sink grant is named fails the build (an assertion), every other flow
#            is a warning.
{ report, denyFlows }:
let
  kinds = [
    "secret_out"
    "private_out"
    "untrusted_write"
  ];
  names =
    f:
    [ f.severity ]
    ++ (if f.source ? grant then [ f.source.grant ] else [ ])
    ++ (if f.sink ? grant then [ f.sink.grant ] else [ ]);
  denied = f: builtins.any (n: builtins.elem n denyFlows) (names f);
  named = f: builtins.filter (n: builtins.elem n denyFlows) (names f);
  unknown = builtins.filter (d: !(builtins.elem d (kinds ++ report.grants))) denyFlows;
in
{
  warnings = map (f: "boxmaker flow (${f.severity}): ${f.text}") (
    builtins.filter (f: !denied f) report.flows
  );
  assertions =
    map (f: {
      assertion = false;
      message =
        "boxmaker flow (${f.severity}) denied by services.boxmaker.verify.denyFlows "
        + "(${builtins.concatStringsSep ", " (named f)}): ${f.text}";
    }) (builtins.filter denied report.flows)
    ++ map (d: {
      assertion = false;
      message =
        "services.boxmaker.verify.denyFlows names ${d}, which is neither a flow kind "
        + "(${builtins.concatStringsSep ", " kinds}) nor a grant of services.boxmaker.grants";
    }) unknown;
}
