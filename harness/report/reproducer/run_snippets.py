"""The generated script's set-up (mesh, inputs, the recording body, the shard_map) and its
`run()`: the program run the way the harness mode runs it, returning the observed outputs
(shape, dtype, per-device blocks or None, global value or None) and the mode's facts.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.judge.compare_outputs import compiler_layout
from harness.report.reproducer.mode_choice import auto_axes, batch_size
from programs.body_text import body_source, specs_src
from programs.emit import (
    REPRO_MODES,
    args_src,
    call_src,
    closure_src,
    context_src,
    donate_src,
    inputs_fn_src,
    jit_src,
    mesh_src,
    place_src,
    placed_args,
    remat_body,
    remat_lines,
)
from programs.errors import NoReproducer
from programs.model import Program, is_float
from programs.points import used_float_args

# the multiprocess mode's mesh: half of its devices in each process, process 0 first
_MP_MESH = [
    "by_process = {}",
    "for d in jax.devices():",
    "  by_process.setdefault(d.process_index, []).append(d)",
    "half = devices.size // 2",
    "devices = np.array([d for i in (0, 1) for d in sorted(by_process[i], key=lambda d: d.id)[:half]], dtype=object)",
    "devices = devices.reshape(MESH_SHAPE)",
    "mesh = jax.sharding.Mesh(devices, mesh.axis_names, axis_types=mesh.axis_types)",
]


def setup_lines(p: Program, mode: str) -> list[str]:
    body = remat_body(p, mode)
    mp = [f"MESH_SHAPE = {p.mesh.sizes!r}", *_MP_MESH] if mode == "multiprocess" else []
    return [
        *remat_lines(p),
        *mesh_src(p),
        *mp,
        *context_src(p),
        f"MESH_SHAPE = {p.mesh.sizes!r}",
        f"AUTO_AXES = {auto_axes(p)!r}  # mesh axes left automatic (partial manual): jax may lay outputs out along them",
        f"MIXED = {compiler_layout(p)!r}  # Explicit and Auto axes: jit lays outputs out along the Auto ones as it chooses",
        "",
        "",
        *inputs_fn_src(p),
        "",
        "",
        *closure_src(p),
        *place_src(p),
        *donate_src(p),
        "",
        body_source(p, record="record"),
        "",
        "",
        *call_src(p, body),
        "",
        "",
        *GLOBAL_FN,
    ]


def ragged_guard(p: Program, mode: str, exit_line: str) -> list[str]:
    if mode in ("abstract", "lowering") or not any(op.kind == "ragged_all_to_all" for op in p.body):
        return []
    return [
        'if jax.default_backend() == "cpu":  # XLA:CPU cannot run ragged_all_to_all',
        f"  {exit_line}",
    ]


def run_lines(p: Program, mode: str) -> list[str]:
    """`def run()`: runs the program as the harness mode does; returns the observed
    outputs (shape, dtype, per-device blocks or None, global value or None) and facts.
    With effects, the run waits for them (jax.effects_barrier) with sys.stdout gathered
    in PRINTED (their jax.debug.print lines)."""
    make = _RUNS.get(mode)
    if make is None:
        raise NoReproducer(f"no reproducer for mode {mode!r}; one of {', '.join(REPRO_MODES)}")
    lines = make(p, mode)
    if not p.effects:
        return lines
    at = lines.index("def run():")
    return [*lines[:at], "def _run():", *lines[at + 1:], "", "",
            "PRINTED = []  # what jax.debug.print wrote while the program ran", "", "",
            "def run():",
            "  import contextlib",
            "  import io",
            "  buf = io.StringIO()",
            "  with contextlib.redirect_stdout(buf):",
            "    got = _run()",
            "    jax.effects_barrier()",
            "  PRINTED.append(buf.getvalue())",
            "  return got"]


# what run() returns: the outputs with each device's block and the global value ...
_VALUES = [
    "  return [(tuple(o.shape), str(o.dtype), {tuple(int(c) for c in np.unravel_index(s.device.id, MESH_SHAPE)):",
    "           np.asarray(s.data) for s in o.addressable_shards}, _global(o)) for o in outs], {}",
]
# an unreduced output has no global value jax assembles (its blocks are the parts of the
# sum): None, as the harness observes it
# (and each output's jax.typeof(o).sharding.spec, in SHARDINGS, for check_shardings)
GLOBAL_FN = [
    "SHARDINGS = []  # per output: jax.typeof(out).sharding.spec as (dims, unreduced, reduced), None where jax does not say",
    "",
    "",
    "def _global(o):",
    "  spec = getattr(getattr(jax.typeof(o), 'sharding', None), 'spec', None) if hasattr(jax, 'typeof') else None",
    "  parts = None if spec is None else tuple(getattr(spec, 'partitions', spec))[:o.ndim]  # (iterating a P with unreduced raises)",
    "  SHARDINGS.append(None if spec is None else (",
    "      [[] if e is None else [e] if isinstance(e, str) else list(e) for e in parts] + [[]] * (o.ndim - len(parts)),",
    "      sorted(getattr(spec, 'unreduced', ()) or ()), sorted(getattr(spec, 'reduced', ()) or ())))",
    "  return None if getattr(spec, 'unreduced', None) else np.asarray(o)",
]
# ... or only their shapes and dtypes, with the mode's facts
_SHAPES_ONLY = ["  return [(tuple(o.shape), str(o.dtype), None, None) for o in outs], facts"]
_STRUCTS = "[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in inputs(0)]"


def _unpack(p: Program) -> str:
    """The line that binds the arguments a0, a1, ... to the inputs (none without inputs)."""
    return f"  {args_src(p)}{',' if len(p.inputs) == 1 else ''} = inputs(0)" if p.inputs else ""


def _run_direct(p: Program, mode: str) -> list[str]:
    """jit, eager and gspmd (jit with the GSPMD partitioner): the shard_map called."""
    pre = ['  jax.config.update("jax_use_shardy_partitioner", False)  # the GSPMD partitioner'] if mode == "gspmd" else []
    call = "f" if mode == "eager" else jit_src(p)
    if p.donate and mode != "eager":  # (each donated argument read back after the call: check_donation)
        return ["DONATED = []  # (argument, deleted, intact) after the call", "", "",
                "def run():", *pre, _unpack(p), f"  args = {placed_args(p, args_src(p)).lstrip('*')}",
                f"  outs = {call}(*args)", "  jax.block_until_ready(outs)",
                "  want = inputs(0)",
                "  for i in DONATE:",
                "    deleted = bool(getattr(args[i], 'is_deleted', lambda: False)())",
                "    try:",
                "      got = np.asarray(args[i])",
                "    except Exception:  # (reading a deleted array raises, as it must)",
                "      got = None",
                "    intact = (got is None) if deleted else (got is not None and np.array_equal(got.reshape(want[i].shape), want[i]))",
                "    DONATED.append((i, deleted, intact))",
                *_VALUES]
    return ["def run():", *pre, _unpack(p), f"  outs = {call}({placed_args(p, args_src(p))})", "  jax.block_until_ready(outs)", *_VALUES]


def _run_multiprocess(p: Program, mode: str) -> list[str]:
    """jit on the mesh over both processes: global arrays made from the same values in
    each, and only this process's blocks read back (each process checks its own)."""
    return [
        "LOCAL_ONLY = True  # check_values: this process's blocks",
        "",
        "",
        "def run():",
        "  P_ = jax.sharding.PartitionSpec",
        f"  specs = {specs_src(p.in_specs)}",
        "  args = []",
        "  for i, a in enumerate(inputs(0)):",
        "    try:",
        "      sh = jax.sharding.NamedSharding(mesh, specs[i])",
        "      args.append(jax.make_array_from_callback(a.shape, sh, lambda idx, a=a: a[idx]))",
        "    except Exception:  # an invalid spec: replicated, and shard_map says what is wrong",
        "      args.append(jax.make_array_from_callback(a.shape, jax.sharding.NamedSharding(mesh, P_()), lambda idx, a=a: a[idx]))",
        "  outs = jax.jit(f)(*args)",
        "  jax.block_until_ready(outs)",
        "  where = {d.id: c for c, d in np.ndenumerate(mesh.devices)}",
        "  return [(tuple(o.shape), str(o.dtype), {where[s.device.id]: np.asarray(s.data) for s in o.addressable_shards}, None)",
        "          for o in outs], {}",
    ]


