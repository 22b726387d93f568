"""The planner: what runs when, in which modes, cut how, with which time limit.

A pure function of (program, prediction, cell ledger, known entries, config) to a frozen
`Plan`: the parts to run, each a `Part` (its program, modes, kept outputs, time limit,
lateness, batching and together choices), the ledger claims the plan makes, and the
programs derived from it to check. Nothing here runs jax or talks to a worker: the
executor (harness/campaign/fuzz.py) sends the parts, takes the claims into the run's
ledger, and feeds the results back (harness/campaign/state.py); it asks the planner
again for what a result needs next (a probe run, modes re-run alone, the modes a crash
kept from running, the late part worth most).

The value tier (`ValueTier.tier`): every program is checked abstractly (errors, shapes,
dtypes, varying axes: no compile); every value mode also runs a program that brings a
configuration cell (harness/campaign/cells.py; an invalid program's cells by error) no
earlier value-tier program had, and a share chosen by program id. A costly mode
(`COSTLY_MODES`) runs a claimed program only where it brings that mode a new cell, and a
quarter of the share, in a late part sent by its worth. While the sweep runs (`lean`), a
claimed program runs only the modes it brings a new cell (and abstract): the sweep is
there to reach every (cell, mode) pair soon, the stream after it runs every mode. What is
claimed depends on the programs drawn so far, in order, and on which of their claims came
back unchecked (`CellLedger.reopen`), never on what the programs are: the same seed draws
the same programs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from harness.campaign.cells import (
    CellLedger,
    Claim,
    checked_cells,
    checked_output_cells,
    error_kind,
    lean,
    lost_cells,
    trouble_cells,
    typed_cells,
    value_types,
)
from harness.campaign.config import ALONE_LIMIT_FACTOR, LARGE_MODES, RunConfig
from harness.campaign.known_queries import KnownQueries
from harness.judge.check import CheckResult, probe_mode
from harness.judge.divergence import DivergenceKind
from harness.judge.known import explain_all
from harness.run.modes_multiprocess import LARGE_BLOCK_BYTES, block_bytes
from harness.run.observation import Observation
from harness.run.together import together_modes
from oracles import Prediction, predict
from programs.graph import cone, slice_outputs
from programs.model import Program
from programs.ops import NO_CPU_VALUES
from programs.serialize import program_id

# Value modes that cost far more than the others: eager shard_map compiles every
# primitive of the body on its own (eager about 20 times jit a program). The share chosen
# by program id runs them on COSTLY_SHARE of its programs; a program that brings a cell new
# to such a mode runs it there always.
COSTLY_MODES = frozenset({"eager"})
COSTLY_SHARE = 0.25
# A mode a known entry says may hang on a program (a `timeout` signature whose features it
# holds) runs with this limit instead of the pool's timeout_s (30 s): a hang is still
# observed, and explained, but costs a worker this long. The slowest grad and grad_remat
# runs measured on 2 cores under a run's load take under 0.6 s, cold: 2 s is over three
# times that.
KNOWN_HANG_LIMIT_S = 2.0
LATE_BOUND = 2  # late parts (a program's costly modes) waiting before they go out first
# During the sweep, one late part goes out per SWEEP_LATE_EVERY programs: a sweep program's
# cheap modes bring many new pairs in little time, its eager part few in more, so eager
# waits for most of the sweep (one per 5 and none both reached fewer pairs by 60 s).
SWEEP_LATE_EVERY = 10


class PartKind(Enum):
    """How a part's result is fed back (the executor's one dispatch: a new way of feeding
    a result back is a kind here and one branch there)."""

    WHOLE = "whole"  # judged on its own (with `kept`: joined to an earlier job's observations first)
    SPLIT = "split"  # one of a program's parts, joined with the others of its `group` before judging
    BATCHED = "batched"  # its jit mode compiled in one batch with other programs; joined as SPLIT
    PROBE = "probe"  # a probe run of `probe_of`, which puts its value divergences on an op
    ALONE = "alone"  # `confirm_of`'s crashed or timed-out modes run again alone: what they do then is judged


@dataclass(frozen=True)
class Part:
    """One job for a worker: `program` in `modes`.

    - `limit_s`: its own per-mode time limit (None: the pool's);
    - `together`: the modes the worker tries in one jit first (harness/run/together.py);
    - `late`: a costly mode, queued and sent by its worth (`next_late`), recorded
      as a part of the program with id `parent`, maybe cut to that program's `outputs`
      (None: all), checking `cells`;
    - `group`: the executor's join token of a SPLIT or BATCHED part; `prediction`: the
      oracle's, already made (a WHOLE part is judged with it, a group joined with it);
    - `kept`: observations of an earlier job of the same program, joined with this one's
      (the modes run together re-run alone; the modes a crash kept from running);
    - `parent`: the program id its result is recorded under (a late part's);
    - `probe_of`: the result a PROBE part localises;
    - `alone`: nothing else on its worker (no job queued behind it), and its `limit_s`
      may exceed the pool's;
    - `confirm_of`: the result whose crashed or timed-out modes an ALONE part runs again
      (its `kept`: what the part's earlier jobs observed, when a crash split it).
    """

    program: Program
    modes: tuple[str, ...]
    kind: PartKind = PartKind.WHOLE
    limit_s: float | None = None
    together: tuple[str, ...] = ()
    late: bool = False
    outputs: tuple[int, ...] | None = None
    cells: frozenset[str] = frozenset()
    group: int | None = None
    prediction: Prediction | None = None
    kept: tuple[Observation, ...] = ()
    parent: str | None = None
    probe_of: CheckResult | None = None
    alone: bool = False
    confirm_of: CheckResult | None = None

    @property
    def joined(self) -> bool:
        return self.kind in (PartKind.SPLIT, PartKind.BATCHED)


@dataclass(frozen=True)
class Plan:
    """What to do with one program: its `parts` (in order; the late ones queued), the
    `claims` they make in the run's cell ledger (taken in order, before the parts go
    out), and the programs `derived` from it to check, each with its modes. `modes`:
    every mode the program is checked in (its tier's)."""

    program: Program
    modes: tuple[str, ...]
    parts: tuple[Part, ...] = ()
    claims: tuple[Claim, ...] = ()
    derived: tuple[tuple[Program, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class ValueTier:
    """The value tier's rules (see the module doc) for a run's config and known entries."""

    cfg: RunConfig
    known: KnownQueries

    def tier(self, p: Program, ledger: CellLedger | None = None, lean: bool = False,
             taken: Sequence[Claim] = ()) -> Claim:
        """The modes `p` is checked in and the claim that makes (see the module doc).
        With known entries, an invalid program that an entry says jax answers with
        another error, or none, at some ops in some modes (`error_trouble`) claims, in
        those modes, only those ops' own cells (`trouble_cells`: the entry blocks them):
        the others stay open for a later program. `taken`: claims made before it, not
        yet in `ledger`."""
        cfg = self.cfg
        if block_bytes(p) >= LARGE_BLOCK_BYTES:  # a large program: the transport's chunked path, not every mode
            return Claim(tuple(m for m in cfg.modes if m in LARGE_MODES))
        if cfg.value_share >= 1.0 or "abstract" not in cfg.modes:
            return Claim(cfg.modes)
        claim = Claim(())
        if ledger is not None:
            claim = self.claim(p, ledger, cfg.modes, lean, taken=taken)
            if claim.modes:
                return claim
        h = int(program_id(p), 16) % 10000
        if h < cfg.value_share * 10000:
            costly = h < cfg.value_share * COSTLY_SHARE * 10000
            return replace(claim, modes=tuple(m for m in cfg.modes if costly or m not in COSTLY_MODES))
        return replace(claim, modes=("abstract",))

    def claim(self, p: Program, ledger: CellLedger, modes: tuple[str, ...], lean: bool = False,
              derived: bool = False, only: frozenset[str] | None = None, taken: Sequence[Claim] = ()) -> Claim:
        """The modes of `modes` the value tier runs `p` in for its cells
        (`CellLedger.offer`): none where it brings no pair no program before it was sent
        with. Only a valid program checks a cell by value; an invalid one checks its cells
        by error (`CELL|by_error`). `derived`: a program the results gave (without a
        known bug), not the draws: neither its cells nor its pairs go where the sweep's
        draws read them (`CellLedger.seen`, `scheduled`). `only`: those of its cells alone."""
        fails = typed_cells(p)[1]
        cells = checked_cells(p) if only is None else checked_cells(p) & only
        lost = None if fails else self.raise_lost(p)
        if fails:
            # in a mode jax is known to answer with another error at some ops, the program
            # checks none of its cells by error but theirs (the entry blocks those); in the
            # other modes, all of them
            trouble = self.error_trouble(p)
            if trouble:
                lost = {m: cells - trouble_cells(p, ops) for m, ops in trouble.items()}
        # per output, the cells it brings (an invalid program's by error): a costly mode runs
        # the outputs that bring it new ones
        parts = tuple(cs & cells for cs in checked_output_cells(p))
        got = ledger.offer(p, cells, modes, COSTLY_MODES, parts, lean, lost, schedule=not derived, taken=taken)
        return got if derived else replace(got, seen=frozenset(cells))

    def error_trouble(self, p: Program) -> dict[str, frozenset[int]]:
        """Per mode of the run, the ops of the invalid program `p` at which a known entry
        says jax raises another error than the one the oracle predicts, or none: what the
        sweep's draws by error and the value tier's claim both ask."""
        if not self.known.entries:
            return {}
        return self.known.error_trouble(p, value_types(p)[0], self.cfg.modes, error_kind(p))

    def raise_lost(self, p: Program) -> dict[str, frozenset[str]]:
        """Per mode, the cells of the valid program `p` no run of it checks there, as the
        run's known entries say (harness/campaign/cells.py `lost_cells`): what the value
        tier's claim leaves open and the sweep's draws hold only in the other modes."""
        if not self.known.entries:
            return {}
        return lost_cells(p, self.known.raise_ops(p, self.cfg.modes))


@dataclass(frozen=True)
class Planner:
    """The run's planning rules: its config, its known entries (`known`), and whether
    a worker pool runs the parts (`pooled`; in process, a program is one part)."""

    cfg: RunConfig
    known: KnownQueries
    pooled: bool = True

    @functools.cached_property
    def value_tier(self) -> ValueTier:
        return ValueTier(self.cfg, self.known)

    # ------------------------------------------------------------ plans

    def plan(self, p: Program, ledger: CellLedger, sweeping: bool = False,
             is_known: Callable[[Program], bool] | None = None, prediction: Prediction | None = None) -> Plan:
        """A drawn (or replayed) program: its tier's modes, in parts, and its part
        XLA:CPU can run (`cpu_runnable_part`) as a derived program unless `is_known`
        (checked or derived already), tiered like any other (its value modes only: the
        whole program had its abstract check). `prediction`: the oracle's for `p`, when
        made already (else made here where a choice needs it: batching, together)."""
        claim = self.value_tier.tier(p, ledger, sweeping)
        claims, derived = [claim], []
        q = cpu_runnable_part(p)
        if q is not None and not (is_known is not None and is_known(q)):
            more = self.value_tier.tier(q, ledger, sweeping, taken=claims)
            claims.append(more)
            modes = tuple(m for m in more.modes if m != "abstract")
            if modes:
                derived.append((q, modes))
        return Plan(p, claim.modes, self.parts(p, claim, sweeping, prediction), tuple(claims), tuple(derived))

    def elsewhere(self, p: Program, ledger: CellLedger, sweeping: bool = False) -> Plan:
        """A drawn program another shard checks: nothing runs, but its cells are claimed
        here too, so every later program gets the tier it gets in the unsharded run."""
        claim = self.value_tier.tier(p, ledger, sweeping)
        return Plan(p, (), (), (claim,))

    def parts(self, p: Program, claim: Claim, sweeping: bool, prediction: Prediction | None = None) -> tuple[Part, ...]:
        """The parts of `p` in the modes `claim` gives it. The costly modes (eager: as
        much as the others together) go in late parts, recorded on their own: the other
        modes' verdict comes first. A part claimed for its cells runs the program cut to
        the outputs that bring it new cells (`Claim.cut`), without dead ops; one chosen by
        program id (the share) runs it whole, dead ops too."""
        modes = claim.modes
        if not self.pooled:
            return (Part(p, modes),)
        late = tuple(m for m in modes if m in COSTLY_MODES) if len(modes) > 1 else ()
        cut = dict(claim.cut)
        out: list[Part] = []
        for m in late:
            if m in cut:
                out.extend(self.late_parts(p, m, cut[m]))
            else:
                out.append(Part(p, (m,), late=True, parent=program_id(p), cells=checked_cells(p)))
        return (*self.split(p, tuple(m for m in modes if m not in late), sweeping, prediction=prediction), *out)

    def derived(self, q: Program, queued: tuple[str, ...], new: frozenset[str], ledger: CellLedger,
                sweeping: bool) -> Plan:
        """A program without its known bugs (harness/campaign/derived.py), queued in the
        modes `queued`, checked like any other. While the sweep runs, like the sweep's own
        programs, only in the modes of theirs in which they bring a pair no program was
        sent with or one jax left unchecked (`claim`, lean; the sweep's draws stay blind
        to them), a costly mode's part cut to the outputs that bring it one.

        A rewrite makes cells its parent lacks (`new`): in the run's other modes too,
        where they are a pair no program was sent with (a mode the parent's divergences
        did not name never ran them). Only those: the parent's own cells left open in a
        mode are the draws' (the sweep's foci). `Plan.modes`: the modes it runs in."""
        modes, claims = queued, []
        cut: dict[str, tuple[int, ...] | None] = {}
        if sweeping:
            mine = self.value_tier.claim(q, ledger, modes, True, derived=True)
            claims.append(mine)
            modes = tuple(m for m in modes if m in mine.modes)
            cut = {m: dict(mine.cut).get(m) for m in modes if m in COSTLY_MODES}
        extra = tuple(m for m in self.cfg.modes if m not in queued)
        checks = ledger.checks  # (a derived program's pairs are never `scheduled`: open until checked)
        new = frozenset(c for c in new if any((c, m) not in checks for m in extra))
        if extra and new:
            more = self.value_tier.claim(q, ledger, extra, True, derived=True, only=new, taken=claims)
            claims.append(more)
            cut.update({m: dict(more.cut).get(m) for m in more.modes if m in COSTLY_MODES})
            modes = tuple(m for m in self.cfg.modes if m in modes or m in more.modes)
        # a costly mode (eager) goes in a late part, without dead ops, sent by its worth
        # like any other (`next_late`): not ahead of the programs still to draw
        late = tuple(m for m in modes if m in COSTLY_MODES)
        parts = [x for m in late for x in self.late_parts(q, m, cut.get(m))]
        rest = tuple(m for m in modes if m not in late)
        if rest:
            # (like any program: modes a known entry says may crash last, those it says may
            # hang with their short limit. Never batched: its result would wait for its
            # batch to fill, after later programs')
            parts[:0] = self.split(q, rest, sweeping, batch=False)
        return Plan(q, modes, tuple(parts), tuple(claims))

    def split(self, p: Program, modes: tuple[str, ...], sweeping: bool, batch: bool = True,
              prediction: Prediction | None = None) -> tuple[Part, ...]:
        """`p`'s modes of now (not late) as jobs. The modes a known entry says may crash
        run last (a crash kills the worker, and the modes after it in the job never run);
        those it says may hang go in a part of their own with KNOWN_HANG_LIMIT_S, joined
        with the rest. A valid program of the stream has its jit mode compiled in a batch
        with others (same device count) and its other modes in a part joined with it; not
        while the sweep runs (a batch is recorded when it is full, and the sweep is about
        each pair's first check coming soon), nor a program the oracle expects to fail or
        one with the features of a known jax bug in jit (it would make its batch fail)."""
        modes = self.crash_last(p, modes)
        hang = self.known.hang_modes(p, modes)
        if hang:
            made = prediction if prediction is not None else predict(p)
            rest = tuple(m for m in modes if m not in hang)
            return (*((Part(p, rest, PartKind.SPLIT, prediction=made),) if rest else ()),
                    Part(p, hang, PartKind.SPLIT, limit_s=KNOWN_HANG_LIMIT_S, prediction=made))
        batched = batch and self.cfg.batch > 1 and "jit" in modes and not sweeping
        pred = predict(p) if batched and prediction is None else prediction
        if not batched or pred is None or pred.error is not None or self.known.trouble(p, pred, "jit"):
            together, pred = self.together(p, modes, pred)
            return (Part(p, modes, together=together, prediction=pred),)
        rest = tuple(m for m in modes if m != "jit")
        return (*((Part(p, rest, PartKind.SPLIT, together=self.together(p, rest, pred)[0], prediction=pred),) if rest else ()),
                Part(p, ("jit",), PartKind.BATCHED, prediction=pred))

    def crash_last(self, p: Program, modes: tuple[str, ...]) -> tuple[str, ...]:
        """`modes` with those a known entry says jax may crash in on `p` last."""
        crash = self.known.crash_modes(p, modes)
        return (*(m for m in modes if m not in crash), *crash) if crash else modes

    def together(self, p: Program, modes: tuple[str, ...], pred: Prediction | None) -> tuple[tuple[str, ...], Prediction | None]:
        """The modes of `modes` the worker runs in one jit first (harness/run/together.py),
        and the prediction, made here when needed: not those a known entry says jax goes
        wrong in on `p` (they would make the whole jit fail, or crash the worker), nor
        those it says may crash there (`crash_last`: they run last, alone)."""
        mine = together_modes(p, modes) if self.cfg.together else ()
        if not mine:
            return (), pred
        pred = pred if pred is not None else predict(p)
        if pred.error is not None:
            return (), pred
        crash = set(self.known.crash_modes(p, mine))
        mine = tuple(m for m in mine if m not in crash and not self.known.trouble(p, pred, m))
        return (mine if len(mine) > 1 else ()), pred

    # ------------------------------------------------------------ late parts

    def late_parts(self, p: Program, mode: str, keep: tuple[int, ...] | None = None) -> tuple[Part, ...]:
        """Late parts of `p` in `mode`: `p` cut to the outputs `keep` (all: None) without
        its dead ops (`lean`), with the cells it checks (a valid program cut: its kept
        outputs'). A valid program's outputs a known entry says jax raises, crashes or
        hangs on in that mode go in a part of their own: one such output made the whole
        part fail, and jax checked none of the others (the part of its own still shows
        the known bug, which blocks its op's cells)."""
        keep = tuple(range(len(p.outputs))) if keep is None else keep
        groups = [keep]
        if not value_types(p)[1] and self.known.entries:
            bad = self.known.raise_outputs(p, mode)
            groups = [ks for ks in (tuple(k for k in keep if k not in bad), tuple(k for k in keep if k in bad)) if ks]
        out = []
        for ks in groups:
            whole = len(ks) == len(p.outputs)
            # (an invalid program's cut keeps its error, with one output more where it needs
            # one, or is not made: the part's own cells)
            q = lean(p, None if whole else ks)
            out.append(Part(q, (mode,), late=True, outputs=None if whole else ks, parent=program_id(p), cells=checked_cells(q)))
        return tuple(out)

    def outgoing(self, part: Part, ledger: CellLedger) -> Part:
        """The late part `part` as it goes out: cut again to the outputs that still bring
        its modes a pair no part has checked yet, where it has some that do not (a part
        sent before it may have checked them since, among the pairs of its ops besides
        those it was claimed for); with the short limit where a known entry says it may
        hang. A part whose every output brings nothing goes as it is: it is the least
        worth (`next_late`) and goes out only when time is left."""
        q, checks = part.program, ledger.checks
        keep = tuple(k for k, cs in enumerate(checked_output_cells(q)) if any((c, m) not in checks for c in cs for m in part.modes))
        q = lean(q, keep) if 0 < len(keep) < len(q.outputs) else q
        return replace(part, program=q, limit_s=KNOWN_HANG_LIMIT_S if self.known.hang_modes(q, part.modes) else None)

    # ------------------------------------------------------------ what a result needs next

    def rest(self, part: Part, observations: Sequence[Observation], unrun: tuple[str, ...]) -> Part:
        """The modes a crash or hang in an earlier mode of `part`'s job kept from running,
        as a job of their own, joined with that job's `observations` and fed back as
        `part` (each such job has fewer modes than the last: a crash in each ends them).
        A part alone keeps its limit."""
        limit = part.limit_s if part.alone else KNOWN_HANG_LIMIT_S if self.known.hang_modes(part.program, unrun) else None
        return replace(part, modes=unrun, together=(), limit_s=limit, kept=tuple(observations))

    def confirm(self, res: CheckResult, parent: str | None) -> Part | None:
        """The modes of `res` that crashed or timed out with no known entry explaining
        it, run again alone on a worker (nothing queued behind them) with ALONE_LIMIT_FACTOR
        times the pool's limit, before anything is reported: a timeout that then finishes
        is `slow`, a crash that does not happen again `flaky`, neither a failure (the
        executor judges what they did alone). None when there are none, or without a pool."""
        if not self.pooled:
            return None
        stopped = {o.mode for o in res.observations if o.status in ("crash", "timeout")}
        if not stopped:
            return None
        explained = explain_all(self.known.entries, res.divergences, res.program, res.prediction, self.known.jax_version)
        new = {x.divergence.mode for x in explained if x.entry is None
               and x.divergence.kind in (DivergenceKind.CRASH, DivergenceKind.TIMEOUT)}
        modes = tuple(o.mode for o in res.observations if o.mode in stopped & new)
        if not modes:
            return None
        return Part(res.program, modes, PartKind.ALONE, limit_s=ALONE_LIMIT_FACTOR * self.cfg.timeout_s,
                    prediction=res.prediction, parent=parent, alone=True, confirm_of=res)


def again_alone(res: CheckResult, parent: str | None) -> Part | None:
    """The modes of `res` that ran together in one jit and diverged, re-run alone
    (never report a result of modes run together as it is), or None."""
    wrong = {m for d in res.divergences for m in d.mode.split(",")}
    again = tuple(o.mode for o in res.observations if o.together and o.mode in wrong)
    if not again:
        return None
    kept = tuple(o for o in res.observations if o.mode not in again)
    return Part(res.program, again, prediction=res.prediction, kept=kept, parent=parent)

def probe_part(res: CheckResult, parent: str | None) -> Part | None:
    """The next probe run `res` needs (one per batch member its value divergences
    need: harness/judge/check.py `probe_mode`), or None."""
    probe = probe_mode(res)
    if probe is None:
        return None
    return Part(probe.program, (probe.mode,), PartKind.PROBE, parent=parent, probe_of=res)


def next_late(late: Sequence[Part], ledger: CellLedger) -> int:
    """The index of the late part to send next: the one with the most cells its mode has
    not checked yet (claimed for it, or checked by no part since) per unit of its cost
    (arguments, ops and outputs: eager compiles about one of each), the earliest of
    equals. The parts a budget leaves unsent are then the least worth; what is drawn does
    not change (the claims were made when the parts were planned)."""
    checks = ledger.checks

    def worth(k: int) -> float:
        q = late[k].program
        fresh = sum(1 for c in late[k].cells for m in late[k].modes if (c, m) not in checks)
        return fresh / (len(q.inputs) + len(q.body) + len(q.outputs))

    return max(range(len(late)), key=lambda k: (worth(k), -k))


def late_due(waiting: int, sweeping: bool, since: int, everything: bool = False) -> tuple[int, int]:
    """(how many of the `waiting` late parts go out now, the sweep programs sent since
    the last one went out): those beyond LATE_BOUND; while the sweep runs one for every
    SWEEP_LATE_EVERY programs (`since` counts them); or (`everything`) all."""
    if everything:
        return waiting, since
    if sweeping:
        since += 1
        if since < SWEEP_LATE_EVERY or not waiting:
            return 0, since
        return 1, 0
    return max(waiting - LATE_BOUND, 0), since


def cpu_runnable_part(p: Program) -> Program | None:
    """`p` without the outputs that an op XLA:CPU cannot run by value reaches (and the
    ops only they need), when `p` is valid, holds such an op, and keeps at least one
    output that an op computes; else None. A valid program holding such an op (sendrecv,
    pbroadcast, ragged_all_to_all) gets no value mode, so its other ops' cells would be
    checked abstractly only. (XLA:CPU, as `cells.applies` assumes: the workers' backend.)"""
    if p.defect is not None:
        return None
    n_in = len(p.inputs)
    bad = {i for i, op in enumerate(p.body) if {o.kind for o in op.with_nested()} & NO_CPU_VALUES}
    if not bad:
        return None
    keep = tuple(k for k, o in enumerate(p.outputs) if not (cone(p, o) & bad))
    if not keep or not any(o >= n_in for o in (p.outputs[k] for k in keep)):
        return None
    if typed_cells(p)[1]:
        return None  # (the oracle expects an error: the error is the whole program's)
    return slice_outputs(p, keep)
