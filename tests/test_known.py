"""Known divergences explain only what they cause (no jax: hand-made divergences)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import P, iota, op, prog, with_unrelated_psum

from harness.judge.compare import Divergence, DivergenceKind
from harness.judge.known import KnownDivergence, Pattern, derived_program, explains, find
from harness.judge.known_load import load
from harness.judge.known_load import parse_entry as entry
from oracles import predict
from programs.errors import KnownDivergencesError
from programs.model import Mesh, Program

XY = Mesh(("x", "y"), (2, 2))
SHIFT = tuple((i, (i + 1) % 4) for i in range(4))
# out[0]: ppermute over axes out of mesh order (the known bug); out[1]: an unrelated psum
PROGRAM = prog(XY, [iota(4), iota(2)], [P(("x", "y")), P()],
               [op("ppermute", 0, axes=("y", "x"), perm=SHIFT), op("psum", 1, axes=("x", "y"))],
               [2, 3], [P(("x", "y")), P()])
PPERMUTE = entry({"id": "ppermute-order", "reason": "r", "link": "none found", "case": "c.json",
                  "signatures": ["value|jit,eager|*"], "when": ["ppermute:axes_order==unordered"],
                  "repair": "mesh_order_axes"}, "test")


def div(kind: str, where: str, mode: str = "jit", output: int | None = None, op_index: int | None = None) -> Divergence:
    return Divergence(DivergenceKind(kind), mode, "", where, output=output, op_index=op_index)


def test_a_value_divergence_is_explained_only_where_its_output_depends_on_the_feature_op() -> None:
    pred = predict(PROGRAM)
    assert explains(PPERMUTE, div("value", "ppermute", output=0), PROGRAM, pred, "0.10.2")
    # the psum's output never touches the ppermute: a wrong value there is new
    assert not explains(PPERMUTE, div("value", "ppermute", output=1), PROGRAM, pred, "0.10.2")
    assert not explains(PPERMUTE, div("value", "psum", output=1), PROGRAM, pred, "0.10.2")


def test_kinds_are_literal() -> None:
    with pytest.raises(ValueError, match="no wildcards"):
        Pattern.parse("*|jit|psum")
    pred = predict(PROGRAM)
    assert not explains(PPERMUTE, div("shape", "ppermute", output=0), PROGRAM, pred, "0.10.2")


def test_errors_are_explained_only_at_the_op_that_raises() -> None:
    e = entry({"id": "e", "reason": "r", "link": "l", "case": "c", "signatures": ["unexpected_error|eager|*->ValueError"],
               "when": ["ppermute"], "repair": "without_op"}, "test")
    pred = predict(PROGRAM)
    assert explains(e, div("unexpected_error", "ppermute->ValueError", "eager", op_index=0), PROGRAM, pred, "0.10.2")
    assert not explains(e, div("unexpected_error", "psum->ValueError", "eager", op_index=1), PROGRAM, pred, "0.10.2")
    assert not explains(e, div("unexpected_error", "ppermute->ValueError", "jit", op_index=0), PROGRAM, pred, "0.10.2")
    # jax named no op (a compile error): any live op with the feature
    assert explains(e, div("unexpected_error", "lowering->ValueError", "eager"), PROGRAM, pred, "0.10.2")


def test_versions_are_a_range() -> None:
    e = entry({"id": "e", "reason": "r", "link": "l", "case": "c", "signatures": ["value|jit|*"],
               "when": ["ppermute"], "jax_versions": ">=0.8,<0.9", "repair": "without_op"}, "test")
    pred = predict(PROGRAM)
    d = div("value", "ppermute", output=0)
    assert explains(e, d, PROGRAM, pred, "0.8.1") and not explains(e, d, PROGRAM, pred, "0.10.2")


def test_mode_disagreement_needs_every_own_divergence_explained() -> None:
    pred = predict(PROGRAM)
    own = div("value", "ppermute", output=0)
    md = div("mode_disagreement", "raise:eager", "eager")
    assert find([PPERMUTE], md, [own, md], PROGRAM, pred, "0.10.2") is PPERMUTE
    other = div("value", "psum", output=1)
    assert find([PPERMUTE], md, [own, other, md], PROGRAM, pred, "0.10.2") is None


def test_derived_program_is_the_rewrite() -> None:
    q = derived_program([PPERMUTE], PROGRAM, predict(PROGRAM))
    assert q is not None and q.body[0].p("axes") == ("x", "y") and q.outputs == PROGRAM.outputs


def test_derived_program_slices_away_what_the_bug_reaches() -> None:
    e = entry({"id": "e", "reason": "r", "link": "l", "case": "c", "signatures": ["value|jit|*"], "when": ["ppermute"],
               "repair": "without_op"}, "t")
    q = derived_program([e], PROGRAM, predict(PROGRAM))
    assert q is not None and [o.kind for o in q.body] == ["psum"] and len(q.outputs) == 1


def test_a_rewrite_is_checked_whole_even_when_another_entry_without_one_reaches_every_output() -> None:
    # a bug with no rewrite at the psum, whose result reaches every output: slicing it off
    # would leave nothing, and the ppermute entry's rewrite would never be checked
    p = prog(XY, [iota(4)], [P(("x", "y"))],
             [op("ppermute", 0, axes=("y", "x"), perm=SHIFT), op("psum", 0, axes=("x", "y")), op("add", 1, 2)],
             [3], [P(("x", "y"))])
    other = entry({"id": "e", "reason": "r", "link": "l", "case": "c", "signatures": ["value|*|psum"], "when": ["psum"],
                   "repair": "without_op"}, "t")
    assert derived_program([other], p, predict(p)) is None  # (its own: every output reaches the psum)
    q = derived_program([PPERMUTE, other], p, predict(p))
    assert q is not None and q.body[0].p("axes") == ("x", "y") and q.outputs == p.outputs and len(q.body) == 3


@pytest.mark.parametrize("bad, phrase", [
    ({"signatures": ["*|*|*"]}, "no wildcards"),
    ({"link": ""}, "'link'"),
    ({"repair": "magic"}, "repair 'magic'"),
    ({"signatures": ["value|*|*"]}, "both the mode and"),
    ({"signatures": ["unexpected_error|jit|*->*"]}, "any exception type"),
    ({"signatures": ["unexpected_error|jit|*"]}, "any exception type"),
    ({"class": "policy"}, "decision"),
    ({"class": "feature"}, "class 'feature'"),
    ({"repair": "without_mode"}, "use without_op"),
    ({"when": ["partial_manual"]}, "needs an op feature"),
    ({"jax_versions": "0.10"}, "Invalid specifier"),
    ({"when": ["ppermute:axes_order=unordered"]}, "not a program feature"),
    ({"colour": "red"}, "unknown keys"),
])
def test_malformed_entries_are_named(bad, phrase) -> None:  # type: ignore[no-untyped-def]
    d = {"id": "e", "reason": "r", "link": "l", "case": "c", "signatures": ["value|jit|*"], "when": ["ppermute"],
         "repair": "without_op", **bad}
    with pytest.raises(KnownDivergencesError, match=phrase):
        entry(d, "test")


def test_each_entry_has_its_own_case(tmp_path: Path) -> None:
    f = tmp_path / "k.toml"
    case = tmp_path / "same.json"
    case.write_text("{}")
    one = '[[divergence]]\nid = "{}"\nreason = "r"\nlink = "l"\ncase = "CASE"\nsignatures = ["value|jit|*"]\nrepair = "without_mode"\n'.replace("CASE", str(case))
    f.write_text(one.format("a") + one.format("b"))
    with pytest.raises(KnownDivergencesError, match="share case"):
        load(f)


# ------------------------------------------------------------ the entries on real jax

from collections.abc import Iterator  # noqa: E402
from dataclasses import replace  # noqa: E402

from harness.judge.check import evaluate  # noqa: E402
from harness.judge.known import case_path, entry_case_shows, entry_modes, explain_all  # noqa: E402
from harness.run.modes import DEFAULT_MODES  # noqa: E402
from harness.run.pool import Pool  # noqa: E402
from programs.model import Input  # noqa: E402
from programs.serialize import from_json  # noqa: E402

ENTRIES = load()


@pytest.fixture(scope="module")
def faulty_pool() -> Iterator[Pool]:
    p = Pool(1, timeout_s=60.0, env={"SHARDFUZZ_FAULTS": "psum_counts_device0_twice"})
    yield p
    p.close()


def _check(pool: Pool, p, modes):  # type: ignore[no-untyped-def]
    pool.submit(p, modes)
    (c,) = pool.drain()
    return evaluate(c.program, c.observations)


@pytest.mark.parametrize("e", ENTRIES, ids=[e.id for e in ENTRIES])
def test_every_entry_shows_its_bug_on_its_own_case(pool: Pool, e) -> None:  # type: ignore[no-untyped-def]
    """An entry's own case shows the bug it describes on every jax its range covers (on
    the installed one here); an entry whose bug this jax no longer has is stale."""
    jv = pool.info.get("jax_version", "")
    if not e.covers(jv):
        pytest.skip(f"{e.id}: jax_versions {e.jax_versions!r} leaves out the installed jax {jv}")
    p = from_json(case_path(e).read_text())
    res = _check(pool, p, entry_modes(e, DEFAULT_MODES))
    assert entry_case_shows(e, p, res.divergences, res.prediction, jv), (
        f"{e.id}: its case {e.case} does not show the bug on jax {jv}: "
        + "; ".join(d.signature for d in res.divergences) or "no divergence")


RUNNING = [e for e in ENTRIES if predict(from_json(case_path(e).read_text()), values=False).error is None]


@pytest.mark.parametrize("e", RUNNING, ids=[e.id for e in RUNNING])
def test_a_fault_in_an_unrelated_collective_is_new_in_every_known_case(faulty_pool: Pool, e) -> None:  # type: ignore[no-untyped-def]
    """The principle: a known bug explains only what it causes. Each known case that jax
    runs gets an unrelated psum, whose values an injected fault breaks; the divergence
    must come out new, in the program itself or in the program without the known bug."""
    jv = faulty_pool.info.get("jax_version", "")
    p = with_unrelated_psum(from_json(case_path(e).read_text()))
    assert predict(p).error is None
    modes = tuple(dict.fromkeys(("jit", *entry_modes(e, ("jit", "eager", "vmap", "vmap_spmd", "gspmd", "grad")))))
    res = _check(faulty_pool, p, modes)
    if all(o.status == "unsupported" for o in res.observations):
        pytest.skip(f"{e.id}: jax cannot run its case here: {res.observations[0].error_message}")
    explained = explain_all(ENTRIES, res.divergences, p, res.prediction, jv)
    new = [x.divergence for x in explained if x.entry is None]
    if not new:
        used = list({x.entry.id: x.entry for x in explained if x.entry is not None}.values())
        q = derived_program(used, p, res.prediction)
        assert q is not None, f"{e.id}: every divergence excused and nothing left to check: {[d.signature for d in res.divergences]}"
        qres = _check(faulty_pool, q, modes)
        new = [x.divergence for x in explain_all(ENTRIES, qres.divergences, q, qres.prediction, jv) if x.entry is None]
    assert any(d.kind == DivergenceKind.VALUE for d in new), f"{e.id}: the broken psum was not reported as new: {[d.signature for d in new]}"


def with_downstream_psum(p: Program, e: KnownDivergence) -> Program | None:
    """`p` with, as an output more, a psum of 1 plus the value its known bug is at (the
    first op the entry's op features hold on; without op features, the first output's
    value), over the manual axes it varies along (all of them where it varies along none,
    or without check_vma): invariant after the psum, out_spec P(). None where there is no
    such value a psum can read (an argument, a zero-size, bool, unreduced or reduced value,
    no manual axis)."""
    from programs.graph import cone

    types = predict(p, values=False).value_types
    n_in = len(p.inputs)
    ops = sorted(e.feature_ops(p, types))
    start = n_in + ops[0] if ops else p.outputs[0]
    manual = tuple(a for a in p.mesh.names if a in p.manual_axes)
    # the buggy value, or the first value after it that depends on it and a psum can read
    after = [start] + [n_in + i for i in range(len(p.body)) if n_in + i > start and start - n_in in cone(p, n_in + i)]
    readable = [v for v in after if n_in <= v < len(types) and 0 not in types[v].shape and not types[v].unreduced
                and not types[v].reduced and types[v].dtype != "bool"]
    if not readable or not manual:
        return None
    v = readable[0]
    t = types[v]
    axes = tuple(a for a in manual if t.vma and a in t.vma) or manual
    new = n_in + len(p.body)
    body = (op("const", shape=(), dtype=t.dtype, value=1), op("add", v, new), op("psum", new + 1, axes=axes))
    wrap_specs = p.wrap_specs + (P(),) if p.wrap == "auto_axes" else p.wrap_specs
    return replace(p, body=p.body + body, outputs=p.outputs + (new + 2,), out_specs=p.out_specs + (P(),), wrap_specs=wrap_specs)


@pytest.mark.parametrize("e", RUNNING, ids=[e.id for e in RUNNING])
def test_a_fault_downstream_of_the_buggy_op_is_new_in_every_known_case(faulty_pool: Pool, e) -> None:  # type: ignore[no-untyped-def]
    """Differential root-causing: a known bug explains only what its repair removes. Each
    known case that jax runs gets a psum of the buggy op's value (downstream of the bug,
    in its cone), whose values an injected fault breaks; judged by repair
    (harness/judge/repair.py: the repaired programs checked too), the broken psum must
    come out new, however broad the entry's signatures."""
    from harness.judge.check import check_in_pool
    from harness.judge.repair import judge

    jv = faulty_pool.info.get("jax_version", "")
    p = with_downstream_psum(from_json(case_path(e).read_text()), e)
    if p is None:
        pytest.skip(f"{e.id}: its bug is at a value no psum can read (zero-size, unreduced, an argument, no manual axis)")
    assert predict(p).error is None
    modes = tuple(dict.fromkeys(("jit", *entry_modes(e, ("jit", "eager", "vmap", "vmap_spmd", "gspmd", "grad")))))
    res = check_in_pool(faulty_pool, p, modes)
    v = judge(ENTRIES, res, lambda q, ms: check_in_pool(faulty_pool, q, ms), jv)
    ran = [o for x in (v, *(sub for _, sub in v.repaired)) for o in x.result.observations
           if o.status == "ok" and len(o.outputs) == len(x.result.program.outputs) and p.outputs[-1] in x.result.program.outputs]
    if not ran:
        pytest.skip(f"{e.id}: neither its case nor its repair runs the psum after the bug here: "
                    f"{[(o.mode, o.status) for o in res.observations]}")
    new = v.new()
    assert any(d.kind == DivergenceKind.VALUE for d in new), (
        f"{e.id}: the broken psum after the buggy op was not reported as new: new {[d.signature for d in new]}, "
        f"known {v.known()}")