def _run_smap(p: Program, mode: str) -> list[str]:
    form = p.smap_form()
    assert not isinstance(form, str)
    axis, ins, outs = form
    return [
        "def run():",
        _unpack(p),
        "  # the same program as a single-axis jax.smap under jax.set_mesh",
        f"  g = jax.smap(body, in_axes={ins!r}, out_axes={outs!r}, axis_name={axis!r})",
        "  with jax.set_mesh(mesh):",
        f"    outs = jax.jit(g)({args_src(p)})",
        "    jax.block_until_ready(outs)",
        *_VALUES,
    ]


def _structs(p: Program) -> str:
    """The abstract arguments: with placements, a committed one's sharding kept and a
    Python scalar as it is (harness/run/edges.py `host_shapes`)."""
    if not place_src(p):
        return _STRUCTS
    return ("[a if isinstance(a, (bool, int, float)) else jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=getattr(a, 'sharding', None)) "
            "for a in place(*inputs(0))]")


def _run_abstract(p: Program, mode: str) -> list[str]:
    return ["def run():", f"  outs = jax.eval_shape(f, *{_structs(p)})", "  facts = {}", *_SHAPES_ONLY]


def _run_lowering(p: Program, mode: str) -> list[str]:
    return [
        "def run():",
        f"  structs = {_structs(p)}",
        "  facts = lowering_facts(jax.jit(f, keep_unused=True).lower(*structs).as_text())",
        "  outs = jax.eval_shape(f, *structs)",
        *_SHAPES_ONLY,
    ]


