"""Configuration cells and the run's cell ledger (harness/campaign/cells.py), and what a
run records of them (harness/campaign/state.py): no jax, but where a test runs a mode or
a run. The planner's use of the ledger is tested in test_plan.py."""

from __future__ import annotations

from pathlib import Path

from helpers import psum_program, two_outputs

from harness.campaign.cells import CellLedger, program_cells
from harness.campaign.config import RunConfig
from harness.campaign.plan import COSTLY_MODES
from harness.run.modes import DEFAULT_MODES
from programs.model import Input, Mesh, Op, Program, Spec
from programs.serialize import program_id


def test_a_program_bringing_nothing_new_is_not_claimed_and_a_costly_mode_runs_only_for_its_new_cells() -> None:
    led = CellLedger.new()
    p = psum_program(1)
    cells = program_cells(p, [((2,), "float32"), ((1,), "float32")])
    assert "psum|dtype=float32" in cells
    # the first: every mode, eager (costly) too, since every cell is new to it
    assert led.claim(p, cells, DEFAULT_MODES, COSTLY_MODES) == DEFAULT_MODES
    assert led.claim(psum_program(2), cells, DEFAULT_MODES, COSTLY_MODES) == ()  # the same cells: nothing new
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
    p = psum_program(1)
    cells = program_cells(p, [((2,), "float32"), ((1,), "float32")])
    modes = ("abstract", "jit", "vmap")
    assert led.claim(p, cells, modes) == modes
    before = set(led.scheduled)
    for _ in range(REOPEN):
        led.record(cells, ["abstract", "vmap"], 0, 1.0)  # jit raised: not checked there
        led.reopen(cells, "jit")
        assert led.scheduled == before
        # (lean, as while sweeping: only the modes it brings a pair; vmap checked them)
        assert led.claim(psum_program(2), cells, modes, lean=True) == ("abstract", "jit")
    led.reopen(cells, "jit")  # (the REOPEN-th time spent: no more)
    assert led.claim(psum_program(3), cells, modes, lean=True) == ()
    # a derived program's failure (the next program of its chain drops another known
    # bug) reopens them whatever the count, and spends none of it
    for n in range(3):
        led.reopen(cells, "jit", counted=False)
        assert led.claim(psum_program(4 + n), cells, modes, lean=True) == ("abstract", "jit")
    assert all(led.reopens[f"{c}@jit"] == REOPEN for c in cells)
    done = CellLedger.new()
    done.claim(p, cells, modes)
    done.record(cells, ["jit"], 0, 1.0)
    done.reopen(cells, "jit")  # (checked there already: nothing to reopen)
    assert done.claim(psum_program(2), cells, ("jit",)) == ()


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
    parent, q = psum_program(1), psum_program(2)
    cells = program_cells(q, [((4,), "float32"), ((2,), "float32")])
    run.cells.scheduled |= {f"{c}@jit" for c in cells}
    run.cells.reopens.update({f"{c}@jit": REOPEN for c in cells})
    raised = (Observation("abstract", status="ok"), Observation("jit", status="error", error_type="ValueError"))
    run.record(CheckResult(parent, predict(parent), raised, ()))
    assert not run.cells.reopened  # (drawn: its reopens are spent)
    run.derived.queue(q, parent, ("jit",))
    run.record(CheckResult(q, predict(q), raised, ()))
    assert run.cells.reopened == {f"{c}@jit" for c in cells}


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
    p, q = psum_program(1), psum_program(2)
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
    from harness.judge.known_load import load

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
                       minimize_budget_s=0), fixed=[psum_program(1), psum_program(2), psum_program(3)])
    assert s.counts.programs_run == 3 and s.programs_swept == 0


def test_a_costly_mode_runs_the_program_cut_to_the_outputs_that_bring_it_new_cells() -> None:
    """Eager (costly) runs the program cut to the outputs whose ops bring it a cell no
    program had, and claims only theirs; the cheap modes run it whole. While the sweep
    runs (`lean`), a claimed program runs only the modes it brings a new cell (and abstract)."""
    from harness.campaign.cells import typed_cells, typed_output_cells
    from programs.graph import slice_outputs

    p = two_outputs()
    cells, fails = typed_cells(p)
    parts = typed_output_cells(p)
    assert not fails and "psum|dtype=float32" in parts[0] and "neg|dtype=float32" in parts[1]
    assert parts[0] | parts[1] == cells
    led = CellLedger.new()
    led.scheduled |= {f"{c}@eager" for c in parts[0]}  # psum's cells: eager had them
    claim = led.offer(p, cells, DEFAULT_MODES, COSTLY_MODES, parts)
    led.take((claim,))
    assert claim.modes == DEFAULT_MODES
    assert dict(claim.cut)["eager"] == (1,)
    assert {x for x in led.scheduled if x.endswith("@eager")} == {f"{c}@eager" for c in parts[0] | parts[1]}
    assert {x.rsplit("@", 1)[0] for x in led.scheduled if x.endswith("@jit")} == cells  # jit: the whole program
    q = slice_outputs(p, dict(claim.cut)["eager"])
    assert [op.kind for op in q.body] == ["neg"] and typed_cells(q)[0] == parts[1]
    # every output new to eager: no cut (None: every output), but an entry (the lean part)
    led2 = CellLedger.new()
    assert dict(led2.offer(p, cells, DEFAULT_MODES, COSTLY_MODES, parts).cut)["eager"] is None
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

    p = two_outputs()
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
    p = two_outputs()
    q = slice_outputs(p, (1,))
    run.record(CheckResult(psum_program(1), predict(psum_program(1)), (Observation("jit", status="ok"),), ()))
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

    p = two_outputs()
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

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/curated/all_gather_to_reduced.json").read_text())
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
    from harness.campaign.fuzz import fuzz
    from harness.campaign.known_queries import hang_entries, known_hang_modes
    from harness.campaign.plan import KNOWN_HANG_LIMIT_S
    from harness.judge.known_load import load
    from oracles.rewrites import REWRITES
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/neg_scatter_scan_grad_hang.json").read_text())
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

    from harness.campaign.fuzz import fuzz
    from harness.campaign.plan import KNOWN_HANG_LIMIT_S
    from harness.judge.known_load import load
    from programs.serialize import from_json

    root = Path(__file__).parent.parent / "harness/data/corpus/known"
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
    assert len(run.derived.pending) == 1
    q, modes = run.derived.pending.pop()
    assert "jit" in modes and "eager" not in modes and q != p  # (the entry's rewrite: a positive split_axis)
    eager = Divergence(DivergenceKind.CRASH, "eager", "worker died (SIGSEGV)", "crash")
    run.record(CheckResult(p, predict(p), (Observation("eager", status="crash"),), (eager,)), parent=program_id(p))
    assert run.derived.pending == [(q, ("eager",))]
    run.derived.pending.clear()
    run.record(CheckResult(p, predict(p), (Observation("eager", status="crash"),), (eager,)), parent=program_id(p))
    assert run.derived.pending == []  # (queued in every mode it diverged in: not again)


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
    q = psum_program(1)
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


