"""Evaluation records: one score per evaluated model, and the report written to a run directory."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

from redqueen.experiments._safe_paths import check_links, write_in
from redqueen.experiments.stats import Interval, bootstrap_ci, t_ci

if TYPE_CHECKING:
    from redqueen.experiments.evaluation._suite import Problem

#: Where a scored model came from.
SOURCES = ("population", "base", "baseline")


@dataclass(frozen=True)
class MemberScore:
    """Greedy pass@1 of one model (a population member, the bare base model or a baseline).

    Args:
        member: Member id, ``"base"``, or the baseline's label.
        role: The member's role (``teacher`` / ``student`` / ...), ``"base"`` or ``"baseline"``.
        source: One of :data:`SOURCES`.
        passed: Problems solved.
        total: Problems attempted.
        solved: Ids of the solved problems, so reports can be compared problem by problem.
    """

    member: str
    role: str
    source: str
    passed: int
    total: int
    solved: tuple[str, ...] = ()

    @property
    def pass_at_1(self) -> float:
        """Share of problems solved (0.0 when there were none)."""
        return self.passed / self.total if self.total else 0.0


@dataclass(frozen=True)
class Summary:
    """Population statistics over a set of members: the paper's mean / best / weakest."""

    n_members: int
    mean: float
    best: MemberScore
    weakest: MemberScore


def _bounds(interval: Interval | None) -> list[float] | None:
    """``[low, high]`` of an interval, as ``eval_<suite>.json`` holds it."""
    return None if interval is None else [interval.low, interval.high]


def summarize(scores: Sequence[MemberScore]) -> Summary | None:
    """Mean, best and weakest member of ``scores`` (``None`` when empty); ties go to the first."""
    if not scores:
        return None
    best = max(scores, key=lambda score: score.pass_at_1)
    weakest = min(scores, key=lambda score: score.pass_at_1)
    return Summary(len(scores), fmean(score.pass_at_1 for score in scores), best, weakest)