def test_a_crash_keeps_its_cause_line(pool: Pool) -> None:
    """An XLA abort's `Check failed` line names the bug; the crash observation keeps it,
    not only the last lines of stderr (the stack trace after it)."""
    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/gspmd_partial_manual_all_gather.json").read_text())
    res = _check(pool, p, ("gspmd",))
    (obs,) = res.observations
    assert obs.status == "crash", obs
    assert "cause: " in obs.error_message and "Check failed" in obs.error_message.split("stderr tail:")[0], obs.error_message


def test_a_lowering_error_is_put_on_an_op_only_by_the_same_error() -> None:
    """jit's lowering error takes the op eager raised the same error at; another mode's
    different error of the same class (another bug) does not move it (else a dead
    negative psum_scatter's lowering error is put on a vmap_spmd bug's mul)."""
    from harness.judge.check import _localise
    from harness.judge.divergence import Divergence, DivergenceKind

    U = DivergenceKind.UNEXPECTED_ERROR
    low = Divergence(U, "lowering", "(mode=lowering) jax raised ValueError: 'Cannot lower jaxpr: reduce_scatter'", "lowering->ValueError")
    eager = Divergence(U, "eager", "(mode=eager) jax raised ValueError: 'Cannot lower jaxpr: reduce_scatter'", "psum_scatter->ValueError")
    other = Divergence(U, "vmap_spmd", "(mode=vmap_spmd) jax raised ValueError: 'Primitive mul requires varying manual axes'", "mul->ValueError")
    assert [d.where for d in _localise([low, other])] == ["lowering->ValueError", "mul->ValueError"]
    assert [d.where for d in _localise([low, other, eager])][0] == "psum_scatter->ValueError"


