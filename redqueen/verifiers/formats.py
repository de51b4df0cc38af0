"""Prompt and answer formats for every (role, task type) pair.

This is the one place that says what a teacher or a student sees and what it must write back.
The procedural pretraining corpus of ``tiny-coder`` is rendered with these functions and the
environments prompt with them, so a base model pretrained here speaks exactly the language the
environment parses. The formats are short and tag-delimited so that a model of a few million
parameters can learn them:

Teacher (``propose_prompt`` + ``propose_completion``)::

    <propose code_o>
    <ref>
    <prog>
    def f(x):
        return x
    </prog>
    <in>3</in>
    <out>3</out>
    </ref>
    <task>
    <prog>
    def f(a, b):
        return a + b
    </prog>
    <in>1, 2</in>
    </task>

``code_o`` and ``code_i`` proposals carry one ``<in>``; ``code_f`` proposals carry
:data:`N_CODE_F_INPUTS` of them (the first half is shown to the student, the rest judges it).

Student (``solve_prompt`` + ``solve_completion``)::

    <solve code_o>          <solve code_i>          <solve code_f>
    <prog>                  <prog>                  <in>1, 2</in>
    def f(x): ...           def f(x): ...           <out>3</out>
    </prog>                 </prog>                 ...
    <in>3</in>              <out>3</out>            <answer>
    <answer>                <answer>                def f(a, b):
    3                       3                           return a + b
    </answer>               </answer>               </answer>

The student answers ``code_o`` with an output literal, ``code_i`` with an argument list (as in
``f(<answer>)``) and ``code_f`` with a program defining ``f``. Parsers never execute model text;
they only check syntax with :mod:`ast` and return ``None`` when the text is unparseable.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Only for annotations: the formats need no executor at import time.
    from redqueen.verifiers import CodeTask, Triplet

__all__ = [
    "N_CODE_F_INPUTS",
    "PROPOSE_STOP",
    "SOLVE_STOP",
    "STOP_STRINGS",
    "TAGS",
    "TASK_TYPES",
    "Proposal",
    "parse_proposal",
    "parse_solution",
    "propose_completion",
    "propose_prompt",
    "reference_block",
    "solve_completion",
    "solve_prompt",
]

#: The three task types (same order as ``redqueen.verifiers.TASK_TYPES``).
TASK_TYPES: tuple[str, ...] = ("code_o", "code_i", "code_f")

#: Inputs a teacher proposes for a ``code_f`` task; the first half is shown to the student.
N_CODE_F_INPUTS: int = 6

#: Closing tag of a teacher's proposal.
PROPOSE_STOP: str = "</task>"
#: Closing tag of a student's answer.
SOLVE_STOP: str = "</answer>"
#: Strings that end generation for either role (pass to the sampler's ``stop``).
STOP_STRINGS: tuple[str, ...] = (PROPOSE_STOP, SOLVE_STOP)

#: Every tag the formats use; a tokenizer can give each one a single token.
TAGS: tuple[str, ...] = (
    *(f"<propose {t}>" for t in TASK_TYPES),
    *(f"<solve {t}>" for t in TASK_TYPES),
    "<ref>",
    "</ref>",
    "<task>",
    PROPOSE_STOP,
    "<prog>",
    "</prog>",
    "<in>",
    "</in>",
    "<out>",
    "</out>",
    "<answer>",
    SOLVE_STOP,
)

_PROG_RE = re.compile(r"<prog>\n(.*?)\n</prog>", re.DOTALL)
# One input per line; greedy within the line so that a string holding "</in>" survives.
_IN_RE = re.compile(r"^<in>(.*)</in>$", re.MULTILINE)


@dataclass(frozen=True)
class Proposal:
    """A teacher's parsed proposal: a program defining ``f`` and the input(s) to run it on.

    The program is stored without surrounding blank lines and each input without surrounding
    whitespace, so that ``parse_proposal(t, propose_completion(t, p)) == p``.

    Args:
        task_type: One of :data:`TASK_TYPES`.
        program: Python source defining ``f`` (helpers allowed).
        inputs: Argument lists as written inside ``f(...)``; one for ``code_o``/``code_i``,
            :data:`N_CODE_F_INPUTS` for ``code_f``.

    Raises:
        ValueError: If the task type is unknown or the number of inputs does not fit it.
    """

    task_type: str
    program: str
    inputs: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_task_type(self.task_type)
        inputs = tuple(str(x).strip() for x in self.inputs)
        want = _n_inputs(self.task_type)
        if len(inputs) != want:
            raise ValueError(f"Proposal: {self.task_type} takes {want} input(s), got {len(inputs)}")
        object.__setattr__(self, "program", self.program.strip("\n"))
        object.__setattr__(self, "inputs", inputs)


def _check_task_type(task_type: str) -> None:
    if task_type not in TASK_TYPES:
        raise ValueError(
            f"redqueen.verifiers.formats: unknown task type {task_type!r} (known: {', '.join(TASK_TYPES)})"
        )


def _n_inputs(task_type: str) -> int:
    return N_CODE_F_INPUTS if task_type == "code_f" else 1


def _one_line(text: str) -> str:
    # Literals are repr strings and never hold raw newlines; fold any that slip in.
    return " ".join(text.split("\n")).strip()


def _prog_block(program: str) -> str:
    return f"<prog>\n{program.strip(chr(10))}\n</prog>\n"


# --------------------------------------------------------------------------------------------
# Teacher
# --------------------------------------------------------------------------------------------


def propose_prompt(task_type: str, references: Sequence[Triplet]) -> str:
    """The teacher's prompt: K reference triplets, then an open ``<task>`` tag.

    Args:
        task_type: Which kind of task to propose (one of :data:`TASK_TYPES`).
        references: Triplets (program, input, output) that condition the proposal.

    Raises:
        ValueError: If the task type is unknown.
    """
    _check_task_type(task_type)
    refs = "".join(reference_block(r.program, [(r.input, r.output)]) for r in references)
    return f"<propose {task_type}>\n{refs}<task>\n"


def reference_block(program: str, pairs: Sequence[tuple[str, str]]) -> str:
    """One ``<ref>`` block of a teacher prompt: the program, then an ``<in>``/``<out>`` line pair
    per ``(input, output)`` (a prompt's references have one pair; a pretraining document may
    carry all of a program's pairs), ending in a newline."""
    ios = "".join(f"<in>{_one_line(x)}</in>\n<out>{_one_line(y)}</out>\n" for x, y in pairs)
    return f"<ref>\n{_prog_block(program)}{ios}</ref>\n"


def propose_completion(task_type: str, proposal: Proposal) -> str:
    """The gold teacher text for ``proposal`` (what the corpus trains on), closed by ``</task>``.

    Raises:
        ValueError: If the task type is unknown or differs from the proposal's.
    """
    _check_task_type(task_type)
    if proposal.task_type != task_type:
        raise ValueError(
            f"propose_completion: proposal is {proposal.task_type!r}, asked for {task_type!r}"
        )
    ins = "".join(f"<in>{_one_line(x)}</in>\n" for x in proposal.inputs)
    return f"{_prog_block(proposal.program)}{ins}{PROPOSE_STOP}"


def parse_proposal(task_type: str, text: str | None) -> Proposal | None:
    """Parse a teacher's generated text (after the prompt) into a :class:`Proposal`.

    The text may or may not still carry the closing ``</task>`` (samplers differ in whether they
    keep stop strings). Extra inputs beyond the ones the task type takes are ignored; too few,
    a missing ``<prog>`` block, a program that is not valid Python or an input that is not a
    valid argument list give ``None``. Nothing is executed.

    Raises:
        ValueError: If the task type is unknown.
    """
    _check_task_type(task_type)
    if not text:
        return None
    body = text.split(PROPOSE_STOP, 1)[0]
    match = _PROG_RE.search(body)
    if match is None:
        return None
    program = match.group(1).strip("\n")
    if not _is_program(program):
        return None
    inputs = [x.strip() for x in _IN_RE.findall(body, match.end())]
    want = _n_inputs(task_type)
    if len(inputs) < want:
        return None
    inputs = inputs[:want]
    if not all(_is_arguments(x) for x in inputs):
        return None
    return Proposal(task_type, program, tuple(inputs))


# --------------------------------------------------------------------------------------------
# Student
# --------------------------------------------------------------------------------------------


def solve_prompt(task: CodeTask) -> str:
    """The student's prompt for ``task``, ending in an open ``<answer>`` tag.

    ``code_o`` shows the program and input, ``code_i`` the program and output, ``code_f`` only
    the visible input/output pairs.

    Raises:
        ValueError: If the task type is unknown.
    """
    task_type = task.task_type
    _check_task_type(task_type)
    head = f"<solve {task_type}>\n"
    if task_type == "code_o":
        body = _prog_block(task.program) + f"<in>{_one_line(task.inputs[0])}</in>\n"
    elif task_type == "code_i":
        body = _prog_block(task.program) + f"<out>{_one_line(task.outputs[0])}</out>\n"
    else:
        body = "".join(
            f"<in>{_one_line(i)}</in>\n<out>{_one_line(o)}</out>\n" for i, o in task.visible_pairs
        )
    return f"{head}{body}<answer>\n"


def solve_completion(task: CodeTask) -> str:
    """The gold student text for ``task`` (what the corpus trains on), closed by ``</answer>``.

    Raises:
        ValueError: If the task type is unknown.
    """
    task_type = task.task_type
    _check_task_type(task_type)
    if task_type == "code_o":
        answer = _one_line(task.outputs[0])
    elif task_type == "code_i":
        answer = _one_line(task.inputs[0])
    else:
        answer = task.program.strip("\n")
    return f"{answer}\n{SOLVE_STOP}"


def parse_solution(task_type: str, text: str | None) -> str | None:
    """Parse a student's generated text (after the prompt) into an answer string.

    Returns the output literal (``code_o``), the argument list (``code_i``) or the program
    (``code_f``); ``None`` when the text is not one (checked with :mod:`ast` only, never run).
    The closing ``</answer>`` may be present or already stripped by the sampler.

    Raises:
        ValueError: If the task type is unknown.
    """
    _check_task_type(task_type)
    if not text:
        return None
    body = text.split(SOLVE_STOP, 1)[0]
    if task_type == "code_f":
        program = body.strip("\n")
        return program if program.strip() and _is_program(program) else None
    answer = body.strip()
    if not answer or "\n" in answer:
        return None
    if task_type == "code_o":
        return answer if _is_literal(answer) else None
    return answer if _is_arguments(answer) else None


# --------------------------------------------------------------------------------------------
# Syntax checks (no execution)
# --------------------------------------------------------------------------------------------


def _is_program(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(node, ast.FunctionDef) and node.name == "f" for node in tree.body)


def _is_literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return False
    return True


def _is_arguments(text: str) -> bool:
    if not text:
        return False
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    # "1), g(2" would parse as something other than one call of f.
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "f"
        and (len(call.args) + len(call.keywords)) > 0
    )
