"""The value tier's choice of modes by configuration cells (harness/campaign/cells.py,
harness/campaign/fuzz.py `tier_modes`): no jax, but where a test runs a mode or a run."""

from __future__ import annotations

from pathlib import Path

from harness.campaign.cells import CellLedger, program_cells
from harness.campaign.config import RunConfig
from harness.campaign.fuzz import COSTLY_MODES, COSTLY_SHARE, tier_modes
from harness.run.modes import DEFAULT_MODES
from programs.model import Input, Mesh, Op, Program, Spec
from programs.points import DERIVATIVE_MODES
from programs.serialize import program_id


def _psum(n: int, dtype: str = "float32") -> Program:
    return Program(Mesh(("x",), (2,)), (Input((2 * n,), dtype, "iota"),), (Spec((("x",),)),),
                   (Op.make("psum", (0,), axes=("x",)),), (1,), (Spec((None,)),))


def test_a_program_bringing_nothing_new_is_not_claimed_and_a_costly_mode_runs_only_for_its_new_cells() -> None:
    led = CellLedger.new()
    p = _psum(1)
    cells = program_cells(p, [((2,), "float32"), ((1,), "float32")])
    assert "psum|dtype=float32" in cells
    # the first: every mode, eager (costly) too, since every cell is new to it
    assert led.claim(p, cells, DEFAULT_MODES, COSTLY_MODES) == DEFAULT_MODES
    assert led.claim(_psum(2), cells, DEFAULT_MODES, COSTLY_MODES) == ()  # the same cells: nothing new
    # a cell new to the cheap modes only (eager's pairs were claimed by an earlier
    # program that ran only eager): the cheap modes run it, eager does not
    led2 = CellLedger.new()
    assert led2.claim(p, cells, ("abstract", "eager"), COSTLY_MODES) == ("abstract", "eager")
    got = led2.claim(p, cells, DEFAULT_MODES, COSTLY_MODES)
    assert got == tuple(m for m in DEFAULT_MODES if m != "eager")
    # and what a claim skipped stays unclaimed there: eager still takes a program that brings it a cell
    led3 = CellLedger.new()
    led3.scheduled |= {f"{c}@jit" for c in cells}
    assert led3.claim(p, cells, ("jit", "eager"), COSTLY_MODES) == ("jit", "eager")


def test_a_claim_that_came_back_unchecked_is_claimed_again_a_few_times() -> None:
    """A program claimed for jit whose jit run raised (at its own op or another) checked
    none of its pairs there: the next program holding them is claimed for jit again, up
    to REOPEN times, and never once a program checked them; the sweep's view
    (`scheduled`) is unchanged, so its draws stay repeatable."""
    from harness.campaign.cells import REOPEN

    led = CellLedger.new()
    p = _psum(1)
    cells = program_cells(p, [((2,), "float32"), ((1,), "float32")])
    modes = ("abstract", "jit", "vmap")
    assert led.claim(p, cells, modes) == modes
    before = set(led.scheduled)
    for _ in range(REOPEN):
        led.record(cells, ["abstract", "vmap"], 0, 1.0)  # jit raised: not checked there
        led.reopen(cells, "jit")
        assert led.scheduled == before
        # (lean, as while sweeping: only the modes it brings a pair; vmap checked them)
        assert led.claim(_psum(2), cells, modes, lean=True) == ("abstract", "jit")
    led.reopen(cells, "jit")  # (the REOPEN-th time spent: no more)
    assert led.claim(_psum(3), cells, modes, lean=True) == ()
    # a derived program's failure (the next program of its chain drops another known
    # bug) reopens them whatever the count, and spends none of it
    for n in range(3):
        led.reopen(cells, "jit", counted=False)
        assert led.claim(_psum(4 + n), cells, modes, lean=True) == ("abstract", "jit")
    assert all(led.reopens[f"{c}@jit"] == REOPEN for c in cells)
    done = CellLedger.new()
    done.claim(p, cells, modes)
    done.record(cells, ["jit"], 0, 1.0)
    done.reopen(cells, "jit")  # (checked there already: nothing to reopen)
    assert done.claim(_psum(2), cells, ("jit",)) == ()


def test_a_derived_programs_failure_reopens_its_pairs_without_spending_their_reopens(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Run.record: a derived program (without its parent's known bugs) that raised in jit
    reopens its pairs there even when drawn programs spent their reopens: the next
    program of its chain claims them (`CellLedger.reopen(counted=False)`); a drawn
    program's failure does not."""
    import io

    from harness.campaign.cells import REOPEN
    from harness.campaign.state import Run
    from harness.judge.check import CheckResult
    from harness.run.observation import Observation
    from oracles import predict

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), sweep=False))
    parent, q = _psum(1), _psum(2)
    cells = program_cells(q, [((4,), "float32"), ((2,), "float32")])
    run.cells.scheduled |= {f"{c}@jit" for c in cells}
    run.cells.reopens.update({f"{c}@jit": REOPEN for c in cells})
    raised = (Observation("abstract", status="ok"), Observation("jit", status="error", error_type="ValueError"))
    run.record(CheckResult(parent, predict(parent), raised, ()))
    assert not run.cells.reopened  # (drawn: its reopens are spent)
    run.queue_derived(q, parent, ("jit",))
    run.record(CheckResult(q, predict(q), raised, ()))
    assert run.cells.reopened == {f"{c}@jit" for c in cells}


def test_the_share_by_program_id_runs_the_costly_modes_on_a_quarter_of_its_programs() -> None:
    cfg = RunConfig(value_share=0.5)
    seen = {"costly": 0, "cheap": 0, "abstract": 0}
    for n in range(1, 400):
        p = _psum(n)
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
    assert tier_modes(_psum(3), RunConfig(value_share=1.0)) == RunConfig().modes  # --value-share 1: every mode


def test_an_invalid_program_claims_its_cells_by_error() -> None:
    """An invalid program checks its cells by error (Run.record's `CELL|by_error`): the
    first to bring one goes to every mode it applies to, which is cheap (it stops at
    tracing); the same program again brings nothing."""
    from harness.campaign.cells import applies, checked_cells, typed_cells
    from harness.campaign.fuzz import seeded_programs

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
    from harness.campaign.fuzz import cpu_runnable_part

    mesh = Mesh(("x",), (2,))
    body = (Op.make("pbroadcast", (0,), axes=("x",), source=0), Op.make("psum", (0,), axes=("x",)))
    p = Program(mesh, (Input((2,), "float32", "iota"),), (Spec((("x",),)),), body, (1, 2), (Spec((("x",),)), Spec((None,))))
    q = cpu_runnable_part(p)
    assert q is not None and [o.kind for o in q.body] == ["psum"] and q.outputs == (1,) and q.out_specs == (Spec((None,)),)
    only = Program(mesh, p.inputs, p.in_specs, body[:1], (1,), (Spec((("x",),)),))
    assert cpu_runnable_part(only) is None
    plain = Program(mesh, p.inputs, p.in_specs, body[1:], (1,), (Spec((None,)),))
    assert cpu_runnable_part(plain) is None  # (nothing to drop: the program runs whole)


