"""Check one program: predict, run it in each mode, compare. The unit of a fuzz run."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from harness.judge.compare import Divergence, DivergenceKind, compare, compare_modes
from harness.judge.compare_outputs import compiler_layout
from harness.run.modes import MODES, PROBE_FOR, Observation
from harness.run.modes_direct import probe_values
from oracles import predict, trace
from oracles.interpreter import tolerance
from oracles.prediction import Prediction
from programs.graph import cone, drop_unused_inputs, sliced_ops
from programs.model import Program
from programs.points import DERIVATIVE_MODES


@dataclass(frozen=True, eq=False)
class CheckResult:
    program: Program
    prediction: Prediction
    observations: tuple[Observation, ...]
    divergences: tuple[Divergence, ...]
    probed: tuple[int, ...] = ()  # the batch members whose probe runs `localise_values` used


def evaluate(p: Program, observations: list[Observation], pred: Prediction | None = None) -> CheckResult:
    """Compare observations (from any process) against the oracle's prediction."""
    if pred is None:
        # the abstract and lowering modes compare no values: skip predicting them
        pred = predict(p, values=any(m not in MODES or MODES[m].values for m in {o.mode for o in observations}))
    divs: list[Divergence] = []
    for o in observations:
        divs.extend(compare(p, pred, o))
    divs = _localise(divs)
    divs.extend(compare_modes(p, observations))
    # say which modes agree with the oracle, so a one-transformation bug stands out
    wrong = {m for d in divs for m in d.mode.split(",")}
    agree = sorted(o.mode for o in observations if o.status in ("ok", "error") and o.mode not in wrong)
    if agree and divs:
        divs = [replace(d, message=f"{d.message} [modes agreeing with the oracle: {', '.join(agree)}]") for d in divs]
    return CheckResult(p, pred, tuple(observations), tuple(divs))


def _raised(d: Divergence) -> str:
    """jax's exception and the start of its message, as a divergence quotes them."""
    text = d.message.split(" jax raised ", 1)[-1]
    return text[:120]


def _localise(divs: list[Divergence]) -> list[Divergence]:
    """An error jax raised only when lowering (jit compiles the whole body at once) is put
    on the op that the eager mode, which runs op by op, raised the same error at: the
    same exception with the same message (a different error of the same class, another
    mode's bug, says nothing about where this one arose)."""
    at_op = {  # (an error before the first op, at the inputs, is some other error)
        _raised(d): d.where.split("->")[0]
        for d in divs
        if d.kind == DivergenceKind.UNEXPECTED_ERROR and not d.where.startswith(("lowering", "read_output", "input"))
    }
    out = []
    for d in divs:
        if d.kind == DivergenceKind.UNEXPECTED_ERROR and d.where.startswith("lowering->"):
            exc = d.where.split("->")[1]
            if _raised(d) in at_op:
                d = replace(d, where=f"{at_op[_raised(d)]}->{exc}")
        out.append(d)
    return out


@dataclass(frozen=True, eq=False)
class ProbeRun:
    """A run that puts value divergences on an op: `mode` (a probe mode) on `program`,
    the checked program's batch member `member` (`Program.member`; 0 is the program
    itself). A vmap divergence in members other than 0 needs its own member's probe:
    member 0's inputs may hide the bug (a rank-0 iota there is all zeros)."""

    mode: str
    program: Program
    member: int = 0
    # for each op of `program`'s body, its index in the checked program's (None: the same
    # body): a probe runs the body cut to the outputs with a wrong value (`_probed`)
    ops: tuple[int, ...] | None = None


def _members(d: Divergence) -> tuple[int, ...]:
    """The batch members whose values a divergence says went wrong (an unbatched mode's
    are the program's own inputs, member 0's)."""
    return d.members or (0,)


def probe_mode(res: CheckResult) -> ProbeRun | None:
    """The next probe run `res` needs, None when its value divergences need no more.
    The first is member 0's unless every value divergence is a vmapped one that leaves
    member 0 out; after it, one run for the first wrong member of each divergence no
    probed member shows. The probe for member 0 runs the body as the first of jit,
    eager, gspmd whose values went wrong does (a probe runs the body the way that mode
    does), else as jit does (a transformed mode's wrong value: the untransformed body
    may still show the op); on a mixed mesh it runs eagerly."""
    values = [d for d in res.divergences if d.kind == DivergenceKind.VALUE]
    left = [d for d in values if not set(_members(d)) & set(res.probed)]
    if not left:
        return None
    member = 0 if not res.probed and any(0 in _members(d) for d in values) else min(_members(left[0]))
    p, ops = _probed(res.program.member(member), values)
    if compiler_layout(res.program):
        # a mixed mesh: under jit the compiler lays each probed value out along the Auto
        # axes as it chooses, so only the eager probe gives each device's own block
        return ProbeRun(PROBE_FOR["eager"], p, member, ops)
    wrong = {d.mode for d in values} if member == 0 else set()
    return ProbeRun(next((PROBE_FOR[m] for m in ("jit", "eager", "gspmd") if m in wrong), PROBE_FOR["jit"]), p, member, ops)


