"""The planner (harness/campaign/plan.py) on its own: hand-built programs and cell
ledgers, no worker and (but where a test runs one mode to show a part is clean) no jax.
What it plans for a program, what it claims, its late parts, and what a result needs
next."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import P, iota, op, prog, psum_program, replication_at_output_1, two_outputs

from harness.campaign.cells import CellLedger, applies, by_error, checked_cells, typed_output_cells
from harness.campaign.config import RunConfig
from harness.campaign.derived import DerivedQueue
from harness.campaign.known_queries import KnownQueries, known_raise_outputs
from harness.campaign.plan import (
    COSTLY_MODES,
    COSTLY_SHARE,
    KNOWN_HANG_LIMIT_S,
    LATE_BOUND,
    SWEEP_LATE_EVERY,
    Part,
    PartKind,
    Planner,
    again_alone,
    cpu_runnable_part,
    late_due,
    next_late,
    probe_part,
)
from harness.judge.check import CheckResult
from harness.judge.compare import Divergence, DivergenceKind
from harness.judge.known import KnownDivergence
from harness.judge.known_features import OpFeature, Pattern
from harness.judge.known_load import load
from harness.run.modes import DEFAULT_MODES
from harness.run.observation import Observation
from oracles import predict
from programs.model import Input, Mesh, Op, Program, Spec
from programs.points import DERIVATIVE_MODES
from programs.serialize import from_json, program_id

ENTRIES = load()
XY = Mesh(("x", "y"), (2, 2))
CORPUS = Path(__file__).parent.parent / "harness/data/corpus/known"


def planner(cfg: RunConfig, jax_version: str | None = None, pooled: bool = True) -> Planner:
    """The planner of a run with `cfg` on the workers' `jax_version` (None: no entry applies)."""
    known = KnownQueries.of(cfg.suppressions, jax_version) if jax_version else KnownQueries((), "")
    return Planner(cfg, known, pooled)


def tier_modes(p: Program, cfg: RunConfig, ledger: CellLedger | None = None, lean: bool = False,
               jax_version: str | None = None) -> tuple[str, ...]:
    """The value tier's modes for `p` (`ValueTier.tier`), its claim taken into `ledger`."""
    claim = planner(cfg, jax_version).value_tier.tier(p, ledger, lean)
    if ledger is not None:
        ledger.take((claim,))
    return claim.modes


def now(parts: tuple[Part, ...]) -> list[tuple[Program, tuple[str, ...]]]:
    """The parts that go out at once (not late), as (program, modes)."""
    return [(x.program, x.modes) for x in parts if not x.late]


# ------------------------------------------------------------------ the planner alone


