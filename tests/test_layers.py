"""The layer rule, checked on the import graph (ast only: nothing of the project is imported).

The rule in one line: a module imports only from its own room or a lower one, with no import
cycle, no function-local import of a project module, and no other module's `_private` name.

The rooms, lowest first:

    programs < oracles < strategies < harness.data < harness.run < harness.judge
             < harness.report < harness.campaign < harness.serve < harness.cli

- `programs/` is the program model: it needs nothing else of ours. `oracles/` predicts what
  a program does (programs only); `strategies/` draws programs and asks the oracle's op rules.
- `harness.data` is the data shipped in the package (`harness/data/`): it imports nothing of
  ours. The empty `harness` package itself counts as this room.
- `harness.run` lowers programs to jax and runs them (modes, workers, the pool).
- `harness.judge` compares observations with predictions and explains known divergences.
- `harness.report` holds the frozen records a run hands over (`RunSummary`,
  `QualifySummary`, case files) and renders them; it never schedules runs.
- `harness.campaign` schedules and executes runs (fuzz, qualify, minimize, the corpus, the
  error catalogue's cases) and hands report frozen summaries.
- `harness.serve` is the local page.
- the cli room (`harness/cli.py`, `harness/usage.py`, every `harness/cli_*.py`) parses
  command lines and calls the rooms below.

Public exceptions live in `programs/errors.py`, the lowest room, so that every room can
raise and catch them. Function-local imports are allowed only for jax (lazily loaded by the
modes, so that tools which never run jax never pay for it). Imports under
`if TYPE_CHECKING:` count for the room rule but not as cycle edges. Files under
`harness/data/` other than its `__init__.py` are data (reproducers, corpus) and are not
checked. The private-name rule also covers `scripts/` and `benchmarks/`.

Run `python tests/test_layers.py` to print every violation at once.
"""

from __future__ import annotations

import ast
import functools
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("programs", "oracles", "strategies", "harness")
ROOMS = (
    "programs",
    "oracles",
    "strategies",
    "harness.data",
    "harness.run",
    "harness.judge",
    "harness.report",
    "harness.campaign",
    "harness.serve",
    "harness.cli",
)
CLI_MODULES = ("harness.cli", "harness.usage")
# imported inside functions only: jax (loaded by the modes, so that what never runs jax never
# pays for it) and the optional dependencies a run without them never imports
LAZY_ALLOWED = ("jax", "jaxlib", "redis", "hypothesis.extra.redis")
PRIVATE_ALSO = ("scripts", "benchmarks")
ERRORS = "programs.errors"  # the public exceptions' one module
# where else a public exception may be imported from: a package's public surface
ERRORS_PUBLIC = {"programs": ("ProgramFormatError",)}
# an exception class kept where it is, and why
ERRORS_KEPT = {
    # the oracle's control flow: raised by a rule, caught by `predict` and by the strategy
    # that asks the rules; it carries the oracle's own PredictedError, which programs/ cannot
    # name, and never reaches a user
    "OracleError": "oracles.prediction",
}


def room(module: str) -> str | None:
    """The room of a project module, or None when it has none (a new harness module
    outside the sub-packages: put it in one, or name it `harness/cli_*.py`)."""
    parts = module.split(".")
    if parts[0] != "harness":
        return parts[0]
    if module in ("harness", "harness.data") or module.startswith("harness.data."):
        return "harness.data"
    if len(parts) > 1 and f"harness.{parts[1]}" in ROOMS:
        return f"harness.{parts[1]}"
    if module in CLI_MODULES or (len(parts) == 2 and parts[1].startswith("cli_")):
        return "harness.cli"
    return None


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    name = ".".join(rel.parts)
    return name.removesuffix(".__init__")


@functools.cache
def modules() -> dict[str, Path]:
    """Every project module by dotted name; harness/data's files are data, not code."""
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            rel = f.relative_to(ROOT).as_posix()
            if rel.startswith("harness/data/") and rel != "harness/data/__init__.py":
                continue
            found[_module_name(f)] = f
    return found


@dataclass(frozen=True)
class Import:
    """One name an import statement brings in from a project module."""

    module: str  # the importing module
    path: str  # its file, relative to the repository
    line: int
    target: str  # the project module imported (or imported from)
    name: str | None  # the name imported from `target`, or None for the module itself
    local: bool  # inside a function
    type_checking: bool  # under `if TYPE_CHECKING:`

    def where(self) -> str:
        what = self.target if self.name is None else f"{self.target}.{self.name}"
        return f"{self.path}:{self.line} ({self.module} imports {what})"


def _resolve(dotted: str) -> str | None:
    """The longest prefix of `dotted` that is a project module."""
    mods = modules()
    while dotted and dotted not in mods:
        if "." not in dotted:
            return None
        dotted = dotted.rsplit(".", 1)[0]
    return dotted or None


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


