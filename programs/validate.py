"""What a program read from a file must satisfy before anything runs it.

`serialize.program_from_dict` checks the JSON's structure (fields, types, op arity,
operand numbering); `validate` checks the meaning: a mesh jax can build, shapes and
dtypes that exist, names that resolve. A program that fails here is bad input (the CLI
turns `ProgramFormatError` into one line and exit code 2), never a jax divergence.

Some wrong names are deliberate: the fuzzer draws invalid programs with exactly one
named defect (`strategies/invalid.py`), whose error the oracle predicts. A spec naming
an axis that is not in the mesh is such a program when its recorded defect is the one
that puts it there (`EXPLAINED_BY`); without that defect it is a mistake in the file. A
collective over an axis that is not in the mesh is left alone: jax must raise an unbound
axis name error, which the oracle predicts with or without a defect (the curated
`known/unbound_assert` case has none). Nothing else checked here is ever deliberate.

`check_fits(p, n)` is the one check that depends on the machine (how many devices jax
has); the harness calls it before running a program. No jax here.
"""

from __future__ import annotations

from programs.errors import ProgramFormatError
from programs.forms import ARG_FORMS, forms_of
from programs.model import AXIS_TYPES, DTYPES, SCALAR_DTYPES, Op, Program, Spec
from programs.ops import CUSTOMS, SYNTAX, TRANSFORM_STEP_KINDS, TRANSFORMS

# Where a name that is not a mesh axis may appear, and the defects (strategies/invalid.py
# DEFECTS; a test checks the names) that put it there on purpose.
EXPLAINED_BY: dict[str, frozenset[str]] = {
    "in_specs": frozenset({"in_spec_unknown_axis"}),
    "out_specs": frozenset({"out_spec_unknown_axis"}),
}

DEVICES_FLAG = "XLA_FLAGS=--xla_force_host_platform_device_count"


def _fail(msg: str) -> ProgramFormatError:
    return ProgramFormatError(msg)


def _check_mesh(p: Program) -> None:
    m = p.mesh
    if not m.names:
        raise _fail("mesh: has no axes; give it at least one (names and sizes, e.g. [\"x\"], [2])")
    seen: set[str] = set()
    for name in m.names:
        if not name:
            raise _fail("mesh.names: an axis name is empty; name every axis")
        if name in seen:
            raise _fail(f"mesh.names: axis {name!r} appears twice in {list(m.names)}; give each mesh axis its own name")
        seen.add(name)
    for name, size in zip(m.names, m.sizes):
        if size < 1:
            raise _fail(f"mesh.sizes: axis {name!r} has size {size}; every mesh axis needs size >= 1")
    for name, t in zip(m.names, m.axis_types):
        if t not in AXIS_TYPES:
            raise _fail(f"mesh.axis_types: axis {name!r} has type {t!r}; use one of {AXIS_TYPES}")


def _check_shape(shape: object, where: str) -> None:
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and not isinstance(n, bool) for n in shape):
        raise _fail(f"{where}: expected a list of integers, got {shape!r}")
    bad = [n for n in shape if n < 0]
    if bad:
        raise _fail(f"{where}: {list(shape)} has a negative dimension ({bad[0]}); sizes must be >= 0")


def _check_dtype(dtype: object, where: str) -> None:
    if dtype not in DTYPES:
        raise _fail(f"{where}: dtype {dtype!r} is not a dtype shardfuzz knows; use one of {DTYPES}")


def _check_spec_axes(p: Program, specs: tuple[Spec, ...], which: str) -> None:
    mesh = set(p.mesh.names)
    for i, s in enumerate(specs):
        for a in s.axes():
            if a not in mesh and p.defect not in EXPLAINED_BY[which]:
                raise _fail(
                    f"{which}[{i}]={s!r} names {a!r}, which is not a mesh axis (mesh axes: {list(p.mesh.names)}); "
                    f"name a mesh axis, or record defect {sorted(EXPLAINED_BY[which])[0]!r} if the mistake is deliberate"
                )


