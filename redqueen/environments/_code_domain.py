"""The code domain: Absolute Zero's three task types on the sandboxed Python verifier.

A proposer writes a program ``f`` and its input(s); the sandbox runs it (twice, in separate
processes) and its outputs are the gold answers. ``code_o`` asks for the output, ``code_i`` for
an input giving the output (any such input is right), ``code_f`` for ``f`` itself from half of
the input/output pairs, judged on the hidden half. Prompts and parsing are those of
:mod:`redqueen.verifiers.formats`, the language ``tiny-coder`` was pretrained on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from redqueen.assets import tiny_coder_path
from redqueen.environments._domain import DOMAINS, Rejected, TaskMeasures
from redqueen.environments._instruments import MEASURE_KEYS, behaviour_cell, program_measures
from redqueen.environments.task_buffer import IDENTITY_TRIPLET, complexity_score, task_signature
from redqueen.verifiers import (
    MAX_INPUT_CHARS,
    MAX_OUTPUT_CHARS,
    MAX_SOURCE_CHARS,
    TASK_TYPES,
    CodeTask,
    Triplet,
    check_answers,
    complexity,
    make_task,
    validate_program,
)
from redqueen.verifiers.formats import (
    PROPOSE_STOP,
    SOLVE_STOP,
    Proposal,
    parse_proposal,
    parse_solution,
    propose_prompt,
    solve_prompt,
)

if TYPE_CHECKING:
    from redqueen.environments._round import PlayedTask
    from redqueen.verifiers import ProgramRunner

__all__ = ["CodeDomain", "CodeSettings"]


class CodeSettings(BaseModel):
    """Settings of the code domain (``environment.domain_params`` when ``domain: code``).

    Attributes:
        max_source_chars: Longest program accepted from a proposer.
        max_input_chars: Longest input (argument list) accepted.
        max_output_chars: Longest output ``repr`` a valid task may have.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_source_chars: int = Field(MAX_SOURCE_CHARS, ge=1)
    max_input_chars: int = Field(MAX_INPUT_CHARS, ge=1)
    max_output_chars: int = Field(MAX_OUTPUT_CHARS, ge=1)


@DOMAINS.register("code")
class CodeDomain:
    """Python programs: predict an output (code_o), find an input (code_i), write f (code_f).

    Args:
        settings: The domain's settings (default: :class:`CodeSettings` defaults).
    """

    settings_model: ClassVar[type[BaseModel]] = CodeSettings
    task_types: tuple[str, ...] = TASK_TYPES
    propose_stop: tuple[str, ...] = (PROPOSE_STOP,)
    solve_stop: tuple[str, ...] = (SOLVE_STOP,)
    measure_keys: tuple[str, ...] = MEASURE_KEYS
    summary_keys: tuple[str, ...] = ("ast_nodes", "halstead_volume")

    def __init__(self, *, settings: CodeSettings | None = None) -> None:
        self._heldout: list[CodeTask] = []
        self.settings = settings or CodeSettings()

    def seed_examples(self) -> Sequence[Triplet]:
        """The identity program on one input, as Absolute Zero seeds its buffer."""
        return (IDENTITY_TRIPLET,)

    def propose_prompt(self, task_type: str, references: Sequence[Triplet]) -> str:
        """Reference triplets, then an open ``<task>`` tag (see :mod:`redqueen.verifiers.formats`)."""
        return propose_prompt(task_type, references)

    def parse_proposal(self, task_type: str, text: str) -> Proposal | None:
        """A program and its input(s), checked for syntax only."""
        return parse_proposal(task_type, text)

    def task_text(self, proposal: Proposal) -> str:
        """The proposed program."""
        return proposal.program

    def signature(self, proposal: Proposal) -> str:
        """Hash of the program up to renaming of local identifiers."""
        return task_signature(proposal.program)

    def validate(
        self, task_type: str, proposals: Sequence[Proposal], sandbox: ProgramRunner
    ) -> list[CodeTask | Rejected]:
        """Static checks, then two sandboxed runs per input; the outputs are the gold answers."""
        limits = self.settings
        verdicts: list[CodeTask | Rejected] = []
        for proposal in proposals:
            check = validate_program(
                proposal.program,
                proposal.inputs,
                sandbox,
                max_source_chars=limits.max_source_chars,
                max_output_chars=limits.max_output_chars,
                max_input_chars=limits.max_input_chars,
            )
            if check.ok:
                verdicts.append(make_task(task_type, proposal.program, proposal.inputs, check.outputs))
            else:
                reason = check.reason
                verdicts.append(Rejected(str(getattr(reason, "value", reason) or "invalid")))
        return verdicts

    def reference(self, task: CodeTask) -> Triplet:
        """The task's first (program, input, output) triplet."""
        return task.triplet

    def solve_prompt(self, task: CodeTask) -> str:
        """What the solver sees of the task, then an open ``<answer>`` tag."""
        return solve_prompt(task)

    def parse_answer(self, task_type: str, text: str) -> str | None:
        """An output literal (code_o), an argument list (code_i) or a program (code_f)."""
        return parse_solution(task_type, text)

    def check(self, answers: Sequence[tuple[CodeTask, str]], sandbox: ProgramRunner) -> list[str]:
        """Judge the answers with every sandbox run in one parallel batch."""
        return [str(getattr(s, "value", s)).lower() for s in check_answers(list(answers), sandbox)]

    def measure(self, task: CodeTask) -> TaskMeasures:
        """Radon and AST measures of the program; complexity is cyclomatic + log2(1 + volume)."""
        metrics = {k: float(v) for k, v in complexity(task.program).items()}
        return TaskMeasures(complexity_score(metrics), program_measures(task.program, metrics))

    def heldout_tasks(self, n: int) -> list[tuple[str, CodeTask]]:
        """``code_o`` tasks from the first ``n`` of the 700 held-out programs shipped with
        ``tiny-coder`` (programs of its generator it never trained on), each on its first input
        with the gold output stored beside it.

        Raises:
            FileNotFoundError: If the package was installed without its model files.
        """
        if len(self._heldout) < n:
            path = tiny_coder_path() / "heldout.jsonl"
            rows = [json.loads(line) for line in path.read_text().splitlines()[:n] if line.strip()]
            self._heldout = [
                make_task("code_o", row["program"], [row["inputs"][0]], [row["outputs"][0]])
                for row in rows
            ]
        return [("code_o", task) for task in self._heldout[:n]]

    def behaviour_cell(self, played: PlayedTask) -> str | None:
        """Task type, program size, difficulty and program features (see
        :func:`redqueen.environments._instruments.behaviour_cell`)."""
        return behaviour_cell(played)