@dataclass(frozen=True)
class _Scan:
    imports: tuple[Import, ...]
    lazy_other: tuple[tuple[int, str], ...]  # function-local imports of anything but jax
    attributes: tuple[tuple[int, str, str], ...]  # (line, module alias target, private attribute)


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def _context(node: ast.AST, parents: dict[int, ast.AST]) -> tuple[bool, bool]:
    local = type_checking = False
    cur = parents.get(id(node))
    while cur is not None:
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            local = True
        if isinstance(cur, ast.If) and "TYPE_CHECKING" in ast.unparse(cur.test):
            type_checking = True
        cur = parents.get(id(cur))
    return local, type_checking


def scan(module: str, path: Path) -> _Scan:
    """The project imports of one file, the function-local imports of anything else but
    jax, and the private attributes it reads from project modules imported whole."""
    tree = ast.parse(path.read_text(), filename=str(path))
    parents = _parents(tree)
    rel = path.relative_to(ROOT).as_posix()
    mods = modules()
    imports: list[Import] = []
    lazy: list[tuple[int, str]] = []
    aliases: dict[str, str] = {}  # a local name bound to a project module
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        local, tc = _context(node, parents)
        found: list[tuple[str, str | None]] = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = _package_of(module, path).split(".")
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join([*pkg, base] if base else pkg)
            for a in node.names:
                if f"{base}.{a.name}" in mods:
                    found.append((f"{base}.{a.name}", None))
                    aliases[a.asname or a.name] = f"{base}.{a.name}"
                elif base.split(".")[0] in PACKAGES and (t := _resolve(base)):
                    found.append((t, a.name))
                elif local and not _lazy_allowed(base):
                    lazy.append((node.lineno, base))
        else:
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES and (t := _resolve(a.name)):
                    found.append((t, None))
                    aliases[a.asname or a.name] = t
                elif local and not _lazy_allowed(a.name):
                    lazy.append((node.lineno, a.name))
        for target, name in found:
            if target != module:
                imports.append(Import(module, rel, node.lineno, target, name, local, tc))
    attributes = [
        (n.lineno, aliases[n.value.id], n.attr)
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id in aliases
        and _private(n.attr)
    ]
    return _Scan(tuple(imports), tuple(lazy), tuple(attributes))


def _lazy_allowed(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in LAZY_ALLOWED)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@functools.cache
def scans() -> dict[str, _Scan]:
    return {m: scan(m, p) for m, p in modules().items()}


def _extra_scans() -> dict[str, _Scan]:
    out: dict[str, _Scan] = {}
    for d in PRIVATE_ALSO:
        for f in sorted((ROOT / d).rglob("*.py")):
            out[_module_name(f)] = scan(_module_name(f), f)
    return out


# --- the rules -----------------------------------------------------------------------------


def rooms_unassigned() -> list[str]:
    return [
        f"{p.relative_to(ROOT)}: {m} is in no room; put it in a harness sub-package or name it harness/cli_*.py"
        for m, p in modules().items()
        if room(m) is None
    ]


def upward_imports() -> list[str]:
    out = []
    for s in scans().values():
        for imp in s.imports:
            src, dst = room(imp.module), room(imp.target)
            if src is None or dst is None or ROOMS.index(dst) <= ROOMS.index(src):
                continue
            out.append(
                f"{imp.where()}: room {src} imports the higher room {dst}; "
                f"move what it needs down into {src} or lower, or move the importer up into {dst}"
            )
    return out


def local_imports() -> list[str]:
    out = []
    for m, s in scans().items():
        for imp in s.imports:
            if imp.local:
                out.append(
                    f"{imp.where()}: function-local import of a project module; import it at the top of "
                    "the module (a cycle it dodged is a layering fault: move the shared piece down)"
                )
        for line, what in s.lazy_other:
            out.append(
                f"{modules()[m].relative_to(ROOT)}:{line} ({m} imports {what}): function-local import; "
                "only jax and the optional dependencies (LAZY_ALLOWED) may be imported lazily; import it at the top of the module"
            )
    return out


def private_imports() -> list[str]:
    out = []
    for m, s in {**scans(), **_extra_scans()}.items():
        for imp in s.imports:
            if imp.name is not None and _private(imp.name):
                out.append(
                    f"{imp.where()}: imports another module's private name; make it public "
                    "(drop the underscore, give it a docstring) or move the code that needs it"
                )
        for line, target, attr in s.attributes:
            out.append(
                f"{m}:{line} ({m} reads {target}.{attr}): reads another module's private name; make it "
                "public (drop the underscore, give it a docstring) or move the code that needs it"
            )
    return out


