"""What the known entries say jax does on a program before it runs: the planner's
questions to harness/data/known_divergences.toml (harness/judge/known.py matches and explains
divergences after a program ran; these read the same entries ahead of time).

`KnownQueries`, built once per run from the entries and the workers' jax version, is the
one way the campaign asks them: which modes may hang (a short time limit) or crash (run
last), which valid program would make a jit batch fail, which outputs eager raises on,
at which ops a mode raises on a valid program, or answers an invalid one with another
error. Each answer is a scheduling decision, never a verdict: only the judge decides what
a divergence is.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

from harness.campaign.cells import value_types
from harness.judge.known import KnownDivergence, Scope, value_features_hold
from harness.judge.known_features import OUTPUT_FEATURES, PROGRAM_FEATURES, Pattern
from oracles.prediction import Prediction, ValueType
from programs.graph import cone, live_ops
from programs.model import Program


@dataclass(frozen=True)
class KnownQueries:
    """The run's known entries that cover its jax version, asked by the planner
    (harness/campaign/plan.py) and the run's cell bookkeeping. The entries that say jax
    may hang or crash, and the modes they name, are looked up once."""

    entries: tuple[KnownDivergence, ...]
    jax_version: str
    hangs: tuple[KnownDivergence, ...] = ()
    hang_names: frozenset[str] | None = frozenset()  # the modes `hangs` name (None: every mode)
    crashes: tuple[KnownDivergence, ...] = ()
    crash_names: frozenset[str] | None = frozenset()

    @staticmethod
    def of(entries: Sequence[KnownDivergence], jax_version: str) -> KnownQueries:
        mine = tuple(e for e in entries if e.covers(jax_version))
        hangs, crashes = hang_entries(mine, jax_version), hang_entries(mine, jax_version, "crash")
        return KnownQueries(mine, jax_version, hangs, hang_mode_names(hangs), crashes, hang_mode_names(crashes, "crash"))

    def hang_modes(self, p: Program, modes: Sequence[str]) -> tuple[str, ...]:
        """The modes of `modes` an entry says jax may hang in on `p` (`known_hang_modes`)."""
        if not self.hangs or (self.hang_names is not None and not self.hang_names.intersection(modes)):
            return ()  # (no trace: a late eager part, say)
        return known_hang_modes(self.hangs, p, value_types(p)[0], modes)

    def crash_modes(self, p: Program, modes: Sequence[str]) -> tuple[str, ...]:
        """The modes of `modes` an entry says jax may crash in on `p`."""
        if not self.crashes or (self.crash_names is not None and not self.crash_names.intersection(modes)):
            return ()
        return known_hang_modes(self.crashes, p, value_types(p)[0], modes, "crash")

    def trouble(self, p: Program, pred: Prediction, mode: str) -> bool:
        """Whether the valid program `p` holds what an entry says makes jax fail or go
        wrong in `mode` (`known_trouble`)."""
        return known_trouble(self.entries, p, pred, self.jax_version, mode)

    def raise_outputs(self, p: Program, mode: str) -> frozenset[int]:
        """The outputs of the valid program `p` an entry says jax raises, crashes or
        hangs on in `mode` (`known_raise_outputs`)."""
        return known_raise_outputs(self.entries, p, value_types(p)[0], self.jax_version, mode) if self.entries else frozenset()

    def raise_ops(self, p: Program, modes: Sequence[str]) -> dict[str, frozenset[int]]:
        """Per mode, the ops of the valid program `p` an entry without a rewrite says jax
        raises, crashes or hangs at there (`known_raise_ops`)."""
        return known_raise_ops(self.entries, p, value_types(p)[0], self.jax_version, modes) if self.entries else {}

    def raise_entries(self, p: Program, types: Sequence[ValueType],
                      modes: Sequence[str]) -> list[tuple[KnownDivergence, frozenset[str], frozenset[int]]]:
        """(entry, its modes, its ops) for each entry that says jax raises, crashes or
        hangs at ops of the valid program `p` in some of `modes` (`raise_entries`)."""
        return raise_entries(self.entries, p, types, self.jax_version, modes)

    def error_trouble(self, p: Program, types: Sequence[ValueType], modes: Sequence[str],
                      error: str | None, entries: Sequence[KnownDivergence] | None = None) -> dict[str, frozenset[int]]:
        """Per mode of `modes`, the ops of the invalid program `p` (whose predicted error
        is of kind `error`) at which an entry (of `entries`, default all) says jax
        raises another error, or none (`error_trouble_modes`)."""
        got = error_trouble_modes(self.entries if entries is None else entries, p, types, self.jax_version, modes, error)
        return {str(m): ops for m, ops in got.items()}


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
        if not value_features_hold(e, Scope.whole(p), p, pred):
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
    apart from them (harness/campaign/plan.py `Planner.late_parts`): it raises for
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
                if not any(v < len(types) and 0 in types[v].shape for v in vals):
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
    harness/campaign/plan.py `Planner.claim`)."""
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
    (harness/campaign/plan.py KNOWN_HANG_LIMIT_S): checked, but not at 30 s a hang.
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