def test_a_rank_0_value_going_wrong_is_put_on_its_op(pool: Pool) -> None:
    """The probe run returns rank-0 body values too, so a wrong scalar is put on the op
    that made it (here the known multi-axis ppermute of a scalar axis_index), not on the
    psum after it where the damage shows (a bool ppermute once bucketed that way)."""
    from harness.judge.check import check_in_pool

    xy = Mesh(("x", "y"), (2, 2))
    p = prog(xy, [iota(2)], [P()],
             [op("axis_index", axes=("x", "y")), op("ppermute", 1, axes=("y", "x"), perm=((2, 0),)),
              op("psum", 2, axes=("x", "y"))], [3], [P()])
    res = check_in_pool(pool, p, ("jit", "eager"))
    assert sorted(d.signature for d in res.divergences) == ["value|eager|ppermute", "value|jit|ppermute"], res.divergences


def test_the_size_1_explicit_axis_feature_reads_the_axis_types_outside_explicit_axes() -> None:
    """explicit_axes(axes='data') around the call: 'data' is Explicit inside (the
    program's mesh) and Auto outside, where the output is laid out; out_spec
    P(None, ('data', 'pipe', 'model')) then names the size-1 Explicit 'pipe' beside the
    Auto 'data' of size 4 (jax 0.10.2 lays it out P('data') and loses 'pipe'). Inside,
    no axis of size > 1 is Auto: without the wrapper it does not hold."""
    from dataclasses import replace

    from harness.judge.known_features import PROGRAM_FEATURES
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/mixed_size1_explicit_axes.json").read_text())
    assert p.wrap == "explicit_axes" and p.mesh.axis_types == ("explicit", "auto", "explicit")
    holds = PROGRAM_FEATURES["out_spec_size_1_explicit_with_auto"]
    assert holds(p)
    assert not holds(replace(p, wrap=None, wrap_axes=(), wrap_specs=()))
    sig = div("sharding", "pshuffle", mode="eager", output=0)
    e = find(load(), sig, [sig], p, predict(p), "0.10.2")
    assert e is not None and e.id == "mixed-mesh-size-1-explicit-type"


def test_the_size_1_explicit_axis_feature_reads_auto_axes_out_sharding() -> None:
    """auto_axes(axes='model', out_sharding=P('model')) around the call on a mesh with
    'data' Auto of size 2 and 'model' (size 1) Explicit outside: the shard_map's out_spec
    P(('data', 'model')) lays the output out along 'data', and jax 0.10.2 types the
    result without 'model' (found by tests/test_differential.py). The out_sharding names
    the size-1 Explicit axis; with an out_spec naming no Auto axis of size > 1 jax keeps
    the type, and the feature does not hold."""
    from dataclasses import replace

    from harness.judge.known_features import PROGRAM_FEATURES
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/mixed_size1_auto_axes.json").read_text())
    assert p.wrap == "auto_axes" and p.outer_mesh().axis_types == ("auto", "explicit")
    holds = PROGRAM_FEATURES["out_spec_size_1_explicit_with_auto"]
    assert holds(p)
    assert not holds(replace(p, out_specs=(P(("model",)),)))
    assert not holds(replace(p, wrap_specs=(P(),)))
    for mode in ("jit", "eager"):
        sig = div("sharding", "all_gather", mode=mode, output=0)
        e = find(load(), sig, [sig], p, predict(p), "0.10.2")
        assert e is not None and e.id == "mixed-mesh-size-1-explicit-type"


def test_a_grouped_pmax_entry_explains_its_types_not_wrong_values() -> None:
    """grouped-pmax-claims-invariance is a typing bug of groups that hold different
    values (one group is the whole reduction, typed invariant rightly): it explains the
    wrong varying axes at such a pmax, and never a wrong value there. The reach
    benchmark's narrow_pmax_int32 and narrow_pmin_groups faults (+1 at the op) hid behind
    'value|*|pmax', which no program of a 1723-case qualify rejudge or of the seed-0
    2000-program run needed."""
    sups = {e.id: e for e in load(None)}
    mesh = Mesh(("x", "y"), (2, 2))
    one = prog(mesh, [iota(4)], [P("x")], [op("pmax", 0, axes=("y",), groups=((0, 1),))], [1], [P("x")])
    two = prog(mesh, [iota(4)], [P("x")], [op("pmax", 0, axes=("y",), groups=((0,), (1,)))], [1], [P(("x", "y"))])
    for kind in ("pmax", "pmin"):
        e = sups[f"grouped-{kind}-claims-invariance"]
        a, b = (replace_kind(q, kind) for q in (one, two))
        assert not explains(e, div("vma", kind, output=0, op_index=0), a, predict(a), "0.10.2")
        assert explains(e, div("vma", kind, output=0, op_index=0), b, predict(b), "0.10.2")
        for mode in ("jit", "eager"):
            assert not explains(e, div("value", kind, mode, output=0, op_index=0), b, predict(b), "0.10.2")


def replace_kind(p: Program, kind: str) -> Program:
    from dataclasses import replace

    return replace(p, body=tuple(replace(o, kind=kind) for o in p.body))


