# Evaluate a recipe in the build repository's shape (tests/buildrepo.py's `template`, and forks of it) against the
# stand-in nixpkgs (fake-nixpkgs.nix): its fetchTarball of a pinned nixpkgs and the import of that are answered by
# the stand-in; everything else is Nix as nix-instantiate evaluates it. What the build is handed comes back as data.
{ recipe, torchVersion ? "2.10.0", system ? "x86_64-linux" }:
let
  fake = import ./fake-nixpkgs.nix { inherit torchVersion; };
  tarball = args: { pinnedNixpkgs = builtins.head (builtins.match ".*/archive/([0-9a-f]+)[.]tar[.]gz" args.url); };
  importing = path:
    if builtins.isAttrs path && path ? pinnedNixpkgs
    then (args: fake.importNixpkgs ({ rev = path.pinnedNixpkgs; inherit system; }
      // builtins.removeAttrs args [ "localSystem" "crossSystem" ]
      // { config = (args.config or { }) // builtins.intersectAttrs { localSystem = null; } args; }))
    else import path;
  drv = scopedImport { builtins = builtins // { fetchTarball = tarball; }; import = importing; } recipe { };
  isEnv = name: value: builtins.isString value && builtins.match "[A-Z_][A-Za-z0-9_]*" name != null;
in
{
  inherit (drv) pname version overrideArgs;
  preConfigure = drv.preConfigure or "";
  postPatch = drv.postPatch or "";
  cmakeFlags = drv.cmakeFlags or [ ];
  env = drv.env or { };
  patches = map (p: if builtins.isAttrs p then p.url or p.name or "fetched" else baseNameOf (toString p)) (drv.patches or [ ]);
  nixpkgs = { inherit (drv.fromNixpkgs) rev cudaPackages; config = drv.fromNixpkgs.config; };
  environment = builtins.listToAttrs (map (name: { inherit name; value = drv.${name}; })
    (builtins.filter (name: isEnv name drv.${name}) (builtins.attrNames drv)));
}
