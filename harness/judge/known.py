"""Known jax divergences, as data (`reports/known_divergences.toml`), matched by cause.

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

import fnmatch
import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from harness.judge.compare import Divergence, DivergenceKind
from harness.judge.known_features import (
    OUTPUT_FEATURES,
    PROGRAM_FEATURES,
    OpFeature,
    Pattern,
    _zero_size,
)
from oracles.prediction import Prediction, ValueType
from oracles.rewrites import REWRITES
from programs.graph import cone, live_ops, slice_outputs
from programs.model import DTYPES, Op, Program, Spec
from programs.points import DERIVATIVE_MODES

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "reports" / "known_divergences.toml"
_KINDS = {k.value for k in DivergenceKind}
_ERRORS = {"unexpected_error", "wrong_error", "missing_error"}


class KnownDivergencesError(ValueError):
    """The known-divergences file is malformed; the message names the file and entry."""


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
    case: str = ""  # its own minimized case (path from the repository root)
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


def _value_features_hold(e: KnownDivergence, s: Scope, p: Program, pred: Prediction) -> bool:
    if not e.value_features:
        return True
    types = pred.value_types
    if s.value is not None:
        vals = [s.value]
    else:
        vals = sorted({v for i in live_ops(p) for v in (*p.body[i].operands, len(p.inputs) + i)} | set(p.outputs))
    shapes = [types[v].shape for v in vals if v < len(types)]
    shapes += [o.global_shape for o in pred.outputs if s.value is None]
    return all(any(_zero_size(sh) for sh in shapes) for f in e.value_features if f == "value:zero_size")


def explains(e: KnownDivergence, d: Divergence, p: Program, pred: Prediction, jax_version: str) -> bool:
    """Whether entry `e` explains divergence `d` of program `p` (see the module doc)."""
    if not any(pat.matches(d) for pat in e.patterns) or not e.covers(jax_version):
        return False
    if not all(PROGRAM_FEATURES[f](p) for f in e.program_features):
        return False
    s = scope_of(d, p, pred)
    if not _value_features_hold(e, s, p, pred):
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


# ------------------------------------------------------------------------ use


def known_trouble(entries: Sequence[KnownDivergence], p: Program, pred: Prediction, jax_version: str, mode: str) -> bool:
    """Whether a valid program holds what some entry says makes jax fail or go wrong in
    `mode` (its program features, and its op features on one live op): the value tier
    then runs it alone, not in a batch it would make fail."""
    live = live_ops(p)
    for e in entries:
        if not e.covers(jax_version) or not (e.op_features or e.program_features or e.value_features):
            continue
        if not any(pat.kind not in ("missing_error", "wrong_error") and (pat.modes is None or mode in pat.modes)
                   for pat in e.patterns):
            continue
        if not all(PROGRAM_FEATURES[f](p) for f in e.program_features):
            continue
        if not _value_features_hold(e, Scope.whole(p), p, pred):
            continue  # (zero-size-output-blocks, whose only feature is a value's, held every program: none was batched)
        if e.op_features and not (e.feature_ops(p, pred.value_types) & live):
            continue
        return True
    return False


def raise_entries(entries: Sequence[KnownDivergence], p: Program, types: Sequence[ValueType], jax_version: str,
                  modes: Sequence[str]) -> list[tuple[KnownDivergence, frozenset[str], frozenset[int]]]:
    """(entry, the modes of `modes` it names, the body ops) for each entry that says jax
    raises, crashes or hangs at those ops of the valid program `p` in those modes (an
    `unexpected_error`, `crash` or `timeout` signature naming them; its program features
    holding; its op features on those ops, or every op for an entry with program
    features only). `types`: the oracle's value types."""
    out = []
    for e in entries:
        if not (e.op_features or e.program_features):
            continue
        ms = _raise_modes(e, p, jax_version, modes)
        if not ms:
            continue
        ops = e.feature_ops(p, types) if e.op_features else frozenset(range(len(p.body)))
        if ops:
            out.append((e, ms, ops))
    return out


def _raise_modes(e: KnownDivergence, p: Program, jax_version: str, modes: Sequence[str]) -> frozenset[str]:
    """The modes of `modes` in which entry `e` says jax raises, crashes or hangs on `p`
    (an `unexpected_error`, `crash` or `timeout` signature naming them; its program
    features holding, and its jax versions covering `jax_version`)."""
    if not e.covers(jax_version):
        return frozenset()
    ms = frozenset(m for pat in e.patterns if pat.kind in ("unexpected_error", "crash", "timeout")
                   for m in modes if pat.modes is None or m in pat.modes)
    return ms if ms and all(PROGRAM_FEATURES[f](p) for f in e.program_features) else frozenset()


