"""The comparator: the only place that decides what counts as a failure.

`compare(program, prediction, observation)` returns the divergences between what the
oracle predicted and what jax did in one mode; `compare_modes` finds modes that disagree
with each other. Each divergence has a kind, the mode, the output or op at fault, a
message in the form `out[1] (mode=jit): ... but oracle predicts ...`, and a structured
signature that buckets equal bugs together.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from harness.judge.errors import matches
from harness.run.modes import Observation
from oracles.prediction import OutputPrediction, Prediction
from programs.model import Program
from programs.ops import COLLECTIVES


class DivergenceKind(str, Enum):
    WRONG_ERROR = "wrong_error"  # jax raised, but not the predicted error
    MISSING_ERROR = "missing_error"  # the oracle predicts an error, jax ran
    UNEXPECTED_ERROR = "unexpected_error"  # jax raised, the oracle predicts success
    SHAPE = "shape"
    DTYPE = "dtype"
    VALUE = "value"
    VMA = "vma"
    LOWERING = "lowering"
    CRASH = "crash"
    TIMEOUT = "timeout"
    MODE_DISAGREEMENT = "mode_disagreement"


@dataclass(frozen=True)
class Divergence:
    kind: DivergenceKind
    mode: str
    message: str
    where: str  # the op kind or check at fault, or the error kind: part of the signature
    output: int | None = None
    op_index: int | None = None
    bad_devices: tuple[tuple[int, ...], ...] = ()
    max_abs_diff: float | None = None
    device_diffs: tuple[float, ...] = ()  # max |jax - oracle| per bad device, same order
    raised_at: int | None = None  # wrong_error: the body op jax was at when it raised (None: unknown)

    @property
    def signature(self) -> str:
        """Structured bucket key: kind | mode | where. Never derived from message text."""
        return f"{self.kind.value}|{self.mode}|{self.where}"


def producer(p: Program, value: int) -> str:
    op = p.op_of(value)
    return "input" if op is None else op.kind


def _short(a: np.ndarray) -> str:
    return np.array2string(np.asarray(a), threshold=12, edgeitems=2).replace("\n", "")


def compare(p: Program, pred: Prediction, obs: Observation) -> list[Divergence]:
    mode = obs.mode
    if obs.status in ("crash", "timeout"):
        kind = DivergenceKind.CRASH if obs.status == "crash" else DivergenceKind.TIMEOUT
        return [Divergence(kind, mode, f"(mode={mode}) {obs.status}: {obs.error_message}", obs.status)]
    if obs.status == "unsupported":
        return []
    out: list[Divergence] = []
    if pred.error is not None:
        e = pred.error
        if not obs.raised:
            return [
                Divergence(
                    DivergenceKind.MISSING_ERROR,
                    mode,
                    f"(mode={mode}) jax raised nothing, but oracle predicts {e.kind.value}: {e.why}",
                    e.kind.value,
                    op_index=e.op_index,
                )
            ]
        ok, why = matches(e.kind, obs.error_type or "", obs.error_message)
        missing = [f for f in e.facts if f not in obs.error_message] if ok else []
        if not ok or missing:
            detail = why if not ok else f"the message does not name {missing}"
            # the op being traced when jax raised (its result never recorded), when the
            # mode records types op by op: a wrong error may come from an earlier op
            first = next((i for i in range(p.n_values) if i not in obs.value_types), None) if obs.value_types else None
            raised_at = first - len(p.inputs) if first is not None and first >= len(p.inputs) else None
            return [
                Divergence(
                    DivergenceKind.WRONG_ERROR,
                    mode,
                    f"(mode={mode}) {detail}; jax said {obs.error_type}: {obs.error_message[:300]!r}, "
                    f"but oracle predicts {e.kind.value}: {e.why}",
                    f"{e.kind.value}->{obs.error_type}",
                    op_index=e.op_index,
                    raised_at=raised_at,
                )
            ]
        return []
    if obs.raised:
        # where: the op being traced when jax raised (the first value it never recorded)
        first_missing = next((i for i in range(p.n_values) if i not in obs.value_types), None)
        if obs.phase == "read_output":
            where, first_missing = "read_output", None
        else:
            where = "lowering" if first_missing is None else producer(p, first_missing)
        return [
            Divergence(
                DivergenceKind.UNEXPECTED_ERROR,
                mode,
                f"(mode={mode}) jax raised {obs.error_type}: {obs.error_message[:400]!r}, "
                "but oracle predicts success",
                f"{where}->{obs.error_type}",
                op_index=None if first_missing is None else first_missing - len(p.inputs),
            )
        ]
    out.extend(_compare_types(p, pred, obs))
    if obs.mode == "lowering" and obs.facts:
        out.extend(_compare_lowering(p, pred, obs))
    if len(obs.outputs) != len(pred.outputs):
        out.append(
            Divergence(
                DivergenceKind.SHAPE,
                mode,
                f"(mode={mode}) {len(obs.outputs)} outputs, but oracle predicts {len(pred.outputs)}",
                "outputs",
            )
        )
        return out
    if mode in ("vmap", "vmap_spmd"):
        return out + _compare_batched(p, pred, obs)
    if mode in ("grad", "grad_remat"):
        return out + _compare_grad(p, obs)
    for k, (o, e) in enumerate(zip(obs.outputs, pred.outputs)):
        out.extend(_compare_output(p, k, o, e, mode))
    return out


def _compare_grad(p: Program, obs: Observation) -> list[Divergence]:
    """jax's jvp and vjp directional derivatives against the finite-difference oracle."""
    from oracles.derivatives import directional_derivative

    f = obs.facts
    if "jvp" not in f:
        return []
    want = directional_derivative(p, list(f["outputs"]))
    if not want.smooth:
        return []  # a kink at the point: nothing to predict
    out = []
    ops = sorted({op.kind for op in p.body} - {"const"}) or ["input"]
    where = ",".join(o for o in ops if o in COLLECTIVES) or "local"
    for rule in ("jvp", "vjp"):
        got = float(f[rule])
        if not abs(got - want.value) <= want.tolerance:
            out.append(
                Divergence(
                    DivergenceKind.VALUE,
                    obs.mode,
                    f"(mode={obs.mode}) <u, J v> by jax.{rule} is {got:.6g}, but oracle predicts {want.value:.6g} "
                    f"(finite differences, tolerance {want.tolerance:.2g}); collectives in the program: {where}",
                    f"{rule}:{where}",
                )
            )
    return out


