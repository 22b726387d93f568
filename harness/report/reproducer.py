"""Asserting reproducers: a standalone script (or a pytest test) that carries the oracle's
prediction for one program in one harness mode, runs that mode the way the harness does,
and compares what jax did with the prediction the way `harness/judge/compare.py` does.

    reproducer(p, mode, title)         a script: exit 1 and one `BUG:` paragraph while jax
                                       diverges from the prediction, exit 0 and `FIXED:`
                                       once it agrees
    pytest_reproducer(p, mode, title)  a self-contained `test_...` function in the style of
                                       jax's tests/shard_map_test.py: fails while the bug is
                                       there

The prediction is embedded as literals: the expected exception types, the stable phrases
of `harness/judge/errors.py` and the facts the message must name; or each output's
global shape, dtype and per-device blocks (vmap: the batch, the oracle looped per
member), the shape, dtype and varying axes of every body value (read with
`jax.typeof(v).vma` while jax traces the body), the lowering facts (manual regions,
manual axes, shardings, block shapes) or the finite-difference `<u, J v>` with its
tolerance (grad modes). The program's source comes from `programs/emit.py`.

The script runs the check in a child process of itself, so a jax crash (an abort inside
XLA) or a hang is reported as `BUG:` too rather than killing the script.
"""

from __future__ import annotations

import math
import re

import numpy as np

from harness.judge.errors import ERROR_TABLE
from oracles import predict
from oracles.prediction import Prediction
from programs.emit import (
    FORCE_DEVICES,
    REPRO_MODES,
    args_src,
    body_source,
    inputs_fn_src,
    mesh_src,
    shard_map_kwargs_src,
)
from programs.model import Program

VALUE_MODES = ("jit", "eager", "gspmd", "smap")
TIMEOUT_S = 120  # the child's limit (env SHARDFUZZ_REPRO_TIMEOUT): past it, a hang


class NoReproducer(ValueError):
    """The mode does not apply to this program (the harness reports it unsupported)."""


def divergence_mode(p: Program | None, kind: str, modes: str) -> str:
    """The mode a reproducer of one divergence (its kind and mode field) runs in: the
    divergence's first mode; for a mode disagreement (`modes` lists the modes that
    raised), the side that is wrong: a raising mode where the oracle predicts success,
    else the first mode that ran it without raising and applies to the program."""
    from programs.emit import reproducer_mode

    if kind != "mode_disagreement" or p is None:
        return reproducer_mode(modes)
    raised = modes.split(",")
    if predict(p, values=False).error is None:
        return reproducer_mode(modes)
    quiet = [m for m in ("abstract", "jit", "lowering", "eager", "gspmd", "smap", "vmap", "vmap_spmd", "grad", "grad_remat")
             if m not in raised and not _applicable(p, m)]
    return quiet[0] if quiet else reproducer_mode(modes)


def case_mode(document: object, p: Program | None = None) -> str:
    """The reproducer mode of a case file's JSON document (`p`: its program): the mode of
    its first divergence that is not a mode disagreement, else of its first one, else of
    its `signature` (minimized cases), else jit."""
    if isinstance(document, dict):
        divs = [d for d in document.get("divergences") or [] if isinstance(d, dict) and d.get("mode")]
        divs = [d for d in divs if d.get("kind") != "mode_disagreement"] or divs
        if divs:
            return divergence_mode(p, str(divs[0].get("kind", "")), str(divs[0]["mode"]))
        sig = document.get("signature")
        if isinstance(sig, str) and sig.count("|") == 2:
            return divergence_mode(p, *sig.split("|")[:2])
    return "jit"


# ------------------------------------------------------------------ literals


def _num(v: float | int) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "np.nan"
        if math.isinf(v):
            return "np.inf" if v > 0 else "-np.inf"
        return repr(v)
    return str(int(v))


def _arr(a: np.ndarray) -> str:
    """An array literal: int32 values as int32, everything else as float64 (the oracle's
    own precision)."""
    a = np.asarray(a)
    dt = "int32" if a.dtype.kind in "iub" else "float64"
    items = ", ".join(_num(v) for v in a.reshape(-1).tolist())
    return f"np.array([{items}], dtype=np.{dt}).reshape({tuple(a.shape)!r})"


def _indent(lines: list[str], n: int) -> list[str]:
    pad = " " * n
    return [pad + line if line else line for chunk in lines for line in chunk.split("\n")]


# ------------------------------------------------------------------ what to expect


def _auto_axes(p: Program) -> list[str]:
    return [a for a in p.mesh.names if a not in p.manual_axes and p.mesh.axis_size(a) > 1]


def _applicable(p: Program, mode: str) -> str:
    """Why the harness reports `mode` unsupported for `p` ('' when it runs it)."""
    if mode == "smap":
        form = p.smap_form()
        return f"no jax.smap form ({form})" if isinstance(form, str) else ""
    if mode == "vmap_spmd":
        if p.spmd_axis() is None:
            return "no free manual axis of size > 1 for spmd_axis_name"
        return "an invalid program (jax's error wording differs under vmap)" if p.defect is not None else ""
    if mode in ("grad", "grad_remat"):
        if not p.check_vma:
            return "check_vma=False"
        if not any(x.dtype == "float32" for x in p.inputs):
            return "no float32 argument"
    return ""