def _check_op(p: Program, op: Op, where: str) -> None:
    mesh = set(p.mesh.names)
    params = op.param_dict
    if "dtype" in params:
        _check_dtype(params["dtype"], f"{where}.params.dtype")
    if op.kind == "const":
        _check_shape(op.p("shape"), f"{where}.params.shape")
    axes = params.get("axes")
    if "axes" in params:
        if not isinstance(axes, tuple) or not all(isinstance(a, str) for a in axes):
            raise _fail(f"{where}.params.axes: expected a list of axis names, got {axes!r}")
    if op.kind == "shard_map":
        inner_axes = op.p("inner_axes")
        if not isinstance(inner_axes, tuple) or not all(isinstance(a, str) for a in inner_axes):
            raise _fail(f"{where}.params.inner_axes: expected a list of axis names, got {inner_axes!r}")
        for a in inner_axes:
            if a not in mesh:
                raise _fail(f"{where}.params.inner_axes: {a!r} is not a mesh axis (mesh axes: {list(p.mesh.names)})")
        inner = op.p("inner")
        if inner not in SYNTAX or inner == "shard_map" or SYNTAX[str(inner)].arity != 1:
            raise _fail(f"{where}.params.inner: {inner!r} is not an op of one operand (e.g. 'psum', 'neg')")
        pairs = op.p("inner_params")
        if not isinstance(pairs, tuple) or not all(isinstance(kv, tuple) and len(kv) == 2 and isinstance(kv[0], str) for kv in pairs):
            raise _fail(f"{where}.params.inner_params: expected a list of [name, value] pairs, got {pairs!r}")
        _check_op(p, op.inner_op(), f"{where} (inner {inner})")
    if op.kind == "transform":
        _check_transform(p, op, where)
    if "forms" in params:
        _check_forms(op, where)


def _check_forms(op: Op, where: str) -> None:
    """An op's `forms`: (argument, form) pairs naming one of its parameters and a form of
    programs/forms.py ARG_FORMS (an array only of groups of one size)."""
    forms = op.p("forms")
    ok = isinstance(forms, tuple) and all(isinstance(kv, tuple) and len(kv) == 2 and kv[0] in ARG_FORMS and kv[1] in ARG_FORMS[kv[0]]
                                          and op.p(kv[0]) is not None for kv in forms)
    if not ok:
        raise _fail(f"{where}.params.forms: expected [argument, form] pairs, an argument among {sorted(ARG_FORMS)} the op has "
                    f"and its form one of {ARG_FORMS}, got {forms!r}")
    groups = op.p("groups")
    if forms_of(op).get("groups") == "array" and isinstance(groups, tuple) and len({len(g) for g in groups if isinstance(g, tuple)}) > 1:
        raise _fail(f"{where}.params.forms: groups of different sizes {groups!r} are no NumPy array; write them as a list")


def _check_transform(p: Program, op: Op, where: str) -> None:
    """A transform's transform and custom names, and its steps: a chain of one-operand
    ops of TRANSFORM_STEP_KINDS (mul: of the running value by itself or by the operand),
    each with exactly its syntax's parameters."""
    if op.p("transform") not in TRANSFORMS:
        raise _fail(f"{where}.params.transform: {op.p('transform')!r} is not one of {TRANSFORMS}")
    if op.p("custom") not in CUSTOMS:
        raise _fail(f"{where}.params.custom: {op.p('custom')!r} is not one of {CUSTOMS}")
    raw = op.p("steps")
    ok = isinstance(raw, tuple) and len(raw) >= 1 and all(
        isinstance(t, tuple) and len(t) == 3 and isinstance(t[0], str) and isinstance(t[1], tuple)
        and all(isinstance(o, int) and not isinstance(o, bool) for o in t[1]) and isinstance(t[2], tuple)
        and all(isinstance(kv, tuple) and len(kv) == 2 and isinstance(kv[0], str) for kv in t[2])
        for t in raw)
    if not ok:
        raise _fail(f"{where}.params.steps: expected a non-empty list of [kind, [operands], [[name, value], ...]], got {raw!r}")
    for i, st in enumerate(op.steps()):
        w = f"{where}.params.steps[{i}]"
        if st.kind not in TRANSFORM_STEP_KINDS:
            raise _fail(f"{w}: {st.kind!r} is not a step kind; use one of {TRANSFORM_STEP_KINDS}")
        want = (i, i) if st.kind == "mul" else (i,)
        if st.operands[:1] != (i,) or len(st.operands) != len(want) or (st.kind == "mul" and st.operands[1] not in (0, i)):
            raise _fail(f"{w}.operands={list(st.operands)}: step {i} reads value {i} (the previous step's, 0 the operand)"
                        + (f", then value {i} or 0" if st.kind == "mul" else ""))
        syn = SYNTAX[st.kind]
        names = {k for k, _ in st.params}
        missing, unknown = set(syn.params) - names, names - set(syn.params) - (set(syn.optional) - {"wrap"})
        if missing or unknown:
            raise _fail(f"{w}: {st.kind} params missing {sorted(missing)}, unknown {sorted(unknown)}")
        _check_op(p, st, w)