@dataclass(frozen=True)
class EvalReport:
    """Benchmark results of one run directory.

    Args:
        suite: Benchmark name.
        run_dir: The evaluated run directory.
        model: Base model name or path the adapters were loaded onto.
        problems: Ids of the attempted problems, in order.
        scores: One :class:`MemberScore` per evaluated model.
        truncated_prompts: Prompts cut (from the left) to fit the model's context window; they
            still count as attempted, so this says how far the benchmark was out of reach.
        seconds: Wall time of generation plus checking.
    """

    suite: str
    run_dir: str
    model: str
    problems: tuple[str, ...]
    scores: tuple[MemberScore, ...]
    truncated_prompts: int = 0
    seconds: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def population(self) -> tuple[MemberScore, ...]:
        """Scores of the run's living members."""
        return tuple(score for score in self.scores if score.source == "population")

    @property
    def base(self) -> MemberScore | None:
        """Score of the base model without adapter."""
        return next((score for score in self.scores if score.source == "base"), None)

    @property
    def baselines(self) -> tuple[MemberScore, ...]:
        """Scores of baseline adapters (e.g. a self-play run's members)."""
        return tuple(score for score in self.scores if score.source == "baseline")

    def roles(self) -> list[str]:
        """Roles present in the population, sorted."""
        return sorted({score.role for score in self.population})

    def summary(self, role: str | None = None) -> Summary | None:
        """Population mean / best / weakest, over one role or (``None``) every living member."""
        members = [score for score in self.population if role is None or score.role == role]
        return summarize(members)

    def mean_interval(self, role: str | None = None, *, confidence: float = 0.95) -> Interval | None:
        """Population mean pass@1 (one role or every living member) with a bootstrap CI over
        problems: each problem contributes the share of members that solved it."""
        members = [score for score in self.population if role is None or score.role == role]
        if not members or not self.problems:
            return None
        solved = [set(score.solved) for score in members]
        shares = [sum(pid in member for member in solved) / len(solved) for pid in self.problems]
        return bootstrap_ci(shares, confidence=confidence)

    def headline(self) -> Summary | None:
        """The summary benchmarks quote: over the students when the run has a student role
        (teachers are trained to propose tasks, not to solve them), else over every member."""
        return self.summary("student" if "student" in self.roles() else None)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (also what ``eval_<suite>.json`` holds)."""
        data = asdict(self)
        data["problems"] = list(self.problems)
        data["scores"] = [
            {**asdict(score), "solved": list(score.solved), "pass_at_1": score.pass_at_1}
            for score in self.scores
        ]
        summaries = {"all": self.summary()}
        summaries.update({role: self.summary(role) for role in self.roles()})
        intervals = {"all": _bounds(self.mean_interval())}
        intervals.update({role: _bounds(self.mean_interval(role)) for role in self.roles()})
        data["summary"] = {
            name: None
            if summary is None
            else {
                "n_members": summary.n_members,
                "mean": summary.mean,
                "mean_ci95": intervals[name],
                "best": {"member": summary.best.member, "pass_at_1": summary.best.pass_at_1},
                "weakest": {
                    "member": summary.weakest.member,
                    "pass_at_1": summary.weakest.pass_at_1,
                },
            }
            for name, summary in summaries.items()
        }
        data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalReport:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: If a required field is missing (the field is named).
        """
        try:
            scores = tuple(
                MemberScore(
                    member=row["member"],
                    role=row["role"],
                    source=row["source"],
                    passed=int(row["passed"]),
                    total=int(row["total"]),
                    solved=tuple(row.get("solved", ())),
                )
                for row in data["scores"]
            )
            return cls(
                suite=data["suite"],
                run_dir=data["run_dir"],
                model=data["model"],
                problems=tuple(data["problems"]),
                scores=scores,
                truncated_prompts=int(data.get("truncated_prompts", 0)),
                seconds=float(data.get("seconds", 0.0)),
                extra=dict(data.get("extra", {})),
            )
        except KeyError as error:
            raise ValueError(f"evaluation report: missing field {error.args[0]!r}") from None

    @classmethod
    def load(cls, path: str | Path) -> EvalReport:
        """Read an ``eval_<suite>.json`` file.

        Raises:
            ValueError: If the file is not valid JSON or lacks a field (the file is named).
        """
        path = Path(path)
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except (json.JSONDecodeError, ValueError) as error:
            raise ValueError(f"{path}: {error}") from None

    def to_markdown(self) -> str:
        """A member table (member, role, pass@1) followed by the population summaries."""
        lines = [
            f"## {self.suite}: greedy pass@1",
            "",
            f"Run `{self.run_dir}`, base model `{self.model}`, {len(self.problems)} problems"
            + (
                f" ({self.truncated_prompts} prompts cut to fit the context)"
                if self.truncated_prompts
                else ""
            )
            + ".",
            "",
        ]
        unrunnable = list(self.extra.get("unrunnable_in_sandbox") or ())
        if unrunnable:
            lines += [
                f"{len(unrunnable)} problems cannot pass in this sandbox (a module their tests "
                f"import is missing there): {', '.join(unrunnable)}.",
                "",
            ]
        lines += [
            "| member | role | pass@1 | solved |",
            "| --- | --- | ---: | ---: |",
        ]
        for score in self.scores:
            lines.append(
                f"| {score.member} | {score.role} | {score.pass_at_1:.3f} | {score.passed}/{score.total} |"
            )
        lines.append("")
        groups = [("population", self.summary())]
        if len(self.roles()) > 1:
            groups += [(role, self.summary(role)) for role in self.roles()]
        for name, summary in groups:
            if summary is None:
                continue
            interval = self.mean_interval(None if name == "population" else name)
            ci = "" if interval is None else f" (95% CI {interval.low:.3f}-{interval.high:.3f} over problems)"
            lines.append(
                f"- {name} ({summary.n_members} members): mean {summary.mean:.3f}{ci}, "
                f"best {summary.best.member} {summary.best.pass_at_1:.3f}, "
                f"weakest {summary.weakest.member} {summary.weakest.pass_at_1:.3f}"
            )
        baseline = summarize(self.baselines)
        if baseline is not None:
            lines.append(
                f"- baseline ({baseline.n_members} adapters): mean {baseline.mean:.3f}, "
                f"best {baseline.best.member} {baseline.best.pass_at_1:.3f}"
            )
        if self.base is not None:
            lines.append(f"- base model without adapter: {self.base.pass_at_1:.3f}")
        lines += _judged_markdown(self.extra)
        return "\n".join(lines) + "\n"

    def write(self, directory: str | Path) -> tuple[Path, Path]:
        """Write ``eval_<suite>.json`` and ``eval_<suite>.md`` into ``directory``; return both paths.

        Both are written from the folder's handle, never through a symbolic link.

        Raises:
            UnsafePathError: If either file is a link (checked before either is written).
        """
        names = (f"eval_{self.suite}.json", f"eval_{self.suite}.md")
        check_links(directory, *names)
        json_path = write_in(directory, names[0], (json.dumps(self.to_dict(), indent=2) + "\n").encode())
        md_path = write_in(directory, names[1], self.to_markdown().encode())
        return json_path, md_path