def test_a_program_recorded_in_parts_counts_once_and_its_case_keeps_every_part(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A program whose costly mode ran in a late part (harness/campaign/fuzz.py) is
    recorded twice: one program, one divergent and failing program, its cells checked in
    both parts' modes at its own index, and its case holding both parts' divergences."""
    import io
    import json

    from harness.campaign.state import Run
    from harness.judge.check import CheckResult
    from harness.judge.compare import Divergence, DivergenceKind
    from harness.run.observation import Observation
    from oracles import predict

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), sweep=False))
    p, q = _psum(1), _psum(2)
    pred = predict(p)

    def part(prog: Program, mode: str, bad: bool) -> CheckResult:
        divs = (Divergence(DivergenceKind.VALUE, mode, f"({mode}) wrong", "psum", output=0),) if bad else ()
        return CheckResult(prog, predict(prog), (Observation(mode, status="ok"),), divs)

    run.record(part(p, "jit", True))
    run.record(part(q, "jit", False))
    run.record(part(p, "eager", True))  # p's late part
    assert run.n == 2 and run.n_with_divergences == 1 and run.n_failing_programs == 1
    cell = "psum|dtype=float32"
    assert run.cells.checks[(cell, "jit")] == 2 and run.cells.checks[(cell, "eager")] == 1
    assert run.cells.first[(cell, "eager")][0] == run.cells.first[(cell, "jit")][0] == 1  # p's own index
    doc = json.loads((tmp_path / "cases" / f"{program_id(p)}.json").read_text())
    assert sorted(d["mode"] for d in doc["divergences"]) == ["eager", "jit"]
    assert pred.error is None


def test_a_run_sweeps_first_and_runs_every_late_part_without_a_budget(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The sweep's programs count toward max_examples; without a budget every late part
    (eager) runs, so eager checks the sweep's cells too."""
    import io

    from harness.campaign.fuzz import fuzz
    from harness.judge.known import load

    s = fuzz(RunConfig(seed=0, max_examples=6, modes=("abstract", "jit", "eager"), workers=1, report_dir=tmp_path,
                       progress=io.StringIO(), minimize_budget_s=0, suppressions=load()))
    assert s.programs_drawn == s.programs_swept == 6 and s.late_dropped == 0
    assert s.counts.programs_run + s.repeats_skipped == 6
    eager = {c.cell for c in s.cells if c.mode == "eager" and c.checks}
    jit = {c.cell for c in s.cells if c.mode == "jit" and c.checks}
    assert eager and eager <= jit | {c.cell for c in s.cells if c.cell.endswith("|by_error")}


def test_a_value_divergence_is_put_on_the_first_wrong_op_its_output_depends_on() -> None:
    """The probe names every body value that went wrong; an output's divergence goes on
    the first of them in its own cone, never on a wrong op it does not read (a known bug
    elsewhere in the body: the reach benchmark's psum_scatter fault was once bucketed as
    `value|jit|pshuffle`, after a pshuffle out of mesh order the output never read)."""
    import numpy as np

    from harness.judge.check import CheckResult, localise_values
    from harness.judge.compare import Divergence, DivergenceKind
    from harness.run.observation import Observation, ObservedOutput
    from oracles import predict, trace

    p = Program(Mesh(("x",), (2,)), (Input((4,), "float32", "iota"),), (Spec((("x",),)),),
                (Op.make("neg", (0,)), Op.make("psum", (0,), axes=("x",)), Op.make("neg", (2,))), (1, 3), (Spec((("x",),)),) * 2)
    st, err = trace(p)
    assert err is None

    def observed(v: int, delta: float) -> ObservedOutput:
        blocks = {c: np.asarray(st.values[v][c]) + delta for c in p.mesh.coords()}
        return ObservedOutput((4,), "float32", None, blocks)

    # the probe: op 0 (neg, output 0) and op 1 (psum, read by op 2, output 1) both wrong
    probe = Observation("probe", outputs=(observed(1, 1.0), observed(2, 1.0), observed(3, 0.0)), facts={"values": [1, 2, 3]})
    divs = tuple(Divergence(DivergenceKind.VALUE, "jit", "", "neg", output=k) for k in (0, 1))
    res = localise_values(CheckResult(p, predict(p), (), divs), probe)
    assert [d.where for d in res.divergences] == ["neg", "psum"]


def test_a_vmap_divergence_in_another_member_is_probed_with_that_members_inputs() -> None:
    """A rank-0 iota is 0 in batch member 0, so a wrong collective on it may show only in
    member 1 under vmap: the probe of member 0 then sees no wrong op, and the divergence
    would go on its output's producer (a known ppermute bug was reported as a new
    `value|vmap|psum` bucket). After member 0's probe a divergence no probed member shows
    gets its own member's probe, which puts it on the op that went wrong there."""
    import numpy as np

    from harness.judge.check import CheckResult, localise_values, probe_mode
    from harness.judge.compare import Divergence, DivergenceKind
    from harness.run.observation import Observation, ObservedOutput
    from oracles import predict, trace

    p = Program(Mesh(("x",), (2,)), (Input((2,), "float32", "iota"), Input((4,), "float32", "iota")), (Spec((("x",),)),) * 2,
                (Op.make("ppermute", (0,), axes=("x",), perm=((0, 1), (1, 0))), Op.make("psum", (2,), axes=("x",)),
                 Op.make("neg", (1,))), (3, 4), (Spec(()), Spec((("x",),))))
    divs = (Divergence(DivergenceKind.VALUE, "jit", "", "neg", output=1),
            Divergence(DivergenceKind.VALUE, "vmap", "", "psum", output=0, members=(1,)))

    def probe_of(member: int, wrong: int) -> Observation:
        st, err = trace(p.member(member))
        assert err is None
        outs = tuple(ObservedOutput((1,), "float32", None, {c: np.asarray(st.values[v][c]) + (v == wrong) for c in p.mesh.coords()})
                     for v in (2, 3, 4))
        return Observation("probe", outputs=outs, facts={"values": [2, 3, 4]})

    res = CheckResult(p, predict(p), (), divs)
    first = probe_mode(res)
    assert first is not None and first.member == 0 and first.program == p
    # member 0: the neg is wrong; the ppermute of an all-zero iota looks right
    res = localise_values(res, probe_of(0, wrong=4))
    assert [d.where for d in res.divergences] == ["neg", "psum"] and res.probed == (0,)
    second = probe_mode(res)
    assert second is not None and second.member == 1 and second.mode == "probe"
    assert list(second.program.inputs[0].materialize()) == [100, 101]
    res = localise_values(res, probe_of(1, wrong=2))
    assert [d.where for d in res.divergences] == ["neg", "ppermute"] and probe_mode(res) is None
    # only vmap's member 1 wrong: the first probe is member 1's
    only = CheckResult(p, predict(p), (), divs[1:])
    assert probe_mode(only).member == 1  # type: ignore[union-attr]
    # a failed probe run still counts as run (no endless probing)
    assert probe_mode(localise_values(only, Observation("probe", status="crash"))) is None


def test_a_probe_runs_the_body_cut_to_the_outputs_with_a_wrong_value() -> None:
    """A probe puts a wrong value on an op of its output's cone, so it runs the program
    cut to the divergent outputs, without the other ops and arguments (an eager probe
    dispatches each: 1.7-4.0 s for a sweep program's late part), and its wrong value is
    put back on the op of the checked program. A divergence naming no output (grad's)
    probes the whole body."""
    import numpy as np

    from harness.judge.check import CheckResult, localise_values, probe_mode
    from harness.judge.compare import Divergence, DivergenceKind
    from harness.run.modes_direct import probe_values
    from harness.run.observation import Observation, ObservedOutput
    from oracles import predict, trace

    x = Mesh(("x",), (2,))
    p = Program(x, (Input((2,), "float32", "iota"), Input((4,), "float32", "iota"), Input((2,), "int32", "iota")),
                (Spec((("x",),)),) * 3,
                (Op.make("neg", (2,)), Op.make("psum", (0,), axes=("x",)), Op.make("ppermute", (1,), axes=("x",), perm=((0, 1), (1, 0))),
                 Op.make("neg", (5,))),
                (3, 4, 6), (Spec((("x",),)), Spec(()), Spec((("x",),))))
    div = Divergence(DivergenceKind.VALUE, "eager", "", "neg", output=2)
    res = CheckResult(p, predict(p), (), (div,))
    run = probe_mode(res)
    assert run is not None and run.mode == "probe_eager" and run.ops == (2, 3)  # (the ppermute and the neg after it)
    q = run.program
    assert [op.kind for op in q.body] == ["ppermute", "neg"] and q.inputs == (p.inputs[1],)
    st, err = trace(q)
    assert err is None
    vals = list(probe_values(q))

    def probe(wrong: int) -> Observation:
        outs = tuple(ObservedOutput((1,), "float32", None, {c: np.asarray(st.values[v][c]) + (v == wrong) for c in x.coords()})
                     for v in vals)
        return Observation("probe_eager", outputs=outs, facts={"values": vals})

    assert [d.where for d in localise_values(res, probe(wrong=vals[0])).divergences] == ["ppermute"]
    assert [d.where for d in localise_values(res, probe(wrong=vals[1])).divergences] == ["neg"]
    # (a probe of the whole body, saved before probes were cut, is read as one)
    full = list(probe_values(p))
    st_p, _ = trace(p)
    outs = tuple(ObservedOutput((1,), "float32", None, {c: np.asarray(st_p.values[v][c]) + (v == 5) for c in x.coords()}) for v in full)
    assert [d.where for d in localise_values(res, Observation("probe_eager", outputs=outs, facts={"values": full})).divergences] == ["ppermute"]
    grad = Divergence(DivergenceKind.VALUE, "grad", "", "grad", output=None)
    whole = probe_mode(CheckResult(p, predict(p), (), (div, grad)))
    assert whole is not None and whole.program == p and whole.ops is None


def test_fixed_programs_are_all_checked_whatever_max_examples_says(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Only the sweep's run counts its programs toward max_examples: a run over fixed
    programs (the benchmarks) checks every one of them."""
    import io

    from harness.campaign.fuzz import fuzz

    s = fuzz(RunConfig(max_examples=1, modes=("abstract",), workers=1, report_dir=tmp_path, progress=io.StringIO(),
                       minimize_budget_s=0), fixed=[_psum(1), _psum(2), _psum(3)])
    assert s.counts.programs_run == 3 and s.programs_swept == 0


def _two_outputs() -> Program:
    """psum (output 0) and neg (output 1) of one argument."""
    return Program(Mesh(("x",), (2,)), (Input((4,), "float32", "iota"),), (Spec((("x",),)),),
                   (Op.make("psum", (0,), axes=("x",)), Op.make("neg", (0,))), (1, 2), (Spec((None,)), Spec((("x",),))))


def test_a_costly_mode_runs_the_program_cut_to_the_outputs_that_bring_it_new_cells() -> None:
    """Eager (costly) runs the program cut to the outputs whose ops bring it a cell no
    program had, and claims only theirs; the cheap modes run it whole. While the sweep
    runs (`lean`), a claimed program runs only the modes it brings a new cell (and abstract)."""
    from harness.campaign.cells import typed_cells, typed_output_cells
    from programs.graph import slice_outputs

    p = _two_outputs()
    cells, fails = typed_cells(p)
    parts = typed_output_cells(p)
    assert not fails and "psum|dtype=float32" in parts[0] and "neg|dtype=float32" in parts[1]
    assert parts[0] | parts[1] == cells
    led = CellLedger.new()
    led.scheduled |= {f"{c}@eager" for c in parts[0]}  # psum's cells: eager had them
    assert led.claim(p, cells, DEFAULT_MODES, COSTLY_MODES, parts) == DEFAULT_MODES
    assert led.cut[(program_id(p), "eager")] == (1,)
    assert {x for x in led.scheduled if x.endswith("@eager")} == {f"{c}@eager" for c in parts[0] | parts[1]}
    assert {x.rsplit("@", 1)[0] for x in led.scheduled if x.endswith("@jit")} == cells  # jit: the whole program
    q = slice_outputs(p, led.cut[(program_id(p), "eager")])
    assert [op.kind for op in q.body] == ["neg"] and typed_cells(q)[0] == parts[1]
    # every output new to eager: no cut (None: every output), but an entry (the lean part)
    led2 = CellLedger.new()
    led2.claim(p, cells, DEFAULT_MODES, COSTLY_MODES, parts)
    assert led2.cut[(program_id(p), "eager")] is None
    # lean: the cheap modes had every cell, eager had none
    led3 = CellLedger.new()
    led3.scheduled |= {f"{c}@{m}" for c in cells for m in DEFAULT_MODES if m != "eager"}
    assert led3.claim(p, cells, DEFAULT_MODES, COSTLY_MODES, parts, lean=True) == ("abstract", "eager")
    led4 = CellLedger.new()
    led4.scheduled |= {f"{c}@{m}" for c in cells for m in DEFAULT_MODES if m != "eager"}
    assert led4.claim(p, cells, DEFAULT_MODES, COSTLY_MODES, parts) == tuple(m for m in DEFAULT_MODES)


def test_the_lean_part_drops_dead_ops_and_keeps_the_op_an_error_is_at() -> None:
    """A claimed eager part runs without dead ops (eager dispatches each, and they check
    no cell); an invalid program keeps the op its error is predicted at and what that op
    needs, so its prediction is the same error, with the same cells by error."""
    from harness.campaign.cells import checked_cells, failing_op, typed_cells
    from oracles import predict
    from programs.graph import lean_part

    p = _two_outputs()
    dead = Op.make("pmax", (0,), axes=("x",))
    q = Program(p.mesh, p.inputs, p.in_specs, (dead, *p.body), (2, 3), p.out_specs)  # pmax (value 1) is dead
    assert failing_op(q) is None
    lean = lean_part(q, None, failing_op(q))
    assert [op.kind for op in lean.body] == ["psum", "neg"] and lean.outputs == (1, 2)
    assert checked_cells(lean) == checked_cells(q)
    assert [op.kind for op in lean_part(q, (1,), None).body] == ["neg"]
    # invalid: a dead psum over an axis the mesh lacks (after a live neg, before a dead cast)
    bad = Op.make("psum", (3,), axes=("nope",))  # of the second neg (dead but for it)
    r = Program(p.mesh, p.inputs, p.in_specs,
                (Op.make("neg", (0,)), Op.make("pmax", (0,), axes=("x",)), Op.make("neg", (1,)), bad, Op.make("cast", (0,), dtype="int32")),
                (1,), (Spec((("x",),)),))
    assert typed_cells(r)[1] and failing_op(r) == 3
    lean_r = lean_part(r, None, failing_op(r))
    assert [op.kind for op in lean_r.body] == ["neg", "neg", "psum"]  # the dead pmax and cast are gone
    e, e_lean = predict(r).error, predict(lean_r).error
    assert e is not None and e_lean is not None and (e_lean.kind, e_lean.facts, e_lean.why) == (e.kind, e.facts, e.why)
    assert lean_r.body[e_lean.op_index].kind == "psum" and checked_cells(lean_r) == checked_cells(r)


def test_a_valid_lean_part_drops_the_arguments_nothing_uses() -> None:
    """A valid program's lean part leaves out its unused arguments (eager moves each to
    its in_spec's layout with a compile of its own): the same ops on the same values, the
    same cells, the same predicted outputs, and jax agrees eagerly. An unused float64
    argument stays (it is what turns jax_enable_x64 on); an invalid program keeps all."""
    import numpy as np

    from harness.campaign.cells import checked_cells
    from harness.judge.check import check_program
    from oracles import predict
    from programs.graph import lean_part

    mesh = Mesh(("x", "y"), (2, 2))
    ins = (Input((4,), "float32", "iota"), Input((2, 4), "int32", "iota", seed=1), Input((4,), "float32", "iota", seed=2))
    specs = (Spec((("x",),)), Spec((("y",), None)), Spec((None,)))
    # argument 1 is unused; argument 2 is an output of its own
    p = Program(mesh, ins, specs, (Op.make("psum", (0,), axes=("x",)), Op.make("neg", (3,))), (4, 2), (Spec((None,)), Spec((None,))))
    q = lean_part(p, None, None, valid=True)
    assert q.inputs == (ins[0], ins[2]) and q.in_specs == (specs[0], specs[2])
    assert [o.operands for o in q.body] == [(0,), (2,)] and q.outputs == (3, 1)
    assert checked_cells(q) == checked_cells(p)
    for a, b in zip(predict(p).outputs, predict(q).outputs):
        assert a.dtype == b.dtype and np.array_equal(a.global_value, b.global_value)
    assert lean_part(p, None, None) == p  # (not known valid: every argument stays)
    assert not check_program(q, ("eager",)).divergences
    x64 = Program(mesh, (ins[0], Input((4,), "float64", "iota")), specs[::2], p.body[:1], (2,), (Spec((None,)),))
    assert lean_part(x64, None, None, valid=True) == x64
    # the grad modes need a float argument: an unused one stays where no used one is float
    ints = Program(mesh, ins[1:], specs[1:], (Op.make("neg", (0,)),), (2,), (Spec((("y",), None)),))
    assert lean_part(ints, None, None, valid=True).inputs == ins[1:]


def test_a_lean_part_keeps_the_dead_op_that_turns_x64_on() -> None:
    """A dead cast to float64 is all that turns jax_enable_x64 on: the lean part (and
    any slice of the program) keeps it, or the sum of an int32 would be an int32, not an
    int64, and the pairs claimed for the int64 cells would never be checked (fuzz seed
    0, 60 s: smap `all_gather|dtype=int64`, claimed by a sweep program that ran)."""
    from harness.campaign.cells import checked_cells, lean, typed_cells
    from harness.judge.check import check_program
    from oracles import predict
    from programs.graph import lean_part, slice_outputs

    mesh = Mesh(("x",), (4,))
    body = (Op.make("reduce_sum", (0,), axis=0), Op.make("cast", (0,), dtype="float64"),
            Op.make("all_gather", (1,), axes=("x",), axis=0, tiled=True))
    p = Program(mesh, (Input((4, 2), "int32", "iota"),), (Spec((("x",), None)),), body, (3,), (Spec((("x",),)),))
    assert p.x64 and not typed_cells(p)[1]
    assert "all_gather|dtype=int64" in checked_cells(p)
    for q in (lean(p), lean_part(p, None, None, valid=True), slice_outputs(p, (0,))):
        assert q.x64 and checked_cells(q) == checked_cells(p)
        assert [t.dtype for t in predict(q).value_types] == [t.dtype for t in predict(p).value_types]
    # (the cast stays dead: no output depends on it); jax agrees on the int64 it gathers
    assert [op.kind for op in lean(p).body] == ["reduce_sum", "cast", "all_gather"]
    res = check_program(lean(p), ("jit",))
    assert not res.divergences and [o.dtype for o in res.observations[0].outputs] == ["int64"]


def test_a_late_part_cut_to_some_outputs_is_its_programs_part(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The late part of a program cut to some outputs (`Run.record`'s parent) is recorded
    as that program's: counted once, its cells at the program's index; the same cut
    program drawn on its own is a program of its own, counted."""
    import io

    from harness.campaign.state import Run
    from harness.judge.check import CheckResult
    from harness.run.observation import Observation
    from oracles import predict
    from programs.graph import slice_outputs

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), sweep=False))
    p = _two_outputs()
    q = slice_outputs(p, (1,))
    run.record(CheckResult(_psum(1), predict(_psum(1)), (Observation("jit", status="ok"),), ()))
    run.record(CheckResult(p, predict(p), (Observation("jit", status="ok"),), ()))
    run.record(CheckResult(q, predict(q), (Observation("eager", status="ok"),), ()), parent=program_id(p))
    assert run.n == 2
    assert run.cells.first[("neg|dtype=float32", "eager")][0] == run.cells.first[("neg|dtype=float32", "jit")][0] == 2
    assert ("psum|dtype=float32", "eager") not in run.cells.checks
    run.record(CheckResult(q, predict(q), (Observation("jit", status="ok"),), ()))
    assert run.n == 3