def known_raise_ops(entries: Sequence[KnownDivergence], p: Program, types: Sequence[ValueType], jax_version: str,
                    modes: Sequence[str]) -> dict[str, frozenset[int]]:
    """Per mode of `modes`, the body ops of the valid program `p` at which some entry
    says jax raises, crashes or hangs in that mode (`raise_entries`), leaving out
    entries with a rewrite (their rewritten program keeps the ops after the buggy one).
    The mode then checks nothing of `p`, and the program without the bug (the outputs
    those ops do not reach: `derived_program`) none of the ops after them: the value
    tier does not claim those ops' cells there, and the sweep draws their foci again
    (harness/campaign/cells.py `lost_cells`). `types`: the oracle's value types."""
    out: dict[str, set[int]] = {}
    # (the entries with a rewrite left out before their op features are matched: their
    # matches were thrown away)
    for _, ms, ops in raise_entries([e for e in entries if e.rewrite is None], p, types, jax_version, modes):
        for m in ms:
            out.setdefault(m, set()).update(ops)
    return {m: frozenset(v) for m, v in out.items()}


def known_raise_outputs(entries: Sequence[KnownDivergence], p: Program, types: Sequence[ValueType], jax_version: str,
                        mode: str) -> frozenset[int]:
    """The outputs (indices into `p.outputs`) of the valid program `p` that some entry
    says jax raises, crashes or hangs on in `mode` (an `unexpected_error`, `crash` or
    `timeout` signature naming it; its program features holding): those reaching an op
    its op features hold on (every output, for an entry of program features alone),
    those whose out_spec gives it its output feature, and those with a value of its
    value features (a zero-size one) in their cone. Eager runs a program's other outputs
    apart from them (harness/campaign/fuzz.py `_Scheduler.queue_late`): it raises for
    the whole program at one such output, and checked nothing of it (fuzz seed 10, 60 s,
    cold: 11 of 56 eager parts of valid sweep programs raised, a known bug at one
    output each, 8.3 s of 48 s of eager's time). `types`: the oracle's value types."""
    n_in = len(p.inputs)
    out: set[int] = set()
    for e in entries:
        if not (e.op_features or e.program_features or e.value_features) or not _raise_modes(e, p, jax_version, (mode,)):
            continue
        ops = e.feature_ops(p, types) if e.op_features else None
        spec = [f for f in e.program_features if f in OUTPUT_FEATURES]
        for k, o in enumerate(p.outputs):
            c = cone(p, o)
            if ops is not None and not (c & ops):
                continue
            if spec and not any(OUTPUT_FEATURES[f](p, k) for f in spec):
                continue
            if e.value_features:
                vals = {o} | {v for i in c for v in (*p.body[i].operands, n_in + i)}
                if not any(v < len(types) and _zero_size(types[v].shape) for v in vals):
                    continue
            out.add(k)
    return frozenset(out)


def known_error_trouble(entries: Sequence[KnownDivergence], p: Program, types: Sequence[ValueType], jax_version: str,
                        error: str | None = None) -> frozenset[int]:
    """The body ops of an invalid program at which some entry says jax raises another
    error than the one predicted, or none, in some mode (`error_trouble_modes`, over
    every mode). Such a program checks its cells by error in none of the modes jax goes
    wrong in, so the sweep draws its programs by error without one at an op of another
    kind than the focus (harness/campaign/sweep.py)."""
    return frozenset().union(*error_trouble_modes(entries, p, types, jax_version, None, error).values())


# the modes that run a program's body op by op: an invalid program's ops before its error
# run there, and a known crash or hang at one of them comes before the error
OP_BY_OP_MODES = frozenset({"eager"})


def _predicts(pat: Pattern, error: str | None) -> bool:
    """Whether a `missing_error` / `wrong_error` pattern can match a divergence of a
    program whose predicted error is of kind `error` (None: any): its `where` names the
    predicted kind (`out_spec_replication`, `collective_param->*`)."""
    if error is None:
        return True
    want = pat.where.split("->", 1)[0] if pat.kind == "wrong_error" else pat.where
    return fnmatch.fnmatchcase(error, want)


