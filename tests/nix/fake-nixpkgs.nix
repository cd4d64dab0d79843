# A stand-in for nixpkgs at the build repository's pins, just large enough to evaluate
# pickvariant's recipes with the real nix-instantiate, and strict where nixpkgs is strict
# (torch-contract.json holds each rule with the nixpkgs file and commit it was read from):
#   - torch.override takes only torch's real function arguments, as callPackage's override does;
#   - torch is marked broken for CUDA majors nixpkgs' torch does not list, and evaluating a broken
#     package fails unless config.allowBroken (or the recipe clears meta.broken);
#   - cmakeFlags are recorded but, as in nixpkgs (dontUseCmakeConfigure + setup.py), reach
#     nothing: the tests compute what CMake sees from the environment alone;
#   - MAGMA and NCCL build for config.cudaCapabilities, every capability when it is unset;
#   - cuda_cccl has the include layout nixpkgs gives it for the CUDA release;
#   - a fetcher given lib.fakeHash is refused (the real build fails on the hash mismatch).
{ torchVersion ? "2.9.1" }:
let
  contract = builtins.fromJSON (builtins.readFile ./torch-contract.json);
  companionContract = builtins.fromJSON (builtins.readFile ./companion-contract.json);

  lib = {
    concatStringsSep = builtins.concatStringsSep;
    mapAttrsToList = f: attrs: map (name: f name attrs.${name}) (builtins.attrNames attrs);
    warnIf = cond: msg: value: if cond then builtins.trace "warning: ${msg}" value else value;
    fakeHash = "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    fix = f: let x = f x; in x;
    versionAtLeast = a: b: builtins.compareVersions a b >= 0;
    optionalString = cond: string: if cond then string else "";
    optional = cond: item: if cond then [ item ] else [ ];
  };

  refuseFakeHash = fetched:
    if (fetched.hash or "") == lib.fakeHash
    then throw "hash mismatch in fixed-output derivation '${fetched.repo or fetched.name or "source"}': lib.fakeHash is a placeholder, the build fails by construction"
    else fetched;

  # A derivation-like set whose overrideAttrs accumulate, as mkDerivation's do.
  mkDrv = attrs: attrs // {
    overrideAttrs = f: mkDrv (attrs // f attrs);
  };

  # What `callPackage` makes of torch's default.nix: a function of torch's real arguments,
  # overridable, whose overrideAttrs survive a later override (makeOverridable).
  mkTorch = final: config: { args, attrFns }:
    let
      unexpected = builtins.filter (name: !(builtins.elem name contract.torch_arguments)) (builtins.attrNames args);
      cudaSupport = args.cudaSupport or (config.cudaSupport or false);
      gpuTargets = args.gpuTargets or [ ];
      cudaPackages = final.cudaPackages;
      isLinux = builtins.match ".*-linux" config.system != null;
      patchWhen = patch: (patch.when == "cudaSupport" && cudaSupport) || (patch.when == "linux" && isLinux);
      base = {
        pname = "torch";
        version = torchVersion;
        src = { fetcher = "nixpkgs-default"; };
        # Path values in nixpkgs (./fix-cmake-cuda-toolkit.patch): toString gives the file inside the nixpkgs source.
        patches = map (patch: "/nix/store/00000000000000000000000000000000-source/pkgs/development/python-modules/torch/source/${patch.name}")
          (builtins.filter patchWhen contract.patches);
        dontUseCmakeConfigure = true;
        cmakeFlags = [ "-DCUDAToolkit_VERSION=${cudaPackages.cudaMajorMinorVersion}" ];
        PYTORCH_BUILD_VERSION = torchVersion;
        preConfigure = if cudaSupport then ''
          export TORCH_CUDA_ARCH_LIST="${builtins.concatStringsSep ";" (if gpuTargets != [ ] then gpuTargets else final.config.cudaCapabilities or contract.cuda_capabilities_default)}"
        '' else "";
        passthru = { };
        meta = {
          description = "nixpkgs torch";
          broken = cudaSupport && !(builtins.elem cudaPackages.cudaMajorVersion contract.cuda_majors_not_broken);
        };
        overrideArgs = args;
        # What the recipe asked of nixpkgs, read lazily through the overlays' fixpoint.
        fromNixpkgs = {
          inherit (config) rev system;
          config = builtins.removeAttrs config [ "rev" "system" ];
          cudaPackages = cudaPackages.cudaMajorMinorVersion;
          magmaPatches = map (p: p.name) final.magma.patches;
          magmaCudaCapabilities = final.magma.cudaCapabilities;
          ncclCudaCapabilities = cudaPackages.nccl.cudaCapabilities;
          ccclIncludeDirs = cudaPackages.cuda_cccl.includeDirs;
        };
      };
      attrs = builtins.foldl' (current: f: current // f current) base attrFns;
      broken = attrs.meta.broken or false;
    in
    if unexpected != [ ] then throw "function 'anonymous lambda' called with unexpected argument '${builtins.head unexpected}'"
    else attrs // {
      override = newArgs: mkTorch final config { args = args // newArgs; inherit attrFns; };
      overrideAttrs = f: mkTorch final config { inherit args; attrFns = attrFns ++ [ f ]; };
      drvPath =
        if broken && !(config.allowBroken or false)
        then throw "Package ‘torch-${attrs.version}’ in pkgs/development/python-modules/torch/source/default.nix is marked as broken, refusing to evaluate."
        else builtins.seq (refuseFakeHash attrs.src) "/nix/store/00000000000000000000000000000000-${attrs.pname}-${attrs.version}.drv";
    };

  # A companion (torchvision, torchaudio, vllm) as callPackage makes it of nixpkgs' expression: a function of its
  # real arguments (companion-contract.json), overridable, built against the torch it is given (or its set's).
  mkCompanion = name: setTorch: { args, attrFns }:
    let
      spec = companionContract.projects.${name};
      unexpected = builtins.filter (arg: !(builtins.elem arg spec.arguments)) (builtins.attrNames args);
      torch = args.torch or setTorch;
      base = { pname = name; version = spec.version; preConfigure = ""; passthru = { }; meta = { }; inherit torch; };
      attrs = builtins.foldl' (current: f: current // f current) base attrFns;
    in
    if unexpected != [ ] then throw "function 'anonymous lambda' called with unexpected argument '${builtins.head unexpected}'"
    else attrs // {
      override = newArgs: mkCompanion name setTorch { args = args // newArgs; inherit attrFns; };
      overrideAttrs = f: mkCompanion name setTorch { inherit args; attrFns = attrFns ++ [ f ]; };
      drvPath = builtins.seq torch.drvPath "/nix/store/00000000000000000000000000000000-${attrs.pname}-${attrs.version}.drv";
    };

  mkPythonPackages = final: config: torch: {
    inherit torch;
    torchvision = mkCompanion "torchvision" torch { args = { }; attrFns = [ ]; };
    torchaudio = mkCompanion "torchaudio" torch { args = { }; attrFns = [ ]; };
    vllm = mkCompanion "vllm" torch { args = { }; attrFns = [ ]; };
    override = { overrides }:
      let changed = overrides { } { inherit torch; };
      in mkPythonPackages final config (changed.torch or torch);
  };

  # An interpreter (python313): `.override { packageOverrides }` gives a Python set whose packages all build
  # against what the overrides put in it (torch here), as pythonPackages' fixpoint does.
  mkPython = final: config: torch: {
    override = { packageOverrides }:
      let changed = packageOverrides { } { inherit torch; };
      in { pkgs = mkPythonPackages final config (changed.torch or torch); };
  };

  cudaSet = config: version:
    let
      major = builtins.head (builtins.split "\\." version);
      flattened = lib.versionAtLeast version contract.cccl_layout.flattened_from;
    in {
      cudaMajorMinorVersion = version;
      cudaMajorVersion = major;
      cuda_cccl = {
        outPath = "/nix/store/00000000000000000000000000000000-cuda_cccl-${version}";
        includeDirs = if flattened then [ "cub" "thrust" "cuda" "nv" ] else [ "cccl/cub" "cccl/thrust" "cccl/cuda" "cccl/nv" "cub" "thrust" "cuda" "nv" ];
      };
      nccl = { cudaCapabilities = config.cudaCapabilities or contract.cuda_capabilities_default; };
    };

  importNixpkgs = args:
    let
      config = (args.config or { }) // { inherit (args) rev system; };
      base = final: {
        inherit lib;
        config = args.config or { };
        fetchFromGitHub = a: refuseFakeHash ({ fetcher = "fetchFromGitHub"; } // a);
        fetchpatch = a: refuseFakeHash ({ fetcher = "fetchpatch"; } // a);
        magma = mkDrv { pname = "magma"; patches = [ { name = "nixpkgs-own.patch"; } ]; cudaCapabilities = config.cudaCapabilities or contract.cuda_capabilities_default; };
        cudaPackages_12_8 = cudaSet config "12.8";
        cudaPackages_12_9 = cudaSet config "12.9";
        cudaPackages_13 = cudaSet config "13.0";
        cudaPackages_13_0 = cudaSet config "13.0";
        cudaPackages_13_1 = cudaSet config "13.1";
        cudaPackages = cudaSet config "12.8";
        python311Packages = final.python3Packages;
        python312Packages = final.python3Packages;
        python313Packages = final.python3Packages;
        python3Packages = mkPythonPackages final config (mkTorch final config { args = { }; attrFns = [ ]; });
        python311 = mkPython final config final.python3Packages.torch;
        python312 = mkPython final config final.python3Packages.torch;
        python313 = mkPython final config final.python3Packages.torch;
      };
      apply = final: builtins.foldl' (prev: overlay: prev // overlay final prev) (base final) (args.overlays or [ ]);
    in lib.fix apply;
  # What Flox's callPackage gives a recipe: its arguments from this scope, overridden by those passed.
  callPackage = fn: args:
    let f = if builtins.isFunction fn then fn else import fn;
    in f ((builtins.intersectAttrs (builtins.functionArgs f) { inherit lib importNixpkgs callPackage; }) // args);
in
{ inherit lib importNixpkgs callPackage; }