def _probed(p: Program, values: list[Divergence]) -> tuple[Program, tuple[int, ...] | None]:
    """The program a probe runs for the value divergences `values` of `p`, and its ops'
    indices in `p.body` (None: `p` itself). Each divergence is put on an op of its
    output's cone (`localise_values`), so the probe runs `p` cut to those outputs, its
    unused arguments dropped: an eager probe dispatches every op and moves every
    argument, so the uncut body of a large program costs seconds. A divergence naming
    no output (grad's <u, J v>) is put on the first wrong op anywhere: the whole body
    then."""
    if any(d.output is None or d.output >= len(p.outputs) for d in values) or p.wrap is not None:
        return p, None
    keep = tuple(sorted({d.output for d in values if d.output is not None}))
    q, ops = sliced_ops(p, keep)
    if len(ops) == len(p.body) and len(keep) == len(p.outputs):
        return p, None
    return drop_unused_inputs(q), ops  # (a value divergence: `p` is valid)


def localise_values(res: CheckResult, probe: Observation) -> CheckResult:
    """Re-label value divergences with the kind of the first body op whose per-device
    values (from the probe run `probe_mode(res)` names) differ from the oracle's, among
    the ops the divergent output depends on (its cone: a wrong op elsewhere in the body,
    a known bug's say, is not this output's culprit); the output's producer is only
    where the damage shows. A probe of one batch member re-labels the divergences that
    member shows, and all of them when it is the first probe run (the op that goes wrong
    first is a property of the program). The result records the member as probed."""
    p = res.program
    run = probe_mode(res)
    if run is None:
        return res
    done = replace(res, probed=res.probed + (run.member,))
    if probe.status != "ok" or not probe.facts.get("values"):
        return done
    probed, back = run.program, (lambda v: v)
    if run.ops is not None:
        n_in, ops = len(p.inputs), run.ops
        if list(probe.facts["values"]) == list(probe_values(run.program)):
            q_in = len(run.program.inputs)
            back = lambda v: n_in + ops[v - q_in]  # noqa: E731 - (the cut body's values, renumbered as in `p`)
        else:  # (a probe of the whole body, saved before probes were cut: qualify --rejudge)
            probed = p.member(run.member)
    st, err = trace(probed)
    if err is not None:
        return done
    wrong: list[int] = []  # the probed values that differ, in body order (numbered as in `p`)
    for v, o in zip(probe.facts["values"], probe.outputs):
        want = st.values[v]
        blocks = o.device_values or {}
        for c in p.mesh.coords():
            got = blocks.get(c)
            w = want[c]
            if got is not None and w.ndim == 0 and got.shape == (1,):
                got = got.reshape(())  # (the probe returns a rank-0 value as a (1,) block)
            if got is None or got.shape != w.shape:
                wrong.append(v)
                break
            g64, w64 = got.astype(np.float64), w.astype(np.float64)
            exact, rtol, atol, unchecked = tolerance(st, v)
            if unchecked is not None:  # (the elements with no predicted value: not compared)
                keep = ~unchecked[c].reshape(w.shape)
                g64, w64 = g64[keep], w64[keep]
            same = np.array_equal(g64, w64) if exact else np.isinf(atol) or np.allclose(g64, w64, rtol=rtol, atol=atol)
            if not same:
                wrong.append(v)
                break
    wrong = [back(v) for v in wrong]
    if not wrong:
        return done

    def culprit(d: Divergence) -> int | None:
        if d.output is None or d.output >= len(p.outputs):
            return wrong[0] - len(p.inputs)  # (no one output: the first wrong op)
        mine = cone(p, p.outputs[d.output])
        first = next((v for v in wrong if v - len(p.inputs) in mine), None)
        return None if first is None else first - len(p.inputs)

    # the op that goes wrong first is a property of the program, not of the mode: value
    # divergences of the other modes (which only see the outputs, or for grad only
    # <u, J v>) are put on it too, so one bug is one bucket per mode, not one per output op
    def relabel(d: Divergence) -> Divergence:
        if d.kind != DivergenceKind.VALUE or (res.probed and run.member not in _members(d)):
            return d
        i = culprit(d)
        if i is None:
            return d
        c = p.body[i].kind
        if d.mode in DERIVATIVE_MODES:
            return replace(d, where=f"{d.where.split(':')[0]}:{c}", op_index=i)
        return replace(d, where=c, op_index=i)

    return replace(done, divergences=tuple(relabel(d) for d in res.divergences))


def check_program(p: Program, modes: tuple[str, ...]) -> CheckResult:
    """Everything in this process (no crash safety): for tests, replay and explain."""
    res = evaluate(p, [MODES[m].run(p) for m in modes])
    while (probe := probe_mode(res)) is not None:
        res = localise_values(res, MODES[probe.mode].run(probe.program))
    return res


def check_in_pool(pool: Any, p: Program, modes: tuple[str, ...]) -> CheckResult:
    """One program start to finish in a worker pool (harness.run.pool.Pool; None: in this
    process): submit, drain, evaluate, and put value divergences on the op that goes
    wrong. The one way replay, the corpus, minimization and the CLI check a program."""
    if pool is None:
        return check_program(p, modes)
    pool.submit(p, modes)
    (c,) = pool.drain()
    res = evaluate(c.program, c.observations)
    while (probe := probe_mode(res)) is not None:
        pool.submit(probe.program, (probe.mode,))
        res = localise_values(res, pool.drain()[0].observations[0])
    return res
