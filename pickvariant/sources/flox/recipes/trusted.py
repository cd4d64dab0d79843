"""A recipe of another repository judged against the trusted upstream's: classified only where it is the same.

The rule, a whitelist: a recipe is read where its skeleton (skeleton.py: the syntax tree without comments,
whitespace and values) is the skeleton of a trusted upstream recipe built for the same project, Python, CUDA line
and instruction set; its values then mean what they mean there. A new GPU architecture may enter only through a
template the upstream itself builds for several (so its architecture comes from its values alone), and a new
nixpkgs revision only where the recipe names its package sets with their versions (`python3Packages` means another
Python at another revision). Anything else is left out, naming the first place where it differs from the nearest
upstream recipe. Nothing a changed line does is interpreted: which lines may change is the list of value positions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence

from pickvariant._base.records import keyword_record, record
from pickvariant.sources.flox.recipes import positions as holes
from pickvariant.sources.flox.recipes.nixtext import NotNix
from pickvariant.sources.flox.recipes.skeleton import Skeleton, Walk, shown, skeleton_of

_NAME = re.compile(
    r"^(?P<project>pytorch|torchvision|torchaudio|vllm)-python(?P<py>3\d{1,2})-(?:"
    r"cpu-(?P<cpu_isa>[a-z0-9_.]+?)"
    r"|cuda(?P<cuda>\d+_\d+)-(?P<sm>sm\d+|all)(?:-(?P<isa>[a-z0-9_.]+?))?"
    r"|darwin-(?P<mps>mps))(?:-(?P<option>nomagma))?$"
)
_SPELLINGS = {"armv8.2": "armv8_2"}
# A CUDA package set named with its minor release: what it is does not move with the nixpkgs revision.
_EXPLICIT_CUDA = re.compile(r"cudaPackages_\d+_\d+")
_CUDA = re.compile(r"-cuda\d+_\d+-")
_MAX_SHOWN = 70
# What a fork's recipe may add to the upstream's it could be, in bytes: comments, spaces, longer values. More, and it
# is left out unread (the parse alone of a megabyte of tokens takes a second).
SLACK_BYTES = 64 * 1024
NO_UPSTREAM = (
    "there is no trusted upstream to hold it against: its repository shares no commit with the build repositories "
    "pickvariant ships facts for; name the one it comes from with --upstream REPO, or trust it as it is with "
    "--trust-recipes REPO"
)
BlobReader = Callable[[Sequence[str]], Iterator[tuple[str, bytes]]]


def name_key(package: str) -> tuple[tuple[str, str, str, str, str], str] | None:
    """((project, Python, CUDA line, instruction set, option), GPU architecture) as the package name says them."""
    name = _NAME.match(package)
    if name is None:
        return None
    isa = name["cpu_isa"] or name["isa"] or ("mps" if name["mps"] else "")
    key = (name["project"], name["py"], name["cuda"] or "", _SPELLINGS.get(isa, isa), name["option"] or "")
    return key, name["sm"] or ""


@record
class TrustedRecipe:
    """A recipe of the trusted upstream: where it is (shown), its name read, its blob and how to read it."""

    path: str
    package: str
    blob: str
    where: str  # "https://github.com/barstoolbluz/build-pytorch main at 670c3104740b"
    reader: int  # which repository's blob reader holds it
    size: int = 0  # bytes


@keyword_record
class Verdict:
    """How a recipe of another repository stands against the upstream: the trusted recipe it matches, or why not."""

    skeleton: Skeleton | None
    matched: TrustedRecipe | None = None
    why: str | None = None


class Upstream:
    """The trusted upstream of one sync: its recipes by name, read and reduced to skeletons only when asked."""

    def __init__(self, recipes: Sequence[TrustedRecipe], readers: Sequence[BlobReader]) -> None:
        self.readers = readers
        self.blobs = frozenset(recipe.blob for recipe in recipes)
        self.by_key: dict[tuple[str, ...], list[tuple[TrustedRecipe, str]]] = {}
        self.everything: list[tuple[TrustedRecipe, str]] = []
        for recipe in sorted(recipes, key=lambda r: (r.path, r.where)):
            named = name_key(recipe.path.rsplit("/", 1)[-1].removesuffix(".nix"))
            if named is not None:
                self.by_key.setdefault(named[0], []).append((recipe, named[1]))
                self.everything.append((recipe, named[1]))
        self._skeletons: dict[str, Skeleton | None] = {}

    def skeletons(self, recipes: Sequence[TrustedRecipe]) -> dict[str, Skeleton | None]:
        """Each recipe's skeleton by blob (None where upstream's own text cannot be read), each read once."""
        for reader, wanted in _by_reader(r for r in recipes if r.blob not in self._skeletons).items():
            for blob, content in self.readers[reader](sorted(wanted)):
                try:
                    self._skeletons[blob] = skeleton_of(content.decode("utf-8", "replace"))
                except NotNix:
                    self._skeletons[blob] = None
        return {recipe.blob: self._skeletons.get(recipe.blob) for recipe in recipes}

    def judge(self, package: str, text: str) -> Verdict:
        """The recipe against the upstream recipes of its project, Python, CUDA line and instruction set: walked only
        as far as one of them goes with it (a recipe that differs early is not read to its end)."""
        if not self.everything:
            return Verdict(skeleton=None, why=NO_UPSTREAM)
        named = name_key(package)
        if named is None:
            return Verdict(skeleton=None, why="its name is none the upstream's recipes are read by")
        key, sm = named
        candidates = self.by_key.get(key, [])
        pool = candidates or _relaxed(self.everything, key)
        largest = max((recipe.size for recipe, _ in pool), default=0) + SLACK_BYTES
        if len(text) > largest:
            return Verdict(skeleton=None, why=_too_large(len(text.encode("utf-8", "surrogatepass")), largest))
        try:
            walk = Walk(text)
            read = self.skeletons([recipe for recipe, _ in pool])
            same, nearest = _race(walk, package, [(recipe, arch, read[recipe.blob]) for recipe, arch in pool])
            fork = walk.so_far()  # the whole recipe where it went with one to the end
        except NotNix as error:
            return Verdict(skeleton=None, why=f"the recipe cannot be read as Nix reads it: {error}")
        if same and candidates:
            why = _arch_refusal(same, sm) or _pin_refusal(fork, same, read, text)
            return Verdict(skeleton=fork, matched=same[0][0], why=why)
        prefix = "" if candidates else _no_candidate(key)
        if same:
            return Verdict(skeleton=fork, why=f"{prefix}{same[0][0].package}, whose values alone it changes")
        if nearest is None:
            return Verdict(skeleton=fork, why="no recipe of the trusted upstream could be read to compare it with")
        return Verdict(skeleton=fork, why=prefix + difference(fork, nearest[1], nearest[0]))


def _race(
    walk: Walk, package: str, pool: list[tuple[TrustedRecipe, str, Skeleton | None]]
) -> tuple[list[tuple[TrustedRecipe, str]], tuple[TrustedRecipe, Skeleton] | None]:
    """Walk the recipe while some upstream skeleton goes with it: (those it equals, the one that went furthest)."""
    alive = [(recipe, arch, skeleton) for recipe, arch, skeleton in pool if skeleton is not None]
    parted: list[tuple[int, TrustedRecipe, Skeleton]] = []
    count = 0
    for _ in walk.steps():
        token = walk.tokens[count]
        staying = []
        for entry in alive:
            if count < len(entry[2].tokens) and entry[2].tokens[count] == token:
                staying.append(entry)
            else:
                parted.append((count, entry[0], entry[2]))
        alive, count = staying, count + 1
        if not alive:
            break
    same = [(recipe, arch) for recipe, arch, skeleton in alive if len(skeleton.tokens) == count]
    parted += [(count, recipe, skeleton) for recipe, _, skeleton in alive if len(skeleton.tokens) != count]
    if not parted:
        return same, None
    best = max(parted, key=lambda entry: (entry[0], entry[1].package == package))
    return same, (best[1], best[2])


_NONE = Skeleton(tokens=("\x1dnone",), offsets=(0,), line_starts=(0,), holes=())


def difference(fork: Skeleton, upstream: Skeleton, recipe: TrustedRecipe) -> str:
    """'line N: … where upstream's NAME (its line M) has …', one line, the texts cut short and printable."""
    at = _shared_start(fork.tokens, upstream.tokens)
    name = recipe.path.rsplit("/", 1)[-1]
    if at >= len(fork.tokens):
        return (
            f"the recipe ends where upstream's {name} ({recipe.where}) goes on with "
            f"{_token(upstream.tokens, at)} at its line {upstream.line(at)}"
        )
    found = _token(fork.tokens, at)
    if at >= len(upstream.tokens):
        return f"line {fork.line(at)}: {found} goes on past the end of upstream's {name} ({recipe.where})"
    return (
        f"line {fork.line(at)}: {found} where upstream's {name} ({recipe.where}) has "
        f"{_token(upstream.tokens, at)} (its line {upstream.line(at)})"
    )


