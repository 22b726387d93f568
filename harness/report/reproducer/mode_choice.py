"""Which harness mode a reproducer runs in, and whether that mode applies to a program
(the harness reports it unsupported where it does not: then there is no reproducer).
"""

from __future__ import annotations

from oracles import predict
from oracles.prediction import Prediction
from programs.emit import REPRO_MODES, reproducer_mode
from programs.errors import NoReproducer
from programs.model import Program, is_float
from programs.points import DERIVATIVE_MODES, HESSIAN_MAX_ELEMENTS, float_elements, used_float_args

VALUE_MODES = ("jit", "eager", "gspmd", "smap", "multiprocess")  # the modes that compare per-device blocks


def divergence_mode(p: Program | None, kind: str, modes: str) -> str:
    """The mode a reproducer of one divergence (its kind and mode field) runs in: the
    divergence's first mode; for a mode disagreement (`modes` lists the modes that
    raised), the side that is wrong: a raising mode where the oracle predicts success,
    else the first mode that ran it without raising and applies to the program."""
    if kind != "mode_disagreement" or p is None:
        return reproducer_mode(modes)
    raised = modes.split(",")
    if predict(p, values=False).error is None:
        return reproducer_mode(modes)
    quiet = [m for m in ("abstract", "jit", "lowering", "eager", "gspmd", "smap", "vmap", "vmap_spmd", "grad", "grad_remat", "jvp",
                                "linearize", "hessian")
             if m not in raised and not applicable(p, m)]
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



def auto_axes(p: Program) -> list[str]:
    return [a for a in p.mesh.names if a not in p.manual_axes and p.mesh.axis_size(a) > 1]


def applicable(p: Program, mode: str) -> str:
    """Why the harness reports `mode` unsupported for `p` ('' when it runs it)."""
    if mode == "smap":
        form = p.smap_form()
        return f"no jax.smap form ({form})" if isinstance(form, str) else ""
    if mode == "vmap_spmd":
        if p.spmd_axis() is None:
            return "no free manual axis of size > 1 for spmd_axis_name"
        return "an invalid program (jax's error wording differs under vmap)" if p.defect is not None else ""
    if mode == "multiprocess" and (p.mesh.size % 2 or p.mesh.size > 8):
        return f"a mesh of {p.mesh.size} devices cannot span 2 processes x 4 devices evenly"
    if mode in DERIVATIVE_MODES:
        if not any(is_float(x.dtype) for x in p.inputs):
            return "no float argument"
        if mode == "hessian" and not used_float_args(p):
            return "no float argument an op reads"
        if mode == "hessian" and float_elements(p) > HESSIAN_MAX_ELEMENTS:
            return f"{float_elements(p)} float argument elements (a dense Hessian of at most {HESSIAN_MAX_ELEMENTS})"
    return ""


def batch_size(p: Program, mode: str) -> int:
    axis = p.spmd_axis() if mode == "vmap_spmd" else None
    return p.mesh.axis_size(axis) if axis else 2  # harness.run.modes.VMAP_BATCH


def prepare(p: Program, mode: str) -> Prediction:
    if mode not in REPRO_MODES:
        raise NoReproducer(f"no reproducer for mode {mode!r}; one of {', '.join(REPRO_MODES)}")
    why = applicable(p, mode)
    if why:
        raise NoReproducer(f"the {mode} mode does not apply to this program: {why}")
    values = mode not in ("abstract", "lowering")
    return predict(p, values=values)