def judged_details(
    scores: Sequence[MemberScore],
    problems: Sequence[Problem],
    judged: Sequence[tuple[str, str | None]],
    groups: Callable[[Problem], Mapping[str, str]] | None,
) -> dict[str, object]:
    """The per-problem record of a judged suite, for a report's ``extra``.

    Args:
        scores: One score per model, in the order the judged answers come (model-major).
        problems: The problems (objects with ``id``), in order.
        judged: ``(status, parsed answer)`` per model and problem.
        groups: What to break scores down by per problem (``{"level": "2", "task": "code_o"}``).

    Returns:
        ``answers``: per model, one ``{"id", <groups>, "status", "answer"}`` per problem; ``statuses``: per
        model, how many answers were ``correct``, ``wrong`` and ``unparseable``; ``breakdown``
        (when ``groups`` is given): per model, group and value, ``[passed, total]``.
    """
    n = len(problems)
    answers: dict[str, list[dict[str, str | None]]] = {}
    statuses: dict[str, dict[str, int]] = {}
    breakdown: dict[str, dict[str, dict[str, list[int]]]] = {}
    for index, score in enumerate(scores):
        rows = judged[index * n : (index + 1) * n]
        answers[score.member] = [
            {"id": problem.id, **(groups(problem) if groups else {}), "status": status, "answer": answer}
            for problem, (status, answer) in zip(problems, rows, strict=True)
        ]
        counts = {"correct": 0, "wrong": 0, "unparseable": 0}
        for status, _ in rows:
            counts[status] = counts.get(status, 0) + 1
        statuses[score.member] = counts
        if groups is None:
            continue
        table: dict[str, dict[str, list[int]]] = {}
        for problem, (status, _) in zip(problems, rows, strict=True):
            for key, value in groups(problem).items():
                cell = table.setdefault(key, {}).setdefault(value, [0, 0])
                cell[0] += status == "correct"
                cell[1] += 1
        breakdown[score.member] = table
    details: dict[str, object] = {"answers": answers, "statuses": statuses}
    if groups is not None:
        details["breakdown"] = breakdown
    return details


def _judged_markdown(extra: Mapping[str, Any]) -> list[str]:
    """Status counts and the breakdown by group, when the suite judged answers one by one."""
    statuses = extra.get("statuses") or {}
    if not statuses:
        return []
    lines = ["", "| model | correct | wrong | unparseable |", "| --- | ---: | ---: | ---: |"]
    for member, counts in statuses.items():
        lines.append(
            f"| {member} | {counts.get('correct', 0)} | {counts.get('wrong', 0)} | "
            f"{counts.get('unparseable', 0)} |"
        )
    for member, table in (extra.get("breakdown") or {}).items():
        for key, cells in table.items():
            parts = [f"{value} {passed}/{total}" for value, (passed, total) in sorted(cells.items())]
            lines.append(f"- {member} by {key}: {', '.join(parts)}")
    return lines


def across_runs(reports: Sequence[EvalReport], *, confidence: float = 0.95) -> Interval | None:
    """Headline mean pass@1 over several runs (one per seed) with a Student t CI over runs.

    Each run contributes its headline mean (students when there are any), so the interval
    says how much the result moves from seed to seed; ``None`` when no run has members. A t
    interval keeps its coverage at the few seeds a study runs, where a percentile bootstrap
    over 5 seeds covers about 83%.
    """
    means = [summary.mean for summary in (report.headline() for report in reports) if summary is not None]
    return t_ci(means, confidence=confidence) if means else None