def _compare_batched(p: Program, pred: Prediction, obs: Observation) -> list[Divergence]:
    """vmap: each output is the batch of the per-member predictions, stacked on axis 0."""
    from harness.run.modes import MODES
    from oracles import predict

    n_batch = MODES[obs.mode].batch_size(p)  # type: ignore[attr-defined]
    members = [pred] + [predict(p, batch=b) for b in range(1, n_batch)]
    out = []
    for k, o in enumerate(obs.outputs):
        e = pred.outputs[k]
        where = producer(p, p.outputs[k])
        want_shape = (n_batch,) + e.global_shape
        if o.global_shape != want_shape or o.dtype != e.dtype:
            kind = DivergenceKind.SHAPE if o.global_shape != want_shape else DivergenceKind.DTYPE
            out.append(
                Divergence(
                    kind,
                    obs.mode,
                    f"out[{k}] (mode={obs.mode}): {o.dtype}{list(o.global_shape)}, but oracle predicts {e.dtype}{list(want_shape)}",
                    where,
                    output=k,
                )
            )
            continue
        wants = [m.outputs[k].global_value for m in members]
        if any(w is None for w in wants) or o.global_value is None:
            continue  # not replicated where the out_spec says so (check_vma=False): no global value
        want = np.stack(wants).astype(np.float64)
        got = o.global_value.astype(np.float64)
        exact = all(m.outputs[k].exact for m in members) or e.dtype == "int32"
        tol = max(m.outputs[k].atol for m in members)
        ok = np.array_equal(got, want) if exact else bool(np.allclose(got, want, rtol=e.rtol, atol=tol))
        if not ok:
            bad = [b for b in range(n_batch) if not np.allclose(got[b], want[b], rtol=e.rtol, atol=tol)]
            out.append(
                Divergence(
                    DivergenceKind.VALUE,
                    obs.mode,
                    f"out[{k}] (mode={obs.mode}): batch members {bad} differ; jax gives {_short(got[bad[0]] if bad else got)}, "
                    f"but oracle predicts {_short(want[bad[0]] if bad else want)}",
                    where,
                    output=k,
                    max_abs_diff=float(np.max(np.abs(got - want), initial=0)),
                )
            )
    return out


