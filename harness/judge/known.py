"""Known jax divergences, as data (`harness/data/known_divergences.toml`), matched by cause.

An entry explains a divergence when removing its bug removes the divergence
(differential root-causing). Every entry carries a repair (`REPAIRS`): a
semantics-preserving rewrite that makes jax do the right thing (`oracles/rewrites.py`:
non-negative axes, mesh-order axes, a pcast(to='varying') after an op jax types
invariant), which keeps every op so the whole program is checked again; or, for a crash
or a bug of one op or one mode, the program without that op (`without_op`: the outputs
it cannot reach), or the mode left out (`without_mode`: the program's other modes check
it). A divergence is known when the repaired program no longer shows it in that mode;
whatever the repaired program still shows is new (`harness/judge/repair.py`).

Which entries are candidates for a divergence (`explains`), all of these holding:
- one of its signature patterns matches (`kind|mode|where`: the kind is always literal,
  so a bug that gives a wrong error never excuses a wrong value; the mode is literal or a
  comma list, or `*` only with a literal `where`);
- the installed jax is in its `jax_versions` range (a PEP 440 specifier set);
- its program features hold (mesh, specs, flags: `partial_manual`, ...), and an output
  feature (an out_spec's) on the divergent output itself;
- an abort (`abort`: the check's text and source line a crash or an internal error
  stops at) is in the divergence's message: a crash is identified by where it aborts,
  never by the op that happened to be drawn;
- its op features hold on one op *in the divergence's scope*. With a rewrite repair (the
  whole program checked again) that is any op the divergent value depends on (its
  dependency cone), or for an error the op jax raised at and its cone. Without one, the
  exact op: the op a value divergence is put on (the first that goes wrong), else the
  divergent output's cone; the op jax raised at. Only when jax names no op (a compile
  error, a crash, a hang) any op (dead ones too: eager and the grad modes trace them);
  never a body op for an error about the specs;
- its value features hold on the divergent value (or, unlocalised, on some live value).

A mode disagreement is explained when every mode's own divergences are.

An entry of class `policy` is a jax limitation, a feature request or a message-quality
choice, not a bug: counted and checked like any other, reported under its own heading,
never offered as an upstream bug report.
"""

from __future__ import annotations

import fnmatch
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
    AnyOf,
    OpFeature,
    Pattern,
    zero_size,
)
from oracles.prediction import Prediction, ValueType
from oracles.rewrites import REWRITES
from programs.graph import cone, live_ops, slice_outputs
from programs.model import DTYPES, Op, Program, Spec
from programs.points import DERIVATIVE_MODES

DEFAULT_PATH = KNOWN_DIVERGENCES
_KINDS = {k.value for k in DivergenceKind}
_ERRORS = {"unexpected_error", "wrong_error", "missing_error"}
# the repairs: a rewrite (every op kept: the whole program checked again), the program
# without the entry's ops (and the outputs whose out_spec holds its output feature), or
# the mode left out (an entry of program features only: the other modes check the program)
REPAIRS = (*REWRITES, "without_op", "without_mode")
CLASSES = ("bug", "policy")
# divergences that stop a mode (nothing else of the program is checked there)
_STOPS = {"unexpected_error", "wrong_error", "missing_error", "crash", "timeout"}


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
    op_features: tuple[OpFeature | AnyOf, ...] = ()  # all must hold on one op in scope
    value_features: tuple[str, ...] = ()
    repair: str = "without_mode"  # how the program without the bug is made: one of REPAIRS
    case: str = ""  # its own minimized case (path from the data root, harness/data)
    link: str = ""  # the upstream issue or fix, or 'none found: ...'
    reproducer: str = ""
    mode: str = "jit"  # the mode its reproducer runs in
    klass: str = "bug"  # one of CLASSES: a jax bug, or jax's policy (limitation, feature request, wording)
    abort: str = ""  # a shell pattern on the check a crash or internal error stops at ('' none)
    decision: str = ""  # why it is a bug or policy, checked against jax's docs

    def covers(self, jax_version: str) -> bool:
        return _covers(self.jax_versions, jax_version)

    @property
    def rewrite(self) -> str | None:
        """The rewrite of oracles/rewrites.py its repair is (the whole program kept), or None."""
        return self.repair if self.repair in REWRITES else None

    @property
    def errors_downstream(self) -> bool:
        """Whether its errors may be put on ops depending on its buggy op: only when its
        repair keeps every op, so whatever those ops do is checked again."""
        return self.rewrite is not None

    @property
    def policy(self) -> bool:
        return self.klass == "policy"

    def feature_ops(self, p: Program, types: Sequence[ValueType], mode: str | None = None) -> frozenset[int]:
        """The body ops (indices) on which every op feature holds (for a divergence in
        `mode`: a feature limited to other modes, `F@modes`, does not count; None: any)."""
        if not self.op_features:
            return frozenset()
        fs = [f.in_mode(mode) for f in self.op_features]
        if any(f is None for f in fs):
            return frozenset()
        return frozenset(i for i in range(len(p.body)) if all(_holds_on(f, p, i, types) for f in fs if f is not None))

    def repaired_ops(self, p: Program, types: Sequence[ValueType]) -> frozenset[int]:
        """Of `feature_ops`, those a `vary_after` repair already follows (in a repaired
        program): jax still types the op's own result wrongly, and nothing after it."""
        if self.repair != "vary_after":
            return frozenset()
        n_in = len(p.inputs)
        return frozenset(i for i in self.feature_ops(p, types)
                         if any(o.kind == "pcast" and o.p("repair") and o.operands == (n_in + i,) for o in p.body))


