"""Print a program as Python: a readable body (its repr) and the source pieces of a
standalone reproducer (mesh, inputs, body, the shard_map call, each mode's call).

The asserting reproducer, which carries the oracle's prediction and exits 1 (`BUG:`)
while jax diverges from it, is `harness.report.reproducer.reproducer`, built from these
pieces (programs/ never imports the oracle). `to_python(p)` is the plain form: a script
(jax + numpy only) that runs the program the way one harness mode does and prints what
jax returned, comparing nothing.
"""

from __future__ import annotations

from programs.body_text import body_source, literal, outer_inputs, specs_src
from programs.model import BATCH_IOTA_STEP, BATCH_SEED_STEP, Program, Spec, is_float


def closure_src(p: Program) -> list[str]:
    """The NumPy constants the body closes over (`C<i>`, argument i's values), and where
    the body has effects, the callback that records each call (`CALLS`)."""
    out = [f"C{i} = {input_expr(p, i)}  # a NumPy constant the body closes over" for i, x in enumerate(p.inputs) if x.closure == "numpy"]
    if any(e.kind == "callback" for e in p.effects):
        out += [
            "CALLS = []  # each jax.debug.callback call: (effect, the device's manual coordinates, the value)",
            "",
            "",
            "def record_call(k):",
            "  return lambda *xs: CALLS.append((k, tuple(int(c) for c in xs[:-1]), np.asarray(xs[-1])))",
            "",
        ]
    return out


def place_src(p: Program) -> list[str]:
    """`def place(a0, ...)`: how each argument reaches the call (`Place`): committed to a
    NamedSharding (`jax.device_put`), or a Python scalar; a donated one as a jax array.
    None where every argument is passed as it is made (a NumPy array)."""
    lines = []
    for i, x in enumerate(p.inputs):
        pl = x.place
        if pl is not None and pl.how == "scalar":
            lines.append(f"  a{i} = a{i}.item()  # a Python scalar")
        elif pl is not None and pl.how == "committed":
            batched = Spec((None, *pl.spec.entries))  # (under vmap: the batch dimension first, unsplit)
            lines.append(f"  a{i} = jax.device_put(a{i}, jax.sharding.NamedSharding(mesh, {batched!r} if batched else {pl.spec!r}))"
                         "  # committed to this sharding")
        elif i in p.donate and x.closure != "numpy":
            lines.append(f"  a{i} = jnp.asarray(a{i})  # a jax array, to donate")
    if not lines:
        return []
    args = args_src(p)
    return [f"def place({args}, batched=False):  # how each argument reaches the call (batched: under vmap)", *lines,
            f"  return {args}{',' if len(p.inputs) == 1 else ''}"]


def placed_args(p: Program, args: str) -> str:
    """`args` as the call receives them (`place_src`): `*place(a0, a1)`, or `args` itself."""
    return f"*place({args})" if place_src(p) else args


def donate_src(p: Program) -> list[str]:
    return [f"DONATE = {p.donate!r}  # jax.jit(f, donate_argnums=DONATE)"] if p.donate else []


def jit_src(p: Program, f: str = "f") -> str:
    """`jax.jit(f)`, with donate_argnums=DONATE where the program donates."""
    return f"jax.jit({f}, donate_argnums=DONATE)" if p.donate else f"jax.jit({f})"


def shard_map_kwargs_src(p: Program) -> str:
    kw = [
        *([] if p.mesh_context else ["mesh=mesh"]),
        # (a closed-over argument is not the shard_map's: no in_spec; in_specs left out:
        # jax infers them from the arguments' sharding types)
        *([] if p.form.in_specs == "omitted" else [
            f"in_specs={specs_src(tuple(p.in_specs[i] for i in p.passed) if len(p.passed) < len(p.inputs) else p.in_specs, p.form.in_specs)}"]),
        f"out_specs={specs_src(p.out_specs, p.form.out_specs)}",
    ]
    if p.axis_names is not None:
        names = literal(set(p.axis_names))
        kw.append(f"axis_names={'frozenset(' + names + ')' if p.form.axis_names == 'frozenset' else names}")
    kw.append(f"check_vma={p.check_vma}")
    return ", ".join(kw)


