"""Cell-directed generation (strategies/focus.py): a program drawn around a focus holds
its cell in a live op in most draws, is valid unless the cell is a `|by_error` one, and
runs in the modes of its profile (the ones unfocused programs rarely reach)."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harness.campaign.cells import applies, checked_cells, typed_cells
from harness.campaign.generation import seeded_programs
from oracles.interpreter import trace
from programs.cells import CALL, FEATURE_KINDS
from programs.model import Program, is_float
from programs.serialize import program_id
from strategies.focus import CELLS, FOCI, KINDS, Focus, draw_focus
from strategies.programs import ALL_KINDS, programs_around

FOCUSED = settings(max_examples=150, deadline=None, database=None, phases=[Phase.generate],
                   suppress_health_check=list(HealthCheck))


def test_the_table_names_cells_of_drawn_kinds() -> None:
    assert len(CELLS) > 500 and len(set(CELLS)) == len(CELLS)
    for c in CELLS:
        kind, dim, *rest = c.split("|")
        assert (kind in ALL_KINDS or kind == CALL or kind in FEATURE_KINDS) and "=" in dim, c  # (CALL: the program's own cells; a feature cell: how a program meets its shard_map)
        assert rest in ([], ["by_error"]), c
    assert set(KINDS) <= set(ALL_KINDS) | {CALL} | set(FEATURE_KINDS)
    assert all(f.profile == "spmd" for f in FOCI if f.kind in FEATURE_KINDS)
    assert all(f.profile == "spmd" or not f.by_error for f in FOCI)
    pairs = [c for c in CELLS if "&" in c]
    assert pairs and not any(c.endswith("|by_error") for c in pairs), "pair cells are value cells only"


def test_a_pair_focus_fixes_both_classes_and_a_middle_dimension_asks_rank_3() -> None:
    from strategies.focus import wanted

    f = Focus("psum|rank=3&dtype=float32", "spmd")
    assert f.parts == (("rank", "3"), ("dtype", "float32")) and f.dimension == "rank&dtype"
    assert wanted((f,)) == (3, "float32")
    assert wanted((Focus("all_to_all|split_axis=middle&concat_axis=first", "spmd"),)) == (3, None)
    assert wanted((Focus("psum|rank=1", "spmd"), Focus("pswapaxes|axis=middle", "spmd"))) == (1, None)
    assert Focus("all_to_all|split!=concat", "spmd").parts == (("split!", "concat"),)


@FOCUSED
@given(st.sampled_from(FOCI).flatmap(lambda f: st.tuples(st.just(f), programs_around(f))))
def test_a_focused_program_holds_its_cell_and_runs_in_its_profile(fp: tuple[Focus, Program]) -> None:
    f, p = fp
    fails = typed_cells(p)[1]
    if not f.by_error:
        assert not fails, "a program around a value cell is valid by construction"
        if f.profile == "smap":
            assert applies(p, "smap"), p.smap_form()
        else:
            # (a nested shard_map's program keeps its last axis Auto, the one before it free)
            assert applies(p, "vmap_spmd") or f.kind in FEATURE_KINDS  # (a placement may name the free axis)
            # (the multiprocess mode runs no placement, closure, effect or donation)
            assert (applies(p, "multiprocess") or f.kind in FEATURE_KINDS) and applies(p, "jit")
            # grad: check_vma on (off only for psum / pmean groups), a float output to
            # differentiate, and no lax.while_loop (jax has no reverse-mode derivative of it)
            types = trace(p, with_values=False)[0].types
            derivable = any(is_float(types[o].dtype) for o in p.outputs) and not any(op.p("wrap") == "while" for op in p.body)
            derivable = derivable and not p.explicit_axes  # (a feature focus's mesh may be Explicit: strategies/edges.py)
            assert applies(p, "grad") == (derivable and not f.needs_check_vma_off)


def test_most_focused_programs_hold_their_cell() -> None:
    hits: Counter[bool] = Counter()

    @FOCUSED
    @given(st.sampled_from(FOCI).flatmap(lambda f: st.tuples(st.just(f), programs_around(f))))
    def draw(fp: tuple[Focus, Program]) -> None:
        hits[fp[0].cell in checked_cells(fp[1])] += 1

    draw()
    # (measured with this table: 184 of 300 focused draws of seed 1 held their cell)
    assert sum(hits.values()) >= 100 and hits[True] >= hits[False], hits


def test_the_focus_is_a_drawn_value() -> None:
    """The same seed draws the same programs (no state between draws: Hypothesis would
    call it FlakyStrategyDefinition), and about half of them are focused."""
    a, b = seeded_programs(60, 5), seeded_programs(60, 5)
    assert [program_id(p) for p in a] == [program_id(p) for p in b]

    seen: list[Focus | None] = []

    @settings(FOCUSED, max_examples=200)
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        seen.append(data.draw(st.composite(lambda d: draw_focus(d, 0.5))()))

    draw()
    focused = sum(f is not None for f in seen)
    assert 0.3 * len(seen) < focused < 0.7 * len(seen), focused
    assert len({f.kind for f in seen if f is not None}) > 10  # uniform over kinds, not the op draws' mix


# ------------------------------------------------------------------------ the sweep


def test_the_sweep_holds_every_focus_once_in_groups_of_one_kind_and_profile() -> None:
    from harness.campaign.sweep import SWEEP_GROUP, _special, sweep_groups
    from programs.ops import COLLECTIVES

    groups = sweep_groups(0)
    flat = [f for g in groups for f in g]
    assert sorted(flat, key=repr) == sorted(FOCI, key=repr), "every focus exactly once"
    for g in groups:
        assert 1 <= len(g) <= SWEEP_GROUP
        assert len({(f.kind, f.profile, f.by_error) for f in g}) == 1, g
        assert not any(_special(f) for f in g[1:]), f"a mesh- or flag-fixing focus heads its group: {g}"
    # the spmd profile first, and in each profile the collectives and the call's own cells
    # (kind CALL: shard_map's own semantics too) before the other kinds
    profiles = [g[0].profile for g in groups]
    assert profiles == sorted(profiles, key=("spmd", "smap").index)
    for prof in ("spmd", "smap"):
        # (feature foci and the call's own go with the collectives: harness/campaign/sweep.py)
        coll = [g[0].kind in COLLECTIVES or g[0].kind in FEATURE_KINDS or g[0].kind == CALL for g in groups if g[0].profile == prof]
        assert coll == sorted(coll, reverse=True)
    # round robin: the first groups are of many kinds
    assert len({g[0].kind for g in groups[:12]}) >= 10
    # another seed, another order of the same groups' cells
    assert sweep_groups(1) != groups and sorted(f.cell for g in sweep_groups(1) for f in g) == sorted(f.cell for f in flat)


def test_a_sweep_is_repeatable_and_its_programs_hold_their_cells() -> None:
    from itertools import islice

    from harness.campaign.cells import failing_op
    from harness.campaign.sweep import SWEEP_GROUP, holds, sweep_draws
    from harness.run.modes import DEFAULT_MODES
    from programs.graph import cone, live_ops

    first = list(islice(sweep_draws(3), 40))
    assert [program_id(d.program) for d in first] == [program_id(d.program) for d in islice(sweep_draws(3), 40)]
    assert [program_id(d.program) for d in first] != [program_id(d.program) for d in islice(sweep_draws(4), 40)]
    held = total = compound = 0
    for d in first:
        g, p = d.group, d.program
        members = [f for c in g for f in c]
        assert 1 <= len(g) <= SWEEP_GROUP
        assert len({(f.kind, f.profile, f.by_error) for f in members}) == 1, g
        for c in g:  # a compound focus: one focus per dimension
            assert len({f.dimension for f in c}) == len(c), c
        compound += sum(len(c) > 1 for c in g)
        assert d.held == frozenset(f for f in members if holds(f, p, DEFAULT_MODES))
        # no dead op (they check no cell), but the op an invalid program fails at and its cone
        fail = failing_op(p)
        assert set(range(len(p.body))) == set(live_ops(p)) | (cone(p, len(p.inputs) + fail) if fail is not None else set()), p
        held += len(d.held)
        total += len(members)
        assert (p.defect is not None) == members[0].by_error, (g, p.defect)
        if not members[0].by_error and members[0].profile == "spmd":
            assert applies(p, "jit") and applies(p, "vmap_spmd")
    assert compound >= len(first), "most groups' foci carry foci of other dimensions"
    # (measured, seed 3: 40 programs hold 434 of their groups' 553 foci in every mode of the profile)
    assert held >= 0.6 * total, (held, total)


def test_the_sweep_draws_no_focus_the_ledger_already_holds_and_every_open_one() -> None:
    """Foci whose cells every mode of their profile has claimed are not drawn again; the
    others all are (held, or drawn MAX_TRIES times)."""
    from harness.campaign.cells import CellLedger
    from harness.campaign.sweep import MAX_TRIES, profile_modes, sweep_draws
    from harness.run.modes import DEFAULT_MODES

    led = CellLedger.new()
    covered = [f for f in FOCI if f.kind == "neg" and f.profile == "spmd"]
    for f in covered:
        led.scheduled |= {f"{f.cell}@{m}" for m in profile_modes(f, DEFAULT_MODES)}
    drawn: Counter[Focus] = Counter()
    held: set[Focus] = set()
    for d in sweep_draws(5, ledger=led, invalid=0.0):
        drawn.update(f for c in d.group for f in c)
        held |= d.held
    assert not set(covered) & set(drawn), "a focus the ledger holds is not drawn"
    want = {f for f in FOCI if not f.by_error and f not in covered}
    assert set(drawn) == want, sorted(map(repr, want - set(drawn)))[:5]
    assert all(drawn[f] <= MAX_TRIES for f in drawn)
    assert all(f in held or drawn[f] == MAX_TRIES for f in want)
    assert not any(f.by_error for f in drawn), "--invalid 0: no group by error"


def test_a_cell_a_later_program_holds_first_outside_the_table_is_swept_at_once() -> None:
    """After the sweep, a cell a program of the stream holds first, outside the table
    (`CellLedger.seen`), is a focus of sweep programs drawn at once (`Sweep.new_cells`,
    then `draws` again): a by-error twin of a table cell, and a cell of an op XLA:CPU
    cannot run by value (the table leaves those kinds out; ragged_all_to_all's cells are
    checked by abstract and lowering). Else a cell only a stream program holds, beside
    an op no mode but abstract runs (a pbroadcast), is missed in every other mode. A
    cell of no kind the sweep aims at (`=?` rank) draws nothing."""
    from harness.campaign.cells import CellLedger, checked_cells
    from harness.campaign.sweep import Sweep, holds
    from harness.run.modes import DEFAULT_MODES

    led = CellLedger.new()
    led.scheduled |= {f"{f.cell}@{m}" for f in FOCI for m in DEFAULT_MODES}  # (the sweep is out)
    sweep = Sweep(3, ledger=led)
    assert list(sweep.draws()) == [] and not sweep.new_cells()
    new = ("ppermute|wrap=switch|by_error", "ragged_all_to_all|axes=one")
    assert not set(new) & {f.cell for f in FOCI}
    led.seen |= {*new, "axis_index|rank=?"}
    assert sweep.new_cells()
    got = list(sweep.draws())
    assert got and not sweep.new_cells()
    for cell in new:
        assert any(cell in checked_cells(d.program) and holds(Focus(cell, "spmd"), d.program, DEFAULT_MODES)
                   for d in got), cell
    assert not any(f.cell == "axis_index|rank=?" for d in got for c in d.group for f in c)
    assert list(sweep.draws()) == []  # (nothing new since)


def test_a_several_axes_dtype_focus_fixes_its_mesh_and_dtype_and_draws_both_axes() -> None:
    """A `kind|axes=several>1&dtype=D` focus: spmd only (smap has one axis), a mesh of two
    usable axes of size > 1, an argument of D, and the op drawn over both axes."""
    from programs.cells import SEVERAL

    pairs = [f for f in FOCI if f.fixes("axes") == SEVERAL and f.fixes("dtype") is not None]
    assert pairs and all(f.profile == "spmd" for f in pairs)
    held = Counter()

    def holds(f: Focus) -> None:
        @settings(FOCUSED, max_examples=10)
        @given(programs_around(f))
        def check(p: Program) -> None:
            held[f.cell in checked_cells(p)] += 1
        check()

    for f in pairs[:: max(1, len(pairs) // 12)]:
        holds(f)
    assert held[True] >= 0.7 * sum(held.values()), held


def test_a_by_error_sweep_program_with_known_error_trouble_holds_only_the_foci_of_the_ops_at_fault() -> None:
    """An invalid sweep program at whose ops jax is known to raise another error (here:
    every op, as an entry with program features only says) holds only the foci of the
    kind of all those ops; the others are drawn again. Where the trouble is at the
    first op only, in jit only, a held focus of the spmd profile is that op's own cell
    (harness/campaign/cells.py `trouble_cells`): in jit the program checks no cell by
    error, and the entry blocks only that op's."""
    from itertools import islice

    from harness.campaign.cells import trouble_cells, value_types
    from harness.campaign.sweep import sweep_draws
    from harness.run.modes import DEFAULT_MODES

    seen = valid_held = 0
    for d in islice(sweep_draws(3, trouble=lambda p: {m: frozenset(range(len(p.body))) for m in DEFAULT_MODES}), 40):
        if not value_types(d.program)[1]:
            valid_held += len(d.held)  # (a valid program is never asked)
            continue
        seen += 1
        for f in d.held:
            assert all(o.kind == f.kind for o in d.program.body), (f, d.program)
    assert seen >= 5 and valid_held > 0
    first = frozenset({0})
    seen = narrowed = 0
    # (trouble names ops of the body: a program of the call's own cells may have none)
    for d in islice(sweep_draws(3, trouble=lambda p: {"jit": first} if p.body else {}), 40):
        if not value_types(d.program)[1] or not d.program.body:
            continue
        seen += 1
        own = trouble_cells(d.program, first)
        for f in d.held:
            assert f.profile != "spmd" or f.cell in own, (f, d.program)
        narrowed += sum(1 for c in d.group for f in c if f.profile == "spmd" and f.kind == d.program.body[0].kind
                        and f.cell not in own and f not in d.held)
    assert seen >= 5 and narrowed > 0