def _batch(p: Program, mode: str) -> int:
    axis = p.spmd_axis() if mode == "vmap_spmd" else None
    return p.mesh.axis_size(axis) if axis else 2  # harness.run.modes.VMAP_BATCH


def _summary(p: Program, pred: Prediction, mode: str) -> str:
    """One line: what jax must do."""
    if pred.error is not None:
        sig = ERROR_TABLE[pred.error.kind]
        return f"{'/'.join(sig.types)} ({pred.error.kind.value}: {pred.error.why})"
    outs = ", ".join(f"{o.dtype}{list(o.global_shape)}" for o in pred.outputs)
    what = {"abstract": "shapes, dtypes and varying axes", "lowering": "one manual region per the specs" if pred.expect_region
            else "no manual region (every manual axis has size 1)", "grad": "<u, J v> by jvp and vjp",
            "grad_remat": "<u, J v> by jvp and vjp"}.get(mode, "per-device values")
    return f"{len(pred.outputs)} output(s) {outs}; {what}"


def _types_literal(p: Program, pred: Prediction) -> list[str]:
    n_in = len(p.inputs)
    rows = []
    for i, t in enumerate(pred.value_types):
        name = f"a{i}" if i < n_in else f"v{i - n_in}"
        vma = None if t.vma is None else sorted(t.vma)
        rows.append(f"  ({name!r}, {tuple(t.shape)!r}, {t.dtype!r}, {vma!r}),")
    return ["# every body value's per-device type inside the body: name, shape, dtype, varying manual axes",
            "EXPECTED_TYPES = [", *rows, "]"]


def _outputs_literal(p: Program, pred: Prediction, mode: str) -> list[str]:
    """EXPECTED_OUTPUTS: per output, what the mode compares."""
    rows = []
    if mode in ("vmap", "vmap_spmd"):
        n = _batch(p, mode)
        members = [pred] + [predict(p, batch=b) for b in range(1, n)]
        for k, e in enumerate(pred.outputs):
            wants = [m.outputs[k].global_value for m in members]
            exact = all(m.outputs[k].exact for m in members) or e.dtype == "int32"
            atol = max(m.outputs[k].atol for m in members)
            value = "None" if any(w is None for w in wants) else _arr(np.stack(wants))  # type: ignore[arg-type]
            rows.append(f"  dict(shape={(n,) + e.global_shape!r}, dtype={e.dtype!r}, value={value}, "
                        f"exact={exact}, rtol={e.rtol!r}, atol={atol!r}),")
        head = f"# each output: the batch of {n} (the oracle run once per batch member, stacked on axis 0)"
    elif mode in VALUE_MODES:
        auto = bool(_auto_axes(p))
        for e in pred.outputs:
            exact = e.exact or e.dtype == "int32"
            glob = _arr(e.global_value) if auto and e.global_value is not None else "None"
            rows.append(f"  dict(shape={e.global_shape!r}, dtype={e.dtype!r}, blocks={_arr(e.device_values)}, "  # type: ignore[arg-type]
                        f"value={glob}, exact={exact}, rtol={e.rtol!r}, atol={e.atol!r}, spec={p.out_specs[e.index]!r}),")
        head = "# each output: global shape, dtype, blocks[mesh coordinate] = that device's block"
    else:
        for e in pred.outputs:
            rows.append(f"  dict(shape={e.global_shape!r}, dtype={e.dtype!r}),")
        head = "# each output: global shape and dtype"
    return [head, "EXPECTED_OUTPUTS = [", *rows, "]"]


def _lowering_literal(p: Program, pred: Prediction) -> list[str]:
    """What compare's lowering check expects (harness/judge/compare.py _compare_lowering)."""
    from harness.judge.compare_facts import expected_shardings

    manual = tuple(pred.manual_axes)
    nested: list[list[str]] = []
    for op in p.body:
        axes = op.p("inner_axes") if op.kind == "shard_map" else ()
        inner = sorted(str(a) for a in axes) if isinstance(axes, tuple) else []
        if inner and any(p.mesh.axis_size(a) > 1 for a in inner):
            nested += [inner] * (2 if op.p("wrap") == "cond" else 1)  # one region per lax.cond branch
    n_in = len(p.inputs)
    want_in = expected_shardings(p.in_specs, [len(pred.value_types[i].shape) for i in range(n_in)], manual)
    want_out = expected_shardings(p.out_specs, [len(o.local_shape) for o in pred.outputs], manual)
    blocks = [list(pred.value_types[i].shape) for i in range(n_in)]
    return [
        "# the Shardy lowering: one sdy.manual_computation over exactly the manual axes (none when every",
        "# manual axis has size 1), one more per nested shard_map, and its shardings and block shapes",
        "EXPECTED_LOWERING = dict(",
        f"  regions={1 if pred.expect_region else 0}, manual_axes={sorted(manual)!r}, nested={nested!r},",
        f"  in_shardings={want_in!r}, out_shardings={want_out!r}, block_shapes={blocks!r},",
        ")",
    ]