def shard_map_src(p: Program, body: str = "body") -> list[str]:
    """The line making `f`, the shard_map of `body`, in the call's style (CallForm):
    `shard_map(body, ...)`, `shard_map(...)(body)` or `partial(shard_map, ...)(body)`."""
    kw = shard_map_kwargs_src(p)
    if p.form.style == "decorator":
        return [f"f = shard_map({kw})({body})  # jax.shard_map without f: a decorator"]
    if p.form.style == "partial":
        return ["from functools import partial", "", f"f = partial(shard_map, {kw})({body})"]
    return [f"f = shard_map({body}, {kw})"]


def input_expr(p: Program, i: int, batch: str = "0") -> str:
    """The expression making argument `i` for batch member `batch` (a Python expression;
    "0" is the plain program), exactly as `Input.materialize(batch)` does."""
    x = p.inputs[i]
    n = 1
    for d in x.shape:
        n *= d
    if x.fill == "iota":
        shift = " + ".join(([str(x.offset)] if x.offset else []) + ([] if batch == "0" else [f"{BATCH_IOTA_STEP} * {batch}"]))
        src = f"(np.arange({n}) + {shift})" if shift else f"np.arange({n})"
    else:
        seed = str(x.seed) if batch == "0" else f"{x.seed} + {BATCH_SEED_STEP} * {batch}"
        src = f"np.random.default_rng({seed}).integers(-3, 4, size={n})"
    # bfloat16 is not a NumPy name: jnp.bfloat16 (ml_dtypes' type) converts NumPy arrays
    dt = {"bfloat16": "jnp.bfloat16", "bool": "np.bool_"}.get(x.dtype, f"np.{x.dtype}")
    return f"{src}.reshape({x.shape!r}).astype({dt})"


def inputs_src(p: Program) -> list[str]:
    return [f"a{i} = {input_expr(p, i)}" for i in range(len(p.inputs))]


def inputs_fn_src(p: Program) -> list[str]:
    """`def inputs(b=0)`: the arguments of batch member b (the vmap modes stack them)."""
    items = ", ".join(input_expr(p, i, "b") for i in range(len(p.inputs)))
    return ["def inputs(b=0):", f"  return [{items}]"]


def args_src(p: Program) -> str:
    """'a0, a1' (the argument names)."""
    return ", ".join(f"a{i}" for i in range(len(p.inputs)))


def mesh_src(p: Program) -> list[str]:
    """The mesh over devices 0..n-1 in row-major order, as the harness builds it (with
    auto_axes / explicit_axes around the call: the mesh outside them)."""
    m = p.outer_mesh()
    types = ", ".join(f"AxisType.{t.capitalize()}" for t in m.axis_types)
    comma = "," if len(m.axis_types) == 1 else ""
    return [
        f"devices = np.array(jax.devices()[:{p.mesh.size}]).reshape({p.mesh.sizes!r})",
        f"mesh = jax.sharding.Mesh(devices, {p.mesh.names!r}, axis_types=({types}{comma}))",
    ]


def context_src(p: Program) -> list[str]:
    """`jax.set_mesh(mesh)` where the program needs the mesh context (the mesh comes
    from it, or an Explicit axis): set once for the whole script, as the harness enters
    it around the whole mode."""
    return ["jax.set_mesh(mesh)  # the mesh context: shard_map, reshard and the sharding types read it"] if p.needs_mesh_context() else []


def reshard_src(p: Program, f: str = "f") -> list[str]:
    """With `reshard`: `f` becomes the shard_map applied to its arguments resharded to
    their in_specs' Explicit axes (`Program.reshard_spec`)."""
    if not p.reshard:
        return []
    args = args_src(p)
    call = ", ".join(f"jax.sharding.reshard(a{i}, {p.reshard_spec(i)!r})" for i in range(len(p.inputs)))
    return [f"_{f}_shard_map = {f}", f"def {f}({args}):", f"  return _{f}_shard_map({call})"]


