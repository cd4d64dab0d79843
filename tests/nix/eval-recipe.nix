# Evaluate one generated recipe against the stand-in nixpkgs and return what it asked for.
{ recipe, torchVersion ? "2.9.1" }:
let
  fake = import ./fake-nixpkgs.nix { inherit torchVersion; };
  drv = import recipe { inherit (fake) lib importNixpkgs; };
in
{
  inherit (drv) pname version preConfigure fromNixpkgs meta;
  overrideArgs = drv.overrideArgs or { };
  overrideAttrsCount = drv.overrideAttrsCount or 0;
  src = drv.src;
  patches = drv.patches;
  cmakeFlags = drv.cmakeFlags or [ ];
  postPatch = drv.postPatch or "";
  pickvariant = drv.passthru.pickvariant;
}