def test_the_grad_modes_claim_no_program_they_cannot_differentiate() -> None:
    """A program holding a lax.while_loop (jax has no reverse-mode derivative of it), or
    a valid one without a float output, is not a grad-mode program: its cells stay open
    there; a wrap=while cell is unreachable in the grad modes."""
    from harness.campaign.cells import applies, unreachable

    p = _two_outputs()
    assert applies(p, "grad") and applies(p, "grad_remat")
    w = Program(p.mesh, p.inputs, p.in_specs, (Op.make("neg", (0,), wrap="while"), p.body[1]), p.outputs, p.out_specs)
    assert not applies(w, "grad") and not applies(w, "grad_remat") and applies(w, "jit")
    ints = Program(p.mesh, p.inputs, p.in_specs, (Op.make("cast", (0,), dtype="int32"),), (1,), (Spec((("x",),)),))
    assert not applies(ints, "grad") and applies(ints, "jit")
    assert unreachable("neg|wrap=while", "grad") and unreachable("neg|wrap=while", "jit") is None


def test_pair_cells_name_the_rank_at_the_base_dtype_and_each_pair_of_one_ops_parameter_classes() -> None:
    """programs/cells.py `PAIRED`: a rank's pair cell only at float32, an op's parameter
    classes pairwise, and an invalid program's cells by error without the pairs."""
    from harness.campaign.cells import by_error
    from programs.cells import op_cells

    mesh = Mesh(("x", "y"), (2, 2))
    f32 = op_cells(mesh, Op.make("psum", (0,), axes=("x",)), 3, "float32")
    assert "psum|rank=3&dtype=float32" in f32 and "psum|rank=3" in f32
    bf16 = op_cells(mesh, Op.make("psum", (0,), axes=("x",)), 3, "bfloat16")
    assert not any("&" in c for c in bf16), bf16
    ps = op_cells(mesh, Op.make("psum_scatter", (0,), axes=("x",), scatter_dimension=-1, tiled=True), 2, "float32")
    assert {"psum_scatter|tiled=True&scatter_dimension=negative", "psum_scatter|rank=2&dtype=float32"} <= ps
    a2a = op_cells(mesh, Op.make("all_to_all", (0,), axes=("x",), split_axis=2, concat_axis=1, tiled=False), 3, "int8")
    assert {"all_to_all|tiled=False&split_axis=last", "all_to_all|tiled=False&concat_axis=middle",
            "all_to_all|split_axis=last&concat_axis=middle"} <= a2a
    assert not any("&" in c for c in by_error(frozenset(a2a))) and "all_to_all|dtype=int8|by_error" in by_error(frozenset(a2a))


