"""Why a cell a program held was not checked: the cells a known divergence kept from
being checked in a mode (`CellLedger.block`), and those a crash or hang in another mode
kept from running where the entry says jax fails too (`CellLedger.stop`). The summary
gives them as why a cell no program checked was not checked (harness/campaign/finish.py
`cell_checks`)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.campaign.cells import CellLedger, by_error, ops_cells
from harness.campaign.known_queries import KnownQueries
from harness.judge.check import CheckResult
from harness.judge.compare import DivergenceKind
from harness.judge.known import Explained, KnownDivergence, explains

Types = list[tuple[tuple[int, ...], str]]


def entry_cells(e: KnownDivergence, res: CheckResult, types: Types, cells: frozenset[str]) -> frozenset[str]:
    """The cells of the ops a known entry's op features hold on in `res`'s program (`cells`,
    the program's own, for an entry scoped by the program alone), by error for an invalid
    program: what the entry blocks when jax diverged as it explains."""
    p = res.program
    own = ops_cells(p, e.feature_ops(p, res.prediction.value_types), types) if e.op_features else cells
    return own if res.prediction.error is None else by_error(own)


def block_known(ledger: CellLedger, known: KnownQueries, res: CheckResult, explained: Sequence[Explained],
                checked: list[str], types: Types, cells: frozenset[str]) -> None:
    """The cells a mode did not check because jax diverged there as a known entry
    explains (every divergence of that mode explained): those of the ops the entry's
    op features hold on (`cells`, the program's own as the run counts them, for an
    entry scoped by the program alone)."""
    p, valid = res.program, res.prediction.error is None
    mine: dict[str, frozenset[str]] = {}  # entry id -> the cells it blocks in this program
    raised = []
    for m in {o.mode for o in res.observations if o.mode != "probe"} - set(checked):
        here = [x.entry for x in explained if x.divergence.mode == m]
        if not here or any(e is None for e in here):
            continue
        raised.append(m)
        # a crash or hang names no op: every entry that explains it (each says jax may
        # crash or hang at its own ops: two all_to_all entries, a negative split_axis and
        # a negative concat_axis, both in one program) blocks its ops' cells, not only
        # the entry `find` put it on
        for x in explained:
            if x.divergence.mode == m and x.divergence.kind in (DivergenceKind.CRASH, DivergenceKind.TIMEOUT):
                here += [e for e in known.entries
                         if e not in here and explains(e, x.divergence, p, res.prediction, known.jax_version)]
        for e in here:
            assert e is not None
            if e.id not in mine:
                mine[e.id] = entry_cells(e, res, types, cells)
            ledger.block(mine[e.id], m, e.id)
    if valid and raised:
        # jax raised at the first op at fault, and never reached the others a known entry
        # says it raises at in that mode: their cells are blocked by their entries as
        # well (no program checks them there; the program without the bugs drops or
        # rewrites them)
        for e, ms, ops in known.raise_entries(p, res.prediction.value_types, raised):
            if e.op_features:  # (an entry of program features alone names no op)
                for m in ms:
                    ledger.block(ops_cells(p, ops, types), m, e.id)
    if not valid and raised:
        # so with an invalid program: the ops another entry says jax answers with
        # another error, or none, at in that mode (the value tier claimed their cells
        # by error there as blocked by it: harness/campaign/plan.py `Planner.claim`) are
        # blocked by it
        assert res.prediction.error is not None  # (invalid: the oracle predicts an error)
        kind = res.prediction.error.kind.value
        for e in known.entries:
            for m, ops in known.error_trouble(p, res.prediction.value_types, raised, kind, (e,)).items():
                ledger.block(by_error(ops_cells(p, ops, types)), m, e.id)


def block_stopped(ledger: CellLedger, known: KnownQueries, res: CheckResult, explained: Sequence[Explained],
                  unrun: set[str], types: Types, cells: frozenset[str]) -> None:
    """The modes a crash or hang in another mode kept from running (`unrun`), where a
    known entry that explains it says jax fails in them too (a crash, hang or raise
    signature naming the mode): its ops' cells there are given that as why no program
    checked them (the program without the bug rewrites or drops those ops)."""
    if not unrun:
        return
    for x in explained:
        d = x.divergence
        if d.kind not in (DivergenceKind.CRASH, DivergenceKind.TIMEOUT):
            continue
        for e in known.entries:
            if not explains(e, d, res.program, res.prediction, known.jax_version):
                continue
            for m in unrun:
                if any(pat.kind in ("crash", "timeout", "unexpected_error") and (pat.modes is None or m in pat.modes)
                       for pat in e.patterns):
                    ledger.stop(entry_cells(e, res, types, cells), m, e.id, d.mode)