def _token(tokens: Sequence[str], at: int) -> str:
    """The token at `at` as a sentence shows it: a value by its kind; text as written (its line's indentation and
    line break left out, a blank at its end kept), with the token after it where it is indentation alone."""
    if tokens[at].startswith("\x1d"):
        return f"its {tokens[at][1:]} (a value)"
    text = shown(tokens[at]).rstrip("\n").lstrip(" \t")
    if not text and at + 1 < len(tokens):
        text = "".join(shown(token) for token in tokens[at + 1 : at + 3]).rstrip("\n")
    cut = text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."
    return repr(cut)


def _shared_start(first: Sequence[str], second: Sequence[str]) -> int:
    for index, (one, other) in enumerate(zip(first, second, strict=False)):
        if one != other:
            return index
    return min(len(first), len(second))


def _arch_refusal(same: list[tuple[TrustedRecipe, str]], sm: str) -> str | None:
    """A GPU architecture upstream does not build from this skeleton is read only where upstream builds several
    from it: then the skeleton's architecture comes from its values alone."""
    archs = sorted({arch for _, arch in same})
    if sm in archs or len(archs) > 1:
        return None
    name = same[0][0].path.rsplit("/", 1)[-1]
    return (
        f"it is upstream's {name} ({same[0][0].where}) in all but values, a template upstream builds only for "
        f"{archs[0] or 'no GPU'}: {sm or 'no GPU'} from it is not proven"
    )