def error_trouble_modes(entries: Sequence[KnownDivergence], p: Program, types: Sequence[ValueType], jax_version: str,
                        modes: Sequence[str] | None, error: str | None = None) -> dict[str | None, frozenset[int]]:
    """Per mode of `modes`, the body ops of an invalid program at which some entry says
    jax raises another error than the one predicted, or none, in that mode (a
    `missing_error` or `wrong_error` signature naming it and the predicted error's kind
    `error`, when given; its program features holding): those its op features hold
    on, dead ones too (jax checks some parameters as it traces an op, others only as it
    lowers or runs one); every op for an entry with program features only. With `modes`
    None, one entry None for every mode. `types`: the oracle's value types, as far as
    it traces. (pmin-no-differentiation-rule names every pmin in the grad modes only,
    grouped-pmin-claims-invariance the grouped ones in every mode: in jit, a program's
    ungrouped pmin is checked by error. axis-index-groups-not-checked-pmax names every
    grouped pmax, for a collective_param error only: seed 2's program by error of
    out_specs held, and never had checked or blocked, the foci of its pmaxes of one
    group.) A `crash` or `timeout` signature naming a mode that runs the body op by op
    (`OP_BY_OP_MODES`: eager) is trouble there at its ops before the error's."""
    out: dict[str | None, set[int]] = {}
    for e in entries:
        if not e.covers(jax_version) or not (e.op_features or e.program_features):
            continue
        pats = [pat for pat in e.patterns if pat.kind in ("missing_error", "wrong_error") and _predicts(pat, error)]
        stops = [pat for pat in e.patterns if pat.kind in ("crash", "timeout")]
        if not pats and not (stops and modes is not None and OP_BY_OP_MODES.intersection(modes)):
            continue
        if not all(PROGRAM_FEATURES[f](p) for f in e.program_features):
            continue
        ops = e.feature_ops(p, types) if e.op_features else frozenset(range(len(p.body)))
        if not ops:
            continue
        if modes is None:
            out.setdefault(None, set()).update(ops)
            continue
        # a mode that runs the body op by op (eager) runs the ops before the one the error
        # is at (those the oracle typed): a crash or hang at one of them comes first (fuzz
        # seed 33, 60 s, cold: a bf16 pmean aborted eager before a dead psum over a
        # non-manual axis raised, and the program's other pmean cells by error, counted
        # checked there, were never checked in eager)
        before = frozenset(i for i in ops if len(p.inputs) + i < len(types))
        for m in modes:
            if any(pat.modes is None or m in pat.modes for pat in pats):
                out.setdefault(m, set()).update(ops)
            if before and m in OP_BY_OP_MODES and any(pat.modes is None or m in pat.modes for pat in stops):
                out.setdefault(m, set()).update(before)
    return {m: frozenset(v) for m, v in out.items()}


def trouble_kind(p: Program, bad: frozenset[int]) -> str | None:
    """The op kind every op of `bad` (`known_error_trouble`'s ops of `p`) has, or None
    (none, or several kinds). An invalid program checks by error only the cells of that
    kind in the modes jax goes wrong in: the sweep holds only its foci of that kind (the
    value tier claims, in each such mode, the cells of the ops at fault there:
    harness/campaign/fuzz.py `claim`)."""
    kinds = {p.body[i].kind for i in bad}
    return next(iter(kinds)) if len(kinds) == 1 else None


def hang_entries(entries: Sequence[KnownDivergence], jax_version: str, kind: str = "timeout") -> tuple[KnownDivergence, ...]:
    """The entries covering `jax_version` that say jax hangs (a `timeout` signature), or
    with `kind` "crash", crashes."""
    return tuple(e for e in entries if e.covers(jax_version) and any(pat.kind == kind for pat in e.patterns))


def hang_mode_names(entries: Sequence[KnownDivergence], kind: str = "timeout") -> frozenset[str] | None:
    """The modes the timeout (or `kind`) signatures of `entries` name (None: one names every mode)."""
    out: set[str] = set()
    for e in entries:
        for pat in e.patterns:
            if pat.kind == kind:
                if pat.modes is None:
                    return None
                out |= set(pat.modes)
    return frozenset(out)


def known_hang_modes(entries: Sequence[KnownDivergence], p: Program, types: Sequence[ValueType], modes: Sequence[str],
                     kind: str = "timeout") -> tuple[str, ...]:
    """The modes of `modes` in which one of `entries` (`hang_entries`) says jax may hang
    on `p` (`types`: the oracle's value types): its timeout signature names the mode, its program features hold, and its op
    features hold on some op (dead ones too: a hang names no op, so `explains` scopes it
    to any op). The scheduler runs those modes with a short time limit of their own
    (harness/campaign/fuzz.py KNOWN_HANG_LIMIT_S): checked, but not at 30 s a hang.
    With `kind` "crash": the modes an entry says jax may crash in, which the scheduler
    runs after the program's other modes."""
    out: set[str] = set()
    for e in entries:
        ms = {m for pat in e.patterns if pat.kind == kind for m in modes if pat.modes is None or m in pat.modes}
        if not ms or not all(PROGRAM_FEATURES[f](p) for f in e.program_features):
            continue
        if e.op_features and not e.feature_ops(p, types):
            continue
        out |= ms
    return tuple(m for m in modes if m in out)


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
    """An entry's own case, from the repository root (or absolute)."""
    p = Path(e.case)
    return p if p.is_absolute() else DEFAULT_PATH.parents[1] / p


def load(path: Path | None = None) -> list[KnownDivergence]:
    """Every entry of the file, validated (harness/judge/known_load.py)."""
    from harness.judge.known_load import load as _load

    return _load(path)


def _entry(d: dict[str, object], where: str) -> KnownDivergence:
    from harness.judge.known_load import _entry as _e

    return _e(d, where)