def test_a_collective_over_several_axes_of_size_above_1_has_a_cell_per_dtype() -> None:
    """programs/cells.py `SEVERAL`: the pair cell `kind|axes=several>1&dtype=D` only over
    two or more axes all of size > 1 (not one axis, nor one of size 1, nor out of mesh
    order), at any dtype; never for an op without an operand; in the grad modes an
    integer dtype's pair cell is unreachable like its marginal."""
    from harness.campaign.cells import unreachable
    from programs.cells import op_cells

    mesh = Mesh(("x", "y", "z"), (2, 2, 1))
    two = op_cells(mesh, Op.make("all_gather", (0,), axes=("x", "y"), axis=0, tiled=True), 2, "int32")
    assert "all_gather|axes=several>1&dtype=int32" in two and "all_gather|dtype=int32" in two
    for axes in (("x",), ("x", "z"), ("y", "x")):
        cells = op_cells(mesh, Op.make("all_gather", (0,), axes=axes, axis=0, tiled=True), 2, "int32")
        assert not any("several>1&" in c for c in cells), (axes, cells)
    assert not any("&dtype=int32" in c for c in op_cells(mesh, Op.make("axis_index", (), axes=("x", "y")), None, "int32"))
    assert unreachable("psum|axes=several>1&dtype=int8", "grad") is not None
    assert unreachable("psum|axes=several>1&dtype=bfloat16", "grad") is None
    assert unreachable("psum|axes=several>1&dtype=bfloat16", "smap") is not None


def test_the_reduced_unreduced_cells_are_unreachable_in_the_modes_the_workers_say_cannot_run_them() -> None:
    """A mode that runs no program with a reduced / unreduced value on this jax (the
    workers' compat.ur_mode_gap, sent when they start) lists the cells only those ops hold
    as unreachable there with that reason, and no other cell: the real mode reports the
    program unsupported with the same words, and a mode without the gap runs it."""
    from harness.campaign.cells import UR_CELLS, program_cells, unreachable
    from harness.run import compat
    from harness.run.modes import MODES
    from harness.run.pool import Pool
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "reports/corpus/curated/all_gather_to_reduced.json").read_text())
    assert "all_gather|to=reduced" in program_cells(p)
    pool = Pool(1)
    try:
        gaps = pool.info["ur_gaps"]
    finally:
        pool.close()
    assert gaps and "smap" in gaps and "jit" not in gaps
    assert gaps == compat.ur_mode_gaps(MODES) and all(gaps[m] == compat.ur_mode_gap(m) for m in gaps)
    for m, why in gaps.items():
        for c in UR_CELLS:
            assert why in (unreachable(c, m, ur_gaps=gaps) or "") and why in (unreachable(f"{c}|by_error", m, ur_gaps=gaps) or "")
        assert unreachable("all_gather|dtype=float32", m, ur_gaps=gaps) is None
    assert unreachable("all_gather|to=reduced", "jit", ur_gaps=gaps) is None
    assert unreachable("all_gather|to=reduced", "smap") is None  # (no gaps said: a miss, not a reason)
    for m in ("vmap", "jit"):
        o = MODES[m].run(p)
        if m in gaps:
            assert o.status == "unsupported" and gaps[m] in o.error_message
        else:
            assert o.status != "unsupported"


