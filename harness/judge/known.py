"""Known jax divergences, as data (`harness/data/known_divergences.toml`), matched by cause.

An entry explains a divergence only when all of these hold:
- one of its signature patterns matches (`kind|mode|where`: the kind is always literal,
  so a bug that gives a wrong error never excuses a wrong value; the mode is literal, a
  comma list, or `*` for a bug the reason says every mode shows);
- the installed jax is in its `jax_versions` range (a PEP 440 specifier set);
- its program features hold (mesh, specs, flags: `partial_manual`, ...);
- its op features hold on one op *in the divergence's scope*: for a wrong value, shape,
  dtype or vma, an op the divergent value depends on (its dependency cone); for an
  error, the op jax raised at (or the one that should have raised), and its cone only
  when the entry says the bug's errors surface downstream (`errors_downstream`); only
  when jax names no op (a compile error, a crash, a hang) any op (dead ones too: eager
  and the grad modes trace them); never a body op for an error about the specs;
- its value features hold on the divergent value (or, unlocalised, on some live value).

A mode disagreement is explained when every mode's own divergences are.

An entry may name a rewrite (`oracles/rewrites.py`): the same program without the buggy
form. Whenever an entry explains a divergence, the program that does not hold the bug
(the whole rewrite, or else the program sliced to the outputs no feature op reaches:
`derived_program`) is checked like any other, in fuzz, replay and qualify, so the rest
of the program is never excused.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from harness.data import DATA, KNOWN_DIVERGENCES
from harness.judge.compare import Divergence, DivergenceKind
from harness.judge.known_features import (
    OUTPUT_FEATURES,
    PROGRAM_FEATURES,
    OpFeature,
    Pattern,
    zero_size,
)
from oracles.prediction import Prediction, ValueType
from oracles.rewrites import REWRITES
from programs.graph import cone, live_ops, slice_outputs
from programs.model import DTYPES, Op, Program, Spec

DEFAULT_PATH = KNOWN_DIVERGENCES
_KINDS = {k.value for k in DivergenceKind}
_ERRORS = {"unexpected_error", "wrong_error", "missing_error"}


# ------------------------------------------------------------------------ entries


@functools.lru_cache(maxsize=1024)
def _covers(jax_versions: str, jax_version: str) -> bool:
    """Whether the PEP 440 range `jax_versions` holds `jax_version` (asked for every entry
    of every program the run schedules: parsed once per pair)."""
    if jax_versions in ("", "*"):
        return True
    try:
        return SpecifierSet(jax_versions).contains(Version(jax_version), prereleases=True)
    except InvalidVersion:
        return False


@dataclass(frozen=True)
class KnownDivergence:
    id: str
    reason: str
    patterns: tuple[Pattern, ...]
    jax_versions: str  # a PEP 440 specifier set ('' or '*': every version)
    program_features: tuple[str, ...] = ()
    op_features: tuple[OpFeature, ...] = ()  # all must hold on one op in scope
    value_features: tuple[str, ...] = ()
    errors_downstream: bool = False  # its errors may surface at ops depending on the feature op
    rewrite: str | None = None  # a name in oracles.rewrites.REWRITES
    case: str = ""  # its own minimized case (path from the data root, harness/data)
    link: str = ""  # the upstream issue or fix, or 'none found: ...'
    reproducer: str = ""
    mode: str = "jit"  # the mode its reproducer runs in

    def covers(self, jax_version: str) -> bool:
        return _covers(self.jax_versions, jax_version)

    def feature_ops(self, p: Program, types: Sequence[ValueType]) -> frozenset[int]:
        """The body ops (indices) on which every op feature holds."""
        if not self.op_features:
            return frozenset()
        return frozenset(i for i in range(len(p.body)) if all(_holds_on(f, p, i, types) for f in self.op_features))


def _op_types(p: Program, i: int, types: Sequence[ValueType]) -> list[ValueType]:
    n_in = len(p.inputs)
    idx = [*p.body[i].operands, n_in + i]
    return [types[j] for j in idx if j < len(types)]


def _holds_on(f: OpFeature, p: Program, i: int, types: Sequence[ValueType]) -> bool:
    op = p.body[i]
    ts = _op_types(p, i, types)
    if f.holds(p, op, ts):
        return True
    # the one op inside a nested shard_map counts as the nested op, a transform's steps as
    # the transform (its derivative runs their jvp and transpose rules)
    if op.kind == "transform":
        return any(f.holds(p, st, ts) for st in op.steps())
    return op.kind == "shard_map" and f.holds(p, op.inner_op(), ts)


# ------------------------------------------------------------------------ scope


@dataclass(frozen=True)
class Scope:
    """Where a divergence can have come from: the divergent value (None: jax named no
    value), the op at fault (errors), and the ops it may depend on."""

    value: int | None
    at_op: int | None
    ops: frozenset[int]
    localised: bool

    @staticmethod
    def whole(p: Program) -> Scope:
        """No value or op named: any op of `p`, dead ones too."""
        return Scope(None, None, frozenset(range(len(p.body))), False)


def scope_of(d: Divergence, p: Program, pred: Prediction) -> Scope:
    n_in = len(p.inputs)
    value: int | None = None
    if d.kind.value == "wrong_error" and d.raised_at is None and d.mode in ("grad", "grad_remat"):
        # the grad modes trace the forward program first (every value's type recorded),
        # then raise while differentiating it: where jax raised is not known, and it
        # differentiates every op, dead ones too (a pmax with no derivative rule before
        # the op an invalid program's defect is at)
        return Scope.whole(p)
    if d.kind.value == "wrong_error" and d.raised_at == len(p.body):
        # jax traced the whole body, then raised (lowering, compiling, the out_specs):
        # it names no op, and lowering fails at any op, dead ones too (a dead psum_scatter
        # of a negative scatter_dimension fails StableHLO verification under jit before
        # a later ppermute's bad perm is checked: fuzz seed 1, 60 s)
        return Scope.whole(p)
    if d.output is not None and d.output < len(p.outputs):
        value = p.outputs[d.output]
    elif d.kind.value == "wrong_error" and d.raised_at is not None:
        value = n_in + d.raised_at  # the op jax raised at (its error, not the predicted one)
    elif d.op_index is not None:
        value = n_in + d.op_index
    elif d.kind.value in ("missing_error", "wrong_error") and pred.error is not None and pred.error.output is not None:
        value = p.outputs[pred.error.output] if pred.error.output < len(p.outputs) else None
    if value is None:
        if d.kind.value == "missing_error" and pred.error is not None and pred.error.op_index is None:
            # the predicted error is about the specs (checked before or after the body,
            # naming no output) and jax raised nothing: no body op can have hidden it
            # (a wrong error, though, may come from any op jax ran first)
            return Scope(None, None, frozenset(), True)
        # jax named no op (a compile error, a crash, a hang): any op, dead ones too
        # (eager and the grad modes trace every op; jit drops dead ones only when lowering)
        return Scope.whole(p)
    at_op = value - n_in if value >= n_in else None
    return Scope(value, at_op, cone(p, value), True)


def value_features_hold(e: KnownDivergence, s: Scope, p: Program, pred: Prediction) -> bool:
    if not e.value_features:
        return True
    types = pred.value_types
    if s.value is not None:
        vals = [s.value]
    else:
        vals = sorted({v for i in live_ops(p) for v in (*p.body[i].operands, len(p.inputs) + i)} | set(p.outputs))
    shapes = [types[v].shape for v in vals if v < len(types)]
    shapes += [o.global_shape for o in pred.outputs if s.value is None]
    return all(any(zero_size(sh) for sh in shapes) for f in e.value_features if f == "value:zero_size")


def explains(e: KnownDivergence, d: Divergence, p: Program, pred: Prediction, jax_version: str) -> bool:
    """Whether entry `e` explains divergence `d` of program `p` (see the module doc)."""
    if not any(pat.matches(d) for pat in e.patterns) or not e.covers(jax_version):
        return False
    if not all(PROGRAM_FEATURES[f](p) for f in e.program_features):
        return False
    s = scope_of(d, p, pred)
    if not value_features_hold(e, s, p, pred):
        return False
    if not e.op_features:
        return True
    at_fault = e.feature_ops(p, pred.value_types)
    if d.kind.value in _ERRORS and s.localised and not e.errors_downstream:
        return s.at_op is not None and s.at_op in at_fault
    return bool(at_fault & s.ops)


def find(entries: Sequence[KnownDivergence], d: Divergence, divs: Sequence[Divergence], p: Program,
         pred: Prediction, jax_version: str) -> KnownDivergence | None:
    """The entry that explains `d` (a divergence of `p`, whose divergences are `divs`).
    A mode disagreement is explained by the entry of the first of the program's other
    divergences when every one of them is explained (two known bugs in two modes make
    the modes disagree, which says nothing new)."""
    if d.kind != DivergenceKind.MODE_DISAGREEMENT:
        return next((e for e in entries if explains(e, d, p, pred, jax_version)), None)
    own = [x for x in divs if x.kind != DivergenceKind.MODE_DISAGREEMENT]
    found = [find(entries, x, divs, p, pred, jax_version) for x in own]
    return found[0] if found and all(f is not None for f in found) else None


def derived_program(used: Sequence[KnownDivergence], p: Program, pred: Prediction) -> Program | None:
    """The program without the known bugs `used` explained. Where an entry has a rewrite
    that applies: every such rewrite, and nothing sliced away, so the whole rewritten
    program is checked again (the bugs of entries without a rewrite show there once more,
    each explained only by its own entry, and that check's own derived program slices
    them off). Else only the outputs that no feature op of these entries reaches, and the
    values those ops read where no bug op feeds them (`_sliced_with_feeders`). None when
    that is `p` itself or has no output left."""
    q = p
    for e in used:
        if e.rewrite is not None:
            q = REWRITES[e.rewrite](q) or q
    if q != p:
        return q
    bad: frozenset[int] = frozenset()
    for e in used:
        bad |= e.feature_ops(p, pred.value_types)
    # outputs whose own out_spec gives an entry its program feature (an unreduced out_spec)
    spec_bad = {k for e in used for f in e.program_features if f in OUTPUT_FEATURES
                for k in range(len(p.outputs)) if OUTPUT_FEATURES[f](p, k)}
    if bad or spec_bad:
        keep = tuple(k for k, o in enumerate(p.outputs) if not (cone(p, o) & bad) and k not in spec_bad)
        # an invalid program keeps the op its error is at, dead or not, where no bug op
        # feeds it: the program without the bugs fails the same way and checks the other
        # ops' cells by error (seed 0: a bf16 psum crashed eager on a program whose defect
        # was a dead psum_scatter over a non-manual axis; without it the derived program
        # was valid, and its psum_scatter cells by error were never checked in eager)
        at = pred.error.op_index if pred.error is not None else None
        also = frozenset({at}) if at is not None and not (cone(p, len(p.inputs) + at) & bad) else frozenset()
        # (a bug op no output reaches is dropped too: eager and abstract trace dead ops,
        # and jax raised there; fuzz seed 12, 60 s: a dead pcast to 'unreduced' of a
        # precv result made abstract raise, and the program's pbroadcast cells, which
        # only abstract checks, were left missed with no program without the bug)
        if len(keep) < len(p.outputs) or bad - live_ops(p) - also:
            q = _sliced_with_feeders(p, keep, also, bad, pred)
    return None if q == p or not q.outputs else q


def _sliced_with_feeders(p: Program, keep: tuple[int, ...], also: frozenset[int], bad: frozenset[int],
                         pred: Prediction) -> Program:
    """`p` sliced to its outputs `keep` and the ops `also` (`slice_outputs`), with an
    output more for each value a bug op (`bad`) reads that no bug op makes or feeds and
    that the slice would drop: its op's cells are checked in the program without the bug
    too (seed 0: eager aborted at a bf16 psum over a partial-manual axis, and the program
    sliced without it lost the pshuffle in a cond that fed it: `pshuffle|wrap=cond|by_error`
    was never checked in eager). Each such output's out_spec names the manual axes the
    value varies along (the oracle's types; every manual axis without check_vma) on its
    first dimension, or is P() where it varies along none; a scalar that varies is
    output as its sum with a zero of shape (1,) (`jnp.full`: two ops more; of an argument's
    dtype only). A reduced or
    unreduced value, or a program wrapped in auto_axes / explicit_axes (one spec per
    output there) gets no output."""
    n_in = len(p.inputs)
    needed: set[int] = set()
    for o in (*(p.outputs[k] for k in keep), *(n_in + i for i in also)):
        needed |= cone(p, o)
    types = pred.value_types
    order = {a: i for i, a in enumerate(p.mesh.names)}
    extra: list[tuple[int, Spec]] = []
    for v in sorted({v for i in bad for v in p.body[i].operands}) if p.wrap is None else ():
        if v < n_in or v >= len(types) or (v - n_in) in needed or cone(p, v) & bad:
            continue
        t = types[v]
        if t.unreduced or t.reduced:
            continue
        axes = tuple(sorted(t.vma if t.vma is not None else p.manual_axes, key=order.__getitem__))
        if axes and not t.shape and t.dtype not in DTYPES:
            continue  # (a const of int16 / int64 / uint64, a dtype only a result has: none)
        extra.append((v, Spec(((axes,) + (None,) * (max(len(t.shape), 1) - 1)) if axes else ())))
        needed |= cone(p, v)
    # (the extra values as outputs of `p`, sliced with the kept ones: slice_outputs renumbers)
    wide = replace(p, outputs=(*p.outputs, *(v for v, _ in extra)), out_specs=(*p.out_specs, *(sp for _, sp in extra)))
    q = slice_outputs(wide, (*keep, *range(len(p.outputs), len(wide.outputs))), also)
    body, outputs = list(q.body), list(q.outputs)
    for j, (v, spec) in enumerate(extra, start=len(keep)):
        if spec.entries and not types[v].shape:  # (a varying scalar: no out_spec names its axes)
            body.append(Op.make("const", (), shape=(1,), dtype=types[v].dtype, value=0))
            body.append(Op.make("add", (outputs[j], n_in + len(body) - 1)))
            outputs[j] = n_in + len(body) - 1
    return replace(q, body=tuple(body), outputs=tuple(outputs))


@dataclass(frozen=True)
class Explained:
    """One divergence of a checked program and the entry that explains it (None: new)."""

    divergence: Divergence
    entry: KnownDivergence | None


def explain_all(entries: Sequence[KnownDivergence], divs: Sequence[Divergence], p: Program, pred: Prediction,
                jax_version: str) -> tuple[Explained, ...]:
    return tuple(Explained(d, find(entries, d, divs, p, pred, jax_version)) for d in divs)


ENTRY_STATUSES = ("matched", "unseen", "fixed", "not_this_version")


@dataclass(frozen=True)
class EntryStatus:
    """An entry in one run: `matched` (it explained `count` divergences), `unseen`
    (nothing matched, but its own case still shows the bug), `fixed` (its own case no
    longer shows it on this jax: the entry is stale), `not_this_version` (its
    jax_versions range leaves out this jax)."""

    id: str
    status: str
    count: int
    jax_versions: str
    case: str
    link: str


def entry_case_shows(e: KnownDivergence, p: Program, res_divs: Sequence[Divergence], pred: Prediction,
                     jax_version: str) -> bool:
    """Whether `e` explains some divergence of its own case's check (the bug is there)."""
    return any(d.kind != DivergenceKind.MODE_DISAGREEMENT and explains(e, d, p, pred, jax_version) for d in res_divs)


def statuses(entries: Sequence[KnownDivergence], matched: dict[str, int], shows: dict[str, bool],
             jax_version: str) -> tuple[EntryStatus, ...]:
    """Every entry's status; `shows`: entry id -> whether its case showed the bug in this
    run (absent: not checked)."""
    out = []
    for e in entries:
        if not e.covers(jax_version):
            st = "not_this_version"
        elif matched.get(e.id):
            st = "matched" if shows.get(e.id, True) else "fixed"
        else:
            st = "fixed" if shows.get(e.id) is False else "unseen"
        out.append(EntryStatus(e.id, st, matched.get(e.id, 0), e.jax_versions, e.case, e.link))
    return tuple(out)


def entry_modes(e: KnownDivergence, modes: Sequence[str]) -> tuple[str, ...]:
    """The modes (of `modes`) that its patterns name: where its case is checked."""
    named = {m for pat in e.patterns for m in (pat.modes or modes)}
    return tuple(m for m in modes if m in named) or tuple(modes)


def case_path(e: KnownDivergence) -> Path:
    """An entry's own case, from the data root (harness/data; or absolute)."""
    p = Path(e.case)
    return p if p.is_absolute() else DATA / p

