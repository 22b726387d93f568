"""Small builders for hand-written programs in tests."""

from __future__ import annotations

from programs.model import Input, Mesh, Op, Program, Spec


def P(*entries: object) -> Spec:
    out = []
    for e in entries:
        if e is None:
            out.append(None)
        elif isinstance(e, str):
            out.append((e,))
        else:
            out.append(tuple(e))  # type: ignore[arg-type]
    return Spec(tuple(out))


def prog(
    mesh: Mesh,
    inputs: list[Input],
    in_specs: list[Spec],
    body: list[Op],
    outputs: list[int],
    out_specs: list[Spec],
    check_vma: bool = True,
) -> Program:
    return Program(mesh, tuple(inputs), tuple(in_specs), tuple(body), tuple(outputs), tuple(out_specs), None, check_vma)


def op(kind: str, *operands: int, **params: object) -> Op:
    return Op.make(kind, tuple(operands), **params)  # type: ignore[arg-type]


def iota(*shape: int, dtype: str = "int32") -> Input:
    return Input(tuple(shape), dtype, "iota")