def test_a_mode_a_known_entry_says_may_hang_runs_with_a_short_limit_and_its_hang_is_still_seen(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The grad modes hang on a negative-scatter psum_scatter after an all_to_all inside
    lax.scan (known entry negative-scatter-dimension, timeout signature). A run gives
    such a program's grad modes a part of their own limited to KNOWN_HANG_LIMIT_S, not
    the pool's 30 s: the hang is observed and explained as before, at a fraction of the
    cost; the same program with the axis non-negative gets no short limit."""
    import io

    from harness.campaign.cells import value_types
    from harness.campaign.fuzz import KNOWN_HANG_LIMIT_S, fuzz
    from harness.judge.known import hang_entries, known_hang_modes, load
    from oracles.rewrites import REWRITES
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "reports/corpus/known/neg_scatter_scan_grad_hang.json").read_text())
    hangs = hang_entries(load(), "0.10.2")
    assert {e.id for e in hangs} >= {"negative-scatter-dimension"}
    modes = ("abstract", "jit", "grad", "grad_remat")
    assert known_hang_modes(hangs, p, value_types(p)[0], modes) == ("grad", "grad_remat")
    q = REWRITES["nonnegative_axes"](p)
    assert q is not None and known_hang_modes(hangs, q, value_types(q)[0], modes) == ()
    assert known_hang_modes(hang_entries(load(), "0.12.0"), p, value_types(p)[0], modes) == ()  # (fixed there)

    s = fuzz(RunConfig(seed=0, max_examples=1, modes=("abstract", "grad"), workers=1, report_dir=tmp_path,
                       progress=io.StringIO(), minimize_budget_s=0, suppressions=load(), value_share=1.0), fixed=[p])
    # (the hang is not deterministic: the same program sometimes raises the verifier error)
    hung = [b for b in s.buckets if b.kind == "timeout"]
    assert all(b.suppressed_by == "negative-scatter-dimension" for b in hung)
    assert all(f"timed out after {KNOWN_HANG_LIMIT_S:.0f}s" in b.message for b in hung)
    assert s.counts.programs_run == 1


def test_the_program_without_a_crashing_bug_runs_a_mode_that_may_hang_with_the_short_limit(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A negative-split all_to_all (jax fails on it: negative-all-to-all-split-axis)
    beside a zero-size tiled all_gather (its grad may hang in MLIR's verifier:
    zero-size-tiled-all-gather): the program without the all_to_all is checked too, and
    its grad modes run with KNOWN_HANG_LIMIT_S as the program's own do (seed 3, 60 s:
    that derived program's grad hung for the pool's 30 s)."""
    import dataclasses
    import io

    from harness.campaign.fuzz import KNOWN_HANG_LIMIT_S, fuzz
    from harness.judge.known import load
    from programs.serialize import from_json

    root = Path(__file__).parent.parent / "reports/corpus/known"
    hang = from_json((root / "zero_ag_tiled_grad_hang.json").read_text())
    n = len(hang.inputs) + len(hang.body)  # (the all_to_all's operand: a new last input)
    a2a = Op.make("all_to_all", (len(hang.inputs),), axes=("model",), split_axis=-1, concat_axis=0, tiled=True)
    body = tuple(dataclasses.replace(op, operands=tuple(o + 1 if o >= len(hang.inputs) else o for o in op.operands))
                 for op in hang.body) + (a2a,)
    p = dataclasses.replace(hang, inputs=(*hang.inputs, Input((4,), "int32", "iota")), in_specs=(*hang.in_specs, Spec(())),
                            body=body, outputs=(*(o + 1 for o in hang.outputs), n + 1),
                            out_specs=(*hang.out_specs, Spec((("model",),))))
    s = fuzz(RunConfig(seed=0, max_examples=1, modes=("abstract", "jit", "grad"), workers=1, report_dir=tmp_path,
                       progress=io.StringIO(), minimize_budget_s=0, suppressions=load(), value_share=1.0), fixed=[p])
    assert s.counts.programs_run == 1 and s.derived_checked >= 1
    # (the hang is not deterministic: the verifier sometimes raises instead)
    assert all(f"timed out after {KNOWN_HANG_LIMIT_S:.0f}s" in b.message for b in s.buckets if b.kind == "timeout")


def test_a_crash_blocks_the_cells_of_every_known_entry_that_explains_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A crash names no op: with two all_to_alls, one of a negative split_axis and one of a
    negative concat_axis (each a known entry that says jax may crash), a jit crash blocks
    both ops' own cells in jit, not only those of the entry the crash was filed under; a
    cell of neither op's feature stays open (the other modes checked it)."""
    import io

    from harness.campaign.state import Run
    from harness.judge.check import CheckResult
    from harness.judge.compare import Divergence, DivergenceKind
    from harness.judge.known_load import load
    from harness.run.observation import Observation
    from oracles import predict

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), sweep=False, suppressions=load()))
    run.jax_version = "0.10.2"  # (both entries cover jax up to 0.10)
    split = Op.make("all_to_all", (0,), axes=("x",), split_axis=-1, concat_axis=0, tiled=True)
    concat = Op.make("all_to_all", (0,), axes=("x",), split_axis=0, concat_axis=-1, tiled=True)
    p = Program(Mesh(("x",), (2,)), (Input((4, 2), "float32", "iota"),), (Spec(()),), (split, concat, Op.make("neg", (0,))),
                (1, 2, 3), (Spec((("x",),)), Spec((("x",),)), Spec((("x",),))))
    crash = Divergence(DivergenceKind.CRASH, "jit", "worker died (SIGSEGV)", "crash")
    run.record(CheckResult(p, predict(p), (Observation("abstract", status="ok"), Observation("jit", status="crash")), (crash,)))
    blocked = run.cells.blocked
    assert "negative-all-to-all-split-axis" in blocked[("all_to_all|split_axis=negative&concat_axis=first", "jit")]
    assert "negative-all-to-all-concat-axis" in blocked[("all_to_all|split_axis=first&concat_axis=negative", "jit")]
    assert ("neg|dtype=float32", "jit") not in blocked and ("neg|dtype=float32", "abstract") in run.cells.checks