def _run_vmap(p: Program, mode: str) -> list[str]:
    """vmap and vmap_spmd: the batch of members made as the harness makes it."""
    spmd = p.spmd_axis() if mode == "vmap_spmd" else None
    in_axes = tuple(0 if x.batched else None for x in p.inputs)
    kw = "" if all(a == 0 for a in in_axes) else f", in_axes={in_axes!r}"
    n = batch_size(p, mode)
    kw += "" if any(a == 0 for a in in_axes) else f", axis_size={n}"  # (nothing batched: vmap needs the size)
    vm = f"jax.vmap(f, spmd_axis_name={spmd!r}{kw})" if spmd else f"jax.vmap(f{kw})"
    # (an argument vmap does not batch, a Python scalar or a NumPy constant the body
    # closes over, is given once, member 0's: in_axes=None)
    args = f"[np.stack([m[i] for m in batch]) if {in_axes!r}[i] == 0 else batch[0][i] for i in range({len(p.inputs)})]" if kw else \
        f"[np.stack([m[i] for m in batch]) for i in range({len(p.inputs)})]"
    return [
        "def run():",
        f"  batch = [inputs(b) for b in range({n})]  # member b: the arguments made with seed / offset b",
        f"  outs = jax.jit({vm})(*{'place(*' + args + ', batched=True)' if place_src(p) else args})",
        "  return [(tuple(o.shape), str(o.dtype), None, np.asarray(o)) for o in outs], {}",
    ]