def test_a_negative_split_all_to_all_explains_the_eager_error_it_raises_before_a_later_defect() -> None:
    """Eagerly, a negative-split all_to_all runs (and fails MLIR verification with a
    garbage split size) before a later op's defect is traced
    (harness/data/corpus/known/neg_split_eager_invalid.json). The entry explains that wrong
    error where jax raised at the all_to_all, and not where it raised at the psum, nor
    for the same program with the axis non-negative."""
    from dataclasses import replace

    from programs.model import Op
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/neg_split_eager_invalid.json").read_text())
    assert p.body[0].kind == "all_to_all" and p.body[0].p("split_axis") < 0 and p.defect
    pred = predict(p)
    assert pred.error is not None and pred.error.op_index == 1

    def wrong(raised_at: int, error: str = "MLIRError") -> Divergence:
        return Divergence(DivergenceKind.WRONG_ERROR, "eager", "", f"{pred.error.kind.value}->{error}",
                          op_index=1, raised_at=raised_at)

    # (or, in another program, ValueError 'Cannot lower jaxpr with verifier errors')
    e = find(ENTRIES, wrong(0, "ValueError"), [wrong(0, "ValueError")], p, pred, "0.10.2")
    assert e is not None and e.id == "negative-all-to-all-split-axis"

    e = find(ENTRIES, wrong(0), [wrong(0)], p, pred, "0.10.2")
    assert e is not None and e.id == "negative-all-to-all-split-axis"
    assert find(ENTRIES, wrong(1), [wrong(1)], p, pred, "0.10.2") is None
    a2a = Op.make("all_to_all", p.body[0].operands, **{**dict(p.body[0].params), "split_axis": 2})
    q = replace(p, body=(a2a, *p.body[1:]))
    assert find(ENTRIES, wrong(0), [wrong(0)], q, predict(q), "0.10.2") is None
    assert find(ENTRIES, wrong(0), [wrong(0)], p, pred, "0.11.2") is None  # fixed upstream


def test_a_negative_scatter_psum_scatter_explains_vmaps_carry_type_error_before_a_later_defect() -> None:
    """Under vmap, an untiled psum_scatter with scatter_dimension=-1 in a fori loop
    scatters the wrong dimension, and the loop's carry check raises TypeError before the
    invalid program's out_specs defect (harness/data/corpus/known/
    neg_scatter_vmap_fori_invalid.json). The entry explains that TypeError in the vmap
    modes only, not for the same program with the dimension non-negative, nor on a jax
    that has the fix."""
    from dataclasses import replace

    from programs.model import Op
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/neg_scatter_vmap_fori_invalid.json").read_text())
    assert p.body[0].kind == "psum_scatter" and p.body[0].p("scatter_dimension") < 0 and p.defect
    pred = predict(p)
    assert pred.error is not None

    def wrong(mode: str) -> Divergence:
        return Divergence(DivergenceKind.WRONG_ERROR, mode, "", f"{pred.error.kind.value}->TypeError", raised_at=0)

    e = find(ENTRIES, wrong("vmap"), [wrong("vmap")], p, pred, "0.10.2")
    assert e is not None and e.id == "negative-scatter-dimension"
    assert find(ENTRIES, wrong("jit"), [wrong("jit")], p, pred, "0.10.2") is None
    ps = Op.make("psum_scatter", p.body[0].operands, **{**dict(p.body[0].params), "scatter_dimension": 1})
    q = replace(p, body=(ps, *p.body[1:]))
    assert find(ENTRIES, wrong("vmap"), [wrong("vmap")], q, predict(q), "0.10.2") is None
    assert find(ENTRIES, wrong("vmap"), [wrong("vmap")], p, pred, "0.11.2") is None  # fixed upstream


def test_a_negative_split_all_to_all_explains_a_later_ops_shape_error_only_in_its_cone() -> None:
    """Untiled over a size-1 axis with split_axis=-1, jax 0.10.2's all_to_all keeps its
    operand's shape, so a following pswapaxes of the oracle's (valid) shape raises
    ValueError (harness/data/corpus/known/neg_split_downstream_swap.json).
    The entry explains that error at the pswapaxes, which depends on the all_to_all, and
    not at a pswapaxes of the argument itself, nor with the axis non-negative, nor on a
    jax that normalises negative axes."""
    from dataclasses import replace

    from programs.model import Op
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/neg_split_downstream_swap.json").read_text())
    a2a, swap = p.body
    assert a2a.kind == "all_to_all" and a2a.p("split_axis") < 0 and swap.kind == "pswapaxes" and swap.operands == (1,)
    pred = predict(p)
    assert pred.error is None  # (valid: jax is wrong to raise)

    def raised(q: Program, at: int) -> Divergence:
        return Divergence(DivergenceKind.UNEXPECTED_ERROR, "abstract", "", f"{q.body[at].kind}->ValueError",
                          op_index=at, raised_at=at)

    e = find(ENTRIES, raised(p, 1), [raised(p, 1)], p, pred, "0.10.2")
    assert e is not None and e.id == "negative-all-to-all-split-axis-untiled-shape"
    assert find(ENTRIES, raised(p, 1), [raised(p, 1)], p, pred, "0.11.2") is None  # fixed upstream
    nonneg = replace(p, body=(Op.make("all_to_all", a2a.operands, **{**dict(a2a.params), "split_axis": 1}), swap))
    assert find(ENTRIES, raised(nonneg, 1), [raised(nonneg, 1)], nonneg, predict(nonneg), "0.10.2") is None
    # a pswapaxes of the argument (not in the all_to_all's cone) raising is not explained
    apart = replace(p, body=(a2a, Op.make("pswapaxes", (0,), **{**dict(swap.params), "axis": 0})))
    assert find(ENTRIES, raised(apart, 1), [raised(apart, 1)], apart, predict(apart), "0.10.2") is None


def test_an_out_of_order_ppermute_inside_a_transform_explains_the_transforms_wrong_value() -> None:
    """The probe sees a derivative transform as one op, so a ppermute out of mesh order
    among its steps makes the transform the first op going wrong
    (harness/data/corpus/known/ppermute_order_transform.json). The entry explains the
    output that reads that transform, not one that does not."""
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/ppermute_order_transform.json").read_text())
    pred = predict(p)
    reads = div("value", "transform", output=2)  # out[2]: the fori_loop over the vjp of the ppermute
    e = find(ENTRIES, reads, [reads], p, pred, "0.10.2")
    assert e is not None and e.id == "ppermute-multi-axis-order"
    other = div("value", "transform", output=0)  # out[0]: a scan over the grad of an all_to_all
    assert find(ENTRIES, other, [other], p, pred, "0.10.2") is None


