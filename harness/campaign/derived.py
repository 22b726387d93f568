"""A run's derived programs: programs the results give, checked like any other. Known
divergences explain only what they cause: the program without a checked program's known
bugs (each entry's rewrite, or the outputs no buggy op reaches: harness/judge/known.py
`derived_program`) is checked too, and so is a drawn program's part XLA:CPU can run
(harness/campaign/plan.py `cpu_runnable_part`). They are counted in `derived_checked`,
not `programs_run`, and placed at their parent in the program stream."""

from __future__ import annotations

from collections.abc import Container, KeysView, Sequence

from harness.campaign.cells import checked_cells
from harness.judge.check import CheckResult
from harness.judge.compare import DivergenceKind
from harness.judge.known import Explained, KnownDivergence, derived_program
from programs.model import Program
from programs.serialize import program_id


class DerivedQueue:
    """The derived programs waiting to be planned (`pending`, with their modes), the
    cells each checks that its parent does not (`new`: a rewrite's), and the modes each
    was queued in (`modes`, by id: every derived program of the run). `stream_index`:
    the run's program id -> first position in the stream, which a derived program takes
    from its parent."""

    def __init__(self, stream_index: dict[str, int]) -> None:
        self.pending: list[tuple[Program, tuple[str, ...]]] = []
        self.new: dict[str, frozenset[str]] = {}
        self.modes: dict[str, set[str]] = {}
        self.stream_index = stream_index

    @property
    def ids(self) -> KeysView[str]:
        return self.modes.keys()

    def queue(self, q: Program, parent: Program, modes: tuple[str, ...]) -> None:
        """Check `q`, a program derived from `parent`, in `modes`."""
        qid = program_id(q)
        self.modes.setdefault(qid, set()).update(modes)
        new = checked_cells(q) - checked_cells(parent)
        if new:
            self.new[qid] = self.new.get(qid, frozenset()) | new
        self.stream_index.setdefault(qid, self.stream_index.get(program_id(parent), -1))
        self.pending.append((q, modes))

    def ran(self, q: Program, modes: tuple[str, ...]) -> None:
        """`q` was planned in `modes` (besides those it was queued in: a rewrite's new
        cells in the run's other modes)."""
        self.modes.setdefault(program_id(q), set()).update(modes)

    def per_mode(self, res: CheckResult, explained: Sequence[Explained], unrun: set[str], checked: Container[str],
                 run_modes: tuple[str, ...]) -> None:
        """The program without its known bugs, per mode: each mode's derived program
        drops only the bugs of the entries that explained its own divergences (an entry
        for a grad-only bug at an op does not cost vmap the rest of the program), and
        runs in the modes whose entries give that same program. A mode a crash or hang
        kept from running (`unrun`) goes with the mode it happened in. A rewrite checks
        the rewritten program whole: in every mode the program ran in. `checked`: the ids
        of the programs checked already (not derived again)."""
        p = res.program
        ran = tuple(dict.fromkeys(o.mode for o in res.observations if o.mode != "probe"))
        per_mode: dict[str, dict[str, KnownDivergence]] = {}
        for x in explained:
            # (a mode disagreement is put on the entry of the program's first other
            # divergence, whatever its mode: the modes' own divergences say which is theirs)
            if x.entry is not None and x.divergence.kind != DivergenceKind.MODE_DISAGREEMENT:
                for m in x.divergence.mode.split(","):
                    if m in ran:
                        per_mode.setdefault(m, {})[x.entry.id] = x.entry
        for o in res.observations:
            if o.status in ("crash", "timeout") and o.mode in per_mode:
                for m in unrun:
                    per_mode.setdefault(m, {}).update(per_mode[o.mode])
        groups: dict[str, tuple[Program, set[str]]] = {}
        for m, entries in per_mode.items():
            q = derived_program(list(entries.values()), p, res.prediction)
            if q is None or program_id(q) in checked:
                continue
            modes = groups.setdefault(program_id(q), (q, set()))[1]
            modes.add(m)
            if any(e.rewrite is not None for e in entries.values()):
                modes.update(ran)
        for q, modes in groups.values():
            # a derived program already queued runs again only in the modes it was not
            # queued in: a costly mode's late part (eager) raises long after the other
            # modes' part gave the same derived program
            new = modes - self.modes.get(program_id(q), set())
            if new:
                self.queue(q, p, tuple(m for m in dict.fromkeys((*run_modes, *ran)) if m in new))
