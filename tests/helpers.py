"""Small builders for hand-written programs in tests, and the browser the page tests use."""

from __future__ import annotations

import os
import shutil

import pytest

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


def chromium(what: str) -> str:
    """The headless browser's path; without one, a skip (a failure under CI, which
    installs it) that says how to install it and what the test would `what`."""
    exe = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
    if exe is None:
        why = f"chromium is missing: install it (apt-get install -y chromium) to {what}"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return exe