def _op_types(p: Program, i: int, types: Sequence[ValueType]) -> list[ValueType]:
    n_in = len(p.inputs)
    idx = [*p.body[i].operands, n_in + i]
    return [types[j] for j in idx if j < len(types)]


def _holds_on(f: OpFeature | AnyOf, p: Program, i: int, types: Sequence[ValueType]) -> bool:
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
    if d.kind.value == "wrong_error" and d.raised_at is None and d.mode in DERIVATIVE_MODES:
        # the grad modes (every derivative mode) trace the forward program first (every value's type recorded),
        # then raise while differentiating it: where jax raised is not known, and it
        # differentiates every op, dead ones too (a pmax with no derivative rule before
        # the op an invalid program's defect is at)
        return Scope.whole(p)
    if d.kind.value == "wrong_error" and d.raised_at == len(p.body):
        # jax traced the whole body, then raised (lowering, compiling, the out_specs):
        # it names no op, and lowering fails at any op, dead ones too (a dead psum_scatter
        # of a negative scatter_dimension fails StableHLO verification under jit before
        # a later ppermute's bad perm is checked)
        return Scope.whole(p)
    if d.kind.value == "wrong_error" and d.raised_at is None and d.output is None and d.op_index is not None:
        # jax raised another error than the one predicted at op `op_index`, and where is not
        # known: at that op or at any op jax traced before it (the body runs in order), a
        # bug op whose wrong shape makes a later op raise too
        return Scope(None, None, frozenset(range(d.op_index + 1)), False)
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


def _aborts_at(e: KnownDivergence, d: Divergence) -> bool:
    """Whether `d` stops where `e` says its bug aborts (no `abort`: any)."""
    if not e.abort or d.kind.value not in ("crash", "unexpected_error", "wrong_error"):
        return True
    return fnmatch.fnmatchcase(d.message, f"*{e.abort}*")


def explains(e: KnownDivergence, d: Divergence, p: Program, pred: Prediction, jax_version: str) -> bool:
    """Whether entry `e` is a candidate cause of divergence `d` of program `p` (see the
    module doc); its repair decides (harness/judge/repair.py)."""
    if not any(pat.matches(d) for pat in e.patterns) or not e.covers(jax_version):
        return False
    if not all(PROGRAM_FEATURES[f](p) for f in e.program_features):
        return False
    if not _aborts_at(e, d):
        return False
    if e.abort and d.kind.value in ("crash", "unexpected_error", "wrong_error"):
        # a crash (or internal check) is identified by where it aborts, not by the op jax
        # was at (its op features say what its repair leaves out)
        return True
    # an output feature (an out_spec's) holds on the divergent output itself
    if d.output is not None and d.output < len(p.outputs):
        if not all(OUTPUT_FEATURES[f](p, d.output) for f in e.program_features if f in OUTPUT_FEATURES):
            return False
    s = scope_of(d, p, pred)
    if not value_features_hold(e, s, p, pred):
        return False
    if not e.op_features:
        return True
    at_fault = e.feature_ops(p, pred.value_types, d.mode)
    repaired = e.repaired_ops(p, pred.value_types)
    if repaired:
        # a repaired op's own type is still jax's; what follows it is checked
        if d.kind == DivergenceKind.VMA and d.op_index in repaired:
            return True
        at_fault -= repaired
    if e.repair == "vary_after" and d.kind == DivergenceKind.VALUE and d.op_index in at_fault:
        return False  # (a typing bug makes the ops after the op go wrong, never the op's own values)
    if d.kind.value in _ERRORS and s.localised and not e.errors_downstream:
        return s.at_op is not None and s.at_op in at_fault
    if d.kind.value not in _STOPS and d.op_index is not None and not e.errors_downstream:
        # a value or type put on the op that first goes wrong: that op is the entry's (no
        # rewrite checks the ops after it again)
        return d.op_index in at_fault
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


def rewritten(used: Sequence[KnownDivergence], p: Program, pred: Prediction) -> Program | None:
    """`p` with the rewrite of each entry of `used` that has one applied at the ops its
    features hold on (every op kept: `vary_after` last, as it inserts ops), or None when
    none applies."""
    q = p
    vary: frozenset[int] = frozenset()
    for e in used:
        if e.rewrite == "vary_after":
            vary |= e.feature_ops(p, pred.value_types)
        elif e.rewrite is not None:
            q = REWRITES[e.rewrite](q, e.feature_ops(p, pred.value_types) if e.op_features else None) or q
    if vary:
        q = REWRITES["vary_after"](q, vary) or q
    return None if q == p else q


