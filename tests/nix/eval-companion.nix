# Evaluate one generated companion recipe (with its variant's recipe beside it) against the stand-in nixpkgs,
# called as Flox calls a recipe; drvPath is forced, so an argument nixpkgs' expression does not take, or an
# attribute it does not have, fails here as it would there.
{ recipe, torchVersion ? "2.9.1" }:
let
  fake = import ./fake-nixpkgs.nix { inherit torchVersion; };
  drv = fake.callPackage recipe { };
in
{
  inherit (drv) pname drvPath preConfigure;
  torch = { inherit (drv.torch) pname drvPath; };
  variantTorch = { inherit (drv.passthru.pickvariant.torch) pname drvPath; };
  pickvariant = builtins.removeAttrs drv.passthru.pickvariant [ "torch" ];
  platforms = drv.meta.platforms;
}