def _called_src(p: Program, body: str) -> list[str] | None:
    """`def f(a0, ...)`, the called function, where the shard_map is not all of it: the
    arguments placed inside it (`jax.device_put` / `jax.sharding.reshard`, traced under
    jit), the values its body closes over (`make_body(a1, ...)`), then the shard_map of
    the others. None where `f = shard_map(body, ...)` says it all."""
    traced = [(i, x.place) for i, x in enumerate(p.inputs) if x.place is not None and x.place.how in ("device_put", "reshard")]
    outer = outer_inputs(p)
    if not traced and len(p.passed) == len(p.inputs):
        return None
    args = args_src(p)
    lines = [f"def f({args}):  # the called function (traced under jit)"]
    for i, pl in traced:
        fn = "jax.device_put" if pl.how == "device_put" else "jax.sharding.reshard"
        lines.append(f"  a{i} = {fn}(a{i}, jax.sharding.NamedSharding(mesh, {pl.spec!r}))")
    for i in outer:
        lines.append(f"  a{i} = jnp.asarray(a{i})  # closed over by the body")
    made = body.replace("body", f"make_body({', '.join(f'a{i}' for i in outer)})") if outer else body
    passed = ", ".join(f"a{i}" for i in p.passed)
    lines.append(f"  return shard_map({made}, {shard_map_kwargs_src(p)})({passed})")
    return lines


def call_src(p: Program, body: str = "body") -> list[str]:
    """`f`, the call: the shard_map (its arguments resharded: `reshard_src`), in a `def f`
    where arguments are placed inside the call or closed over (`_called_src`); with
    `Program.wrap`, made inside `def call` under jax.sharding.auto_axes / explicit_axes
    (a shard_map made outside keeps the mesh it saw then)."""
    called = _called_src(p, body)
    lines = [*(called or shard_map_src(p, body)), *reshard_src(p)]
    if p.wrap is None:
        return lines
    args = args_src(p)
    retyped = "Auto" if p.wrap == "auto_axes" else "Explicit"
    kw = "out_sharding" if p.wrap == "auto_axes" else "in_sharding"
    axes = p.wrap_axes[0] if len(p.wrap_axes) == 1 else p.wrap_axes
    return [
        f"def call({args}):  # the shard_map is made here, inside {p.wrap} (its mesh has {literal(p.wrap_axes)} {retyped})",
        *("  " + line for line in lines),
        f"  return f({args})",
        "",
        "",
        f"f = jax.sharding.{p.wrap}(call, axes={axes!r}, {kw}={specs_src(p.wrap_specs)})",
    ]


FORCE_DEVICES = [
    'os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"',
    'os.environ.setdefault("JAX_PLATFORMS", "cpu")',
]
JAX_IMPORTS = [
    "import numpy as np",
    "import jax",
    "import jax.numpy as jnp",
    "from jax.sharding import AxisType, PartitionSpec as P",
]

# jax.shard_map from jax 0.6.1 on; before that only jax.experimental.shard_map, whose
# check_rep= is check_vma= and whose auto= is the mesh axes axis_names= leaves out
SHARD_MAP_SHIM = [
    'if hasattr(jax, "shard_map"):',
    "  shard_map = jax.shard_map",
    "else:  # jax < 0.6.1: jax.experimental.shard_map(check_rep=, auto=)",
    "  from jax.experimental.shard_map import shard_map as _experimental_shard_map",
    "",
    "  def shard_map(f, *, mesh, in_specs, out_specs, axis_names=None, check_vma=True):  # (f positional: the plain call form)",
    "    auto = frozenset(mesh.axis_names) - frozenset(axis_names) if axis_names is not None else frozenset()",
    "    return _experimental_shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,",
    "                                   check_rep=check_vma, auto=auto)",
]


PERMUTE_ORDER_FLAG = "jax_raise_on_ppermute_sort_diff"


def permute_guard(p: Program) -> list[str]:
    """jax 0.11+ raises for a ppermute/pshuffle over axes out of mesh order unless this
    flag is off; the harness runs such a program with it off (harness/run/compat.py
    `program_config`), and so does the reproducer."""
    if not p.permutes_out_of_mesh_order():
        return []
    return [f'if hasattr(jax.config, "{PERMUTE_ORDER_FLAG}"):  # jax >= 0.11 refuses ppermute axes out of mesh order by default',
            f'  jax.config.update("{PERMUTE_ORDER_FLAG}", False)']


def remat_lines(p: Program) -> list[str]:
    """The program's jax.checkpoint policy (`Program.remat_policy`), which the grad_remat
    mode runs its body under (`remat_body`)."""
    if p.remat_policy is None:
        return []
    return [f"REMAT_POLICY = jax.checkpoint_policies.{p.remat_policy}  # the grad_remat mode's jax.checkpoint policy"]


def remat_body(p: Program, mode: str) -> str:
    """The body the shard_map runs in `mode`: under jax.checkpoint in grad_remat (with
    the program's named policy where it has one)."""
    if mode != "grad_remat":
        return "body"
    return "jax.checkpoint(body, policy=REMAT_POLICY)" if p.remat_policy is not None else "jax.checkpoint(body)"