def test_the_late_part_sent_next_is_the_one_with_most_unchecked_cells_per_op(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Late (eager) parts go out most worth first: unchecked cells of their mode per
    argument, op and output; the parts a budget leaves unsent are the least worth."""
    import io

    from harness.campaign.cells import checked_cells
    from harness.campaign.fuzz import _Scheduler
    from harness.campaign.state import Run

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), sweep=False))
    sched = _Scheduler(run, None)
    small, big = _psum(1), _two_outputs()
    for c in checked_cells(small) | checked_cells(big):  # (the programs' call cells, the same for both: checked)
        if c.startswith("call|"):
            run.cells.checks[(c, "eager")] = 1
    sched.late = [(small, ("eager",), "a", checked_cells(small)), (big, ("eager",), "b", checked_cells(big))]
    assert sched.best_late() == 1  # (the psum, neg and their pair cells, one argument)
    for c in checked_cells(big):
        if c.startswith("neg"):
            run.cells.checks[(c, "eager")] = 1
    assert sched.best_late() == 0  # (its neg checked by another part: the small one is worth more now)
    sched.late = [(small, ("eager",), "a", checked_cells(small)), (small, ("eager",), "c", checked_cells(small))]
    assert sched.best_late() == 0  # (equals: the earliest)


def test_cells_after_an_op_jax_raises_at_in_a_mode_are_left_open_there() -> None:
    """grad has no derivative of pmax (the known entry pmax-no-differentiation-rule): a
    pcast after a pmax is checked in grad neither by the program (grad raises) nor by
    the program without the bug (it drops the pmax's outputs), so the value tier does
    not claim the pcast's cells in the grad modes (a later program may check them);
    the pmax's own cells are blocked by the entry, and an op beside it is checked by
    the program without the bug (fuzz seed 0, 60 s: `pcast|axes=with_size_1@grad` was
    claimed so and never checked)."""
    from harness.campaign.fuzz import raise_lost
    from harness.judge.known_load import load
    from oracles import predict

    cfg = RunConfig(modes=DEFAULT_MODES, suppressions=load())
    p = Program(Mesh(("x", "y"), (2, 1)), (Input((4,), "float32", "iota"),), (Spec((("x",),)),),
                (Op.make("pmax", (0,), axes=("x",)), Op.make("pcast", (1,), axes=("x", "y"), to="varying"), Op.make("neg", (0,))),
                (2, 3), (Spec((("x", "y"),)), Spec((("x",),))))
    assert predict(p).error is None
    lost = raise_lost(cfg, p, "0.10.2")
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
    blocked). Seed 6, 60 s: such a sweep program held pmin|dtype=int8|by_error, and no
    mode but grad checked it."""
    from harness.campaign.cells import checked_cells
    from harness.campaign.fuzz import error_trouble
    from harness.judge.known_load import load
    from oracles import predict

    cfg = RunConfig(modes=DEFAULT_MODES, suppressions=load())
    p = Program(Mesh(("x",), (2,)), (Input((4,), "float32", "iota"), Input((4,), "int8", "iota")),
                (Spec((("x",),)), Spec((("x",),))),
                (Op.make("pmin", (0,), axes=("x",), groups=((0,), (1,))), Op.make("pmin", (1,), axes=("x",))),
                (2, 3), (Spec((None,)), Spec((None,))), defect="out_spec_drops_varying_axis")
    assert predict(p).error is not None and "pmin|dtype=int8|by_error" in checked_cells(p)
    trouble = error_trouble(cfg, p, "0.10.2")
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
    and check every cell by error, so it is claimed there. Seed 2, 60 s: such a program
    claimed nothing, and its reduce_sum|wrap=scan|by_error, new in the stream, was
    missed in seven modes."""
    from harness.campaign.fuzz import error_trouble
    from harness.judge.known_load import load
    from oracles import predict

    cfg = RunConfig(modes=DEFAULT_MODES, suppressions=load())
    p = Program(Mesh(("x", "y"), (2, 1)), (Input((4,), "float32", "iota"),), (Spec((("x",),)),),
                (Op.make("pmax", (0,), axes=("x",)), Op.make("neg", (0,))),
                (1, 2), (Spec(()),), axis_names=("x",), check_vma=False, defect="out_spec_none")
    err = predict(p).error
    assert err is not None and err.kind.value == "out_specs_structure"
    trouble = error_trouble(cfg, p, "0.10.2")
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
    (the grad modes). Seed 2, 60 s: such a program held pmax|dtype=float16|by_error and
    pmax|wrap=fori|by_error as at fault in every mode, and jax, right there, neither
    checked nor blocked them."""
    from harness.campaign.fuzz import error_trouble
    from harness.judge.known_load import load
    from oracles import predict

    cfg = RunConfig(modes=DEFAULT_MODES, suppressions=load())
    p = Program(Mesh(("x",), (2,)), (Input((4,), "float32", "iota"),), (Spec((("x",),)),),
                (Op.make("pmax", (0,), axes=("x",), groups=((0, 1),)), Op.make("neg", (0,))),
                (1, 2), (Spec((None,)), Spec((None,))), defect="out_spec_drops_varying_axis")
    err = predict(p).error
    assert err is not None and err.kind.value == "out_spec_replication"
    assert error_trouble(cfg, p, "0.10.2") == {m: frozenset({0}) for m in DERIVATIVE_MODES}


def test_cells_the_program_without_the_bug_cannot_check_in_a_mode_are_left_open_there() -> None:
    """The program without the bug (`derived_program`: the outputs no op at fault
    reaches) checks in a mode only the ops of its own outputs, and nothing where the mode
    does not run it: with a pmax (no derivative in grad) on the float output, an integer
    op beside it is lost in the grad modes (the program without the pmax has integer
    outputs only, and grad skips it; fuzz seed 0, 60 s: `sub|wrap=cond@grad` claimed so
    and never checked), and so is a float op that feeds the pmax's output too."""
    from harness.campaign.fuzz import raise_lost
    from harness.judge.known_load import load
    from oracles import predict

    cfg = RunConfig(modes=DEFAULT_MODES, suppressions=load())
    mesh = Mesh(("x",), (2,))
    # values: 0 x (float32), 1 pmax(x), 2 cast(x, int32), 3 neg(2), 4 mul(x, x), 5 add(1, 4)
    ops = (Op.make("pmax", (0,), axes=("x",)), Op.make("cast", (0,), dtype="int32"), Op.make("neg", (2,)),
           Op.make("mul", (0, 0)), Op.make("add", (1, 4)))
    p = Program(mesh, (Input((4,), "float32", "iota"),), (Spec((("x",),)),), ops, (5, 3), (Spec((("x",),)), Spec((("x",),))))
    assert predict(p).error is None
    lost = raise_lost(cfg, p, "0.10.2")
    assert set(lost) == set(DERIVATIVE_MODES)
    assert "neg|dtype=int32" in lost["grad"] and "mul|dtype=float32" in lost["grad"]
    assert not any(c.startswith("pmax") for c in lost["grad"])  # (blocked by the entry, not lost)
    # with a float output beside the integer one, the program without the pmax runs in grad
    # and checks the ops of its outputs: only the op feeding the pmax's output is lost
    q = Program(mesh, p.inputs, p.in_specs, (*ops, Op.make("neg", (0,))), (5, 3, 6), (*p.out_specs, Spec((("x",),))))
    lost = raise_lost(cfg, q, "0.10.2")
    assert "mul|dtype=float32" in lost["grad"] and "neg|dtype=int32" not in lost["grad"]
    assert "neg|dtype=float32" not in lost["grad"]


def test_a_derived_program_already_queued_runs_again_in_a_mode_it_was_not_queued_in(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The late (eager) part of a program diverges long after its other modes did, with
    the same known bug: the program without it, already queued for those modes, is
    queued again for eager alone (it was skipped as known: fuzz seed 0, 60 s,
    `mul|wrap=cond` was never checked in eager though its program's derived one ran in
    every other mode)."""
    import io

    from harness.campaign.state import Run
    from harness.judge.check import CheckResult
    from harness.judge.compare import Divergence, DivergenceKind
    from harness.judge.known_load import load
    from harness.run.observation import Observation
    from oracles import predict

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), sweep=False, suppressions=load()))
    run.jax_version = "0.10.2"
    split = Op.make("all_to_all", (0,), axes=("x",), split_axis=-1, concat_axis=0, tiled=True)
    p = Program(Mesh(("x",), (2,)), (Input((4, 2), "float32", "iota"),), (Spec(()),), (split, Op.make("neg", (0,))),
                (1, 2), (Spec((("x",),)), Spec((("x",),))))
    crash = Divergence(DivergenceKind.CRASH, "jit", "worker died (SIGSEGV)", "crash")
    run.record(CheckResult(p, predict(p), (Observation("abstract", status="ok"), Observation("jit", status="crash")), (crash,)))
    assert len(run.derived_pending) == 1
    q, modes = run.derived_pending.pop()
    assert "jit" in modes and "eager" not in modes and q != p  # (the entry's rewrite: a positive split_axis)
    eager = Divergence(DivergenceKind.CRASH, "eager", "worker died (SIGSEGV)", "crash")
    run.record(CheckResult(p, predict(p), (Observation("eager", status="crash"),), (eager,)), parent=program_id(p))
    assert run.derived_pending == [(q, ("eager",))]
    run.derived_pending.clear()
    run.record(CheckResult(p, predict(p), (Observation("eager", status="crash"),), (eager,)), parent=program_id(p))
    assert run.derived_pending == []  # (queued in every mode it diverged in: not again)


def test_a_mode_that_raised_at_one_known_op_blocks_the_cells_of_the_others_jax_raises_at_there(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """jax raises at the first op at fault and never reaches a later one a known entry
    says it raises at in that mode too; the program without the bugs rewrites both (a
    non-negative axis), so no program checks the later op's own cells there: they are
    blocked by that entry, not missed (fuzz seed 3, 60 s: sweep programs of negative-axis
    all_to_alls left `all_to_all|split_axis=middle&concat_axis=negative` missed in every
    mode). The op of no entry stays open."""
    import io

    from harness.campaign.state import Run
    from harness.judge.check import CheckResult
    from harness.judge.compare import Divergence, DivergenceKind
    from harness.judge.known_load import load
    from harness.run.observation import Observation
    from oracles import predict

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), sweep=False, suppressions=load()))
    run.jax_version = "0.10.2"
    first = Op.make("all_to_all", (0,), axes=("x",), split_axis=-2, concat_axis=0, tiled=True)  # (a negative split_axis)
    later = Op.make("all_to_all", (0,), axes=("x",), split_axis=1, concat_axis=-2, tiled=True)  # (a negative concat_axis)
    p = Program(Mesh(("x",), (2,)), (Input((2, 2), "float32", "iota"),), (Spec(()),), (first, later, Op.make("neg", (0,))),
                (1, 2, 3), (Spec((("x",),)), Spec((("x",),)), Spec((("x",),))))
    assert predict(p).error is None
    raised = Divergence(DivergenceKind.UNEXPECTED_ERROR, "jit", "jax raised AssertionError", "all_to_all->AssertionError", op_index=0)
    run.record(CheckResult(p, predict(p), (Observation("abstract", status="ok"), Observation("jit", status="error")), (raised,)))
    blocked = run.cells.blocked
    assert blocked[("all_to_all|split_axis=negative&concat_axis=first", "jit")] == {"negative-all-to-all-split-axis"}
    assert "negative-all-to-all-concat-axis" in blocked[("all_to_all|split_axis=last&concat_axis=negative", "jit")]
    assert ("neg|dtype=float32", "jit") not in blocked
    assert not any(m == "abstract" for _, m in blocked)  # (abstract checked them)


def test_an_invalid_program_that_missed_its_error_blocks_the_cells_of_every_op_an_entry_names_there(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A program by error of a grouped pmin (axis-index-groups-not-checked-pmin: jax
    does not check its groups) beside a ragged_all_to_all
    (ragged-all-to-all-typed-as-its-output-buffer names it for this error too) and a neg:
    abstract misses the error, explained at the pmin. The value tier claimed the ragged
    op's cells by error there as blocked by its entry (`claim`): they are, not missed
    (fuzz seed 7, 60 s: four ragged_all_to_all cells by error were left missed in
    abstract and lowering); the neg's stay open."""
    import io

    from harness.campaign.cells import checked_cells
    from harness.campaign.state import Run
    from harness.judge.check import CheckResult
    from harness.judge.compare import Divergence, DivergenceKind
    from harness.judge.known_load import load
    from harness.run.observation import Observation
    from oracles import predict

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), sweep=False, suppressions=load()))
    run.jax_version = "0.10.2"
    ops = (Op.make("const", (), dtype="int32", shape=(2,), value=0), Op.make("const", (), dtype="int32", shape=(2,), value=1),
           Op.make("axis_index", (), axes=("x",)), Op.make("add", (2, 4)),
           Op.make("const", (), dtype="bool", shape=(2, 4), value=0),
           Op.make("ragged_all_to_all", (0, 6, 2, 3, 5, 3), axes=("x",)),
           Op.make("pmin", (6,), axes=("x",), groups=((0,),)), Op.make("neg", (1,)))
    p = Program(Mesh(("x",), (2,)), (Input((4, 4), "bool", "iota"), Input((4,), "float32", "iota")),
                (Spec((("x",),)), Spec((("x",),))), ops, (7, 9), (Spec((("x",),)), Spec((("x",),))), defect="bad_groups")
    err = predict(p).error
    assert err is not None and err.kind.value == "collective_param" and err.op_index == 6
    missed = Divergence(DivergenceKind.MISSING_ERROR, "abstract", "jax raised nothing", "collective_param", op_index=6)
    run.record(CheckResult(p, predict(p), (Observation("abstract", status="ok"),), (missed,)))
    blocked = run.cells.blocked
    assert blocked[("ragged_all_to_all|axes=one|by_error", "abstract")] == {"ragged-all-to-all-typed-as-its-output-buffer"}
    assert {c for c, m in blocked if m == "abstract"} == {c for c in checked_cells(p) if c.startswith("ragged_all_to_all")}
    assert ("neg|dtype=float32|by_error", "abstract") not in blocked