def _compare_types(p: Program, pred: Prediction, obs: Observation) -> list[Divergence]:
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
    return out


def _expected_shardings(specs, ranks: list[int], manual: tuple[str, ...]) -> list[list[list[str]]]:  # type: ignore[no-untyped-def]
    out = []
    for s, r in zip(specs, ranks):
        dims = [[a for a in (s.entries[d] or ()) if a in manual] if d < len(s.entries) else [] for d in range(r)]
        out.append(dims)
    return out


def _compare_lowering(p: Program, pred: Prediction, obs: Observation) -> list[Divergence]:
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
        inner = sorted(op.p("inner_axes") or ()) if op.kind == "shard_map" else []  # type: ignore[call-overload]
        if inner and any(p.mesh.axis_size(a) > 1 for a in inner):
            for _ in range(2 if op.p("wrap") == "cond" else 1):  # (one per lax.cond branch)
                if inner not in regions:
                    return [div("nested_region", "sdy.manual_computation regions (manual axes)", f.get("region_manual_axes"), f"one over {inner} (a nested shard_map)")]
                regions.remove(inner)
    manual = sorted(pred.manual_axes)
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
    n_in = len(p.inputs)
    in_ranks = [len(pred.value_types[i].shape) for i in range(n_in)]
    want_in = _expected_shardings(p.in_specs, in_ranks, manual)
    if f.get("in_shardings") != want_in:
        out.append(div("in_shardings", "in_shardings", f.get("in_shardings"), want_in))
    out_ranks = [len(o.local_shape) for o in pred.outputs]
    want_out = _expected_shardings(p.out_specs, out_ranks, manual)
    if f.get("out_shardings") != want_out:
        out.append(div("out_shardings", "out_shardings", f.get("out_shardings"), want_out))
    want_blocks = [list(pred.value_types[i].shape) for i in range(n_in)]
    if f.get("block_shapes") != want_blocks:
        out.append(div("block_shapes", "region block argument shapes", f.get("block_shapes"), want_blocks))
    return out