def _edge_targets(imp: Import) -> set[str]:
    """The modules one import makes its module depend on (see `graph`)."""
    m = imp.module
    own = {".".join(m.split(".")[:i]) for i in range(1, m.count(".") + 1)}
    parts = imp.target.split(".")
    out = set()
    for i in range(1, len(parts) + 1):
        t = ".".join(parts[:i])
        if t in modules() and t != m and (t not in own or t == imp.target):
            out.add(t)
    return out


def public_exceptions() -> set[str]:
    """The exception classes programs/errors.py defines."""
    tree = ast.parse((ROOT / "programs" / "errors.py").read_text())
    return {n.name for n in tree.body if isinstance(n, ast.ClassDef)}


def exceptions_elsewhere() -> list[str]:
    """Public exceptions defined outside programs/errors.py, or imported from elsewhere."""
    names = public_exceptions()
    out = []
    for m, path in modules().items():
        if m == ERRORS:
            continue
        tree = ast.parse(path.read_text())
        for n in ast.walk(tree):
            if (
                isinstance(n, ast.ClassDef)
                and not _private(n.name)
                and ERRORS_KEPT.get(n.name) != m
                and any(isinstance(b, ast.Name) and (b.id.endswith(("Error", "Exception")) or b.id in names) for b in n.bases)
            ):
                out.append(
                    f"{path.relative_to(ROOT)}:{n.lineno} ({m} defines {n.name}): a public exception; define it in "
                    "programs/errors.py (or give it a leading underscore if it never leaves its module)"
                )
    extra = _extra_scans()
    for d in ("tests",):
        for f in sorted((ROOT / d).rglob("*.py")):
            extra[_module_name(f)] = scan(_module_name(f), f)
    for s in {**scans(), **extra}.values():
        for imp in s.imports:
            if imp.name in names and imp.target != ERRORS and imp.name not in ERRORS_PUBLIC.get(imp.target, ()):
                out.append(f"{imp.where()}: import the public exception {imp.name} from {ERRORS}")
    return out


def graph() -> dict[str, set[str]]:
    """Project module -> the project modules it imports (TYPE_CHECKING imports aside). An
    import of `a.b.c` also runs the packages `a` and `a.b`, so they count too, except the
    importer's own enclosing packages, which are always initialised before it (an import of
    a name from its own package itself still counts: it needs the package's `__init__`)."""
    edges: dict[str, set[str]] = {m: set() for m in modules()}
    for m, s in scans().items():
        for imp in s.imports:
            if not imp.type_checking:
                edges[m] |= _edge_targets(imp)
    return edges


def cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def cycle_messages() -> list[str]:
    out = []
    for comp in cycles():
        members = set(comp)
        inner = sorted(
            {
                f"{imp.path}:{imp.line} ({imp.module} -> {t}{', function-local' if imp.local else ''})"
                for m in comp
                for imp in scans()[m].imports
                if not imp.type_checking
                for t in _edge_targets(imp) & members
            }
        )
        out.append(
            f"import cycle between {', '.join(comp)}: move what they share into a module below them "
            f"(a function-local import does not break a cycle); the imports that close it: {'; '.join(inner)}"
        )
    return out


# --- the tests -----------------------------------------------------------------------------


def _report(problems: list[str]) -> str:
    return f"{len(problems)} violation(s) of the layer rule (docs/ARCHITECTURE.md, Layers):\n" + "\n".join(problems)


def test_every_module_has_a_room() -> None:
    assert not (p := rooms_unassigned()), _report(p)


def test_no_upward_import() -> None:
    assert not (p := upward_imports()), _report(p)


def test_no_import_cycle() -> None:
    assert not (p := cycle_messages()), _report(p)


def test_no_function_local_import_but_jax() -> None:
    assert not (p := local_imports()), _report(p)


def test_no_import_of_another_modules_private_name() -> None:
    assert not (p := private_imports()), _report(p)


def test_public_exceptions_live_in_one_module() -> None:
    assert not (p := exceptions_elsewhere()), _report(p)


def test_the_rules_see_violations() -> None:
    """The scanner itself: each rule flags a planted violation."""
    src = "import harness.cli\n\ndef f():\n    from programs.model import _freeze\n    import os\n"
    tree = ast.parse(src)
    parents = _parents(tree)
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [_context(n, parents)[0] for n in nodes] == [False, True, True]
    assert room("harness.cli_tools") == "harness.cli" and room("harness.data.corpus") == "harness.data"
    assert room("harness.something") is None
    assert ROOMS.index(room("harness.run.pool") or "") < ROOMS.index(room("harness.campaign.fuzz") or "")


if __name__ == "__main__":
    for title, problems in (
        ("unassigned", rooms_unassigned()),
        ("upward", upward_imports()),
        ("cycles", cycle_messages()),
        ("local", local_imports()),
        ("private", private_imports()),
        ("exceptions", exceptions_elsewhere()),
    ):
        print(f"== {title}: {len(problems)}")
        print("\n".join(problems))