def test_a_mode_that_runs_no_reduced_value_is_not_claimed_for_a_program_holding_one() -> None:
    """The workers' jax runs no program holding a reduced / unreduced value in some modes
    (vmap: no batching rule; harness/run/compat.py `ur_mode_gaps`): a program with a pcast
    to 'reduced' is not claimed there, so its other cells stay open in those modes for a
    later program (seed 0 claimed pcast|axes=with_size_1 in vmap and vmap_spmd for one,
    and neither mode ever checked it)."""
    from harness.campaign.cells import applies, checked_cells

    mesh = Mesh(("x", "y"), (2, 1))
    p = Program(mesh, (Input((), "float32", "small"),), (Spec(()),),
                (Op.make("pcast", (0,), axes=("x", "y"), to="reduced"), Op.make("pcast", (1,), axes=("x", "y"), to="varying"),
                 Op.make("psum", (2,), axes=("x", "y"))), (3,), (Spec(()),))
    cells = checked_cells(p)
    assert "pcast|axes=with_size_1" in cells and p.uses_ur()
    gaps = {"vmap": "no batching rule", "vmap_spmd": "no batching rule"}
    assert applies(p, "vmap") and not applies(p, "vmap", gaps) and applies(p, "jit", gaps)
    led = CellLedger.new()
    led.ur_gaps = gaps
    got = led.claim(p, cells, DEFAULT_MODES, lean=True)  # (as while sweeping: the modes it brings a pair)
    assert "jit" in got and "vmap" not in got and "vmap_spmd" not in got
    assert not any(pair.endswith(("@vmap", "@vmap_spmd")) for pair in led.scheduled)
    # a program without such a value is claimed there as before
    q = _psum(1)
    assert "vmap" in led.claim(q, checked_cells(q), DEFAULT_MODES, lean=True)


def test_an_invalid_lean_part_drops_unused_arguments_when_its_defect_comes_after_the_body() -> None:
    """An invalid program whose defect jax finds after tracing the body (an out_spec's,
    an op's) runs its lean part without the arguments nothing uses, with the same
    predicted error and cells by error (eager moves each argument with a compile of its
    own); one whose defect is an argument's in_spec keeps them all."""
    from dataclasses import replace

    from harness.campaign.cells import checked_cells, lean
    from oracles import predict

    mesh = Mesh(("x",), (2,))
    ins = (Input((4,), "float32", "iota"), Input((2,), "float32", "iota", seed=1))
    p = Program(mesh, ins, (Spec((("x",),)), Spec((None,))), (Op.make("psum", (0,), axes=("x",)),), (2,), (Spec((None, None)),),
                defect="out_spec_too_long")
    q = lean(p)
    assert q.inputs == ins[:1] and checked_cells(q) == checked_cells(p)
    a, b = predict(p).error, predict(q).error
    assert a is not None and b is not None and (a.kind, a.facts) == (b.kind, b.facts)
    # the unused argument's in_spec is the defect: it stays
    r = replace(p, in_specs=(Spec((("x",),)), Spec((None, None))), out_specs=(Spec((None,)),), defect="in_spec_too_long")
    assert predict(r).error is not None and lean(r).inputs == ins


def test_a_crash_gives_the_modes_it_kept_from_running_the_entrys_reason_where_it_names_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A crash in jit kills the worker before the job's later modes run: where the known
    entry that explains it says jax fails in those modes too, its ops' cells there are
    listed with that reason (the program without the bug rewrites the op, so no program
    checks them: seed 0 left vmap_spmd's negative concat_axis cells missed); a cell of
    no entry's op is not."""
    import io

    from harness.campaign.finish import cell_checks
    from harness.campaign.state import Run
    from harness.judge.check import CheckResult
    from harness.judge.compare import Divergence, DivergenceKind
    from harness.judge.known_load import load
    from harness.report.summary import BLOCKED_WHY
    from harness.run.observation import Observation
    from oracles import predict

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), sweep=False, suppressions=load()))
    run.jax_version = "0.10.2"
    concat = Op.make("all_to_all", (0,), axes=("x",), split_axis=0, concat_axis=-1, tiled=True)
    p = Program(Mesh(("x",), (2,)), (Input((4, 2), "float32", "iota"),), (Spec(()),), (concat, Op.make("neg", (0,))),
                (1, 2), (Spec((("x",),)), Spec((("x",),))))
    run.unrun[program_id(p)] = {"gspmd", "vmap_spmd"}
    crash = Divergence(DivergenceKind.CRASH, "jit", "worker died (SIGSEGV)", "crash")
    run.record(CheckResult(p, predict(p), (Observation("abstract", status="ok"), Observation("jit", status="crash")), (crash,)))
    cell = "all_to_all|split_axis=first&concat_axis=negative"
    assert run.cells.stopped[(cell, "vmap_spmd")] == {"negative-all-to-all-concat-axis@jit"}
    assert ("neg|dtype=float32", "vmap_spmd") not in run.cells.stopped
    why = {(c.cell, c.mode): c.why for c in cell_checks(run)}
    assert why[(cell, "vmap_spmd")].startswith(BLOCKED_WHY) and "crashed or hung in jit before vmap_spmd ran" in why[(cell, "vmap_spmd")]
    assert not why[("neg|dtype=float32", "vmap_spmd")]


def test_the_program_without_a_known_bug_keeps_the_op_an_invalid_programs_error_is_at() -> None:
    """An invalid program whose known bug (a bf16 psum in a partial-manual shard_map, an
    abort) sits on one output: the program without it drops that output but keeps the
    op the error is at, dead or not, so it fails the same way and checks the other ops'
    cells by error (without it the derived program was valid, and seed 0's psum_scatter
    cells by error were never checked in eager)."""
    from harness.campaign.cells import checked_cells
    from harness.judge.known import derived_program
    from harness.judge.known_load import load
    from oracles import predict

    entry = next(e for e in load() if e.id == "bf16-partial-manual-allreduce-abort")
    mesh = Mesh(("x", "y"), (2, 2))
    ins = (Input((4,), "bfloat16", "iota"), Input((4,), "int32", "iota", seed=1))
    body = (Op.make("psum", (0,), axes=("x",)), Op.make("neg", (1,)), Op.make("psum", (1,), axes=("y",)))  # the last: 'y' is not manual
    p = Program(mesh, ins, (Spec((("x",),)), Spec((("x",),))), body, (2, 3), (Spec((None,)), Spec((("x",),))),
                axis_names=("x",), defect="collective_not_manual")
    pred = predict(p)
    assert pred.error is not None and pred.error.op_index == 2
    q = derived_program([entry], p, pred)
    assert q is not None and [op.kind for op in q.body] == ["neg", "psum"] and len(q.outputs) == 1
    e = predict(q).error
    assert e is not None and (e.kind, e.facts) == (pred.error.kind, pred.error.facts)
    assert "neg|dtype=int32|by_error" in checked_cells(q)


def test_the_program_without_a_known_bug_outputs_what_the_bug_op_reads() -> None:
    """The program without a known bug (a bf16 psum over a partial-manual axis, which
    aborts) keeps the ops that fed only the bug op, each read value made an output (a
    varying scalar as its sum with a zero of shape (1,)): seed 0's pshuffle in a cond fed
    such a psum, and `pshuffle|wrap=cond|by_error` was never checked in eager. A value a
    bug op makes, or one another bug op feeds, stays out."""
    from harness.campaign.cells import checked_cells
    from harness.judge.known import derived_program
    from harness.judge.known_load import load
    from oracles import predict

    entry = next(e for e in load() if e.id == "bf16-partial-manual-allreduce-abort")
    mesh = Mesh(("x", "y"), (2, 2))
    ins = (Input((), "bfloat16", "iota"), Input((4,), "bfloat16", "iota", seed=1), Input((4,), "int32", "iota", seed=2))
    body = (Op.make("pshuffle", (0,), axes=("x",), perm=(1, 0), wrap="cond"),  # 3: a varying scalar
            Op.make("psum", (3,), axes=("x",)),  # 4: the bug
            Op.make("neg", (1,)),  # 5: a rank-1 value varying along x
            Op.make("psum", (5,), axes=("x",)),  # 6: the bug
            Op.make("psum", (6,), axes=("x",)),  # 7: fed by a bug op
            Op.make("neg", (2,)))  # 8
    p = Program(mesh, ins, (Spec(()), Spec((("x",),)), Spec((("x",),))), body, (4, 7, 8),
                (Spec(()), Spec((None,)), Spec((("x",),))), axis_names=("x",))
    pred = predict(p)
    assert pred.error is None
    q = derived_program([entry], p, pred)
    assert q is not None
    got = predict(q)
    assert got.error is None
    assert [op.kind for op in q.body] == ["pshuffle", "neg", "neg", "const", "add"]
    assert len(q.outputs) == 3 and [o.global_shape for o in got.outputs] == [(4,), (2,), (4,)]
    assert (got.outputs[0].device_values == pred.outputs[2].device_values).all()
    assert {"pshuffle|wrap=cond", "neg|dtype=bfloat16"} <= checked_cells(q)
    assert not any(op.kind == "psum" for op in q.body)