def _grad_literal(p: Program, pred: Prediction) -> list[str]:
    from oracles.derivatives import directional_derivative

    out_idx = [k for k, o in enumerate(pred.outputs) if o.dtype == "float32"]
    d = directional_derivative(p, out_idx) if out_idx else None
    lines = [
        "# <u, J v> at the grad point, by finite differences (Richardson) of the forward semantics in",
        "# float64; None where the point sits on a kink (a max/min tie) or no output is float32",
    ]
    if d is None or not d.smooth:
        return lines + [f"EXPECTED_DERIVATIVE = None  # float32 outputs: {out_idx}"]
    return lines + [f"EXPECTED_DERIVATIVE = dict(outputs={out_idx!r}, value={d.value!r}, tolerance={d.tolerance!r})"]


def _error_literal(pred: Prediction) -> list[str]:
    e = pred.error
    if e is None:
        return ["EXPECTED_ERROR = None  # the program is valid: jax must run it"]
    sig = ERROR_TABLE[e.kind]
    return [
        "# jax must raise one of these types, its message naming one of the phrases and every fact",
        "EXPECTED_ERROR = dict(",
        f"  kind={e.kind.value!r}, types={sig.types!r}, phrases={sig.phrases!r}, facts={tuple(e.facts)!r},",
        f"  why={e.why!r},",
        ")",
    ]


# ------------------------------------------------------------------ running the mode


def _run_lines(p: Program, mode: str) -> list[str]:
    """`def run()`: runs the program as the harness mode does; returns the observed
    outputs (shape, dtype, per-device blocks or None, global value or None) and facts."""
    args = args_src(p)
    unpack = f"  {args}{',' if len(p.inputs) == 1 else ''} = inputs(0)" if p.inputs else ""
    values = [
        "  return [(tuple(o.shape), str(o.dtype), {tuple(int(c) for c in np.unravel_index(s.device.id, MESH_SHAPE)):",
        "           np.asarray(s.data) for s in o.addressable_shards}, np.asarray(o)) for o in outs], {}",
    ]
    shapes_only = ["  return [(tuple(o.shape), str(o.dtype), None, None) for o in outs], facts"]
    structs = "[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in inputs(0)]"
    if mode in ("jit", "eager", "gspmd"):
        pre = ['  jax.config.update("jax_use_shardy_partitioner", False)  # the GSPMD partitioner'] if mode == "gspmd" else []
        call = "f" if mode == "eager" else "jax.jit(f)"
        return ["def run():", *pre, unpack, f"  outs = {call}({args})", "  jax.block_until_ready(outs)", *values]
    if mode == "smap":
        form = p.smap_form()
        assert not isinstance(form, str)
        axis, ins, outs = form
        return [
            "def run():",
            unpack,
            "  # the same program as a single-axis jax.smap under jax.set_mesh",
            f"  g = jax.smap(body, in_axes={ins!r}, out_axes={outs!r}, axis_name={axis!r})",
            "  with jax.set_mesh(mesh):",
            f"    outs = jax.jit(g)({args})",
            "    jax.block_until_ready(outs)",
            *values,
        ]
    if mode == "abstract":
        return ["def run():", f"  outs = jax.eval_shape(f, *{structs})", "  facts = {}", *shapes_only]
    if mode == "lowering":
        return [
            "def run():",
            f"  structs = {structs}",
            "  facts = lowering_facts(jax.jit(f, keep_unused=True).lower(*structs).as_text())",
            "  outs = jax.eval_shape(f, *structs)",
            *shapes_only,
        ]
    if mode in ("vmap", "vmap_spmd"):
        spmd = p.spmd_axis() if mode == "vmap_spmd" else None
        vm = f"jax.vmap(f, spmd_axis_name={spmd!r})" if spmd else "jax.vmap(f)"
        n = _batch(p, mode)
        return [
            "def run():",
            f"  batch = [inputs(b) for b in range({n})]  # member b: the arguments made with seed / offset b",
            f"  outs = jax.jit({vm})(*[np.stack([m[i] for m in batch]) for i in range({len(p.inputs)})])",
            "  return [(tuple(o.shape), str(o.dtype), None, np.asarray(o)) for o in outs], {}",
        ]
    if mode in ("grad", "grad_remat"):
        fl = [i for i, x in enumerate(p.inputs) if x.dtype == "float32"]
        seeds = {i: p.inputs[i].seed + 31 * i + 1 for i in fl}
        return [
            f"FLOAT_ARGS = {fl!r}",
            "",
            "",
            "def grad_point():",
            "  # the float32 arguments moved off the integers (no max/min ties, no int-cast jumps)",
            "  args = inputs(0)",
            f"  for i, seed in {seeds!r}.items():",
            "    frac = np.random.default_rng(seed).uniform(0.1, 0.4, size=args[i].shape)",
            "    args[i] = (args[i].astype(np.float64) + frac).astype(np.float32)",
            "  return args",
            "",
            "",
            "def run():",
            "  args = grad_point()",
            "  outs = jax.eval_shape(f, *args)",
            "  out_idx = [k for k, o in enumerate(outs) if o.dtype == jnp.float32]",
            '  facts = {"outputs": out_idx}',
            "  if not out_idx:",
            "  " + shapes_only[0],
            "",
            "  def g(*fl):",
            "    full = list(args)",
            "    for i, a in zip(FLOAT_ARGS, fl):",
            "      full[i] = a",
            "    res = f(*full)",
            "    return tuple(res[k] for k in out_idx)",
            "",
            "  # direction v per float argument, weight u per float output: <u, J v> by jvp and by vjp",
            "  primals = tuple(jnp.asarray(args[i]) for i in FLOAT_ARGS)",
            "  tans = tuple(jnp.asarray(np.random.default_rng(1000 + i).uniform(-1, 1, size=args[i].shape), dtype=jnp.float32)",
            "               for i in FLOAT_ARGS)",
            "  cots = tuple(jnp.asarray(np.random.default_rng(2000 + k).uniform(-1, 1, size=outs[k].shape), dtype=jnp.float32)",
            "               for k in out_idx)",
            "",
            "  @jax.jit",
            "  def both(prim, tan, cot):",
            "    _, jv = jax.jvp(g, prim, tan)",
            "    d_jvp = sum(jnp.vdot(u, t) for u, t in zip(cot, jv))",
            "    _, pullback = jax.vjp(g, *prim)",
            "    d_vjp = sum(jnp.vdot(c, t) for c, t in zip(pullback(cot), tan))",
            "    return d_jvp, d_vjp",
            "",
            "  d_jvp, d_vjp = both(primals, tans, cots)",
            '  facts.update(jvp=float(d_jvp), vjp=float(d_vjp))',
            *shapes_only,
        ]
    raise NoReproducer(f"no reproducer for mode {mode!r}; one of {', '.join(REPRO_MODES)}")