def x64_lines(p: Program) -> list[str]:
    """A program naming float64 runs with jax_enable_x64 on (`Program.x64`), as the
    harness runs it; without it jax makes every float64 a float32."""
    return ['jax.config.update("jax_enable_x64", True)  # the program names float64'] if p.x64 else []


REPRO_MODES = ("jit", "eager", "gspmd", "abstract", "lowering", "vmap", "vmap_spmd", "smap", "grad", "grad_remat", "jvp", "linearize",
               "hessian", "multiprocess")


def reproducer_mode(mode: str) -> str:
    """The reproducer mode for a divergence's mode field ('eager,grad' -> 'eager'; the
    probe is a jit)."""
    first = mode.split(",")[0]
    return first if first in REPRO_MODES else "jit"


def _call_lines(p: Program, mode: str, args: str) -> list[str]:
    """The lines (inside `try:`) that run `f` the way the harness mode does."""
    shapes = f"*[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in ({args},)]"
    if any(x.place is not None for x in p.inputs):  # (a committed argument's sharding, a Python scalar as it is)
        shapes = (f"*[a if isinstance(a, (bool, int, float)) else jax.ShapeDtypeStruct(a.shape, a.dtype, "
                  f"sharding=getattr(a, 'sharding', None)) for a in ({args},)]")
    if mode == "multiprocess":  # (this plain form runs it in one process; the asserting reproducer launches two)
        return ["  # multiprocess: `shardfuzz emit --mode multiprocess` writes the two-process reproducer",
                f"  outs = jax.jit(f)({args})", *_print_values()]
    if mode in ("jit", "eager", "gspmd"):
        pre = ['  jax.config.update("jax_use_shardy_partitioner", False)  # the GSPMD partitioner'] if mode == "gspmd" else []
        return pre + [f"  outs = {'f' if mode == 'eager' else jit_src(p)}({args})", *_print_values()]
    if mode == "smap":
        form = p.smap_form()
        if isinstance(form, str):
            return [f"  raise SystemExit('this program has no jax.smap form: {form}')"]
        axis, ins, outs = form
        return [
            f"  g = jax.smap(body, in_axes={ins!r}, out_axes={outs!r}, axis_name={axis!r})",
            "  with jax.set_mesh(mesh):",
            f"    outs = jax.jit(g)({args})",
            *["  " + line for line in _print_values()],
        ]
    if mode in ("abstract", "lowering"):
        pre = [f"  print(jax.jit(f, keep_unused=True).lower({shapes}).as_text())"] if mode == "lowering" else []
        return pre + [
            f"  outs = jax.eval_shape(f, {shapes})",
            "  for i, o in enumerate(outs):",
            '    print(f"out[{i}] shape={o.shape} dtype={o.dtype}")',
        ]
    if mode in ("vmap", "vmap_spmd"):
        spmd = p.spmd_axis() if mode == "vmap_spmd" else None
        n = p.mesh.axis_size(spmd) if spmd else 2
        # (an argument vmap does not batch, a scalar or a closed-over value, is given once)
        in_axes = tuple(0 if x.batched else None for x in p.inputs)
        kw = "" if all(a == 0 for a in in_axes) else f", in_axes={in_axes!r}"
        kw += "" if any(a == 0 for a in in_axes) else f", axis_size={n}"
        vm = f"jax.vmap(f, spmd_axis_name={spmd!r}{kw})" if spmd else f"jax.vmap(f{kw})"
        stacked = f"[np.stack([m[i] for m in batch]) if {in_axes!r}[i] == 0 else batch[0][i] for i in range({len(p.inputs)})]" if kw else \
            f"[np.stack([m[i] for m in batch]) for i in range({len(p.inputs)})]"
        return [
            f"  batch = [inputs(b) for b in range({n})]  # a batch of {n}, member b as the harness makes it",
            f"  outs = jax.jit({vm})(*{'place(*' + stacked + ', batched=True)' if place_src(p) else stacked})",
            "  for i, o in enumerate(outs):",
            '    print(f"out[{i}] shape={o.shape} dtype={o.dtype}")',
            "    print(np.asarray(o))",
        ]
    if mode in ("grad", "grad_remat", "jvp", "linearize", "hessian"):
        fl = [i for i, x in enumerate(p.inputs) if is_float(x.dtype)]
        return [
            f"  args = [{args}]",
            f"  fl = {fl!r}  # the float arguments, moved off the integers (no ties at max/min)",
            "  primals = tuple(jnp.asarray(args[i] + 0.25) for i in fl)",
            "",
            "  def g(*xs):",
            "    full = list(args)",
            "    for i, x in zip(fl, xs):",
            "      full[i] = x",
            "    return tuple(o for o in f(*full) if jnp.issubdtype(o.dtype, jnp.floating))",
            "",
            *_PLAIN_DERIVE[mode],
        ]
    raise ValueError(f"no reproducer for mode {mode!r}; one of {REPRO_MODES}")