def test_the_planner_imports_neither_jax_nor_the_worker_pool() -> None:
    code = ("import sys, harness.campaign.plan, harness.campaign.known_queries; "
            "bad = [m for m in ('jax', 'jaxlib', 'harness.run.pool', 'harness.run.worker') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_plan_is_a_value_its_claims_change_the_ledger_only_when_taken() -> None:
    """Planning leaves the ledger as it was; the plan's claims, taken, close the pairs it
    was sent with, so the same program planned again brings nothing (abstract only)."""
    cfg = RunConfig(value_share=0.0, batch=1)
    pl, led = planner(cfg), CellLedger.new()
    p = two_outputs()
    plan = pl.plan(p, led)
    assert led.scheduled == set() and led.seen == set() and not led.reopened
    assert plan.program == p and plan.modes == cfg.modes and plan.derived == ()
    assert {c for claim in plan.claims for c in claim.seen} == checked_cells(p)
    # the costly mode in a late part, the others at once in one job
    ((q, modes),) = now(plan.parts)
    assert q == p and "eager" not in modes and set(modes) == set(cfg.modes) - COSTLY_MODES
    (late,) = [x for x in plan.parts if x.late]
    assert late.modes == ("eager",) and late.parent == program_id(p) and late.cells == checked_cells(p)
    led.take(plan.claims)
    assert {f"{c}@{m}" for c in checked_cells(p) for m in cfg.modes if applies(p, m)} == led.scheduled
    assert pl.plan(p, led).modes == ("abstract",)


def test_in_process_a_program_is_one_part_of_every_mode_of_its_tier() -> None:
    cfg = RunConfig(value_share=0.0)
    plan = planner(cfg, pooled=False).plan(two_outputs(), CellLedger.new())
    assert [(x.modes, x.kind, x.late) for x in plan.parts] == [(cfg.modes, PartKind.WHOLE, False)]


def test_a_program_with_an_op_xla_cpu_cannot_run_plans_its_runnable_part_as_a_derived_program() -> None:
    """The derived program is claimed after the program itself (the plan's claims are
    taken in order): it runs in the value modes its own cells bring, never abstract."""
    mesh = Mesh(("x",), (2,))
    body = (Op.make("pbroadcast", (0,), axes=("x",), source=0), Op.make("psum", (0,), axes=("x",)))
    p = Program(mesh, (Input((2,), "float32", "iota"),), (Spec((("x",),)),), body, (1, 2), (Spec((("x",),)), Spec((None,))))
    cfg = RunConfig(value_share=0.0)
    plan = planner(cfg).plan(p, CellLedger.new())
    ((q, modes),) = plan.derived
    assert q == cpu_runnable_part(p) and "abstract" not in modes and "jit" in modes
    assert len(plan.claims) == 2
    # (known already: not derived again)
    assert planner(cfg).plan(p, CellLedger.new(), is_known=lambda r: r == q).derived == ()


def test_a_program_another_shard_checks_runs_nothing_but_claims_its_cells() -> None:
    cfg, led = RunConfig(value_share=0.0), CellLedger.new()
    plan = planner(cfg).elsewhere(two_outputs(), led)
    assert plan.parts == () and plan.claims[0].scheduled
    led.take(plan.claims)
    assert planner(cfg).plan(two_outputs(), led).modes == ("abstract",)


def test_a_claim_taken_before_closes_its_pairs_to_the_next_offer() -> None:
    """`CellLedger.offer(taken=...)`: the claims a plan made before, not yet in the
    ledger, count as taken; a reopened pair one of them claimed again is closed."""
    p = psum_program(1)
    cells = checked_cells(p)
    led = CellLedger.new()
    first = led.offer(p, cells, ("jit",))
    assert first.modes == ("jit",)
    assert led.offer(p, cells, ("jit",), taken=(first,)).modes == ()
    led.take((first,))
    led.reopen(cells, "jit")
    again = led.offer(p, cells, ("jit",))
    assert again.modes == ("jit",) and again.closed
    assert led.offer(p, cells, ("jit",), taken=(again,)).modes == ()


def test_late_parts_go_out_beyond_a_bound_or_one_per_sweep_programs() -> None:
    assert late_due(LATE_BOUND + 3, False, 0) == (3, 0)
    assert late_due(1, False, 0) == (0, 0)
    assert late_due(5, True, 0) == (0, 1)  # (while the sweep runs: one per SWEEP_LATE_EVERY programs)
    assert late_due(5, True, SWEEP_LATE_EVERY - 1) == (1, 0)
    assert late_due(0, True, SWEEP_LATE_EVERY - 1) == (0, SWEEP_LATE_EVERY)
    assert late_due(7, True, 3, everything=True) == (7, 3)


def test_the_modes_a_crash_kept_from_running_go_in_a_part_of_their_own_joined_with_the_first() -> None:
    """`Planner.rest`: the unrun modes, fed back as the part they came from, with the
    first job's observations kept; a mode a known entry says may hang gets the short
    limit."""
    p = from_json((CORPUS / "neg_scatter_scan_grad_hang.json").read_text())
    pl = planner(RunConfig(suppressions=ENTRIES), "0.10.2")
    first = Part(p, ("abstract", "jit", "grad"), PartKind.SPLIT, together=("jit", "grad"), group=7)
    seen = (Observation("abstract", status="ok"), Observation("jit", status="crash"))
    rest = pl.rest(first, seen, ("grad",))
    assert (rest.modes, rest.kind, rest.group, rest.kept, rest.together) == (("grad",), PartKind.SPLIT, 7, seen, ())
    assert rest.limit_s == KNOWN_HANG_LIMIT_S
    assert pl.rest(first, seen, ("abstract",)).limit_s is None


def test_modes_run_together_that_diverged_run_again_alone_and_a_clean_result_needs_no_probe() -> None:
    p = two_outputs()
    pred = predict(p)
    obs = (Observation("abstract", status="ok"), Observation("jit", status="error", together=True),
           Observation("vmap", status="ok", together=True))
    wrong = Divergence(DivergenceKind.UNEXPECTED_ERROR, "jit", "raised", "psum->ValueError")
    again = again_alone(CheckResult(p, pred, obs, (wrong,)), "parent")
    assert again is not None and again.modes == ("jit",) and again.kept == (obs[0], obs[2])
    assert (again.prediction, again.parent, again.kind) == (pred, "parent", PartKind.WHOLE)
    assert again_alone(CheckResult(p, pred, obs, ()), None) is None
    assert probe_part(CheckResult(p, pred, obs, (wrong,)), None) is None  # (no wrong value to put on an op)


# ------------------------------------------------------------------ the value tier


def test_the_share_by_program_id_runs_the_costly_modes_on_a_quarter_of_its_programs() -> None:
    cfg = RunConfig(value_share=0.5)
    seen = {"costly": 0, "cheap": 0, "abstract": 0}
    for n in range(1, 400):
        p = psum_program(n)
        h = int(program_id(p), 16) % 10000
        modes = tier_modes(p, cfg)  # (no ledger: the share alone)
        if h < 0.5 * COSTLY_SHARE * 10000:
            assert modes == cfg.modes
            seen["costly"] += 1
        elif h < 0.5 * 10000:
            assert modes == tuple(m for m in cfg.modes if m not in COSTLY_MODES) and "jit" in modes
            seen["cheap"] += 1
        else:
            assert modes == ("abstract",)
            seen["abstract"] += 1
    assert all(v > 10 for v in seen.values()), seen
    assert tier_modes(psum_program(3), RunConfig(value_share=1.0)) == RunConfig().modes  # --value-share 1: every mode


def test_an_invalid_program_claims_its_cells_by_error() -> None:
    """An invalid program checks its cells by error (Run.record's `CELL|by_error`): the
    first to bring one goes to every mode it applies to, which is cheap (it stops at
    tracing); the same program again brings nothing."""
    from harness.campaign.cells import typed_cells
    from harness.campaign.generation import seeded_programs

    # (one whose defect jax finds after tracing some op: a spec-type defect stops it first,
    # and its program checks no cell)
    p = next(q for q in seeded_programs(20, 0, invalid=1.0) if q.defect is not None and typed_cells(q)[1]
             and checked_cells(q) and applies(q, "jit") and applies(q, "eager"))
    cfg = RunConfig(value_share=0.0)
    led = CellLedger.new()
    modes = tier_modes(p, cfg, led)
    assert "jit" in modes and "eager" in modes, modes
    assert all(c.endswith("|by_error") for c in (x.rsplit("@", 1)[0] for x in led.scheduled))
    assert tier_modes(p, cfg, led) == ("abstract",)


def test_the_cpu_runnable_part_drops_only_what_an_unrunnable_op_reaches() -> None:
    """A program with a pbroadcast (XLA:CPU cannot run it) gets no value mode; the part
    without the outputs it reaches keeps the rest, renumbered, and is None when nothing
    else computes an output."""
    mesh = Mesh(("x",), (2,))
    body = (Op.make("pbroadcast", (0,), axes=("x",), source=0), Op.make("psum", (0,), axes=("x",)))
    p = Program(mesh, (Input((2,), "float32", "iota"),), (Spec((("x",),)),), body, (1, 2), (Spec((("x",),)), Spec((None,))))
    q = cpu_runnable_part(p)
    assert q is not None and [o.kind for o in q.body] == ["psum"] and q.outputs == (1,) and q.out_specs == (Spec((None,)),)
    only = Program(mesh, p.inputs, p.in_specs, body[:1], (1,), (Spec((("x",),)),))
    assert cpu_runnable_part(only) is None
    plain = Program(mesh, p.inputs, p.in_specs, body[1:], (1,), (Spec((None,)),))
    assert cpu_runnable_part(plain) is None  # (nothing to drop: the program runs whole)


def test_cells_after_an_op_jax_raises_at_in_a_mode_are_left_open_there() -> None:
    """grad has no derivative of pmax (the known entry pmax-no-differentiation-rule): a
    pcast after a pmax is checked in grad neither by the program (grad raises) nor by
    the program without the bug (it drops the pmax's outputs), so the value tier does
    not claim the pcast's cells in the grad modes (a later program may check them);
    the pmax's own cells are blocked by the entry, and an op beside it is checked by
    the program without the bug."""
    cfg = RunConfig(modes=DEFAULT_MODES, suppressions=ENTRIES)
    p = Program(Mesh(("x", "y"), (2, 1)), (Input((4,), "float32", "iota"),), (Spec((("x",),)),),
                (Op.make("pmax", (0,), axes=("x",)), Op.make("pcast", (1,), axes=("x", "y"), to="varying"), Op.make("neg", (0,))),
                (2, 3), (Spec((("x", "y"),)), Spec((("x",),))))
    assert predict(p).error is None
    lost = planner(cfg, "0.10.2").value_tier.raise_lost(p)
    assert set(lost) == set(DERIVATIVE_MODES) and "pcast|axes=with_size_1" in lost["grad"]  # (every derivative mode: pmax has none)
    assert not any(c.startswith(("pmax", "neg")) for c in lost["grad"])
    led = CellLedger.new()
    assert "grad" in tier_modes(p, cfg, led, True, "0.10.2")  # (the neg: grad checks it in the program without the pmax)
    assert "pcast|axes=with_size_1@jit" in led.scheduled and "neg|dtype=float32@grad" in led.scheduled
    assert "pcast|axes=with_size_1@grad" not in led.scheduled and "pcast|axes=with_size_1@grad_remat" not in led.scheduled


def test_an_invalid_program_claims_in_a_mode_jax_misses_its_error_only_the_cells_of_the_ops_at_fault() -> None:
    """A grouped pmin (grouped-pmin-claims-invariance: jax types it invariant, and misses
    the out_specs defect in every mode) beside an int8 pmin of no groups
    (pmin-no-differentiation-rule: every pmin, in the grad modes only). In jit the
    program checks no cell by error and the entry blocks the grouped pmin's: the int8
    pmin's cell stays open there; in grad both pmins are at fault, so it is claimed (and
    blocked)."""
    cfg = RunConfig(modes=DEFAULT_MODES, suppressions=ENTRIES)
    p = Program(Mesh(("x",), (2,)), (Input((4,), "float32", "iota"), Input((4,), "int8", "iota")),
                (Spec((("x",),)), Spec((("x",),))),
                (Op.make("pmin", (0,), axes=("x",), groups=((0,), (1,))), Op.make("pmin", (1,), axes=("x",))),
                (2, 3), (Spec((None,)), Spec((None,))), defect="out_spec_drops_varying_axis")
    assert predict(p).error is not None and "pmin|dtype=int8|by_error" in checked_cells(p)
    trouble = planner(cfg, "0.10.2").value_tier.error_trouble(p)
    assert trouble["jit"] == frozenset({0}) and trouble["grad"] == frozenset({0, 1})
    led = CellLedger.new()
    assert "jit" in tier_modes(p, cfg, led, False, "0.10.2")
    assert "pmin|groups=yes|by_error@jit" in led.scheduled and "pmin|dtype=int8|by_error@grad" in led.scheduled
    assert "pmin|dtype=int8|by_error@jit" not in led.scheduled and "pmin|dtype=int8|by_error@eager" not in led.scheduled


def test_an_invalid_program_in_trouble_at_ops_of_several_kinds_is_claimed_in_the_modes_without_trouble() -> None:
    """A partial-manual program by error under check_vma=False (eager-partial-manual-
    check-vma-false: eager raises another error, at every op) with a pmax
    (pmax-no-differentiation-rule: the grad modes, at the pmax) and a neg: in eager its
    ops at fault are of two kinds, yet jit and the other modes have no trouble with it
    and check every cell by error, so it is claimed there."""
    cfg = RunConfig(modes=DEFAULT_MODES, suppressions=ENTRIES)
    p = Program(Mesh(("x", "y"), (2, 1)), (Input((4,), "float32", "iota"),), (Spec((("x",),)),),
                (Op.make("pmax", (0,), axes=("x",)), Op.make("neg", (0,))),
                (1, 2), (Spec(()),), axis_names=("x",), check_vma=False, defect="out_spec_none")
    err = predict(p).error
    assert err is not None and err.kind.value == "out_specs_structure"
    trouble = planner(cfg, "0.10.2").value_tier.error_trouble(p)
    assert trouble["eager"] == frozenset({0, 1}) and trouble["grad"] == frozenset({0}) and "jit" not in trouble
    led = CellLedger.new()
    modes = tier_modes(p, cfg, led, False, "0.10.2")
    assert {"jit", "gspmd", "lowering", "eager"} <= set(modes)
    for m in ("jit", "gspmd", "lowering", "eager"):
        assert f"neg|dtype=float32|by_error@{m}" in led.scheduled and f"pmax|dtype=float32|by_error@{m}" in led.scheduled


def test_an_entry_for_another_predicted_error_is_no_trouble_for_an_invalid_program() -> None:
    """axis-index-groups-not-checked-pmax names every grouped pmax, but only for a
    collective_param error (its signatures' `where`): a program by error of out_specs
    with a pmax of one group is in trouble only where pmax-no-differentiation-rule says
    (the grad modes)."""
    cfg = RunConfig(modes=DEFAULT_MODES, suppressions=ENTRIES)
    p = Program(Mesh(("x",), (2,)), (Input((4,), "float32", "iota"),), (Spec((("x",),)),),
                (Op.make("pmax", (0,), axes=("x",), groups=((0, 1),)), Op.make("neg", (0,))),
                (1, 2), (Spec((None,)), Spec((None,))), defect="out_spec_drops_varying_axis")
    err = predict(p).error
    assert err is not None and err.kind.value == "out_spec_replication"
    assert planner(cfg, "0.10.2").value_tier.error_trouble(p) == {m: frozenset({0}) for m in DERIVATIVE_MODES}


def test_cells_the_program_without_the_bug_cannot_check_in_a_mode_are_left_open_there() -> None:
    """The program without the bug (`derived_program`: the outputs no op at fault
    reaches) checks in a mode only the ops of its own outputs, and nothing where the mode
    does not run it: with a pmax (no derivative in grad) on the float output, an integer
    op beside it is lost in the grad modes (the program without the pmax has integer
    outputs only, and grad skips it), and so is a float op that feeds the pmax's output too."""
    cfg = RunConfig(modes=DEFAULT_MODES, suppressions=ENTRIES)
    mesh = Mesh(("x",), (2,))
    # values: 0 x (float32), 1 pmax(x), 2 cast(x, int32), 3 neg(2), 4 mul(x, x), 5 add(1, 4)
    ops = (Op.make("pmax", (0,), axes=("x",)), Op.make("cast", (0,), dtype="int32"), Op.make("neg", (2,)),
           Op.make("mul", (0, 0)), Op.make("add", (1, 4)))
    p = Program(mesh, (Input((4,), "float32", "iota"),), (Spec((("x",),)),), ops, (5, 3), (Spec((("x",),)), Spec((("x",),))))
    assert predict(p).error is None
    lost = planner(cfg, "0.10.2").value_tier.raise_lost(p)
    assert set(lost) == set(DERIVATIVE_MODES)
    assert "neg|dtype=int32" in lost["grad"] and "mul|dtype=float32" in lost["grad"]
    assert not any(c.startswith("pmax") for c in lost["grad"])  # (blocked by the entry, not lost)
    # with a float output beside the integer one, the program without the pmax runs in grad
    # and checks the ops of its outputs: only the op feeding the pmax's output is lost
    q = Program(mesh, p.inputs, p.in_specs, (*ops, Op.make("neg", (0,))), (5, 3, 6), (*p.out_specs, Spec((("x",),))))
    lost = planner(cfg, "0.10.2").value_tier.raise_lost(q)
    assert "mul|dtype=float32" in lost["grad"] and "neg|dtype=int32" not in lost["grad"]
    assert "neg|dtype=float32" not in lost["grad"]


def test_an_invalid_programs_costly_part_is_cut_to_its_new_outputs_and_keeps_its_error() -> None:
    """Eager runs every op of an invalid program's body before jax checks its out_specs:
    its part is cut like a valid one's, to the outputs that bring eager a cell by error
    no program had, where the oracle predicts the same error for the cut (`lean`); an
    output the error is at stays, and a cut that would change the error is not made."""
    from harness.campaign.cells import lean, typed_cells

    p = replication_at_output_1()
    cells, fails = typed_cells(p)
    e = predict(p).error
    assert fails and e is not None and e.output == 1
    parts = typed_output_cells(p)
    led = CellLedger.new()
    led.scheduled |= {f"{c}@eager" for c in by_error(parts[1])}  # neg's cells by error: eager had them
    claim = planner(RunConfig(value_share=0.0)).value_tier.tier(p, led)
    assert "eager" in claim.modes
    assert dict(claim.cut)["eager"] == (0,)
    # the cut to output 0 alone would lose the error (the psum's out_spec is right):
    # output 1, where the error is, is kept, and the part is the whole program
    q = lean(p, (0,))
    assert q.outputs == p.outputs and predict(q).error.output == 1  # type: ignore[union-attr]
    # the cut to output 1 keeps the error (renumbered): the psum is gone
    r = lean(p, (1,))
    er = predict(r).error
    assert [op.kind for op in r.body] == ["neg"] and er is not None and (er.kind, er.facts, er.output) == (e.kind, e.facts, 0)
    assert checked_cells(r) == by_error(parts[1])
    # too few out_specs stay too few: a structure defect the cut would turn into too many is not cut
    few = Program(p.mesh, p.inputs, p.in_specs, p.body, p.outputs, (Spec((None,)),), defect="out_specs_missing")
    assert typed_cells(few)[1]
    assert lean(few, (1,)).outputs == few.outputs


def test_an_invalid_program_claims_only_the_cells_of_the_kind_jax_is_known_to_answer_wrongly() -> None:
    """An invalid program whose defect jax is known to answer with no error (here a dead
    ppermute whose perm repeats a destination: jax checks it only for a live one) checks
    none of its other ops' cells by error: the value tier does not claim them, so they
    stay open for a later program (the sweep draws their foci again). Without the entry
    it claims them all."""
    dead_perm = prog(XY, [iota(4)], [P("x")], [op("neg", 0), op("ppermute", 0, axes=("x",), perm=((0, 1), (0, 1)))],
                     [1], [P("x")])
    ranged = KnownDivergence("perm", "r", (Pattern.parse("missing_error|*|collective_param"),), "",
                             op_features=(OpFeature.parse("ppermute"),), case="c.json", link="none found")

    seen: set[str] = set()

    def claimed(suppressions: list[KnownDivergence], version: str | None) -> set[str]:
        led = CellLedger.new()
        tier_modes(dead_perm, RunConfig(suppressions=suppressions), led, jax_version=version)
        seen.clear()
        seen.update(led.seen)
        return {pair.split("@")[0] for pair in led.scheduled}

    assert any(c.startswith("neg|") and c.endswith("|by_error") for c in claimed([], "0.10.2"))
    assert not any(c.startswith("neg|") for c in claimed([ranged], "0.10.2"))
    # (still seen: a neg cell outside the table would be a focus of the sweep)
    assert any(c.startswith("neg|") and c.endswith("|by_error") for c in seen)
    # (another jax, or no workers' version: the entry says nothing)
    assert any(c.startswith("neg|") for c in claimed([ranged], None))


# ------------------------------------------------------------------ parts


def test_the_modes_a_known_entry_says_jax_may_crash_in_run_last() -> None:
    """A crash kills the worker, and the modes after it in the job never run: the
    planner puts the modes a known entry says jax may crash in on a program last (a
    partial-manual all_gather crashed gspmd, and smap never checked that sweep program's
    seven cells, which the sweep counted as claimed). A program without the entry's
    features keeps its order."""
    pl = planner(RunConfig(suppressions=ENTRIES), "0.10.2")
    assert any(e.id == "gspmd-partial-manual-manual-subgroup-abort" for e in pl.known.crashes)
    xyz = Mesh(("x", "y", "z"), (2, 2, 2))
    gather = Program(xyz, (iota(4),), (P("x"),), (op("all_gather", 0, axes=("x",), axis=0, tiled=True),), (1,), (P(),),
                     axis_names=("x",))
    modes = ("abstract", "jit", "gspmd", "vmap", "smap", "grad", "lowering")
    got = pl.crash_last(gather, modes)
    assert got[-1] == "gspmd" and sorted(got) == sorted(modes) and got[:2] == ("abstract", "jit"), got
    plain = Program(xyz, (iota(4),), (P("x"),), (op("neg", 0),), (1,), (P("x"),), axis_names=("x",))
    assert pl.crash_last(plain, modes) == modes


def test_a_mode_a_known_entry_says_may_hang_goes_in_a_part_of_its_own_with_the_short_limit() -> None:
    """The grad modes may hang on a negative-scatter psum_scatter in lax.scan
    (negative-scatter-dimension): they go in a part with KNOWN_HANG_LIMIT_S, joined with
    the rest of the program's modes (one group, one prediction)."""
    p = from_json((CORPUS / "neg_scatter_scan_grad_hang.json").read_text())
    modes = ("abstract", "jit", "grad", "grad_remat")
    parts = planner(RunConfig(suppressions=ENTRIES, modes=modes), "0.10.2").split(p, modes, sweeping=False)
    assert [(x.modes, x.kind, x.limit_s) for x in parts] == [
        (("abstract", "jit"), PartKind.SPLIT, None), (("grad", "grad_remat"), PartKind.SPLIT, KNOWN_HANG_LIMIT_S)]
    assert parts[0].prediction is parts[1].prediction is not None
    # on a jax the entry does not cover: no limit (while the sweep runs, in one part)
    (one,) = planner(RunConfig(suppressions=ENTRIES, modes=modes), "0.12.0").split(p, modes, sweeping=True)
    assert one.modes == modes and one.limit_s is None


def test_eager_runs_the_outputs_a_known_entry_says_it_raises_on_apart_from_the_others() -> None:
    """A valid program's outputs that a known entry says jax raises on in eager (a
    negative-split all_to_all's, a zero-size one's) go in a late part of their own: one
    such output made eager raise for the whole part, and it checked none of the others.
    The other outputs' part runs clean in real jax."""
    from harness.run.modes import MODES

    p = prog(XY, [iota(4), Input((4, 4), "float32", "iota"), iota(4, 0)], [P("x"), P(), P("x")],
             [op("neg", 0), op("all_to_all", 1, axes=("x",), split_axis=-1, concat_axis=0, tiled=True), op("neg", 2)],
             [3, 4, 5], [P("x"), P("x"), P("x")])
    pred = predict(p)
    assert pred.error is None
    assert known_raise_outputs(ENTRIES, p, pred.value_types, "0.10.2", "eager") == {1, 2}
    assert known_raise_outputs(ENTRIES, p, pred.value_types, "0.11.2", "eager") == {2}  # (negative axes: fixed upstream)
    plain = prog(XY, [iota(4)], [P("x")], [op("neg", 0)], [1], [P("x")])
    assert known_raise_outputs(ENTRIES, plain, predict(plain).value_types, "0.10.2", "eager") == frozenset()

    pl = planner(RunConfig(workers=0, suppressions=ENTRIES), "0.10.2")
    parts = pl.late_parts(p, "eager", (0, 1))
    assert [[x.program.body[i - len(x.program.inputs)].kind for i in x.program.outputs] for x in parts] == [["neg"], ["all_to_all"]]
    assert [x.outputs for x in parts] == [(0,), (1,)] and all(x.late and x.parent == program_id(p) for x in parts)
    # (its ops' cells are the neg's; the call cells are the program's own, every part's)
    assert parts[0].cells == frozenset(c for c in parts[0].cells if c.startswith(("neg", "call|")))
    assert any(c.startswith("neg") for c in parts[0].cells)
    assert MODES["eager"].run(parts[0].program).status == "ok"
    assert [x.program for x in pl.late_parts(plain, "eager")] == [plain]


def test_a_stream_program_has_its_jit_mode_batched_and_a_sweep_program_does_not() -> None:
    """A valid program of the stream has its jit mode compiled in a batch with others (the
    executor fills a batch of `RunConfig.batch`), its other modes in a part joined with
    it; one of the sweep runs every mode in its own job, as a batch records its programs
    only when it is full (batched sweep programs left pairs of every cheap mode unchecked)."""
    progs = [prog(XY, [iota(4)], [P("x")], [op("neg", 0), op("add", 0, k)], [2], [P("x")]) for k in (1, 0)]
    modes = ("abstract", "jit", "vmap")
    pl = planner(RunConfig(workers=0, suppressions=ENTRIES, batch=2, modes=modes), "0.10.2")
    for p in progs:
        stream = pl.split(p, modes, sweeping=False)
        assert [(x.modes, x.kind, x.together) for x in stream] == [
            (("abstract", "vmap"), PartKind.SPLIT, ()),  # (vmap alone: nothing to share a compile with)
            (("jit",), PartKind.BATCHED, ())]
        swept = pl.split(p, modes, sweeping=True)
        # (one compile for both: harness/run/together.py)
        assert [(x.modes, x.kind, x.together) for x in swept] == [(modes, PartKind.WHOLE, ("jit", "vmap"))]
        # (a derived program is never batched: its result would wait for its batch to fill)
        assert [x.kind for x in pl.split(p, modes, sweeping=False, batch=False)] == [PartKind.WHOLE]
        # a prediction made already is the one the parts carry, and batches nothing more
        pred = predict(p)
        assert [(x.kind, x.prediction is pred) for x in pl.split(p, modes, sweeping=False, prediction=pred)] == [
            (PartKind.SPLIT, True), (PartKind.BATCHED, True)]
        assert [(x.kind, x.prediction is pred) for x in pl.split(p, modes, sweeping=True, prediction=pred)] == [
            (PartKind.WHOLE, True)]


def test_a_mode_a_known_entry_says_jax_fails_in_is_not_run_together() -> None:
    """A program's jit-like modes share one jit (harness/run/together.py), but not a mode
    a known entry says jax raises in on it: its error would make the whole jit fail and
    send every mode to run alone (vmap-spmd-scan-closure-vma: any op in a lax.scan)."""
    scan = prog(XY, [Input((4, 8), "float32", "small", 3)], [P("x", "y")], [op("psum", 0, axes=("y",), wrap="scan"), op("neg", 1)],
                [2], [P("x")])
    modes = ("abstract", "jit", "vmap", "vmap_spmd")
    for entries, together in ((ENTRIES, ("jit", "vmap")), ([], ("jit", "vmap", "vmap_spmd"))):
        pl = planner(RunConfig(workers=0, suppressions=entries, modes=modes), "0.10.2")
        (part,) = pl.split(scan, modes, sweeping=True)
        assert part.modes == modes and part.together == together, (entries == [], part.together)


# ------------------------------------------------------------------ late parts


def test_the_late_part_sent_next_is_the_one_with_most_unchecked_cells_per_op() -> None:
    """Late (eager) parts go out most worth first: unchecked cells of their mode per
    argument, op and output; the parts a budget leaves unsent are the least worth."""
    led = CellLedger.new()
    small, big = psum_program(1), two_outputs()
    for c in checked_cells(small) | checked_cells(big):  # (the programs' call cells, the same for both: checked)
        if c.startswith("call|"):
            led.checks[(c, "eager")] = 1

    def late(p: Program, parent: str) -> Part:
        return Part(p, ("eager",), late=True, parent=parent, cells=checked_cells(p))

    assert next_late([late(small, "a"), late(big, "b")], led) == 1  # (the psum, neg and their pair cells, one argument)
    for c in checked_cells(big):
        if c.startswith("neg"):
            led.checks[(c, "eager")] = 1
    assert next_late([late(small, "a"), late(big, "b")], led) == 0  # (its neg checked by another part: the small one is worth more now)
    assert next_late([late(small, "a"), late(small, "c")], led) == 0  # (equals: the earliest)


def test_a_late_part_goes_out_cut_to_the_outputs_still_bringing_a_pair() -> None:
    """A late part is cut again as it goes out (`Planner.outgoing`): an output whose
    pairs a part sent before it checked since is left out; a part none of whose outputs
    brings anything goes as it is (the least worth: it goes out only when time is left)."""
    led, pl = CellLedger.new(), planner(RunConfig())

    def out(p: Program, mode: str = "eager") -> Program:
        return pl.outgoing(Part(p, (mode,), late=True), led).program

    p = two_outputs()
    assert out(p) == p
    parts = typed_output_cells(p)
    led.record(parts[0], ["eager"], 1, 0.0)  # psum's pairs: checked by another part
    q = out(p)
    assert [op.kind for op in q.body] == ["neg"] and len(q.outputs) == 1
    assert out(p, "jit") == p  # (another mode's pairs: still new)
    led.record(parts[1], ["eager"], 2, 0.0)
    assert out(p) == p
    # an invalid part's pairs are its cells by error (its psum's: checked), and its cut
    # keeps its error
    bad = replication_at_output_1()
    led.record(by_error(parts[0]), ["eager"], 3, 0.0)
    r = out(bad)
    assert [op.kind for op in r.body] == ["neg"] and r.defect == bad.defect


# ------------------------------------------------------------------ derived programs


def test_while_the_sweep_runs_a_derived_program_runs_only_the_modes_it_brings_a_pair() -> None:
    """A program without its known bug (a derived program), while the sweep runs, is
    planned like a sweep program: only in the modes of its own in which it brings a pair
    no program was sent with or one jax left unchecked (that one it claims; the others
    stay out of `scheduled`, which the sweep's draws read), its eager part cut to the
    outputs that bring eager one; one that brings none runs nothing. After the sweep it
    runs in every mode it was queued in."""
    pl, led = planner(RunConfig(together=False)), CellLedger.new()

    def derived(q: Program, modes: tuple[str, ...], sweeping: bool = True) -> tuple[Part, ...]:
        plan = pl.derived(q, modes, frozenset(), led, sweeping)
        led.take(plan.claims)
        return plan.parts

    p = two_outputs()
    psum, neg = typed_output_cells(p)
    other = Program(p.mesh, p.inputs, p.in_specs, p.body[:1], (1,), p.out_specs[:1])
    led.claim(other, psum, ("gspmd", "eager"))  # (another program was sent with psum's pairs)
    led.claim(other, psum | neg, ("vmap",))
    parts = derived(p, ("jit", "gspmd", "vmap", "eager"))
    assert now(parts) == [(p, ("jit", "gspmd"))]  # (vmap: nothing new)
    assert [(len(x.program.outputs), x.modes) for x in parts if x.late] == [(1, ("eager",))]  # neg's output only
    # (a program the results gave: the sweep's draws, which read `scheduled`, stay blind to it)
    assert not any(f"{c}@jit" in led.scheduled for c in psum | neg)
    # one that brings nothing runs nothing; after the sweep, every mode it was queued in
    # (another program with the same cells: its argument's values differ)
    q = Program(p.mesh, tuple(Input(x.shape, x.dtype, x.fill, x.seed + 1, x.offset) for x in p.inputs), p.in_specs, p.body,
                p.outputs, p.out_specs)
    led.claim(other, psum | neg, ("jit",))
    assert derived(q, ("jit", "vmap")) == ()
    # a pair jax left unchecked (reopened) is one it brings, and claims
    led.reopen(neg, "vmap")
    assert now(derived(q, ("jit", "vmap"))) == [(q, ("vmap",))] and not led.reopened
    assert now(derived(p, ("jit", "vmap"), sweeping=False)) == [(p, ("jit", "vmap"))]  # (its cells are its parent's: no other mode)


def test_a_rewrite_runs_in_every_mode_where_the_cells_its_parent_lacks_are_open() -> None:
    """A rewrite makes cells its parent lacks (a ppermute's axes put in mesh order:
    `axes=several>1`, the parent's `axes=out_of_mesh_order`). Queued in the modes the
    parent diverged in, it also runs in the run's other modes where those cells are open,
    eager too, cut to the outputs that hold them (the parent's eager part was clean, and
    its rewrite's `ppermute|axes=several>1&dtype=int16` was checked in every mode but
    eager). A program without a bug, the parent's cells only, runs where it was queued."""
    from oracles.rewrites import REWRITES

    parent = from_json((CORPUS / "ppermute_order.json").read_text())
    floats = (Input(parent.inputs[0].shape, "float32", "iota"),)  # (grad claims it too)
    parent = Program(parent.mesh, floats, parent.in_specs, (*parent.body, Op.make("neg", (0,))), (1, 2),
                     (*parent.out_specs, parent.out_specs[0]))
    q = REWRITES["mesh_order_axes"](parent)
    assert q is not None
    new = checked_cells(q) - checked_cells(parent)
    assert "ppermute|axes=several>1" in new and all(c.startswith("ppermute|") for c in new)
    pl, led = planner(RunConfig(together=False)), CellLedger.new()
    led.claim(parent, checked_cells(parent), DEFAULT_MODES)  # (the parent was sent in every mode)
    queue = DerivedQueue({})
    queue.queue(q, parent, ("jit",))
    assert queue.new[program_id(q)] == new and queue.pending == [(q, ("jit",))]
    plan = pl.derived(q, ("jit",), queue.new[program_id(q)], led, sweeping=False)
    ((sent, modes),) = now(plan.parts)
    assert sent == q and modes[0] == "abstract" and {"jit", "gspmd", "vmap", "grad", "lowering"} <= set(modes), modes
    assert "eager" not in modes and "smap" not in modes  # (eager: a late part; smap cannot run two axes)
    assert set(plan.modes) == {*modes, "eager"}  # (the modes it now runs in: `DerivedQueue.ran`)
    (late,) = [x for x in plan.parts if x.late]
    assert late.modes == ("eager",) and len(late.program.outputs) == 1 and new <= late.cells  # the ppermute's output only
    # checked there since: not again. A derived program without a new cell: where queued
    for c in new:
        for m in DEFAULT_MODES:
            led.checks[(c, m)] = 1
    assert now(pl.derived(q, ("vmap",), new, led, sweeping=False).parts) == [(q, ("vmap",))]
    lean = Program(parent.mesh, parent.inputs, parent.in_specs, parent.body, (1,), parent.out_specs[:1])
    plan = pl.derived(lean, ("grad",), frozenset(), led, sweeping=False)
    assert now(plan.parts) == [(lean, ("grad",))] and not any(x.late for x in plan.parts)
