"""What a mode saw beyond its outputs, against the prediction: every body value's shape,
dtype and varying axes as jax.typeof showed them while tracing; the Shardy lowering's
manual regions; the grad modes' directional derivatives against finite differences.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.judge.divergence import Divergence, DivergenceKind, producer
from harness.run.observation import Observation
from oracles.derivatives import defined_outputs, directional_derivative, second_derivative
from oracles.prediction import Prediction
from programs.model import Program, Spec
from programs.ops import COLLECTIVES, WRAP_COPIES


def compare_types(p: Program, pred: Prediction, obs: Observation) -> list[Divergence]:
    """Shape, dtype and vma of every body value, as jax.typeof showed them while tracing."""
    out = []
    n_in = len(p.inputs)
    for i, (shape, dtype, vma) in sorted(obs.value_types.items()):
        if i >= len(pred.value_types):
            continue
        t = pred.value_types[i]
        name = f"a{i}" if i < n_in else f"v{i - n_in}"
        where = producer(p, i)
        op_index = i - n_in if i >= n_in else None
        if shape != t.shape:
            out.append(
                Divergence(
                    DivergenceKind.SHAPE,
                    obs.mode,
                    f"{name} (mode={obs.mode}): per-device shape={shape}, but oracle predicts {t.shape}",
                    where,
                    op_index=op_index,
                )
            )
            break  # later shapes follow from this one
        if dtype != t.dtype:
            out.append(
                Divergence(
                    DivergenceKind.DTYPE,
                    obs.mode,
                    f"{name} (mode={obs.mode}): dtype={dtype}, but oracle predicts {t.dtype}",
                    where,
                    op_index=op_index,
                )
            )
            break
        if vma is not None and t.vma is not None and vma != t.vma:
            out.append(
                Divergence(
                    DivergenceKind.VMA,
                    obs.mode,
                    f"{name} (mode={obs.mode}): vma={sorted(vma)}, but oracle predicts {sorted(t.vma)}",
                    where,
                    op_index=op_index,
                )
            )
            break
        ur = obs.value_ur.get(i)
        if ur is not None and t.vma is not None and ur != (t.unreduced, t.reduced):
            out.append(
                Divergence(
                    DivergenceKind.VMA,
                    obs.mode,
                    f"{name} (mode={obs.mode}): unreduced={sorted(ur[0])} reduced={sorted(ur[1])}, but oracle "
                    f"predicts unreduced={sorted(t.unreduced)} reduced={sorted(t.reduced)}",
                    where,
                    op_index=op_index,
                )
            )
            break
    return out


def expected_shardings(specs: Sequence[Spec], ranks: list[int], manual: Sequence[str]) -> list[list[list[str]]]:
    """Per spec, per dimension of its value's rank, the manual axes it is split over: the
    shardings a manual region's arguments or results carry in the lowering."""
    out = []
    for s, r in zip(specs, ranks):
        dims = [[a for a in (s.entries[d] or ()) if a in manual] if d < len(s.entries) else [] for d in range(r)]
        out.append(dims)
    return out