def validate(p: Program) -> None:
    """Raise ProgramFormatError (one line: where, what, the fix) unless `p` is a program
    shardfuzz can run and judge: a valid one, or an invalid one whose mistakes are the
    kind its recorded defect makes."""
    _check_mesh(p)
    for i, x in enumerate(p.inputs):
        _check_shape(x.shape, f"inputs[{i}].shape")
        _check_dtype(x.dtype, f"inputs[{i}]")
    for i, op in enumerate(p.body):
        _check_op(p, op, f"body[{i}]")
    _check_spec_axes(p, p.in_specs, "in_specs")
    _check_spec_axes(p, p.out_specs, "out_specs")
    if p.axis_names is not None:
        if not p.axis_names:
            raise _fail("program.axis_names: is empty (jax reads that as every mesh axis); write null for all axes")
        for a in p.axis_names:
            if a not in p.mesh.names:
                raise _fail(
                    f"program.axis_names: {a!r} is not a mesh axis (mesh axes: {list(p.mesh.names)}); "
                    "list only mesh axes, or write null for all of them"
                )
    if p.defect is not None and not isinstance(p.defect, str):
        raise _fail(f"program.defect: expected a defect name or null, got {p.defect!r}")
    if p.wrap is not None:
        _check_wrap(p)
    _check_edges(p)
    _check_form(p)


def _check_edges(p: Program) -> None:
    """Placements, closures, effects and donation (programs/model.py `Place`, `CLOSURES`,
    `Effect`, `Program.donate`): each argument's placement a sharding jax can make of it,
    a closed-over argument with in_spec P(), effects reading plain values."""
    mesh = p.outer_mesh()
    for i, x in enumerate(p.inputs):
        w = f"inputs[{i}]"
        if x.place is not None:
            pl = x.place
            if pl.how == "scalar":
                if x.shape != () or x.dtype not in SCALAR_DTYPES or p.x64:
                    raise _fail(f"{w}.place: a Python scalar is a rank-0 {'/'.join(SCALAR_DTYPES)} argument of a program "
                                f"without float64, not {x.dtype}{list(x.shape)}; drop the placement")
            else:
                s = pl.spec
                if s.kind != "P" or s.unreduced or s.reduced:
                    raise _fail(f"{w}.place.spec={s!r}: a placement is a plain PartitionSpec; write P(...)")
                axes = s.axes()
                bad = [a for a in axes if a not in mesh.names]
                dup = len(set(axes)) != len(axes)
                if bad:
                    raise _fail(f"{w}.place.spec={s!r}: names {bad}, not an axis of the mesh {list(mesh.names)}; name mesh axes only")
                if dup or len(s.entries) > len(x.shape):
                    raise _fail(f"{w}.place.spec={s!r}: {'names an axis twice' if dup else 'has more entries than'} the argument "
                                f"{list(x.shape)} {'' if dup else 'has dimensions'}; one entry per dimension, each mesh axis once")
                for d, e in enumerate(s.entries):
                    if e and x.shape[d] % mesh.group_size(e):
                        raise _fail(f"{w}.place.spec={s!r}: mesh axes {e} (size {mesh.group_size(e)}) do not divide dimension {d} "
                                    f"of size {x.shape[d]}; place it otherwise")
                if pl.how == "reshard" and any(mesh.axis_type(a) != "explicit" for a in axes):
                    raise _fail(f"{w}.place: jax.sharding.reshard takes Explicit axes only, {s!r} names "
                                f"{[a for a in axes if mesh.axis_type(a) != 'explicit']}; use device_put")
        if x.closure is not None:
            given = p.in_specs[i] if i < len(p.in_specs) else None
            if given != Spec(()):
                raise _fail(f"{w}.closure={x.closure!r}: a value the body closes over has in_spec P() (whole on every device), "
                            f"not {given!r}")
            if x.closure == "numpy" and x.place is not None:
                raise _fail(f"{w}: a NumPy constant the body closes over has no placement; drop one")
    if any(x.closure is not None for x in p.inputs) and len(p.in_specs) != len(p.inputs):
        raise _fail("program.in_specs: with closed-over arguments, in_specs has one spec per argument (P() for each closed one)")
    if p.effects and p.defect is not None:
        raise _fail("program.effects: an invalid program (a defect) has no effects; drop them")
    for i in p.donate:
        if p.inputs[i].closure == "numpy":
            raise _fail(f"program.donate: argument {i} is a NumPy constant the body closes over, not an argument of the call")