def _replication_at_output_1() -> Program:
    """psum (output 0) and neg (output 1, varying along x) of one argument, whose
    out_spec drops x: the oracle's error is at output 1 (out_spec replication)."""
    p = _two_outputs()
    return Program(p.mesh, p.inputs, p.in_specs, p.body, p.outputs, (Spec((None,)), Spec((None,))), defect="out_spec_drops_varying_axis")


def test_an_invalid_programs_costly_part_is_cut_to_its_new_outputs_and_keeps_its_error() -> None:
    """Eager runs every op of an invalid program's body before jax checks its out_specs:
    its part is cut like a valid one's, to the outputs that bring eager a cell by error
    no program had, where the oracle predicts the same error for the cut (`lean`); an
    output the error is at stays, and a cut that would change the error is not made."""
    from harness.campaign.cells import (
        by_error,
        checked_cells,
        lean,
        typed_cells,
        typed_output_cells,
    )
    from oracles import predict

    p = _replication_at_output_1()
    cells, fails = typed_cells(p)
    e = predict(p).error
    assert fails and e is not None and e.output == 1
    parts = typed_output_cells(p)
    led = CellLedger.new()
    led.scheduled |= {f"{c}@eager" for c in by_error(parts[1])}  # neg's cells by error: eager had them
    modes = tier_modes(p, RunConfig(value_share=0.0), led)
    assert "eager" in modes
    assert led.cut[(program_id(p), "eager")] == (0,)
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


def test_a_late_part_goes_out_cut_to_the_outputs_still_bringing_a_pair(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A late part is cut again as it goes out (`_Scheduler.recut`): an output whose
    pairs a part sent before it checked since is left out; a part none of whose outputs
    brings anything goes as it is (the least worth: it goes out only when time is left)."""
    import io

    from harness.campaign.cells import by_error, typed_output_cells
    from harness.campaign.fuzz import _Scheduler
    from harness.campaign.state import Run

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), sweep=False))
    sched = _Scheduler(run, None)
    p = _two_outputs()
    assert sched.recut(p, ("eager",)) == p
    parts = typed_output_cells(p)
    run.cells.record(parts[0], ["eager"], 1, 0.0)  # psum's pairs: checked by another part
    q = sched.recut(p, ("eager",))
    assert [op.kind for op in q.body] == ["neg"] and len(q.outputs) == 1
    assert sched.recut(p, ("jit",)) == p  # (another mode's pairs: still new)
    run.cells.record(parts[1], ["eager"], 2, 0.0)
    assert sched.recut(p, ("eager",)) == p
    # an invalid part's pairs are its cells by error (its psum's: checked), and its cut
    # keeps its error
    bad = _replication_at_output_1()
    run.cells.record(by_error(parts[0]), ["eager"], 3, 0.0)
    r = sched.recut(bad, ("eager",))
    assert [op.kind for op in r.body] == ["neg"] and r.defect == bad.defect


class _SentJobs:
    """The pool's side of the scheduler, recording what it is given (no worker runs:
    the test is about what the scheduler sends)."""

    def __init__(self) -> None:
        self.sent: list[tuple[Program, tuple[str, ...]]] = []

    def free(self) -> int:
        return 1

    def submit(self, p: Program, modes: tuple[str, ...], tag: object = None, limit_s: float | None = None,
               together: tuple[str, ...] = ()) -> None:
        self.sent.append((p, modes))


def test_while_the_sweep_runs_a_derived_program_runs_only_the_modes_it_brings_a_pair(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A program without its known bug (a derived program), while the sweep runs, is
    sent like a sweep program: only in the modes of its own in which it brings a pair no
    program was sent with or one jax left unchecked (that one it claims; the others stay
    out of `scheduled`, which the sweep's draws read), its eager part cut to the outputs
    that bring eager one; one that brings none is not sent. After the sweep it runs in every
    mode it was queued in (seed 0, 60 s, cold: derived programs' cheap modes took 12.6 s
    of the workers' time during the sweep, 8.5 s lean)."""
    import io

    from harness.campaign.cells import typed_output_cells
    from harness.campaign.fuzz import _Scheduler
    from harness.campaign.state import Run

    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), together=False))
    pool = _SentJobs()
    sched = _Scheduler(run, pool)  # type: ignore[arg-type]
    sched.sweeping = True
    p = _two_outputs()
    psum, neg = typed_output_cells(p)
    other = Program(p.mesh, p.inputs, p.in_specs, p.body[:1], (1,), p.out_specs[:1])
    run.cells.claim(other, psum, ("gspmd", "eager"))  # (another program was sent with psum's pairs)
    run.cells.claim(other, psum | neg, ("vmap",))
    run.queue_derived(p, p, ("jit", "gspmd", "vmap", "eager"))
    sched.submit_derived()
    assert pool.sent == [(p, ("jit", "gspmd"))]  # (vmap: nothing new)
    assert [(len(q.outputs), modes) for q, modes, _, _ in sched.late] == [(1, ("eager",))]  # neg's output only
    # (a program the results gave: the sweep's draws, which read `scheduled`, stay blind to it)
    assert not any(f"{c}@jit" in run.cells.scheduled for c in psum | neg)
    # one that brings nothing is not sent; after the sweep, every mode it was queued in
    # (another program with the same cells: its argument's values differ)
    q = Program(p.mesh, tuple(Input(x.shape, x.dtype, x.fill, x.seed + 1, x.offset) for x in p.inputs), p.in_specs, p.body,
                p.outputs, p.out_specs)
    run.cells.claim(other, psum | neg, ("jit",))
    run.queue_derived(q, p, ("jit", "vmap"))
    pool.sent.clear()
    sched.submit_derived()
    assert pool.sent == []
    # a pair jax left unchecked (reopened) is one it brings, and claims
    run.cells.reopen(neg, "vmap")
    run.queue_derived(q, p, ("jit", "vmap"))
    run.derived_modes.pop(program_id(q))
    sched.submit_derived()
    assert pool.sent == [(q, ("vmap",))] and not run.cells.reopened
    sched.sweeping = False
    pool.sent.clear()
    run.queue_derived(p, p, ("jit", "vmap"))
    sched.submit_derived()
    assert pool.sent == [(p, ("jit", "vmap"))]  # (its cells are its parent's: no other mode)


def test_a_rewrite_runs_in_every_mode_where_the_cells_its_parent_lacks_are_open(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A rewrite makes cells its parent lacks (a ppermute's axes put in mesh order:
    `axes=several>1`, the parent's `axes=out_of_mesh_order`). Queued in the modes the
    parent diverged in, it also runs in the run's other modes where those cells are open,
    eager too, cut to the outputs that hold them (fuzz seed 8, 60 s, cold: the parent's
    eager part was clean, and its rewrite's `ppermute|axes=several>1&dtype=int16` was
    checked in every mode but eager). A program without a bug, the parent's cells only,
    runs where it was queued."""
    import io

    from harness.campaign.cells import checked_cells
    from harness.campaign.fuzz import _Scheduler
    from harness.campaign.state import Run
    from oracles.rewrites import REWRITES
    from programs.serialize import from_json

    root = Path(__file__).parent.parent / "reports/corpus/known"
    parent = from_json((root / "ppermute_order.json").read_text())
    floats = (Input(parent.inputs[0].shape, "float32", "iota"),)  # (grad claims it too)
    parent = Program(parent.mesh, floats, parent.in_specs, (*parent.body, Op.make("neg", (0,))), (1, 2),
                     (*parent.out_specs, parent.out_specs[0]))
    q = REWRITES["mesh_order_axes"](parent)
    assert q is not None
    new = checked_cells(q) - checked_cells(parent)
    assert "ppermute|axes=several>1" in new and all(c.startswith("ppermute|") for c in new)
    run = Run(RunConfig(report_dir=tmp_path, progress=io.StringIO(), together=False))
    pool = _SentJobs()
    sched = _Scheduler(run, pool)  # type: ignore[arg-type]
    run.cells.claim(parent, checked_cells(parent), DEFAULT_MODES)  # (the parent was sent in every mode)
    run.queue_derived(q, parent, ("jit",))
    assert run.derived_new[program_id(q)] == new
    sched.submit_derived()
    ((sent, modes),) = pool.sent
    assert sent == q and modes[0] == "abstract" and {"jit", "gspmd", "vmap", "grad", "lowering"} <= set(modes), modes
    assert "eager" not in modes and "smap" not in modes  # (eager: a late part; smap cannot run two axes)
    ((late, late_modes, _, cells),) = sched.late
    assert late_modes == ("eager",) and len(late.outputs) == 1 and new <= cells  # the ppermute's output only
    # checked there since: not again. A derived program without a new cell: where queued
    for c in new:
        for m in DEFAULT_MODES:
            run.cells.checks[(c, m)] = 1
    pool.sent.clear()
    sched.late.clear()
    run.queue_derived(q, parent, ("vmap",))
    lean = Program(parent.mesh, parent.inputs, parent.in_specs, parent.body, (1,), parent.out_specs[:1])
    run.queue_derived(lean, parent, ("grad",))
    sched.submit_derived()
    assert pool.sent == [(q, ("vmap",)), (lean, ("grad",))] and not sched.late