def _pin_refusal(
    fork: Skeleton, same: list[tuple[TrustedRecipe, str]], read: Mapping[str, Skeleton | None], text: str
) -> str | None:
    """A nixpkgs revision upstream does not use with this skeleton, where the recipe takes a package set whose
    version is the revision's (`python3Packages`, `cudaPackages_13`): the Python or CUDA it builds is not its name's."""
    pins = {value for hole in fork.values(holes.NIXPKGS) for value in hole.value}
    upstream = {
        value
        for recipe, _ in same
        for hole in (read[recipe.blob] or _NONE).values(holes.NIXPKGS)
        for value in hole.value
    }
    if pins <= upstream:
        return None
    names = {shown(token) for token in fork.tokens if token.startswith("identifier\x1f")}
    generic = sorted(names & {"python3Packages", "python3"})
    if not generic and same[0][0].package and _CUDA.search(same[0][0].package):
        generic = [] if any(_EXPLICIT_CUDA.fullmatch(name) for name in names) else ["its CUDA package set"]
    if not generic:
        return None
    return (
        f"it pins nixpkgs {sorted(pins - upstream)[0][:12]}, which upstream does not use with this recipe, and takes "
        f"{generic[0]} from it: which Python or CUDA release that is there is not known"
    )


def _too_large(size: int, largest: int) -> str:
    return (
        f"it is {size} bytes, more than any upstream recipe it could be with {SLACK_BYTES // 1024} KiB of comments, "
        f"spaces and longer values ({largest} bytes): it is not read"
    )


def _relaxed(everything: list[tuple[TrustedRecipe, str]], key: tuple[str, ...]) -> list[tuple[TrustedRecipe, str]]:
    """For the message alone: the upstream recipes nearest in name (project and instruction set, else project)."""
    for keep in ((0, 3), (0,)):
        pool = [(recipe, arch) for recipe, arch in everything if _close(recipe, key, keep)]
        if pool:
            return pool[:64]
    return everything[:64]


def _close(recipe: TrustedRecipe, key: tuple[str, ...], keep: tuple[int, ...]) -> bool:
    named = name_key(recipe.path.rsplit("/", 1)[-1].removesuffix(".nix"))
    return named is not None and all(named[0][index] == key[index] for index in keep)


def _no_candidate(key: tuple[str, ...]) -> str:
    project, python, cuda, isa, option = key
    what = ", ".join(
        part
        for part in (
            f"Python 3.{python[1:]}",
            f"CUDA {cuda.replace('_', '.')}" if cuda else "no CUDA",
            isa and f"instruction set {isa}",
            option,
        )
        if part
    )
    return f"the trusted upstream has no {project} recipe for {what} to compare it with; nearest: "


def _by_reader(recipes: Iterator[TrustedRecipe]) -> dict[int, set[str]]:
    wanted: dict[int, set[str]] = {}
    for recipe in recipes:
        wanted.setdefault(recipe.reader, set()).add(recipe.blob)
    return wanted
