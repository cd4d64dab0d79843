# A stand-in for nixpkgs, just large enough to evaluate pickvariant's recipes with the real
# nix-instantiate: fetchers return their arguments, and torch's override/overrideAttrs record
# what they were given, so tests can read back what a recipe asked for.
{ torchVersion ? "2.9.1" }:
let
  lib = {
    concatStringsSep = builtins.concatStringsSep;
    mapAttrsToList = f: attrs: map (name: f name attrs.${name}) (builtins.attrNames attrs);
    warnIf = cond: msg: value: if cond then builtins.trace "warning: ${msg}" value else value;
    fakeHash = "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    fix = f: let x = f x; in x;
  };

  # A derivation-like attribute set whose overrides accumulate instead of building anything.
  mkDrv = attrs: attrs // {
    override = args: mkDrv (attrs // { overrideArgs = (attrs.overrideArgs or { }) // args; });
    overrideAttrs = f: mkDrv (attrs // f attrs // { overrideAttrsCount = (attrs.overrideAttrsCount or 0) + 1; });
  };

  mkPythonPackages = torch: {
    inherit torch;
    override = { overrides }:
      let
        self = mkPythonPackages torch;
        changed = overrides self self;
      in mkPythonPackages (changed.torch or torch);
  };

  cudaSet = version: { cudaMajorMinorVersion = version; cuda_cccl = "/nix/store/fake-cuda-cccl-${version}"; };

  importNixpkgs = args:
    let
      base = final: {
        inherit lib;
        fetchFromGitHub = a: { fetcher = "fetchFromGitHub"; } // a;
        fetchpatch = a: { fetcher = "fetchpatch"; } // a;
        magma = mkDrv { pname = "magma"; patches = [ { name = "nixpkgs-own.patch"; } ]; };
        cudaPackages_12_8 = cudaSet "12.8";
        cudaPackages_12_9 = cudaSet "12.9";
        cudaPackages_13 = cudaSet "13.0";
        cudaPackages_13_0 = cudaSet "13.0";
        cudaPackages_13_1 = cudaSet "13.1";
        cudaPackages = cudaSet "12.8";
        python311Packages = final.python3Packages;
        python312Packages = final.python3Packages;
        python313Packages = final.python3Packages;
        python3Packages = mkPythonPackages (mkDrv {
          pname = "torch";
          version = torchVersion;
          src = { fetcher = "nixpkgs-default"; };
          patches = [ "nixpkgs-torch.patch" ];
          preConfigure = "";
          passthru = { };
          meta = { description = "nixpkgs torch"; };
          # What the recipe asked of nixpkgs, read lazily through the overlays' fixpoint.
          fromNixpkgs = {
            inherit (args) rev system config;
            overlayCount = builtins.length args.overlays;
            cudaPackages = final.cudaPackages.cudaMajorMinorVersion;
            magmaPatches = map (p: p.name) final.magma.patches;
          };
        });
      };
      apply = final: builtins.foldl' (prev: overlay: prev // overlay final prev) (base final) args.overlays;
    in lib.fix apply;
in
{ inherit lib importNixpkgs; }
