"""The seam between the rules and the sources of builds (sources/build.py): the rules ask the catalog they are given,
never one source's files, so a second source plugs in beside sources/flox without a rule copied."""

from __future__ import annotations

from collections.abc import Collection

import pytest
from conftest import cpuinfo_path

from pickvariant import api
from pickvariant._base.errors import BadInput
from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant.sources.build import Branch, Catalog, Companion, Variant

H100 = Request(cpuinfo=cpuinfo_path("linux-unknown-sapphirerapids"), gpus=("9.0",), driver="580.95.05")


class OnlyGenerated:
    """A source that publishes no companion and builds torchvision on any variant (as a wheel index might)."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def published(self, catalog: Catalog) -> tuple[Companion, ...]:
        return ()

    def generated_projects(self) -> Collection[str]:
        return ("torchvision",)

    def why_not_generated(self, project: str, variant: Variant, pin_torch: str | None) -> str | None:
        return None if project == "torchvision" else f"{project} is not built here"

    def generated_companion(self, project: str, variant: Variant) -> Companion:
        return self.inner.generated_companion(project, variant)  # type: ignore[attr-defined]


def test_the_companion_stage_asks_the_catalogs_own_source(catalog: Catalog) -> None:
    """The Flox catalog publishes torchvision for an H100; a catalog whose source publishes none builds it instead,
    and one whose source has no torchaudio refuses --with torchaudio: the rules read nothing but what they are given."""
    flox = api.recommend_request(replace(H100, with_projects=("torchvision",)), catalog=catalog)
    assert flox.decision.companions and flox.decision.companions[0].torch_relation != "generated"

    other = replace(catalog, companion_source=OnlyGenerated(catalog.companion_source))
    built = api.recommend_request(replace(H100, with_projects=("torchvision",)), catalog=other)
    assert [c.torch_relation for c in built.decision.companions] == ["generated"]
    assert built.decision.companions[0].generation_cost  # the source's words for what building it costs
    with pytest.raises(BadInput, match="--with torchaudio"):
        api.recommend_request(replace(H100, with_projects=("torchaudio",)), catalog=other)


def test_a_flox_variant_carries_sass_for_its_one_architecture_and_no_ptx(catalog: Catalog) -> None:
    for variant in catalog.variants:
        assert variant.ptx_archs == ()
        expected = () if variant.gpu_arch in (None, "mps") else (variant.gpu_arch,)
        assert variant.sass_archs == expected, variant.package


def test_a_build_without_an_instruction_set_is_judged_by_its_platform_gpu_and_driver(catalog: Catalog) -> None:
    """A build whose CPU kernels ATen dispatches at run time (cpu_isa None, as a wheel's) requires no CPU flag: on a
    CPU without AVX, where every Flox build would crash, the same rules choose it for its GPU and driver."""
    k10_h100 = replace(H100, cpuinfo=cpuinfo_path("linux-scientific7-k10"))
    assert api.recommend_request(k10_h100, catalog=catalog).build is None
    package = "pytorch-python313-cuda13_1-sm90-avx512"

    def dispatched(branch: Branch) -> Branch:
        variants = tuple(replace(v, cpu_isa=None) if v.package == package else v for v in branch.variants)
        return replace(branch, variants=variants)

    other = replace(catalog, branches=tuple(dispatched(branch) for branch in catalog.branches))
    chosen = api.recommend_request(k10_h100, catalog=other).build
    assert chosen is not None and chosen.package == package and chosen.cpu_isa is None
    assert api.recommend_request(replace(k10_h100, gpus=("6.1",)), catalog=other).build is None  # its GPU still counts