def test_a_bf16_vjp_that_sums_its_cotangent_in_partial_manual_is_the_abort_entry() -> None:
    """bf16-partial-manual-transform-cotangent-abort: a vjp
    whose pshuffle makes a P() bfloat16 operand vary sums its cotangent over those manual
    axes, the bfloat16 all-reduce XLA:CPU aborts on. The feature holds there, not for a
    float32 operand, not for a jvp (no transpose)."""
    from dataclasses import replace

    from harness.judge.known_features import OpFeature
    from programs.model import Input, Op
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/bf16_partial_manual_vjp.json").read_text())
    f = OpFeature.parse("transform:cotangent_sum_dtype==bfloat16")
    t = p.body[0]

    def holds(q: Program) -> bool:
        types = predict(q).value_types
        return f.holds(q, q.body[0], [types[j] for j in (*q.body[0].operands, len(q.inputs))])

    assert t.kind == "transform" and holds(p)
    f32 = replace(p, inputs=(Input(p.inputs[0].shape, "float32", p.inputs[0].fill, p.inputs[0].seed), *p.inputs[1:]))
    assert not holds(f32)
    jvp = replace(p, body=(Op.make("transform", t.operands, **{**dict(t.params), "transform": "jvp"}),))
    assert not holds(jvp)
    crash = Divergence(DivergenceKind.CRASH, "eager", "(mode=eager) crash: worker died (exit code -6, SIGABRT); cause: F1207 "
                       "16:42:42.961419 3199 hlo_instruction.cc:1615] Invalid binary instruction opcode copy", "crash")
    e = find(ENTRIES, crash, [crash], p, predict(p), "0.10.2")
    assert e is not None and e.id == "bf16-partial-manual-allreduce-abort"
    # one abort, one entry: identified by where it aborts, not by the op; another abort is not it
    other = replace(crash, message="(mode=eager) crash: worker died (exit code -6, SIGABRT); cause: F1207 hlo_sharding_util.cc:2714] "
                    "Check failed: sharding.IsManualSubgroup()")
    assert find(ENTRIES, other, [other], p, predict(p), "0.10.2") is None


def test_an_untiled_all_to_all_inside_a_transform_explains_the_transforms_cotangent_error_only() -> None:
    """A derivative transform in the body transposes its steps in every mode, so the
    untiled all_to_all's wrong transpose raises at the transform in abstract, jit, eager
    ... (harness/data/corpus/known/a2a_untiled_transform.json).
    The entry explains that error at a transform holding an untiled all_to_all, not at
    one holding a tiled one, nor one of the 0.8 shape where the cotangent is returned."""
    from dataclasses import replace

    from programs.model import Op
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/a2a_untiled_transform.json").read_text())
    (tr,) = p.body
    assert tr.kind == "transform" and [s.kind for s in tr.steps()] == ["all_to_all"]
    pred = predict(p)
    assert pred.error is None  # (valid: jax is wrong to raise)

    def raised(kind: str = "ValueError") -> Divergence:
        return Divergence(DivergenceKind.UNEXPECTED_ERROR, "abstract", "", f"transform->{kind}", op_index=0, raised_at=0)

    e = find(ENTRIES, raised(), [raised()], p, pred, "0.10.2")
    assert e is not None and e.id == "all-to-all-untiled-transpose-shape"
    assert find(ENTRIES, raised("TypeError"), [raised("TypeError")], p, pred, "0.10.2") is None
    shape = Divergence(DivergenceKind.SHAPE, "jit", "", "transform", output=0, op_index=0)
    e = find(ENTRIES, shape, [shape], p, pred, "0.8.1")
    assert e is not None and e.id == "all-to-all-untiled-transpose-dot-general"
    assert find(ENTRIES, shape, [shape], p, pred, "0.10.2") is None  # (0.9+ raises instead)
    steps = tuple((k, ops, tuple((n, True if n == "tiled" else v) for n, v in params)) for k, ops, params in tr.p("steps"))
    tiled = replace(p, body=(Op.make("transform", tr.operands, **{**dict(tr.params), "steps": steps}),))
    assert [s.p("tiled") for s in tiled.body[0].steps()] == [True]
    assert find(ENTRIES, raised(), [raised()], tiled, predict(tiled), "0.10.2") is None


def test_a_zero_size_psum_scatter_explains_eagers_wrong_error_only_when_it_raised_there() -> None:
    """Eager runs each op as it comes, so in a program whose defect jax checks at the end
    (a duplicate out_spec axis) a zero-size psum_scatter raises first
    (harness/data/corpus/known/zero_psum_scatter_eager_invalid.json). The entry
    explains that wrong error in eager, at the psum_scatter, and not at another op."""
    from programs.serialize import from_json

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/zero_psum_scatter_eager_invalid.json").read_text())
    assert p.defect is not None and p.body[0].kind == "psum_scatter"
    pred = predict(p)
    assert pred.error is not None

    def wrong(mode: str, at: int) -> Divergence:
        return Divergence(DivergenceKind.WRONG_ERROR, mode, "", f"{pred.error.kind.value}->ValueError",  # type: ignore[union-attr]
                          op_index=at, raised_at=at)

    e = find(ENTRIES, wrong("eager", 0), [wrong("eager", 0)], p, pred, "0.10.2")
    assert e is not None and e.id == "zero-size-psum-scatter"
    assert find(ENTRIES, wrong("eager", 1), [wrong("eager", 1)], p, pred, "0.10.2") is None  # (the const)
    assert find(ENTRIES, wrong("jit", 0), [wrong("jit", 0)], p, pred, "0.10.2") is None


def test_an_untiled_all_to_all_transposed_in_a_transform_explains_an_invalid_programs_wrong_error_only_there() -> None:
    """In an invalid program whose defect jax finds after tracing the body (an out_specs
    structure), a derivative transform holding an untiled all_to_all raises its cotangent
    ValueError first (harness/data/corpus/known/
    a2a_untiled_transform_invalid.json). The entry explains that wrong error at such a
    transform, not with its all_to_all tiled, and not at a plain untiled all_to_all (no
    transpose there)."""
    from programs.model import Op

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/a2a_untiled_transform_invalid.json").read_text())
    (tr,) = p.body
    assert p.defect is not None and tr.kind == "transform" and "all_to_all" in [s.kind for s in tr.steps()]
    pred = predict(p)
    assert pred.error is not None

    def wrong(kind: str = "ValueError") -> Divergence:
        return Divergence(DivergenceKind.WRONG_ERROR, "jit", "", f"{pred.error.kind.value}->{kind}",  # type: ignore[union-attr]
                          op_index=0, raised_at=0)

    e = find(ENTRIES, wrong(), [wrong()], p, pred, "0.10.2")
    assert e is not None and e.id == "all-to-all-untiled-transpose-shape"
    assert find(ENTRIES, wrong("TypeError"), [wrong("TypeError")], p, pred, "0.10.2") is None
    steps = tuple((k, ops, tuple((n, True if n == "tiled" else v) for n, v in params)) for k, ops, params in tr.p("steps"))
    tiled = replace(p, body=(Op.make("transform", tr.operands, **{**dict(tr.params), "steps": steps}),))
    assert find(ENTRIES, wrong(), [wrong()], tiled, predict(tiled), "0.10.2") is None
    x = Mesh(("x",), (2,))
    plain = replace(prog(x, [iota(2, 4)], [P()], [op("all_to_all", 0, axes=("x",), split_axis=1, concat_axis=0, tiled=False)],
                         [1], [P(), P()]), defect="out_specs_extra")
    pp = predict(plain)
    assert pp.error is not None
    d = Divergence(DivergenceKind.WRONG_ERROR, "jit", "", f"{pp.error.kind.value}->ValueError", op_index=0, raised_at=0)
    assert find(ENTRIES, d, [d], plain, pp, "0.10.2") is None