def _check_form(p: Program) -> None:
    """One spec for every argument / output (`form` "single") needs them all equal; in_specs
    left out ("omitted") are what jax infers (`Program.inferred_in_specs`), so the
    program says what runs."""
    if p.form.in_specs == "omitted" and p.in_specs != p.inferred_in_specs():
        raise _fail(f"program.form.in_specs='omitted': program.in_specs={list(p.in_specs)} must be what jax infers from the "
                    f"arguments, {list(p.inferred_in_specs())} (each resharded argument's in_spec, else P())")
    for which, specs in (("in_specs", p.in_specs), ("out_specs", p.out_specs)):
        if getattr(p.form, which) == "single" and len(set(specs)) > 1:
            raise _fail(f"program.form.{which}='single' writes one spec for every {'argument' if which == 'in_specs' else 'output'}, "
                        f"but program.{which} differ ({list(specs)}); make them equal or use 'tuple'")


def _check_wrap(p: Program) -> None:
    """auto_axes / explicit_axes around the call: mesh axes of the inner type, the mesh
    taken from jax.set_mesh, one spec per output (auto_axes) or argument (explicit_axes)
    naming only axes Explicit where the wrapper reshards (outside for auto_axes, inside for
    explicit_axes)."""
    inner = "auto" if p.wrap == "auto_axes" else "explicit"
    if not p.wrap_axes or any(a not in p.mesh.names or p.mesh.axis_type(a) != inner for a in p.wrap_axes):
        raise _fail(f"program.wrap.axes={list(p.wrap_axes)}: {p.wrap} needs mesh axes that are {inner.capitalize()} in program.mesh "
                    "(the mesh inside the wrapper); name one or more of them")
    if not p.mesh_context:
        raise _fail(f"program.wrap: {p.wrap} around the call needs the mesh from jax.set_mesh; set mesh_context to true")
    n = len(p.out_specs) if p.wrap == "auto_axes" else len(p.inputs)
    if len(p.wrap_specs) != n or any(s.kind != "P" or s.unreduced or s.reduced for s in p.wrap_specs):
        raise _fail(f"program.wrap.specs: {p.wrap} needs {n} plain PartitionSpecs (one per "
                    f"{'output' if p.wrap == 'auto_axes' else 'argument'}), got {len(p.wrap_specs)}")
    mesh = p.outer_mesh() if p.wrap == "auto_axes" else p.mesh
    for i, s in enumerate(p.wrap_specs):
        bad = [a for a in s.axes() if a not in mesh.names or mesh.axis_type(a) != "explicit"]
        if bad:
            raise _fail(f"program.wrap.specs[{i}]={s!r}: names {bad}, not Explicit where {p.wrap} reshards; name only Explicit axes")


def check_fits(p: Program, n_devices: int, reproducer: bool = False) -> None:
    """The mesh must fit on the devices jax has (`n_devices`); `reproducer`: on the CPU
    devices an emitted reproducer forces (it cannot be given more)."""
    if p.mesh.size <= n_devices:
        return
    need = f"mesh {dict(zip(p.mesh.names, p.mesh.sizes))} needs {p.mesh.size} devices"
    if reproducer:
        raise _fail(f"{need} but a reproducer forces {n_devices} CPU devices; use a mesh of at most {n_devices} devices")
    raise _fail(
        f"{need} but jax here has {n_devices} CPU devices (shardfuzz forces 8 unless XLA_FLAGS asks for "
        f"more); use a smaller mesh, or run with {DEVICES_FLAG}={p.mesh.size}"
    )