# ------------------------------------------------------------------ checking (script text)

_RECORD = '''
TYPES = {}  # name -> (shape, dtype, vma): what jax.typeof showed while jax traced the body


def record(**values):
  for name, v in values.items():
    if name not in TYPES:  # the first trace (later ones: jvp, vjp, batching)
      t = jax.typeof(v)
      vma = getattr(t, "vma", None)  # the varying manual axes (jax 0.10: jax.typeof(v).mat.varying)
      vma = getattr(getattr(t, "mat", None), "varying", None) if vma is None else vma
      TYPES[name] = (tuple(t.shape), str(t.dtype), None if vma is None else sorted(str(a) for a in vma))
'''

_CHECK_COMMON = '''
def short(a):
  return np.array2string(np.asarray(a), threshold=12, edgeitems=2).replace("\\n", "")


def check_error(e, problems):
  want, name, msg = EXPECTED_ERROR, type(e).__name__, str(e)
  said = f"jax raised {name}: {msg[:300]!r}"
  if name not in want["types"]:
    problems.append(f"{said}, but a {want['kind']} error is a {'/'.join(want['types'])}")
  elif not any(ph in msg for ph in want["phrases"]):
    problems.append(f"{said}, whose message names none of {list(want['phrases'])} ({want['kind']})")
  elif [x for x in want["facts"] if x not in msg]:
    problems.append(f"{said}, whose message does not name {[x for x in want['facts'] if x not in msg]} ({want['kind']})")


def check_types(problems):
  for name, shape, dtype, vma in EXPECTED_TYPES:
    if name not in TYPES:
      continue
    got = TYPES[name]
    if got[0] != shape:
      problems.append(f"inside the body jax.typeof({name}).shape={got[0]}, but it must be {shape}")
      return  # later shapes follow from this one
    if got[1] != dtype:
      problems.append(f"inside the body jax.typeof({name}).dtype={got[1]}, but it must be {dtype}")
      return
    if vma is not None and got[2] is not None and got[2] != vma:
      problems.append(f"inside the body jax.typeof({name}).vma={set(got[2]) or '{}'}, but {name} varies over {set(vma) or '{}'}")
      return


def check_shapes(outs, problems):
  """Every output's global shape and dtype; False when they differ (values are moot)."""
  if len(outs) != len(EXPECTED_OUTPUTS):
    problems.append(f"{len(outs)} outputs, but the program has {len(EXPECTED_OUTPUTS)}")
    return False
  ok = True
  for k, ((shape, dtype, _, _), e) in enumerate(zip(outs, EXPECTED_OUTPUTS)):
    if shape != e["shape"] or dtype != e["dtype"]:
      problems.append(f"out[{k}] is {dtype}{list(shape)}, but it must be {e['dtype']}{list(e['shape'])}")
      ok = False
  return ok


def same(got, want, e):
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  if got.shape != want.shape:
    return False
  return bool(np.array_equal(got, want) if e["exact"] else np.allclose(got, want, rtol=e["rtol"], atol=e["atol"]))


def tolerance(e):
  return "exactly" if e["exact"] else f"within rtol={e['rtol']:g}, atol={e['atol']:g}"
'''