@pytest.mark.parametrize(("case", "axis", "entry_id"), [
    ("neg_split_grad_hang.json", "split_axis", "negative-all-to-all-split-axis"),
    ("neg_concat_grad_hang.json", "concat_axis", "negative-all-to-all-concat-axis"),
])
def test_a_negative_axis_all_to_all_explains_a_grad_hang_and_gives_it_the_short_limit(case: str, axis: str, entry_id: str) -> None:
    """An all_to_all with a negative axis hands XLA a garbage size in the grad modes
    (untiled split_axis=-1: 'split dimension has size 140728018265312'; concat_axis=-1,
    tiled: the backward all_to_all gets it as its split axis), which raise or hang: a
    hang unexplained is reported new and costs a worker the pool's whole timeout
    (harness/data/corpus/known/CASE). The entry explains a grad timeout of
    such a program, and the scheduler gives its grad modes KNOWN_HANG_LIMIT_S; with the
    axis non-negative (its rewrite) neither, nor on 0.12."""
    from harness.campaign.cells import value_types
    from harness.campaign.known_queries import hang_entries, known_hang_modes
    from oracles.rewrites import REWRITES

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known" / case).read_text())
    assert any(o.kind == "all_to_all" and o.p(axis) == -1 for o in p.body)
    pred = predict(p)
    assert pred.error is None
    for mode in ("grad", "grad_remat"):
        hang = Divergence(DivergenceKind.TIMEOUT, mode, "", "timeout")
        e = find(ENTRIES, hang, [hang], p, pred, "0.10.2")
        assert e is not None and e.id == entry_id
    jit_hang = Divergence(DivergenceKind.TIMEOUT, "jit", "", "timeout")
    assert find(ENTRIES, jit_hang, [jit_hang], p, pred, "0.10.2") is None  # (the grad modes only)
    modes = ("abstract", "jit", "grad", "grad_remat")
    assert known_hang_modes(hang_entries(ENTRIES, "0.10.2"), p, value_types(p)[0], modes) == ("grad", "grad_remat")
    q = REWRITES["nonnegative_axes"](p)
    assert q is not None and find(ENTRIES, hang, [hang], q, predict(q), "0.10.2") is None
    assert known_hang_modes(hang_entries(ENTRIES, "0.10.2"), q, value_types(q)[0], modes) == ()
    assert known_hang_modes(hang_entries(ENTRIES, "0.12.0"), p, value_types(p)[0], modes) == ()


def test_nested_shard_maps_under_vmap_spmd_explain_a_hang_there_only() -> None:
    """jax.vmap(spmd_axis_name=) over a shard_map whose body holds nested shard_maps (in a
    cond, a fori_loop, one after another) lowers to a module the verifier rejects, and with
    several of them the process waits in the verification instead of raising
    (harness/data/corpus/known/vmap_spmd_nested_shard_map_hang.json). The entry explains a
    vmap_spmd timeout of such a program and gives that mode the short limit; not a timeout
    in another mode, nor one of a program without a nested shard_map."""
    from harness.campaign.cells import value_types
    from harness.campaign.known_queries import hang_entries, known_hang_modes

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/vmap_spmd_nested_shard_map_hang.json").read_text())
    pred = predict(p)
    assert pred.error is None and sum(o.kind == "shard_map" for o in p.body) >= 3
    hang = Divergence(DivergenceKind.TIMEOUT, "vmap_spmd", "", "timeout")
    e = find(ENTRIES, hang, [hang], p, pred, "0.10.2")
    assert e is not None and e.id == "vmap-spmd-nested-shard-map"
    jit_hang = Divergence(DivergenceKind.TIMEOUT, "jit", "", "timeout")
    assert find(ENTRIES, jit_hang, [jit_hang], p, pred, "0.10.2") is None
    modes = ("abstract", "jit", "vmap_spmd")
    assert known_hang_modes(hang_entries(ENTRIES, "0.10.2"), p, value_types(p)[0], modes) == ("vmap_spmd",)
    flat = prog(Mesh(("x",), (2,)), [iota(4)], [P("x")], [op("psum", 0, axes=("x",))], [1], [P()])
    assert find(ENTRIES, hang, [hang], flat, predict(flat), "0.10.2") is None


def test_a_negative_scatter_dimension_explains_a_nested_shard_map_raising_after_it() -> None:
    """An untiled psum_scatter with scatter_dimension=-2 scatters the wrong dimension
    under vmap, and a nested shard_map after it raises that its argument does not divide
    (harness/data/corpus/known/neg_scatter_nested_shard_map.json). Run on this jax: every
    divergence is explained by negative-scatter-dimension on 0.10.2, the vmap one at the
    nested shard_map included, and the rewrite (scatter_dimension 0) runs clean; the
    entry does not cover 0.12.0 (fixed upstream)."""
    from harness.judge.check import check_program
    from harness.judge.known import explain_all
    from harness.run.compat import jax_version
    from oracles.rewrites import REWRITES

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/neg_scatter_nested_shard_map.json").read_text())
    assert [o.kind for o in p.body] == ["psum_scatter", "shard_map"] and p.body[0].p("scatter_dimension") == -2
    res = check_program(p, ("jit", "vmap"))
    if jax_version() != "0.10.2":
        pytest.skip(f"the divergence is measured on jax 0.10.2 (installed: {jax_version()})")
    sigs = {d.signature for d in res.divergences}
    assert "unexpected_error|vmap|shard_map->ValueError" in sigs, sigs
    got = explain_all(ENTRIES, res.divergences, p, res.prediction, "0.10.2")
    assert {x.entry.id if x.entry else None for x in got} == {"negative-scatter-dimension"}
    vmap = next(d for d in res.divergences if d.signature == "unexpected_error|vmap|shard_map->ValueError")
    assert find(ENTRIES, vmap, res.divergences, p, res.prediction, "0.12.0") is None
    q = REWRITES["nonnegative_axes"](p)
    assert q is not None and check_program(q, ("jit", "vmap")).divergences == ()


def test_a_zero_size_output_under_explicit_axes_explains_its_lost_sharding_type_only() -> None:
    """Inside jax.sharding.explicit_axes on a mixed mesh, a zero-size output split over
    an Explicit axis loses it from its sharding type in jit, gspmd and eager
    (harness/data/corpus/known/explicit_axes_zero_size_type.json).
    Run on this jax: explicit-axes-zero-size-output-type explains each of those
    divergences; with a non-zero-size argument the program runs clean."""
    from dataclasses import replace

    from harness.judge.check import check_program
    from harness.judge.known import explain_all
    from harness.run.compat import jax_version

    p = from_json((Path(__file__).parent.parent / "harness/data/corpus/known/explicit_axes_zero_size_type.json").read_text())
    assert p.wrap == "explicit_axes" and 0 in p.inputs[0].shape
    if jax_version() != "0.10.2":
        pytest.skip(f"the divergence is measured on jax 0.10.2 (installed: {jax_version()})")
    res = check_program(p, ("abstract", "jit", "gspmd", "eager"))
    assert {d.signature for d in res.divergences} == {"sharding|jit|add", "sharding|gspmd|add", "sharding|eager|add"}
    got = explain_all(ENTRIES, res.divergences, p, res.prediction, "0.10.2")
    assert {x.entry.id if x.entry else None for x in got} == {"explicit-axes-zero-size-output-type"}
    q = replace(p, inputs=(replace(p.inputs[0], shape=(12, 2, 2)),))
    assert check_program(q, ("abstract", "jit", "gspmd", "eager")).divergences == ()


