"""The rules: the one compatibility predicate, the decision and its explanation, the cluster plan.

Where each rule lives (ARCHITECTURE.md is the map; `tests/test_docs.py` checks every path named here exists):

- can this build run here, and if not why (platform, flags, a GPU to serve or none, kernels, driver), for every
  source: `rules/compat.py` `refusals` over `sources/runs_on.Build`; worded for a variant by `why_not`, for a wheel
  by `rules/prebuilt_stages.py`
- do a build's GPU kernels run on this GPU (SASS, PTX through the JIT, Tegra, CUDA 13.2's unification), for every
  source, verify's judge and fleet: `rules/kernels.py` `coverage` (`sass_runs_on` for one architecture)
- does a ROCm build's code object load on this AMD GPU (its target, the features it names: LLVM's target ID rule; no
  generic targets yet): `rules/kernels.py` `code_object_for`, asked by `rules/families.py` (the ROCm check, which
  chooses ROCm wheels) and by verify's judge (`verify/devices.py` `judge_rocm_devices`)
- does an XPU build run on this Intel GPU (AOT code for its family, else SPIR-V; a device the facts do not name is
  not served): `rules/families.py` (the XPU check), with `sources/xpu_devices.py`
- which family of GPU a build's code is for (CUDA, ROCm, XPU, MPS, none); a family no check judges is left out of
  its catalog: `sources/accelerator.py` (`Build.family`, `JUDGED`), `sources/prebuilt.py` `judged_only`
- which CPU instruction sets this CPU can run: `rules/compat.py` `usable_isas`
- what a pin leaves, every source's: `--torch` the releases it names, `--cuda` the line of CUDA builds (a build
  without CUDA is left, and the answer says so): `rules/pins.py`, asked by `rules/stages.py` (the recipes' branches
  and CUDA lines) and `rules/prebuilt_stages.py` `judge`
- the order builds are ranked in, every source's: newest PyTorch, (no index named) the build an installer gets with
  none, CUDA line, Python, GPU architecture, workload's ISA, label: `rules/ranking.py` `key` (a recipe's variants
  ranked by it in `rules/stages.py` `variants`, a prebuilt build in `rules/prebuilt_stages.py` `newest_first`)
- why not every other branch, architecture, instruction set (typed rejections with their facts):
  `rules/alternatives.py` (`gpu_archs`, `other_branches`, `other_isas`, `branch_has_nothing`)
- the words of every reason and rejection, every source's: `rules/wording/` (rejections and the machine in
  `__init__`; `compat`, `recipes`, `prebuilt` beside)
- what would help when nothing fits, or a set moved to an older torch: `rules/hints.py` (recipes) and
  `rules/prebuilt_hints.py`, each deciding again through the one pick, `rules/pick.py` (`again`), with the drivers
  the one driver-upgrade search names (`rules/upgrades.py`: by CUDA version or by number, as compat judges)
- which PyTorch wheel for this machine: platform, Python tag, GPU covered (SASS same major and minor ≤, else PTX ≤
  the card's, JIT-compiled), driver floor, newest torch then newest CUDA line (the one ranking, `rules/ranking.py`),
  paired companions: `rules/prebuilt_stages.py` `judge`, walked by `rules/prebuilt_walk.py` (`pick_prebuilt`: the
  one pick, `rules/pick.py`, over its walk; one `Decision`, `rules/decision.py`, the record the recipes' stages
  answer with too)
- whether the torch already in an environment runs on these GPUs: `rules/installed.py` `installed_finding`
- the installer command of a wheel decision (pip, or uv's pip interface; torch pinned with its local label):
  `install/pip_command.py`
- whether a node may carry out its plan assignment (the plan's catalog, the node's facts then and now):
  `commands/plan_install.py` `assignment` (facts compared by `rules/node_facts.py` `changes`)
- each node's status in the fleet's verdict, and when a figure is slow: `rules/fleet.py` (`SLOW_SHARE_OF_MEDIAN`)
- fewest variants for a cluster: `rules/fewest_builds.py` `fewest` (`group_profiles`, `solve`, `assign`: one for
  every source), from the profiles `rules/cluster_plan.py` decides (`make_cluster_plan` for the recipes,
  `make_prebuilt_plan` for a source of prebuilt builds; one `ClusterPlan`, worded by `output/cluster_plan.py`)
- which drivers can drive a GPU at all (the first branch for Blackwell, the last for Pascal/Volta):
  `sources/data/hardware.json` `gpu_archs[].drivers`; judged in `rules/compat.py` `undriven_gpus`
- a Jetson driver is judged by the CUDA version it reports: `rules/compat.py` `driver_rejection`
  (`TEGRA_DRIVER_RULE`)
- a Windows driver is judged by the CUDA version it reports (Windows numbers its releases apart from Linux):
  `rules/compat.py` `driver_as_judged`, before `driver_refusal`
- the install flow, whichever source: plan, consent (a callback), install, verify: `commands/install.py` `run`,
  taking an `Installation` (the Flox source's `FloxInstallation` in `sources/flox/installation.py`,
  `PrebuiltInstallation` in `commands/prebuilt_install.py`), the one `commands/installation.py` `installation` makes
  from what the command line was asked
- which companions go with a variant, on one PyTorch, and in which order; when a set is built from source:
  `rules/pairing.py` `pick_set`
- which companions can be generated on a variant, and how: `sources/flox/recipes/generated.py` (facts in
  `sources/flox/recipes/data/generated-companions.json`), rendered by `sources/flox/recipes/render.py`
  `render_companion`
- a set's torch read back after an install, the environment put back if wrong: `sources/flox/install/linked_torch.py`
- the one set rule: which sets give one PyTorch build per process, and what is installed and built for each:
  `rules/sets.py` `shape` (from flox's `buildenv/builder.pl`)
- what torch a companion recipe builds against (identical, separate, unknown); its build options (`-nomagma`):
  `sources/flox/recipes/companions.py`
- the published package paths of a set's shape: `sources/flox/install/published_set.py`
- never a second PyTorch in one environment (what its manifest already holds): `sources/flox/install/existing.py`
  `check_one_torch`
- installs into one environment take turns (a lock across processes and hosts): `install/envlock.py`
- an install into a Python environment is whole or not at all (its distributions kept, then found whole or put
  back): `install/whole.py`
- ISA → kernel flags, SM → products and CUDA range, CUDA → driver minimum, flag spellings, peaks:
  `sources/data/hardware.json` (each with its source)
- which CUDA releases build an SM, which CPUs host it: `sources/hardware.py` `GpuArch.builds_with`, `has_host`
- what a recipe's text says it builds (and when that cannot be read for certain): `sources/flox/recipes/classify.py`
- which recipes are classified: the trusted upstream, and a fork's recipe only where it is an upstream recipe but for
  its values (the value positions, the files it brings in, new architectures and nixpkgs revisions):
  `sources/flox/recipes/positions.py` (`VALUES`, `IN_STRINGS`), `sources/flox/recipes/skeleton.py`,
  `sources/flox/recipes/trusted.py` `Upstream.judge`, `sources/flox/recipes/upstream.py` (`shipped_anchors`,
  `trusted_commits`, `Trust.foreign_files`); `docs/reference/trust.md` says it in six points
- a name's instruction set and GPU architecture against what the recipe declares, either way:
  `sources/flox/recipes/classify.py` `isa_disagreement`, `targets_disagreement`
- a catalog from elsewhere: its hardware facts must be pickvariant's own: `sources/flox/recipes/own_facts.py`
  `check_own_hardware_facts` (called by `sources/flox/recipes/load.py` for every catalog but the shipped one)
- a plug-in's catalog: every value of a shape the rules read (a release, CPython tags, capabilities, gfx targets,
  names, printable text), or the catalog is refused whole, naming the plug-in: `sources/plugin_values.py`
  `misvalued`, asked by `sources/plugin_parts.py` `catalog_of`, which also names the plug-in where its code fails
  (its catalog, parts, commands) and holds its packaging part's words to a list of printable words
- the commit a recipe is fetched at (the catalog's, from its own repository; a fork's tip, held against the recipe the
  catalog was made from): `sources/flox/recipes/fetch.py` `fetch_checked`, `sources/flox/recipes/recipe_check.py`
  `check_recipe`
- the cache is the user's alone (owner, mode, no links): `_base/files.py` `own_cache`, `own_folders`,
  `check_own_folder`
- a path no system can open (NAME_MAX, PATH_MAX) is bad input: `_base/files.py` `path_too_long`, checked in
  `cli/typer_options.checked_paths`, `cli/options.request_from`, `cache_dir`, `load.default_catalog_path`,
  `fetch.recipes_repo`; `cli/console.exit_for` is the net beneath
- which of PyTorch's own wheels exist, their SASS and PTX lists, CUDA runtime and driver floor, PyPI's default,
  companions: `sources/wheels/catalog/data/wheel-facts.json` (each with its sources and confidence), derived by
  `sources/wheels/catalog/facts.py` `derive` into `sources/wheels/catalog/data/wheels.json`
- which variants exist: `catalog.json` at the top of the checkout (and `catalog.companions.json` beside it), written
  only by `pickvariant catalog sync`; a wheel carries both inside the package (`_base/files.py` `shipped`, hatch
  `force-include`)
- what Flox accepts and refuses: `sources/flox/install/flox_contract.json` (read from flox/flox's source)
- what an installed torch must show: `verify/judge.py`
- exit codes: `cli/console.py` `exit_for` (and `_base/errors.py` for each error's code)
- what git may run, which transports it may use, where it runs: `_base/git.py` (`HARDENED_CONFIG`,
  `ALLOWED_PROTOCOLS`)
- the shape of every JSON document from outside: `sources/flox/recipes/data/catalog.schema.json`,
  `sources/flox/recipes/data/companions.schema.json`, `sources/wheels/catalog/data/wheel-facts.schema.json` and `wheel-
  catalog.schema.json` (a wheel catalog but the shipped one: the refreshed one in the cache, one named by path),
  `verify/probe-result.schema.json`, `rules/detect-line.schema.json`, `rules/cluster-plan.schema.json`, and of
  detect's own document for every source `output/detect.schema.json`, `rules/verify-line.schema.json`,
  `install/last-install.schema.json`
- what is shown of outside text and addresses: `_base/text.py` `visible` (terminals: control, bidirectional and
  zero-width characters as escapes), `markdown_text`/`markdown_code` (Markdown: no link, HTML, cell, emphasis),
  `_base/urls.py` `public_url` (every address shape git accepts, without credentials)
- how long NVML may take (a wedged driver) and what a failed query means (no GPU, or inconclusive): `machine/gpu.py`
  `start_reading`, `start_bounded`, `query_nvml`
- NVML is asked first, while the rest loads, and only where the GPUs are not stated: `cli/entry.py` `_detects_gpus`
  (the console script), `api.py` `_gpus_pending` (the library)
- command-line options that describe a machine or pin a choice, or that several commands or a variable share:
  `cli/options.py` (typer parameters made from them by `cli/common.declared`; the help names the variable from the
  declaration; `tests/test_cli.py` holds every shared flag to one help)
- each command's own options (typer): its module in `cli/` (`cli/install.py` …); choices' enums and path checks in
  `cli/typer_options.py`
- what the rules need of a catalog of builds, whichever source made it: `sources/build.py` (`Variant`, `Branch`,
  `Companion`, `Catalog`, `CompanionSource`); the Flox source fills it in `sources/flox/recipes/load.py`
- which source of builds answers a command (and a plan's source): `sources/registry.py` `chosen`, `named`
- that the command line, the commands, the library, the pipelines and the output reach a source only through the one
  chosen: `pyproject.toml` contract 3
- that the rules know no one source: `pyproject.toml` contract 2 (`rules`, `machine`, `sources.build`,
  `sources.hardware`, `sources.prebuilt`, `sources.runs_on` never import `sources.flox` or `sources.wheels`)
- that a source of prebuilt builds, and the hardware facts it is judged by, load no Flox code: `pyproject.toml`
  contract 4 (`sources.wheels`, `sources.prebuilt`, `sources.hardware_json`, `sources.runs_on` never import
  `sources.flox`)
- a function a newcomer reads at once (60 lines at most), a module (500), no top-level module but `api`:
  `tests/test_layers.py`
- the style every file keeps (ruff lint and format at 120 columns, mypy): `pyproject.toml` `[tool.ruff]`,
  `[tool.mypy]`; run by `tests/test_checkers.py`
"""