_CHECK_VALUES = '''
def tiles(w, shape):
  counts = [n // max(m, 1) for n, m in zip(w.shape, shape)]
  return [w[tuple(slice(i * m, (i + 1) * m) for i, m in zip(idx, shape))] for idx in np.ndindex(*counts)]


def check_values(outs, problems):
  """Each device's block of each output (as the harness compares them)."""
  for k, ((_, _, blocks, value), e) in enumerate(zip(outs, EXPECTED_OUTPUTS)):
    want = e["blocks"]
    coords = list(np.ndindex(*MESH_SHAPE))
    if AUTO_AXES and all(blocks.get(c) is not None and blocks[c].ndim == want[c].ndim for c in coords) and all(
        w % max(g, 1) == 0 for c in coords for g, w in zip(blocks[c].shape, want[c].shape)) and any(
        blocks[c].shape != want[c].shape for c in coords):
      # jax laid the output out along automatic axes too: the global value decides, or
      # (none: blocks differ) each block must be an aligned tile of the predicted one
      if e["value"] is not None:
        if not same(value, e["value"], e):
          problems.append(f"out[{k}] is {short(value)}, but it must be {short(e['value'])} ({tolerance(e)})")
        continue
      bad = [c for c in coords if not any(same(blocks[c], t, e) for t in tiles(want[c], blocks[c].shape))]
      if bad:
        problems.append(f"out[{k}]: at devices {bad[:4]} the block {short(blocks[bad[0]])} is no tile of {short(want[bad[0]])}")
      continue
    bad = []
    for c in coords:
      got = blocks.get(c)
      if got is None or got.shape != want[c].shape:
        problems.append(f"out[{k}]: device {c} holds a block of shape {None if got is None else got.shape}, but "
                        f"out_specs={e['spec']} gives it {want[c].shape}")
        break
      if not same(got, want[c], e):
        bad.append(c)
    else:
      if bad:
        c = bad[0]
        problems.append(f"out[{k}]: wrong values on {len(bad)} of {len(coords)} devices {bad[:4]}{'...' if len(bad) > 4 else ''}; "
                        f"device {c} holds {short(blocks[c])}, but it must hold {short(want[c])} ({tolerance(e)})")
'''

_CHECK_BATCHED = '''
def check_values(outs, problems):
  """The batch of each output against the oracle run once per member, stacked."""
  for k, ((_, _, _, value), e) in enumerate(zip(outs, EXPECTED_OUTPUTS)):
    if e["value"] is None:
      continue  # not replicated where its out_spec says (check_vma=False): no global value
    if not same(value, e["value"], e):
      bad = [b for b in range(len(value)) if not same(value[b], e["value"][b], e)]
      b = bad[0] if bad else 0
      problems.append(f"out[{k}]: batch members {bad} are wrong; member {b} is {short(value[b])}, "
                      f"but it must be {short(e['value'][b])} (the unbatched program on member {b}'s arguments; {tolerance(e)})")
'''

_LOWERING_FACTS = r'''
REGION = re.compile(
  r"sdy\.manual_computation\((?P<args>[^)]*)\) in_shardings=\[(?P<ins>.*?)\] "
  r"out_shardings=\[(?P<outs>.*?)\] manual_axes=\{(?P<manual>[^}]*)\} \((?P<block>[^)]*)\)")


def dims(sharding):
  """'{"x"}, {}, {"y", ?}' -> [['x'], [], ['y']]"""
  return [[t.strip().strip('"') for t in d.split(",") if t.strip() and t.strip() != "?"] for d in re.findall(r"\{([^}]*)\}", sharding)]


def lowering_facts(text):
  """The manual regions of the lowered module: their manual axes; the first one's in / out
  shardings (mesh axes per dimension) and per-device block shapes."""
  regions = list(REGION.finditer(text))
  facts = {"region_manual_axes": [sorted(a.strip().strip('"') for a in m["manual"].split(",") if a.strip()) for m in regions]}
  if regions:
    m = regions[0]
    facts["manual_axes"] = facts["region_manual_axes"][0]
    facts["in_shardings"] = [dims(s) for s in re.findall(r"<@\w+, \[(.*?)\]", m["ins"])]
    facts["out_shardings"] = [dims(s) for s in re.findall(r"<@\w+, \[(.*?)\]", m["outs"])]
    facts["block_shapes"] = [[int(n) for n in t.split("x") if n] for t in re.findall(r"tensor<((?:\d+x)*)[a-z]+\d*>", m["block"])]
  return facts
'''

_CHECK_LOWERING = r'''
def check_lowering(facts, problems):
  want = EXPECTED_LOWERING
  regions = list(facts["region_manual_axes"])
  for inner in want["nested"]:
    if inner not in regions:
      problems.append(f"the lowering has manual regions over {facts['region_manual_axes']}, but a nested shard_map needs one over {inner}")
      return
    regions.remove(inner)
  manual = want["manual_axes"]
  ours = [r for r in regions if r == manual] if want["regions"] else regions
  others = [r for r in regions if r != manual and not set(r).isdisjoint(manual)]
  if len(ours) != want["regions"] or (want["regions"] and others):
    problems.append(f"the lowering has sdy.manual_computation regions over {facts['region_manual_axes']}, "
                    f"but it must have {[manual] * want['regions']}")
    return
  for key in ("manual_axes", "in_shardings", "out_shardings", "block_shapes") if want["regions"] else ():
    if facts.get(key) != want[key]:
      problems.append(f"the manual region's {key}={facts.get(key)}, but it must be {want[key]}")
'''