def test_the_program_without_a_dead_bug_op_drops_it() -> None:
    """A known entry's op that no output reaches (eager and abstract trace dead ops, and
    jax raised there): the program without the bug is the program without it, every
    output kept (else, with no program without the bug, a dead pcast to 'unreduced' of
    a precv result that makes abstract raise leaves the program's cells that abstract
    alone checks, such as its pbroadcast's, missed)."""
    pmax = next(e for e in ENTRIES if e.id == "pmax-no-differentiation-rule")
    p = Program(Mesh(("x",), (2,)), (Input((4,), "float32", "iota"),), (P("x"),),
                (op("neg", 0), op("pmax", 0, axes=("x",))), (1,), (P("x"),))
    q = derived_program([pmax], p, predict(p))
    assert q is not None and [o.kind for o in q.body] == ["neg"] and len(q.outputs) == 1
    live = Program(p.mesh, p.inputs, p.in_specs, p.body, (1, 2), (P("x"), P()))
    q = derived_program([pmax], live, predict(live))  # (a live one: its output goes, as before)
    assert q is not None and [o.kind for o in q.body] == ["neg"] and len(q.outputs) == 1


def test_error_trouble_names_the_ops_jax_is_known_to_answer_with_another_error() -> None:
    """`known_error_trouble`: the ops of an invalid program at which an entry with a
    missing / wrong error signature says jax goes wrong (its op features), or every op
    (program features only); nothing for an entry about values, or another jax."""
    from harness.campaign.known_queries import known_error_trouble
    from oracles.interpreter import trace

    dead_perm = prog(XY, [iota(4)], [P("x")], [op("neg", 0), op("ppermute", 0, axes=("x",), perm=((0, 1), (0, 1)))],
                     [1], [P("x")])
    types = trace(dead_perm, with_values=False)[0].types
    ranged = entry({"id": "perm", "reason": "r", "link": "none found", "case": "c.json",
                    "signatures": ["missing_error|*|collective_param"], "when": ["ppermute"], "repair": "without_op"}, "test")
    assert known_error_trouble([ranged], dead_perm, types, "0.10.2") == frozenset({1})  # the dead ppermute
    assert known_error_trouble([PPERMUTE], dead_perm, types, "0.10.2") == frozenset()  # a value entry
    old = entry({"id": "perm-old", "reason": "r", "link": "none found", "case": "c.json", "jax_versions": "<0.6",
                 "signatures": ["missing_error|*|collective_param"], "when": ["ppermute"], "repair": "without_op"}, "test")
    assert known_error_trouble([old], dead_perm, types, "0.10.2") == frozenset()
    unbound = entry({"id": "unbound", "reason": "r", "link": "none found", "case": "c.json",
                     "signatures": ["wrong_error|*|unbound_axis->AssertionError"], "when": ["collective_axis_not_in_mesh"],
                     "repair": "without_mode"}, "test")
    bad_axis = prog(XY, [iota(4)], [P("x")], [op("neg", 0), op("psum", 0, axes=("nope",))], [1], [P("x")])
    assert known_error_trouble([unbound], bad_axis, trace(bad_axis, with_values=False)[0].types, "0.10.2") == frozenset({0, 1})
    assert known_error_trouble([unbound], dead_perm, types, "0.10.2") == frozenset()


def test_a_known_crash_before_an_invalid_programs_error_is_eager_trouble_at_its_ops() -> None:
    """Eager runs the body op by op: an op a crash entry names, before the op the error
    is at, aborts eager before the error (else, when a bf16 pmean in a partial-manual
    program aborts eager before a dead psum over a non-manual axis raises, the
    program's other pmean cells by error are counted checked in eager, and never are).
    Trouble in eager only, at the ops before the error; none where the
    error comes first, nor in the modes that trace the whole body before they run it."""
    from harness.campaign.known_queries import error_trouble_modes
    from oracles.interpreter import trace

    abort = entry({"id": "abort", "reason": "r", "link": "none found", "case": "c.json",
                   "signatures": ["crash|jit,eager|crash"], "when": ["pmean"],
                   "repair": "without_op"}, "test")
    modes = ("abstract", "jit", "eager")
    first = prog(XY, [iota(4), iota(4)], [P("x"), P("x")], [op("pmean", 0, axes=("x",)), op("psum", 1, axes=("nope",))],
                 [2], [P("x")])
    assert predict(first).error is not None
    types = trace(first, with_values=False)[0].types
    assert error_trouble_modes([abort], first, types, "0.10.2", modes) == {"eager": frozenset({0})}
    after = prog(XY, [iota(4), iota(4)], [P("x"), P("x")], [op("psum", 1, axes=("nope",)), op("pmean", 0, axes=("x",))],
                 [3], [P("x")])
    assert predict(after).error is not None
    assert error_trouble_modes([abort], after, trace(after, with_values=False)[0].types, "0.10.2", modes) == {}


def test_each_mode_checks_the_program_without_only_the_known_bugs_of_its_own_divergences(tmp_path: Path) -> None:
    """pmax has no derivative (pmax-no-differentiation-rule: grad fails at every pmax),
    and vmap with spmd_axis_name fails on a pmax under lax.fori_loop
    (vmap-spmd-fori-closure-carry-vma). Without both bugs the program has no output
    left, but vmap_spmd's own bug is the fori op alone: its derived program keeps the
    plain pmax, whose cells vmap_spmd then checks."""
    import io

    from harness.campaign.fuzz import RunConfig, fuzz

    xy = Mesh(("x", "y"), (2, 4))
    a = iota(4, 8, dtype="float32")
    p = prog(xy, [a, a], [P("x"), P("x")], [op("pmax", 0, axes=("x",), wrap="fori"), op("pmax", 1, axes=("x",))],
             [2, 3], [P(), P()])
    assert p.spmd_axis() == "y"
    entries = load()
    s = fuzz(RunConfig(seed=0, max_examples=1, modes=("abstract", "vmap_spmd", "grad"), workers=1, report_dir=tmp_path,
                       progress=io.StringIO(), minimize_budget_s=0, suppressions=entries, value_share=1.0), fixed=[p])
    known = {b.suppressed_by for b in s.buckets}
    assert not any(b.new for b in s.buckets), [b.signature for b in s.buckets]
    if not {"pmax-no-differentiation-rule", "vmap-spmd-fori-closure-carry-vma"} <= known:
        pytest.fail(f"jax {s.jax_version} no longer shows both bugs here ({sorted(k for k in known if k)}): "
                    "pick another pair of mode-specific known bugs for this test")
    checks = {(c.cell, c.mode): c.checks for c in s.cells}
    assert checks[("pmax|wrap=plain", "vmap_spmd")] >= 1  # by the derived program
    assert checks[("pmax|wrap=fori", "vmap_spmd")] == 0
    assert s.derived_checked >= 1


def test_a_wrong_error_jax_raises_after_tracing_the_whole_body_may_come_from_any_op() -> None:
    """jit traces every op, then lowers: a dead psum_scatter of a negative scatter_dimension
    fails StableHLO verification there, before the bad perm of a later ppermute (the
    program's defect) is checked. The wrong error names no op (raised_at: after the body),
    so the psum_scatter's known entry explains it, not only an entry of the predicted
    error's op (else the wrong error is reported as a new bucket)."""
    from harness.judge.check import check_program
    from harness.judge.known import explain_all
    from harness.judge.known_load import load
    from programs.model import Op, Spec

    p = Program(Mesh(("data", "model"), (1, 2)), (Input((2, 3), "float32", "small", seed=1010),), (Spec((("data",),)),),
                (Op.make("psum_scatter", (0,), axes=("data",), scatter_dimension=-1, tiled=True),
                 Op.make("ppermute", (0,), axes=("model",), perm=((0, 2),))),
                (1,), (Spec((("data",), None)),), defect="bad_permutation")
    res = check_program(p, ("jit",))
    [d] = res.divergences
    assert d.signature == "wrong_error|jit|collective_param->ValueError" and d.raised_at == len(p.body) and d.op_index == 1
    [x] = explain_all(load(), res.divergences, p, res.prediction, "0.10.2")
    assert x.entry is not None and x.entry.id == "negative-scatter-dimension"


