# Evaluate one recipe against the stand-in nixpkgs and return what it asked for. drvPath is
# forced, so a broken package or a placeholder hash fails here as it would in nixpkgs.
{ recipe, torchVersion ? "2.9.1" }:
let
  fake = import ./fake-nixpkgs.nix { inherit torchVersion; };
  drv = import recipe { inherit (fake) lib importNixpkgs; };
  isEnv = name: value: builtins.isString value && builtins.match "[A-Z_][A-Za-z0-9_]*" name != null;
in
{
  inherit (drv) pname version preConfigure fromNixpkgs meta drvPath overrideArgs;
  src = drv.src;
  patches = map (p: if builtins.isString p then baseNameOf p else p) drv.patches;
  cmakeFlags = drv.cmakeFlags or [ ];
  postPatch = drv.postPatch or "";
  # Attributes that become environment variables of the build (upper-case names with string values).
  environment = builtins.listToAttrs (map (name: { inherit name; value = drv.${name}; })
    (builtins.filter (name: isEnv name drv.${name}) (builtins.attrNames drv)));
  pickvariant = drv.passthru.pickvariant;
}