def test_a_reduced_focus_by_error_is_an_explicit_program_whose_out_spec_drops_the_reduced_axes() -> None:
    """`pcast|to=reduced|by_error` and `all_gather|to=reduced|by_error` (no sweep program
    held them before: the focus mesh was Auto, and with reduced values only the
    Explicit-axis defects apply): every axis Explicit, the chain left open, its reduced
    end an output whose out_spec names those axes, and the defect dropping them, which
    jax finds after tracing the body, so the op's cell counts by error; jax raises what
    the oracle predicts. The grad modes run no Explicit program: unreachable there."""
    from harness.campaign.cells import unreachable
    from harness.judge.check import check_program

    held: Counter[str] = Counter()
    ran: list[Program] = []
    for cell in ("pcast|to=reduced|by_error", "all_gather|to=reduced|by_error"):
        f = next(g for g in FOCI if g.cell == cell)

        def check(p: Program, cell: str) -> None:
            assert set(p.mesh.axis_types) == {"explicit"}
            if cell in checked_cells(p):
                assert p.defect == "out_spec_drops_reduced" and typed_cells(p)[1]
                held[cell] += 1
                ran.append(p)

        settings(FOCUSED, max_examples=12)(given(programs_around(f), st.just(cell))(check))()
        assert held[cell] >= 4, held
        assert unreachable(cell, "grad") and unreachable(cell, "grad_remat") and unreachable(cell, "jit") is None
    for p in ran[:: max(1, len(ran) // 3)]:
        res = check_program(p, ("abstract", "jit", "lowering"))
        assert not res.divergences and all(o.status == "error" for o in res.observations), res.divergences


def test_a_focus_on_parameter_classes_draws_the_op_in_those_classes() -> None:
    """A focus naming an op's parameter classes (an axis position, tiled, a perm class,
    split!=concat) steers the collective's draw to them (`Body.want`), and the first
    argument has the dimension the op splits or swaps at that position: each such focus
    of the table is held by its first draw (measured: 70 of these 162 before the
    steering, 162 after; jax's own positions, not shardfuzz's, decide what runs)."""
    from harness.campaign.sweep import _held, draw_group
    from harness.run.modes import DEFAULT_MODES
    from programs.cells import PAIRED

    foci = [f for f in FOCI if not f.by_error and any(d in PAIRED or d in ("perm", "split", "split!") for d, _ in f.parts)]
    assert len(foci) > 100
    missed = [f for f in foci if not ((p := draw_group(1, ((f,),), ())[0]) is not None and _held([f], p, DEFAULT_MODES))]
    assert len(missed) <= len(foci) // 20, missed


def test_a_focus_group_of_integer_ops_has_a_float_output_for_the_grad_modes() -> None:
    """A sweep group of axis_index foci (int32 results, each an output) gets a float output
    too: the grad modes check a program only through one (those foci were given up in
    every seed-0 and seed-1 sweep before, their programs never running in grad)."""
    from harness.campaign.sweep import draw_group

    group = tuple((f,) for f in FOCI if f.kind == "axis_index" and f.profile == "spmd" and not f.by_error)[:6]
    assert len(group) >= 3
    for at in range(3):
        p = draw_group(at, group, ())[0]
        assert p is not None
        types = trace(p, with_values=False)[0].types
        assert any(is_float(types[o].dtype) for o in p.outputs), p
        assert applies(p, "grad")


def test_a_sweep_groups_second_op_that_splits_a_dimension_has_an_argument_that_fits_it() -> None:
    """In a sweep group of foci of pswapaxes, all_to_all or psum_scatter with a dtype each,
    the argument each later focus's op takes has a dimension of the group's size too, as
    the first one's does: its op is drawn over every usable axis (else the second focus
    is held in only some of the draws)."""
    from harness.campaign.sweep import _held, draw_group
    from harness.run.modes import DEFAULT_MODES

    for cells in (("pswapaxes|dtype=int32", "pswapaxes|dtype=float64"), ("all_to_all|dtype=int32", "all_to_all|dtype=bfloat16"),
                  ("psum_scatter|dtype=float32", "psum_scatter|dtype=int32")):
        a, b = (Focus(c, "spmd") for c in cells)
        held = 0
        for at in range(12):
            p = draw_group(7 * at + 1, ((a,), (b,)), ())[0]
            held += p is not None and b in _held([b], p, DEFAULT_MODES)
        assert held >= 10, (cells, held)


def test_a_cast_to_float32_focus_draws_an_argument_of_another_dtype() -> None:
    """A cast's dtype cell is its result's: a focus on a cast to float32 needs an operand
    of another dtype, and its first argument has one (else the first two arguments are
    both float32, and the focus is seldom held)."""
    from harness.campaign.sweep import _held, draw_group
    from harness.run.modes import DEFAULT_MODES

    f = Focus("cast|dtype=float32", "spmd")
    held = sum(bool((p := draw_group(7919 * d + 13, ((f,),), ())[0]) is not None and _held([f], p, DEFAULT_MODES)) for d in range(12))
    assert held >= 9, held


def test_after_known_trouble_at_an_op_of_another_kind_a_group_is_drawn_without_that_kind() -> None:
    """An invalid sweep program at whose op of another kind than its foci jax is known to
    raise another error holds none of them (harness/campaign/sweep.py); the group's next
    draws add no op of that kind besides the foci's (`programs_around(avoid=)`): else a
    focus such as pswapaxes|dtype=float64|by_error whose every draw holds a
    psum_scatter, all_to_all or pmax jax is known to go wrong at is given up."""
    from itertools import islice

    import harness.campaign.sweep as sweep
    from harness.campaign.cells import failing_op
    from harness.campaign.sweep import draw_group
    from harness.run.modes import DEFAULT_MODES

    # the strategy: a pswapaxes group by error drawn with those kinds avoided has none of
    # them but the op a defect adds, its error's (all_to_all_bad_size, collective_mixed_vma)
    avoid = ("all_to_all", "psum_scatter", "pmax")
    group = ((Focus("pswapaxes|dtype=int32|by_error", "spmd"),), (Focus("pswapaxes|dtype=float64|by_error", "spmd"),))
    plain = 0
    for at in range(40):
        p, q = draw_group(at, group, ())[0], draw_group(at, group, (), avoid)[0]
        # (drawn freely, such ops come besides a defect's)
        plain += sum(op.kind in avoid and i != failing_op(p) for i, op in enumerate(p.body)) if p is not None else 0
        if q is not None:
            extra = [i for i, op in enumerate(q.body) if op.kind in avoid]
            assert all(i == failing_op(q) for i in extra), (q.defect, extra)
    assert plain >= 3, plain
    # the sweep: after a draw in trouble at such an op, the group's next draw avoids its kind
    calls: list[tuple[tuple[tuple[Focus, ...], ...], tuple[str, ...], Program | None]] = []
    real = sweep.draw_group

    def spy(at: int, group: tuple[tuple[Focus, ...], ...], defects: tuple[str, ...], avoid: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
        got = real(at, group, defects, avoid)
        calls.append((group, avoid, got[0]))
        return got

    def at_fault(p: Program) -> frozenset[int]:  # (jax "goes wrong" at every pmax, psum and all_to_all)
        return frozenset(i for i, op in enumerate(p.body) if op.kind in ("pmax", "psum", "all_to_all"))

    def trouble(p: Program) -> dict[str, frozenset[int]]:  # (in every mode)
        return dict.fromkeys(DEFAULT_MODES, at_fault(p))

    sweep.draw_group = spy  # type: ignore[assignment]
    try:
        list(islice(sweep.sweep_draws(0, invalid=1.0, trouble=trouble), 25))
    finally:
        sweep.draw_group = real  # type: ignore[assignment]
    followed = 0
    for (g0, _, p0), (g1, avoid1, _) in zip(calls, calls[1:]):
        if g0 != g1 or p0 is None or not sweep._held([f for c in g0 for f in c], p0, DEFAULT_MODES):
            continue
        other = {p0.body[i].kind for i in at_fault(p0)} - {g0[0][0].kind}
        assert other <= set(avoid1), (other, avoid1)
        followed += bool(other)
    assert followed >= 2, followed


def test_a_sweep_groups_later_reduce_sum_or_transpose_focus_has_an_argument_of_a_rank_it_takes() -> None:
    """A later focus of a sweep group that names a dtype gets an argument of that dtype;
    a reduce_sum takes no scalar and a transpose no value below rank 2, so that argument
    has a rank they take (else a focus such as transpose|dtype=int8|by_error, its
    argument drawn of rank 0 or 1, is never held, and is given up in every mode)."""
    from harness.campaign.sweep import _held, draw_group
    from harness.run.modes import DEFAULT_MODES

    for cells in (("reduce_sum|dtype=uint32", "reduce_sum|dtype=int32"), ("transpose|dtype=float16", "transpose|dtype=int8")):
        a, b = (Focus(c, "spmd") for c in cells)
        held = 0
        for at in range(12):
            p = draw_group(7 * at + 1, ((a,), (b,)), ())[0]
            held += p is not None and b in _held([b], p, DEFAULT_MODES)
        assert held >= 11, (cells, held)


def test_after_known_trouble_at_its_defects_op_a_group_is_drawn_with_another_defect() -> None:
    """An invalid sweep program whose defect's own op (of another kind than the foci) is
    one jax is known to answer with another error holds none of its foci: the group's
    next draws take another defect (else a bad_permutation's ppermute, which jax does
    not check, costs the group's foci their tries)."""
    from itertools import islice

    import harness.campaign.sweep as sweep
    from harness.campaign.cells import failing_op
    from harness.run.modes import DEFAULT_MODES

    calls: list[tuple[tuple[tuple[Focus, ...], ...], tuple[str, ...], Program | None]] = []
    real = sweep.draw_group

    def spy(at: int, group: tuple[tuple[Focus, ...], ...], defects: tuple[str, ...], avoid: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
        got = real(at, group, defects, avoid)
        calls.append((group, defects, got[0]))
        return got

    def trouble(p: Program) -> dict[str, frozenset[int]]:  # (jax "goes wrong" at every ppermute and pmin, in every mode)
        return dict.fromkeys(DEFAULT_MODES, frozenset(i for i, op in enumerate(p.body) if op.kind in ("ppermute", "pmin")))

    sweep.draw_group = spy  # type: ignore[assignment]
    try:
        list(islice(sweep.sweep_draws(0, invalid=1.0, trouble=trouble), 60))
    finally:
        sweep.draw_group = real  # type: ignore[assignment]
    followed = 0
    for (g0, _, p0), (g1, d1, _) in zip(calls, calls[1:]):
        if g0 != g1 or p0 is None or p0.defect is None or g0[0][0].kind in ("ppermute", "pmin"):
            continue
        at = failing_op(p0)
        if at is not None and at in trouble(p0)["jit"]:
            assert d1 and p0.defect not in d1, (p0.defect, d1)
            followed += 1
    assert followed >= 1, followed


def test_a_binary_ops_dtype_focus_takes_a_partner_of_its_dtype() -> None:
    """A binary op's dtype cell is its result's: a partner of another dtype promotes it out
    of the focus's dtype. The focus op's partner has the operand's dtype (else a focus
    such as add|dtype=uint32|by_error, its adds promoted to float32 or int64 by their
    partners, is rarely held and given up)."""
    from harness.campaign.sweep import _held, draw_group
    from harness.run.modes import DEFAULT_MODES

    held = total = 0
    for kind in ("add", "mul", "sub", "max"):
        foci = [Focus(f"{kind}|dtype={d}|by_error", "spmd") for d in ("float16", "int8", "uint32", "uint8", "bool", "int32")]
        for at in range(10):
            p = draw_group(31 * at + 5, tuple((f,) for f in foci), ())[0]
            assert p is not None
            held += len(_held(foci, p, DEFAULT_MODES))
            total += len(foci)
    assert held >= 0.9 * total, (held, total)


def test_the_sweep_aims_at_a_cell_outside_the_table_that_a_program_held() -> None:
    """A cell outside the table that some program drawn before held (`CellLedger.seen`,
    harness/campaign/plan.py `ValueTier.tier`) becomes a focus of the sweep, which draws a program holding
    it (else such a cell, e.g. cast|dtype=float64|by_error held only by programs jax is
    known to answer with another error at another op, is checked by abstract alone)."""
    from harness.campaign.cells import CellLedger, checked_cells
    from harness.campaign.sweep import sweep_draws
    from harness.run.modes import DEFAULT_MODES
    from strategies.focus import CELLS

    # (two cells sweep programs of seed 1 hold that the table does not list: found by drawing them)
    outside = {"psum|dtype=int64|by_error", "add|dtype=int64|by_error"}
    assert not outside & set(CELLS)
    ledger = CellLedger.new()
    held: set[str] = set()
    for d in sweep_draws(1, ledger=ledger):
        if d.program is not None:
            held |= checked_cells(d.program) & outside
            ledger.claim(d.program, checked_cells(d.program), DEFAULT_MODES)
            ledger.seen |= outside  # (as if an earlier program had held them)
    assert held == outside
    # unseen, no group aims at them
    ledger = CellLedger.new()
    for d in sweep_draws(1, ledger=ledger):
        assert not {f.cell for g in d.group for f in g} & outside
        ledger.claim(d.program, checked_cells(d.program) - outside, DEFAULT_MODES)


def _same_along(data: object, p: Program, axes: list[str]) -> bool:
    """Whether the per-device values `data` (the oracle's, mesh dimensions first) are the
    same block along every one of `axes`."""
    import numpy as np

    d = np.asarray(data)
    return all(np.array_equal(np.broadcast_to(np.take(d, [0], axis=p.mesh.names.index(a)), d.shape), d) for a in axes)


def _blind(p: Program) -> tuple[int, int]:
    """(collectives of strategies/body.py `ACROSS` over axes of size > 1 in `p`, those whose
    operand is the same block along all of those axes), from the oracle's values."""
    from strategies.body import ACROSS

    st_, err = trace(p, with_values=True)
    assert err is None
    n = same = 0
    for op in p.body:
        axes = [a for a in (op.p("axes") or ()) if p.mesh.axis_size(a) > 1]  # type: ignore[attr-defined]
        if op.kind in ACROSS and op.operands and axes:
            n += 1
            same += _same_along(st_.values[op.operands[0]], p, axes)
    return n, same


def test_focus_collectives_read_operands_that_differ_along_their_axes() -> None:
    """Over axes its operand is the same along, a collective hides a wrong group, order or
    permutation (a pmax's groups, a ppermute's perm, an all_gather's order): every
    member holds the same block. A focus collective's arguments are split along every
    usable axis and of rank 1 or more (three times in four each), its operand is drawn
    among the values that vary along its axes, and a rank-0 focus reads the sum of a
    split rank-1 argument (strategies/programs.py `_argument`, `_focus_operand`,
    `_focused`); docs/scheduling.md ("Focus draws") has the measured shares."""
    from itertools import islice

    from harness.campaign.cells import value_types
    from harness.campaign.sweep import draw_group, sweep_programs

    valid = (p for p in sweep_programs(1, invalid=0.0) if not value_types(p)[1])
    n = same = 0
    for p in islice(valid, 30):
        a, b = _blind(p)
        n, same = n + a, same + b
    assert n >= 100 and same <= 0.25 * n, (n, same)
    # rank 0: the focus op's operand is a scalar that differs along the op's axes
    # (over axes of size > 1: a focus mesh may have only axes of size 1 to name)
    f = Focus("ppermute|rank=0", "spmd")
    got = [p for p in (draw_group(7 * d + 1, ((f,),), ())[0] for d in range(24)) if p is not None]
    n = differ = 0
    for p in got:
        st_, _ = trace(p, with_values=True)
        ops = [(op, [a for a in op.p("axes") if p.mesh.axis_size(a) > 1]) for op in p.body  # type: ignore[union-attr]
               if op.kind == "ppermute" and not st_.types[op.operands[0]].shape]
        ops = [(op, ax) for op, ax in ops if ax]
        if ops:
            n += 1
            differ += any(not _same_along(st_.values[op.operands[0]], p, ax) for op, ax in ops)
    assert n >= 8 and differ >= 0.6 * n, (differ, n)