_CHECK_GRAD = '''
def check_derivative(facts, problems):
  want = EXPECTED_DERIVATIVE
  if want is None or facts.get("outputs") != want["outputs"] or "jvp" not in facts:
    return
  for rule in ("jvp", "vjp"):
    if not abs(facts[rule] - want["value"]) <= want["tolerance"]:
      problems.append(f"<u, J v> by jax.{rule} is {facts[rule]:.6g}, but it must be {want['value']:.6g} "
                      f"(finite differences of the forward semantics; tolerance {want['tolerance']:.2g})")
'''

_SUPERVISOR = '''
import os
import subprocess
import sys

CHILD = "SHARDFUZZ_REPRO_CHILD"
if os.environ.get(CHILD) != "1" and os.path.isfile(sys.argv[0]):
  from importlib.metadata import version
  # run the check in a child process: an abort inside XLA or a hang is a result too
  limit = float(os.environ.get("SHARDFUZZ_REPRO_TIMEOUT", "{timeout}"))
  try:
    r = subprocess.run([sys.executable] + sys.argv, env={{**os.environ, CHILD: "1"}}, timeout=limit)
  except subprocess.TimeoutExpired:
    print(f"BUG: {title} (jax {{version('jax')}}, mode {mode}): jax hung: no result after {{limit:g}} s, but it must give {summary}.", flush=True)
    sys.exit(1)
  if r.returncode not in (0, 1, 2):
    how = f"signal {{-r.returncode}}" if r.returncode < 0 else f"exit status {{r.returncode}}"
    print(f"BUG: {title} (jax {{version('jax')}}, mode {mode}): jax crashed the process ({{how}}), but it must give {summary}.", flush=True)
    sys.exit(1)
  sys.exit(r.returncode)
'''

_MAIN = '''
def main():
  problems = []
  try:
    outs, facts = run()
  except Exception as e:  # what jax raised
    if EXPECTED_ERROR is None:
      problems.append(f"jax raised {{type(e).__name__}}: {{str(e)[:400]!r}}, but the program is valid and must run")
    else:
      check_error(e, problems)
  else:
    if EXPECTED_ERROR is not None:
      problems.append(f"jax raised nothing, but it must raise a {{'/'.join(EXPECTED_ERROR['types'])}} "
                      f"({{EXPECTED_ERROR['kind']}})")
    check_types(problems)  # (when an error is due: the varying axes that should have caused it)
    if EXPECTED_ERROR is None:
{checks}
  where = f"{title} (jax {{jax.__version__}}, mode {mode})"
  if problems:
    print(f"BUG: {{where}}: " + "; ".join(problems) + ". Expected by shard_map's documented semantics: {summary}.")
    return 1
  print(f"FIXED: {{where}}: jax agrees with shard_map's documented semantics: {summary}.")
  return 0


if __name__ == "__main__":
  sys.exit(main())
'''


def _setup_lines(p: Program, mode: str) -> list[str]:
    body = "jax.checkpoint(body)" if mode == "grad_remat" else "body"
    return [
        *mesh_src(p),
        f"MESH_SHAPE = {p.mesh.sizes!r}",
        f"AUTO_AXES = {_auto_axes(p)!r}  # mesh axes left automatic (partial manual): jax may lay outputs out along them",
        "",
        "",
        *inputs_fn_src(p),
        "",
        "",
        body_source(p, record="record"),
        "",
        "",
        f"f = jax.shard_map({body}, {shard_map_kwargs_src(p)})",
    ]


def _expectations(p: Program, pred: Prediction, mode: str) -> list[str]:
    lines = _error_literal(pred) + [""] + _types_literal(p, pred)
    if pred.error is None:
        lines += [""] + _outputs_literal(p, pred, mode)
        if mode == "lowering":
            lines += [""] + _lowering_literal(p, pred)
        if mode in ("grad", "grad_remat"):
            lines += [""] + _grad_literal(p, pred)
    return lines


def _checks(pred: Prediction, mode: str) -> tuple[list[str], list[str]]:
    """The helper definitions the script needs and the check calls of `main`."""
    helpers = [_CHECK_COMMON]
    calls = ["      if check_shapes(outs, problems):"]
    if pred.error is None and mode in VALUE_MODES + ("vmap", "vmap_spmd"):
        helpers.append(_CHECK_VALUES if mode in VALUE_MODES else _CHECK_BATCHED)
        calls.append("        check_values(outs, problems)")
    else:
        calls.append("        pass")
    if mode == "lowering":
        helpers += [_LOWERING_FACTS, _CHECK_LOWERING]
        calls.append("      check_lowering(facts, problems)")
    if mode in ("grad", "grad_remat") and pred.error is None:
        helpers.append(_CHECK_GRAD)
        calls.append("      check_derivative(facts, problems)")
    return helpers, calls