def compare_lowering(p: Program, pred: Prediction, obs: Observation) -> list[Divergence]:
    """The lowered module against the program: one manual region (none when every
    manual axis has size 1), its manual axes, shardings and per-device block shapes."""
    f = obs.facts
    mode = obs.mode
    want_regions = 1 if pred.expect_region else 0

    def div(where: str, what: str, got: object, want: object) -> Divergence:
        return Divergence(
            DivergenceKind.LOWERING, mode, f"(mode={mode}) {what}={got}, but oracle predicts {want}", where
        )

    # regions over exactly the newly manual axes; jax may nest helper regions over the
    # remaining automatic axes (axis_index under partial manual computes the index there)
    # each nested shard_map over an axis of size > 1 has its own region, over its axes
    regions = list(f.get("region_manual_axes", []))
    for op in p.body:
        axes = op.p("inner_axes") if op.kind == "shard_map" else ()
        inner = sorted(str(a) for a in axes) if isinstance(axes, tuple) else []
        if inner and any(p.mesh.axis_size(a) > 1 for a in inner):
            for _ in range(WRAP_COPIES[str(op.p("wrap"))] if op.p("wrap") else 1):  # (one per copy: cond branches, loop init)
                if inner not in regions:
                    return [div("nested_region", "sdy.manual_computation regions (manual axes)", f.get("region_manual_axes"), f"one over {inner} (a nested shard_map)")]
                regions.remove(inner)
    manual = sorted(pred.manual_axes)
    if p.effects:
        # (a jax.debug.callback / print under partial manual runs in a helper region over
        # the automatic axes, jax/_src/debugging.py `_debug_callback_partial_auto`: one
        # disjoint from the manual axes is not the shard_map's)
        regions = [r for r in regions if not set(r).isdisjoint(manual)]
    ours = [r for r in regions if r == manual] if want_regions else regions
    others = [r for r in regions if r != manual and not set(r).isdisjoint(manual)]
    if len(ours) != want_regions or (want_regions and others):
        return [div("region_count", "sdy.manual_computation regions (manual axes)", f.get("region_manual_axes"), [manual] * want_regions)]
    if not want_regions:
        return []
    out = []
    manual = tuple(pred.manual_axes)  # type: ignore[assignment]
    if f.get("manual_axes") != sorted(manual):
        out.append(div("manual_axes", "manual_axes", f.get("manual_axes"), sorted(manual)))
    # the region's arguments: the shard_map's (`Program.passed`), after the values its body
    # closes over that jax makes arguments too (as many as it keeps: it may inline a
    # constant), which are compared no further
    passed = p.passed
    closed = len(p.inputs) - len(passed)
    in_ranks = [len(pred.value_types[i].shape) for i in passed]
    want_in = expected_shardings(tuple(p.in_specs[i] for i in passed), in_ranks, manual)
    got_in = _passed_part(f.get("in_shardings"), len(passed), closed)
    if got_in != want_in:
        out.append(div("in_shardings", "in_shardings", f.get("in_shardings"), want_in))
    out_ranks = [len(o.local_shape) for o in pred.outputs]
    want_out = expected_shardings(p.out_specs, out_ranks, manual)
    if f.get("out_shardings") != want_out:
        out.append(div("out_shardings", "out_shardings", f.get("out_shardings"), want_out))
    want_blocks = [list(pred.value_types[i].shape) for i in passed]
    if _passed_part(f.get("block_shapes"), len(passed), closed) != want_blocks:
        out.append(div("block_shapes", "region block argument shapes", f.get("block_shapes"), want_blocks))
    return out


def _passed_part(got: object, n: int, closed: int) -> object:
    """The region's last `n` arguments' facts, where at most `closed` come before them (the
    closed-over values jax made arguments); `got` itself where there are none or it does
    not fit."""
    if not closed or not isinstance(got, list) or not n <= len(got) <= n + closed:
        return got
    return got[len(got) - n:]


# the derivative modes' facts (harness/run/modes_transformed.py): each a number the
# oracle predicts as <u, J v> over the float outputs (`TOTALS`), one per output
# (`PARTS`), or the second directional derivative (`SECOND`), by the jax function named
TOTALS = {"jvp": "jax.jvp", "vjp": "jax.vjp", "linearize": "jax.linearize", "jacfwd": "jax.jacfwd"}
PARTS = {"jvp_parts": "jax.jvp", "vjp_parts": "jax.vjp", "linearize_parts": "jax.linearize"}
SECOND = {"hvp": "jax.hessian"}


def compare_grad(p: Program, obs: Observation) -> list[Divergence]:
    """A derivative mode's numbers against the finite-difference oracle: <u, J v> over
    the float outputs, and v^T H v, where jax defines them (every float output keeps its
    out_spec's promise: oracles/derivatives.py `defined_outputs`); else each defined
    output's own <u_k, J_k v>, where the mode gives one per output (check_vma=False)."""
    f = obs.facts
    if "outputs" not in f or not any(k in f for k in (*TOTALS, *SECOND)):
        return []
    out_idx = tuple(f["outputs"])
    defined = defined_outputs(p, out_idx)
    ops = sorted({op.kind for op in p.body} - {"const"}) or ["input"]
    where = ",".join(o for o in ops if o in COLLECTIVES) or "local"
    out: list[Divergence] = []

    def check(rule: str, fn: str, got: float, want: float, tol: float, what: str = "<u, J v>") -> None:
        if not abs(got - want) <= tol:
            out.append(Divergence(
                DivergenceKind.VALUE, obs.mode,
                f"(mode={obs.mode}) {what} by {fn} is {got:.6g}, but oracle predicts {want:.6g} "
                f"(finite differences, tolerance {tol:.2g}); collectives in the program: {where}",
                f"{rule.removesuffix('_parts')}:{where}"))

    if defined == out_idx:
        want = directional_derivative(p, list(out_idx))
        if want.smooth:
            for rule, fn in TOTALS.items():
                if rule in f:
                    check(rule, fn, float(f[rule]), want.value, want.tolerance)
        for rule, fn in SECOND.items():
            second = second_derivative(p, out_idx) if rule in f else None
            if second is not None and second.smooth:
                check(rule, fn, float(f[rule]), second.value, second.tolerance, "v^T H v")
        return out
    for rule, fn in PARTS.items():
        for k, got in zip(out_idx, f.get(rule, ())):
            if k in defined and (want := directional_derivative(p, [k])).smooth:
                check(rule, fn, float(got), want.value, want.tolerance, f"out[{k}]'s <u_k, J_k v>")
    return out