def whole(q: Program | None, p: Program) -> bool:
    """Whether `q`, a program derived from `p`, is `p` rewritten: every op and output kept."""
    return q is not None and len(q.outputs) == len(p.outputs) and len(q.body) >= len(p.body) and q.inputs == p.inputs


def checked_in_full(explained: Sequence[Explained], p: Program, q: Program | None) -> bool:
    """Whether program `p`, whose divergences `explained` are all known or policy and whose
    program without the known bugs is `q` (`derived_program`), counts as checked in full
    (`RunSummary.checked_in_full`): every divergence is one of
    - explained by an entry with a rewrite repair, `q` being `p` rewritten (every op and
      output kept: it is checked again in every mode the program ran in);
    - explained by a policy entry (jax refuses the mode by design, as a mode reports a
      program unsupported: nothing there to check);
    - of one output or value (a value, shape, dtype, varying axes, sharding, lowering
      fact): the mode ran and compared the program's other outputs.
    A known error, crash or hang of an entry without a rewrite stopped its mode: the
    program counts only where it was repaired whole."""
    rewritten_whole = whole(q, p)
    for x in explained:
        e, d = x.entry, x.divergence
        if e is None:
            return False
        if e.policy or d.kind == DivergenceKind.MODE_DISAGREEMENT or d.kind.value not in _STOPS:
            continue
        if e.rewrite is not None and rewritten_whole:
            continue
        return False
    return True


def derived_program(used: Sequence[KnownDivergence], p: Program, pred: Prediction) -> Program | None:
    """The program without the known bugs `used` explained: the repair of each. Where an
    entry has a rewrite that applies (`rewritten`): every such rewrite, and nothing sliced
    away, so the whole rewritten program is checked again (the bugs of entries without a
    rewrite show there once more, each explained only by its own entry, and that check's
    own derived program slices them off). Else only the outputs that no feature op of
    these entries reaches (`without_op`), and the values those ops read where no bug op
    feeds them (`_sliced_with_feeders`); an entry whose repair is `without_mode` adds
    nothing (the program's other modes check it). None when that is `p` itself or has no
    output left."""
    q = rewritten(used, p, pred)
    if q is not None:
        return q
    q = p
    used = [e for e in used if e.repair != "without_mode"]
    bad: frozenset[int] = frozenset()
    for e in used:
        bad |= e.feature_ops(p, pred.value_types)
    # outputs whose own out_spec gives an entry its program feature (an unreduced out_spec),
    # or whose value has its value feature (a zero-size output)
    spec_bad = {k for e in used for f in e.program_features if f in OUTPUT_FEATURES
                for k in range(len(p.outputs)) if OUTPUT_FEATURES[f](p, k)}
    spec_bad |= {k for e in used if "value:zero_size" in e.value_features
                 for k, o in enumerate(pred.outputs) if zero_size(o.global_shape)}
    if bad or spec_bad:
        keep = tuple(k for k, o in enumerate(p.outputs) if not (cone(p, o) & bad) and k not in spec_bad)
        # an invalid program keeps the op its error is at, dead or not, where no bug op
        # feeds it: the program without the bugs fails the same way and checks the other
        # ops' cells by error (else a crash at a bug op would leave the defect's op, e.g.
        # a dead psum_scatter over a non-manual axis, never checked by error in eager)
        at = pred.error.op_index if pred.error is not None else None
        also = frozenset({at}) if at is not None and not (cone(p, len(p.inputs) + at) & bad) else frozenset()
        # (a bug op no output reaches is dropped too: eager and abstract trace dead ops,
        # and jax raises there, so the cells only those modes check would be left missed
        # with no program without the bug)
        if len(keep) < len(p.outputs) or bad - live_ops(p) - also:
            q = _sliced_with_feeders(p, keep, also, bad, pred)
    return None if q == p or not q.outputs else q


def _sliced_with_feeders(p: Program, keep: tuple[int, ...], also: frozenset[int], bad: frozenset[int],
                         pred: Prediction) -> Program:
    """`p` sliced to its outputs `keep` and the ops `also` (`slice_outputs`), with an
    output more for each value a bug op (`bad`) reads that no bug op makes or feeds and
    that the slice would drop: its op's cells are checked in the program without the bug
    too (else slicing off a crashing op also drops the op that fed it, e.g. a pshuffle in
    a cond, whose cells are then never checked in that mode). Each such output's out_spec names the manual axes the
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
    if p.form.out_specs == "single" and len(set(wide.out_specs)) > 1:
        # (one spec for every output would give each added output the first's: the
        # outputs' own specs, as a tuple)
        wide = replace(wide, form=replace(p.form, out_specs="tuple"))
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


def shown_in(e: KnownDivergence, modes: Sequence[str]) -> bool:
    """Whether a run in `modes` can say that its own case still shows its bug: it runs
    the mode its reproducer runs in (a run of the abstract tier alone shows no wrong
    value, and would call every value bug fixed)."""
    return e.mode in modes and any(pat.modes is None or set(pat.modes) & set(modes) for pat in e.patterns)


def case_path(e: KnownDivergence) -> Path:
    """An entry's own case, from the data root (harness/data; or absolute)."""
    p = Path(e.case)
    return p if p.is_absolute() else DATA / p