def _prepare(p: Program, mode: str) -> Prediction:
    if mode not in REPRO_MODES:
        raise NoReproducer(f"no reproducer for mode {mode!r}; one of {', '.join(REPRO_MODES)}")
    why = _applicable(p, mode)
    if why:
        raise NoReproducer(f"the {mode} mode does not apply to this program: {why}")
    values = mode not in ("abstract", "lowering")
    return predict(p, values=values)


def _ragged_guard(p: Program, mode: str, exit_line: str) -> list[str]:
    if mode in ("abstract", "lowering") or not any(op.kind == "ragged_all_to_all" for op in p.body):
        return []
    return [
        'if jax.default_backend() == "cpu":  # XLA:CPU cannot run ragged_all_to_all',
        f"  {exit_line}",
    ]


def reproducer(p: Program, mode: str = "jit", title: str = "") -> str:
    """A standalone script (jax + numpy only) that runs `p` in harness mode `mode` (one of
    REPRO_MODES) and compares jax's result with the oracle's prediction, embedded in it as
    literals: exit 1 with a one-paragraph `BUG: ...` while jax diverges, exit 0 with
    `FIXED: ...` once it agrees (exit 2: it cannot run here, e.g. ragged_all_to_all values
    on CPU). Raises NoReproducer (a ValueError) when the harness would report the mode
    unsupported for `p`."""
    pred = _prepare(p, mode)
    title = title or "shardfuzz reproducer"
    summary = _summary(p, pred, mode)
    helpers, calls = _checks(pred, mode)
    fmt = {"title": _brace(title), "mode": mode, "summary": _brace(summary)}
    doc = [
        f'"""{_doc(title)} (mode: {mode}).',
        "",
        "Runs one jax.shard_map program the way shardfuzz's harness mode does and compares the result",
        "with what shard_map's documented semantics give (predicted by shardfuzz's NumPy oracle,",
        "embedded below). Exit 1 with `BUG: ...` while jax diverges from it, 0 with `FIXED: ...` once",
        "jax agrees. Needs only jax and numpy; forces 8 CPU devices.",
        "",
        f"Expected: {_doc(summary)}",
        '"""',
    ]
    lines = [
        *doc,
        _SUPERVISOR.format(timeout=TIMEOUT_S, **fmt).strip("\n"),
        "",
        *FORCE_DEVICES,
        "import re  # noqa: E402",
        "",
        "import numpy as np  # noqa: E402",
        "import jax  # noqa: E402",
        "import jax.numpy as jnp  # noqa: E402",
        "from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402",
        "",
        *_ragged_guard(p, mode, 'print("cannot run here: XLA:CPU has no ragged_all_to_all (run on a GPU, or use --mode abstract)"); sys.exit(2)'),
        _RECORD.strip("\n"),
        "",
        "",
        *_setup_lines(p, mode),
        "",
        "",
        *_run_lines(p, mode),
        "",
        "",
        *_expectations(p, pred, mode),
        "",
        "\n\n\n".join(h.strip("\n") for h in helpers),
        "",
        "",
        _MAIN.format(checks="\n".join(calls), **fmt).strip("\n"),
        "",
    ]
    return "\n".join(lines)


def _brace(s: str) -> str:
    """Text for an f-string inside the generated script: braces and quotes escaped."""
    return s.replace("\\", "\\\\").replace("{", "{{").replace("}", "}}").replace('"', '\\"').replace("\n", " ")


def _doc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"""', "'''")


def test_name(title: str) -> str:
    """A pytest function name from a title ('reports/x/cases/ab12.json' -> 'test_shard_map_ab12')."""
    stem = re.sub(r"\.(min\d*)?\.?json$", "", title.split("/")[-1].split(" ")[-1]) if title else "reproducer"
    return "test_shard_map_" + (re.sub(r"\W+", "_", stem).strip("_").lower() or "reproducer")


def pytest_reproducer(p: Program, mode: str = "jit", title: str = "", name: str = "") -> str:
    """A self-contained pytest test (jax's public API, numpy and pytest only), in the
    style of jax's tests/shard_map_test.py: it runs `p` in harness mode `mode` and asserts
    the oracle's prediction with `pytest.raises(ExcType, match=phrase)` or
    `np.testing.assert_allclose`, so it fails while jax diverges. Raises NoReproducer
    where the mode does not apply."""
    pred = _prepare(p, mode)
    title = title or "shardfuzz reproducer"
    fn = name or test_name(title)
    setup = [
        *_indent(_RECORD.strip("\n").splitlines(), 2),
        "",
        *_indent(_setup_lines(p, mode), 2),
        "",
        *_indent(_run_lines(p, mode), 2),
    ]
    if mode == "lowering":
        setup = _indent(_LOWERING_FACTS.strip("\n").splitlines() + [""] + _CHECK_LOWERING.strip("\n").splitlines(), 2) + [""] + setup
    asserts = _pytest_asserts(p, pred, mode)
    lines = [
        f'"""{_doc(title)} (mode: {mode}): a jax.shard_map test in the style of jax\'s tests/shard_map_test.py.',
        "",
        f"Expected by shard_map's documented semantics: {_doc(_summary(p, pred, mode))}",
        '"""',
        "import os",
        "",
        *FORCE_DEVICES,
        "import re  # noqa: E402,F401",
        "",
        "import numpy as np  # noqa: E402",
        "import pytest  # noqa: E402,F401",
        "import jax  # noqa: E402",
        "import jax.numpy as jnp  # noqa: E402,F401",
        "from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402",
        "",
        "",
        f"def {fn}():",
        *_indent(_ragged_guard(p, mode, 'pytest.skip("XLA:CPU has no ragged_all_to_all")'), 2),
        *setup,
        "",
        *_indent(asserts, 2),
        "",
    ]
    text = "\n".join(lines)
    head, fn_text = text.split(f"\ndef {fn}():", 1)
    return head + f"\ndef {fn}():" + re.sub(r"\n\n\n+", "\n\n", fn_text)  # one blank line at most inside it