def _compare_output(p: Program, k: int, o, e: OutputPrediction, mode: str) -> list[Divergence]:  # type: ignore[no-untyped-def]
    where = producer(p, p.outputs[k])
    if o.global_shape != e.global_shape:
        return [
            Divergence(
                DivergenceKind.SHAPE,
                mode,
                f"out[{k}] (mode={mode}): shape={o.global_shape}, but oracle predicts {e.global_shape}",
                where,
                output=k,
            )
        ]
    if o.dtype != e.dtype:
        return [
            Divergence(
                DivergenceKind.DTYPE,
                mode,
                f"out[{k}] (mode={mode}): dtype={o.dtype}, but oracle predicts {e.dtype}",
                where,
                output=k,
            )
        ]
    if o.device_values is None:
        return []
    if _auto_layout(p, o, e):
        # along automatic axes (partial manual) jax chooses the layout; a nested
        # shard_map may leave the output split over one. The global value decides, or
        # where there is none (check_vma=False, blocks differ), each device's block must
        # be one aligned tile of the block the oracle predicts for it.
        def same(g: np.ndarray, w: np.ndarray) -> bool:
            g, w = g.astype(np.float64), w.astype(np.float64)
            return np.array_equal(g, w) if e.exact or e.dtype == "int32" else bool(np.allclose(g, w, rtol=e.rtol, atol=e.atol))

        if o.global_value is not None and e.global_value is not None:
            if same(o.global_value, e.global_value):
                return []
            g64, w64 = o.global_value.astype(np.float64), e.global_value.astype(np.float64)
            return [Divergence(DivergenceKind.VALUE, mode, f"out[{k}] (mode={mode}): global value {_short(g64)}, but oracle predicts {_short(w64)}",
                               where, output=k, max_abs_diff=float(np.max(np.abs(g64 - w64), initial=0)))]
        bad = [c for c in p.mesh.coords() if not any(same(o.device_values[c], t) for t in _tiles(e.device_values[c], o.device_values[c].shape))]  # type: ignore[index]
        if not bad:
            return []
        return [Divergence(DivergenceKind.VALUE, mode, f"out[{k}] (mode={mode}): at devices {bad[:4]} the block {_short(o.device_values[bad[0]])} "  # type: ignore[index]
                           f"is no tile of the predicted block {_short(e.device_values[bad[0]])}", where, output=k, bad_devices=tuple(bad))]
    bad: list[tuple[int, ...]] = []
    diffs: list[float] = []
    worst = 0.0
    first = None
    for c in p.mesh.coords():
        got = o.device_values.get(c)
        want = e.device_values[c]
        if got is None or got.shape != want.shape:
            return [
                Divergence(
                    DivergenceKind.SHAPE,
                    mode,
                    f"out[{k}] (mode={mode}): device {c} holds a block of shape "
                    f"{None if got is None else got.shape}, but oracle predicts {want.shape} "
                    f"(global shape {o.global_shape}, out_spec {p.out_specs[k]!r})",
                    "device_block",
                    output=k,
                    bad_devices=(c,),
                )
            ]
        g64 = got.astype(np.float64)
        w64 = want.astype(np.float64)
        if e.exact or e.dtype == "int32":
            ok = np.array_equal(g64, w64)
        else:
            ok = bool(np.allclose(g64, w64, rtol=e.rtol, atol=e.atol))
        if not ok:
            bad.append(c)
            first = first or (c, got, want)
            diff = np.abs(g64 - w64)
            d = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff), initial=0))
            diffs.append(d)
            worst = max(worst, d)
    if not bad:
        return []
    c, got, want = first  # type: ignore[misc]
    tol = "exactly" if e.exact else f"within rtol={e.rtol:g}, atol={e.atol:g}"
    return [
        Divergence(
            DivergenceKind.VALUE,
            mode,
            f"out[{k}] (mode={mode}): values differ at {len(bad)} of {p.mesh.size} devices "
            f"{bad[:4]}{'...' if len(bad) > 4 else ''}; at device {c} jax gives "
            f"{_short(got) if got is not None else 'no block'}, but oracle predicts {_short(want)} "
            f"({tol}; max |diff|={worst:g})",
            where,
            output=k,
            bad_devices=tuple(bad),
            max_abs_diff=worst,
            device_diffs=tuple(diffs),
        )
    ]


def _tiles(w: np.ndarray, shape: tuple[int, ...]) -> list[np.ndarray]:
    """Every aligned tile of `shape` in `w`."""
    counts = [n // max(m, 1) for n, m in zip(w.shape, shape)]
    out = []
    for idx in np.ndindex(*counts):
        out.append(w[tuple(slice(i * m, (i + 1) * m) for i, m in zip(idx, shape))])
    return out


def _auto_layout(p: Program, o, e: OutputPrediction) -> bool:  # type: ignore[no-untyped-def]
    """Whether jax split an output along automatic axes where the oracle's blocks are
    whole (partial manual; the blocks divide the predicted ones evenly)."""
    auto = [a for a in p.mesh.names if a not in p.manual_axes and p.mesh.axis_size(a) > 1]
    if not auto or o.global_shape != e.global_shape:
        return False
    diff = False
    for c in p.mesh.coords():
        got, want = o.device_values.get(c), e.device_values[c]  # type: ignore[index]
        if got is None or got.ndim != want.ndim or any(w % max(g, 1) for g, w in zip(got.shape, want.shape)):
            return False
        diff = diff or got.shape != want.shape
    return diff


def compare_modes(p: Program, observations: list[Observation]) -> list[Divergence]:
    """Modes that disagree with each other on whether the program raises.

    (Disagreement on values is already caught mode by mode against the oracle; this
    catches an error that appears in one mode and not another.)"""
    raised = {o.mode: o.raised for o in observations if o.status in ("ok", "error")}
    if len(set(raised.values())) <= 1:
        return []
    yes = sorted(m for m, r in raised.items() if r)
    no = sorted(m for m, r in raised.items() if not r)
    return [
        Divergence(
            DivergenceKind.MODE_DISAGREEMENT,
            ",".join(yes),
            f"modes {yes} raise, modes {no} do not",
            f"raise:{','.join(yes)}",
        )
    ]