def test_a_value_feature_the_program_lacks_is_no_known_trouble() -> None:
    """`known_trouble` (the scheduler runs such a valid program alone, not in a jit
    batch) asks an entry's value features too: zero-size-output-blocks, whose only
    feature is a zero-size value, held every valid program, and none was batched."""
    from harness.campaign.known_queries import known_trouble

    plain = prog(XY, [iota(4)], [P("x")], [op("neg", 0)], [1], [P("x")])
    assert not known_trouble(ENTRIES, plain, predict(plain), "0.10.2", "jit")
    zero = prog(XY, [iota(4, 0)], [P("x")], [op("neg", 0)], [1], [P("x")])
    assert predict(zero).error is None and 0 in predict(zero).outputs[0].global_shape
    assert "zero-size-output-blocks" in [e.id for e in ENTRIES if known_trouble([e], zero, predict(zero), "0.10.2", "jit")]




@pytest.mark.parametrize("name, causes", [
    # a negative scatter_dimension: jit and eager raise at the psum_scatter (the entry's
    # signature), vmap gives a wrong shape that raises at the add after it
    ("negative_scatter_then_vmap_add.json", {"negative-scatter-dimension"}),
    # a negative split_axis in an untiled all_to_all: the wrong shape shows at the cast
    # after it until the precv beside it is repaired away, then at the all_to_all
    ("precv_and_negative_a2a_then_cast.json", {"negative-all-to-all-split-axis-untiled-shape"}),
])
def test_a_known_bug_under_another_guise_is_known_by_its_repair(pool: Pool, name: str, causes: set[str]) -> None:
    """A divergence no entry's signature matches (another op, another mode) is known when
    a repaired program, repaired only of known bugs, no longer shows it: one root cause,
    one bucket."""
    from harness.judge.check import check_in_pool
    from harness.judge.repair import judge

    jv = pool.info.get("jax_version", "")
    p = from_json((Path(__file__).parent / "cases" / name).read_text())
    res = check_in_pool(pool, p, DEFAULT_MODES)
    assert any(x.entry is None for x in explain_all(ENTRIES, res.divergences, p, res.prediction, jv)), (
        "the case must hold a divergence no entry's signature matches")
    v = judge(ENTRIES, res, lambda q, ms: check_in_pool(pool, q, ms), jv)
    assert not v.new(), [d.signature for d in v.new()]
    assert causes <= set(v.known()), v.known()


def test_a_policy_repair_alone_never_files_a_divergence_as_policy(pool: Pool) -> None:
    """A divergence no signature names, removed only by a policy entry's repair, stays new:
    the repair (here without_effects, of eager-debug-callback-explicit-mesh) may remove a
    bug beside the policy one (here the free-axes TypeError of a debug callback,
    tests/cases/callback_free_axes_explicit_mesh.json, judged without its own entry). The
    same repair by a bug entry files it under that entry."""
    from harness.judge.check import check_in_pool
    from harness.judge.repair import judge

    jv = pool.info.get("jax_version", "")
    p = from_json((Path(__file__).parent / "cases" / "callback_free_axes_explicit_mesh.json").read_text())
    res = check_in_pool(pool, p, ("abstract", "jit", "eager"))
    without = [e for e in ENTRIES if e.id != "debug-callback-several-free-axes"]
    policy = next(e for e in without if e.id == "eager-debug-callback-explicit-mesh")
    assert policy.policy and policy.repair == "without_effects"
    v = judge(without, res, lambda q, ms: check_in_pool(pool, q, ms), jv)
    assert "unexpected_error|jit|lowering->TypeError" in [d.signature for d in v.new()], v.known()
    as_bug = [replace(e, klass="bug") if e is policy else e for e in without]
    v = judge(as_bug, res, lambda q, ms: check_in_pool(pool, q, ms), jv)
    assert not [d.signature for d in v.new() if "TypeError" in d.signature], [d.signature for d in v.new()]


def test_a_fuzz_run_files_a_known_bug_under_another_guise_by_its_repair(tmp_path: Path) -> None:
    """In a run, a divergence no entry's signature matches waits for the program repaired
    of the known bugs beside it (harness/campaign/repair_waits.py): known when that
    program no longer shows it; new when it does, as an unrelated fault downstream of the
    buggy op does."""
    import io

    from harness.campaign.config import RunConfig
    from harness.campaign.fuzz import fuzz

    cases = [from_json((Path(__file__).parent / "cases" / n).read_text())
             for n in ("negative_scatter_then_vmap_add.json", "precv_and_negative_a2a_then_cast.json")]

    def run(progs: list[Program], report: Path, faults: str = "") -> object:
        return fuzz(RunConfig(seed=0, max_examples=len(progs), workers=1, report_dir=report, progress=io.StringIO(),
                              minimize_budget_s=0, suppressions=ENTRIES, value_share=1.0,
                              worker_env={"SHARDFUZZ_FAULTS": faults} if faults else {}), fixed=progs)

    s = run(cases, tmp_path / "clean")
    assert s.counts.new_buckets == 0 and s.counts.failing_programs == 0, [b.signature for b in s.buckets if b.new]
    guises = {b.signature: b.suppressed_by for b in s.buckets}
    assert guises.get("unexpected_error|vmap|add->TypeError") == "negative-scatter-dimension", guises
    assert guises.get("shape|abstract|cast") == "negative-all-to-all-split-axis-untiled-shape", guises
    e = next(x for x in ENTRIES if x.id == "negative-scatter-dimension")
    faulty = with_downstream_psum(cases[0], e)
    assert faulty is not None
    s2 = run([faulty], tmp_path / "fault", "psum_counts_device0_twice")
    assert any(b.new and b.kind == "value" for b in s2.buckets), [(b.signature, b.suppressed_by) for b in s2.buckets]


def test_a_run_without_an_entrys_mode_does_not_call_it_fixed(tmp_path: Path) -> None:
    """An entry's own case is checked after a run only where the run has the mode its
    reproducer runs in: the abstract tier alone shows no wrong value, and would call every
    value bug fixed."""
    import io

    from harness.campaign.config import RunConfig
    from harness.campaign.fuzz import fuzz

    s = fuzz(RunConfig(seed=0, max_examples=1, modes=("abstract",), workers=1, report_dir=tmp_path,
                       progress=io.StringIO(), minimize_budget_s=0, suppressions=ENTRIES),
             fixed=[prog(XY, [iota(4, 4)], [P("x")], [op("neg", 0)], [1], [P("x")])])
    status = {e.id: e.status for e in s.known_entries}
    fixed = [i for i, st in status.items() if st == "fixed"]
    assert not fixed, fixed
    value_bug = next(e for e in ENTRIES if e.id == "ppermute-multi-axis-order")
    assert status[value_bug.id] == "unseen"