# the plain reproducer's derivatives per derivative mode (`_call_lines`), along ones
_PLAIN_DERIVE = {
    "grad": [
        "  @jax.jit",
        "  def both(prim):",
        "    out, jv = jax.jvp(g, prim, tuple(jnp.ones_like(x) for x in prim))",
        "    _, pullback = jax.vjp(g, *prim)",
        "    return jv, pullback(tuple(jnp.ones_like(o) for o in out))",
        "",
        "  jv, cts = both(primals)",
        '  print("jvp along ones:", [np.asarray(t) for t in jv])',
        '  print("vjp of ones:", [np.asarray(c) for c in cts])',
    ],
    "jvp": [
        "  jv = jax.jit(lambda prim: jax.jvp(g, prim, tuple(jnp.ones_like(x) for x in prim))[1])(primals)",
        '  print("jvp along ones:", [np.asarray(t) for t in jv])',
    ],
    "linearize": [
        "  jv = jax.jit(lambda prim: jax.linearize(g, *prim)[1](*(jnp.ones_like(x) for x in prim)))(primals)",
        '  print("linearized along ones:", [np.asarray(t) for t in jv])',
    ],
    "hessian": [
        "  s = lambda *xs: sum(o.astype(jnp.float32).sum() for o in g(*xs))  # the sum of the float outputs",
        "  n = tuple(range(len(primals)))",
        "  h = jax.jit(lambda prim: jax.hessian(s, argnums=n)(*prim))(primals)",
        "  jf = jax.jit(lambda prim: jax.jacfwd(s, argnums=n)(*prim))(primals)",
        '  print("hessian:", jax.tree.map(np.asarray, h))',
        '  print("jacfwd:", [np.asarray(t) for t in jf])',
    ],
}
_PLAIN_DERIVE["grad_remat"] = _PLAIN_DERIVE["grad"]


def _print_values() -> list[str]:
    return [
        "  for i, o in enumerate(outs):",
        '    print(f"out[{i}] shape={o.shape} dtype={o.dtype} sharding={o.sharding.spec}")',
        '    print("  device blocks:", [(s.device.id, s.data.shape) for s in o.addressable_shards])',
        "    unreduced = hasattr(jax, 'typeof') and getattr(jax.typeof(o).sharding.spec, 'unreduced', None)",
        "    print('unreduced: the blocks are the parts of the sum' if unreduced else np.asarray(o))",
    ]


def to_python(p: Program, title: str = "", mode: str = "jit") -> str:
    """A standalone script (jax + numpy only) running `p` the way harness mode `mode`
    does (one of REPRO_MODES: jit, eager, gspmd, abstract, lowering, vmap, grad,
    grad_remat); it prints the outputs (per-device blocks where there are values) or the
    exception jax raised, and exits 1 on an exception."""
    args = args_src(p)
    body = remat_body(p, mode)
    lines = [
        f'"""{title or "shardfuzz reproducer"} (mode: {mode})"""',
        "import os",
        *FORCE_DEVICES,
        *JAX_IMPORTS,
        *SHARD_MAP_SHIM,
        *permute_guard(p),
        *x64_lines(p),
        *remat_lines(p),
        "",
        *mesh_src(p),
        *context_src(p),
        *inputs_src(p),
        *(inputs_fn_src(p) if mode in ("vmap", "vmap_spmd") else []),
        *closure_src(p),
        *place_src(p),
        *donate_src(p),
        "",
        body_source(p),
        "",
        *call_src(p, body),
        "try:",
        *_call_lines(p, mode, placed_args(p, args)),
        "except Exception as e:",
        '  print(f"{type(e).__name__}: {e}")',
        "  raise SystemExit(1)",
        "",
    ]
    return "\n".join(lines)