def _pytest_asserts(p: Program, pred: Prediction, mode: str) -> list[str]:
    if pred.error is not None:
        err = pred.error
        sig = ERROR_TABLE[err.kind]
        types = ", ".join(sig.types)
        known = {"ValueError", "TypeError", "NameError", "NotImplementedError", "IndexError"}
        exc = "(" + ", ".join(t if t in known else f"getattr(jax.errors, {t!r}, ValueError)" for t in sig.types) + ",)"
        phrase = "|".join(re.escape(ph) for ph in sig.phrases)
        lines = [
            f"# {err.kind.value}: {err.why}",
            f"with pytest.raises({exc}, match={phrase!r}) as exc:  # {types}",
            "  run()",
        ]
        lines += [f"assert {x!r} in str(exc.value)" for x in err.facts]
        return lines
    lines = [
        "outs, facts = run()",
        f"assert len(outs) == {len(pred.outputs)}",
        "# every body value's per-device type (shape, dtype, varying manual axes) inside the body",
    ]
    n_in = len(p.inputs)
    for i, t in enumerate(pred.value_types):
        name = f"a{i}" if i < n_in else f"v{i - n_in}"
        want = f"({tuple(t.shape)!r}, {t.dtype!r})"
        lines.append(f"assert TYPES[{name!r}][:2] == {want}, {name!r}")
        if t.vma is not None:
            lines.append(f"assert TYPES[{name!r}][2] in (None, {sorted(t.vma)!r}), 'jax.typeof({name}).vma'")
    batched = mode in ("vmap", "vmap_spmd")
    n = _batch(p, mode)
    members = [pred] + ([predict(p, batch=b) for b in range(1, n)] if batched else [])
    auto = bool(_auto_axes(p))
    for k, e in enumerate(pred.outputs):
        shape = (n,) + e.global_shape if batched else e.global_shape
        lines.append(f"shape, dtype, blocks, value = outs[{k}]")
        lines.append(f"assert (shape, dtype) == ({shape!r}, {e.dtype!r})")
        if mode not in VALUE_MODES and not batched:
            continue
        exact = all(m.outputs[k].exact for m in members) or e.dtype == "int32"
        atol = max(m.outputs[k].atol for m in members)
        cmp = "np.testing.assert_array_equal({g}, {w}{msg})" if exact else \
            f"np.testing.assert_allclose({{g}}, {{w}}, rtol={e.rtol!r}, atol={atol!r}{{msg}})"
        if batched:
            wants = [m.outputs[k].global_value for m in members]
            if any(w is None for w in wants):
                lines.append("# no global value to compare (check_vma=False and the blocks differ)")
                continue
            lines.append(cmp.format(g="value", w=_arr(np.stack(wants)), msg=", err_msg='the unbatched program per member, stacked'"))  # type: ignore[arg-type]
        elif auto and e.global_value is not None:
            lines.append(cmp.format(g="value", w=_arr(e.global_value), msg=""))
        elif auto:
            lines.append("# partial manual without a global value: jax may lay the blocks out along automatic axes")
        else:
            lines += [
                f"expected = {_arr(e.device_values)}  # expected[mesh coordinate]: that device's block",  # type: ignore[arg-type]
                "for coord in np.ndindex(*MESH_SHAPE):",
                "  " + cmp.format(g="blocks[coord]", w="expected[coord]", msg=", err_msg=f'device {coord}'"),
            ]
    if mode == "lowering":
        lines += _lowering_literal(p, pred)
        lines += ["problems = []", "check_lowering(facts, problems)", "assert not problems, problems"]
    if mode in ("grad", "grad_remat"):
        lines += _grad_literal(p, pred)
        lines += [
            "if EXPECTED_DERIVATIVE is not None:",
            "  assert facts['outputs'] == EXPECTED_DERIVATIVE['outputs']",
            "  for rule in ('jvp', 'vjp'):  # <u, J v> against finite differences of the forward semantics",
            "    np.testing.assert_allclose(facts[rule], EXPECTED_DERIVATIVE['value'], rtol=0,",
            "                               atol=EXPECTED_DERIVATIVE['tolerance'], err_msg=f'<u, J v> by jax.{rule}')",
        ]
    return lines