def _run_grad(p: Program, mode: str) -> list[str]:
    """The derivative modes at the harness' grad point: grad and grad_remat (<u, J v> by
    jvp and by vjp), jvp, linearize, hessian (v^T H v and <jacfwd(s), v>)."""
    # (hessian: the used float arguments only, as the harness mode: programs/points.py used_float_args)
    fl = used_float_args(p) if mode == "hessian" else [i for i, x in enumerate(p.inputs) if is_float(x.dtype)]
    seeds = {i: p.inputs[i].seed + 31 * i + 1 for i in fl}
    return [
        f"FLOAT_ARGS = {fl!r}",
        "",
        "",
        "def grad_point():",
        "  # the float arguments moved off the integers (no max/min ties, no int-cast jumps)",
        "  args = inputs(0)",
        f"  for i, seed in {seeds!r}.items():",
        "    frac = np.random.default_rng(seed).uniform(0.1, 0.4, size=args[i].shape)",
        "    args[i] = (args[i].astype(np.float64) + frac).astype(args[i].dtype)",
        "  return args",
        "",
        "",
        "def run():",
        "  args = grad_point()",
        "  outs = jax.eval_shape(f, *args)",
        "  out_idx = [k for k, o in enumerate(outs) if jnp.issubdtype(o.dtype, jnp.floating)]",
        "  if globals().get('EXPECTED_DERIVATIVE'):  # (check_vma=False: the outputs that keep their out_spec's promise)",
        "    out_idx = EXPECTED_DERIVATIVE['outputs']",
        '  facts = {"outputs": out_idx}',
        "  if not out_idx:",
        "  " + _SHAPES_ONLY[0],
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
        "  tans = tuple(jnp.asarray(np.random.default_rng(1000 + i).uniform(-1, 1, size=args[i].shape), dtype=args[i].dtype)",
        "               for i in FLOAT_ARGS)",
        "  cots = tuple(jnp.asarray(np.random.default_rng(2000 + k).uniform(-1, 1, size=outs[k].shape), dtype=outs[k].dtype)",
        "               for k in out_idx)",
        "  dot = lambda a, b: jnp.vdot(a.astype(jnp.float32), b.astype(jnp.float32))  # in float32, as the harness",
        "",
        "  @jax.jit",
        "  def both(prim, tan, cot):",
        *_DERIVE[mode],
        "",
        "  facts.update({k: float(v) for k, v in both(primals, tans, cots).items()})",
        *_SHAPES_ONLY,
    ]


# each derivative mode's numbers (harness/run/modes_transformed.py `derive`), inside `both`
_DERIVE = {
    "grad": [
        "    _, jv = jax.jvp(g, prim, tan)",
        "    _, pullback = jax.vjp(g, *prim)",
        "    return {'jvp': sum(dot(u, t) for u, t in zip(cot, jv)), 'vjp': sum(dot(c, t) for c, t in zip(pullback(cot), tan))}",
    ],
    "jvp": [
        "    _, jv = jax.jvp(g, prim, tan)",
        "    return {'jvp': sum(dot(u, t) for u, t in zip(cot, jv))}",
    ],
    "linearize": [
        "    _, lin = jax.linearize(g, *prim)",
        "    return {'linearize': sum(dot(u, t) for u, t in zip(cot, lin(*tan)))}",
    ],
    "hessian": [
        "    s = lambda *xs: sum(dot(u, o) for u, o in zip(cot, g(*xs)))  # the scalar <u, outputs>",
        "    n = tuple(range(len(prim)))",
        "    h = jax.hessian(s, argnums=n)(*prim)",
        "    jf = jax.jacfwd(s, argnums=n)(*prim)",
        "    v = tuple(t.astype(jnp.float32) for t in tan)",
        "    hvp = sum(jnp.vdot(v[i], jnp.tensordot(h[i][j].astype(jnp.float32), v[j], axes=v[j].ndim)) for i in n for j in n)",
        "    return {'hvp': hvp, 'jacfwd': sum(dot(a, b) for a, b in zip(jf, tan))}",
    ],
}
_DERIVE["grad_remat"] = _DERIVE["grad"]

# mode -> its run() snippet
_RUNS: dict[str, Callable[[Program, str], list[str]]] = {
    "jit": _run_direct,
    "eager": _run_direct,
    "gspmd": _run_direct,
    "smap": _run_smap,
    "abstract": _run_abstract,
    "lowering": _run_lowering,
    "vmap": _run_vmap,
    "vmap_spmd": _run_vmap,
    "grad": _run_grad,
    "grad_remat": _run_grad,
    "jvp": _run_grad,
    "linearize": _run_grad,
    "hessian": _run_grad,
    "multiprocess": _run_multiprocess,
}
