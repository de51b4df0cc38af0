"""A second task domain in one file: integer arithmetic.

Teachers propose an expression over small integers with ``+ - * //``; the domain computes its
value itself (by walking the expression's syntax tree, never by ``eval``). Students either
compute the value (``arith_value``) or find the operand hidden behind ``?`` (``arith_missing``;
any operand that gives the value is right). Use it with::

    redqueen run tiny --plugin examples/arithmetic_domain.py --set environment.domain=arithmetic
    redqueen run tiny --plugin examples/arithmetic_domain.py \\
        --set environment.domain=arithmetic --set "environment.domain_params={max_operand: 20}"
"""

from __future__ import annotations

import ast
import hashlib
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from redqueen.environments import DOMAINS, PlayedTask, Rejected, TaskMeasures, difficulty_bin
from redqueen.verifiers import ProgramRunner

OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}
SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//"}
_EXPR = re.compile(r"<expr>(.*?)</expr>", re.DOTALL)
_INTEGER = re.compile(r"-?\d{1,12}")


class ArithmeticSettings(BaseModel):
    """``environment.domain_params`` of the arithmetic domain.

    Attributes:
        max_operand: Largest integer literal a valid expression may use.
        max_operators: Most binary operators a valid expression may have.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_operand: int = Field(100, ge=1)
    max_operators: int = Field(4, ge=1, le=8)


@dataclass(frozen=True)
class Expression:
    """A valid expression and its value: what the task buffer keeps."""

    text: str
    value: int


@dataclass(frozen=True)
class ArithmeticTask:
    """A posed task: the expression, its value (the gold answer) and what the student sees."""

    task_type: str
    text: str
    value: int
    shown: str


def evaluate(node: ast.AST, max_operand: int | None = None) -> int:
    """The value of an expression tree of integers, unary minus and ``+ - * //``.

    Raises:
        ValueError: On any other construct, an operand above ``max_operand``, or division by 0.
    """
    if isinstance(node, ast.Constant) and type(node.value) is int:
        if max_operand is not None and node.value > max_operand:
            raise ValueError("operand_too_large")
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand, max_operand)
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left, right = evaluate(node.left, max_operand), evaluate(node.right, max_operand)
        if isinstance(node.op, ast.FloorDiv) and right == 0:
            raise ValueError("division_by_zero")
        return OPERATORS[type(node.op)](left, right)
    raise ValueError("not_arithmetic")


def hide_last_operand(tree: ast.Expression) -> str:
    """The expression's text with its last integer literal written as ``?``."""
    literals = [n for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    last = max(literals, key=lambda n: (n.lineno, n.col_offset))

    class Hide(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            return ast.Name(id="?") if node is last else node

    return ast.unparse(Hide().visit(tree))


@DOMAINS.register("arithmetic")
class ArithmeticDomain:
    """Integer arithmetic: compute an expression's value, or find its hidden operand."""

    settings_model = ArithmeticSettings
    task_types = ("arith_value", "arith_missing")
    propose_stop = ("</task>",)
    solve_stop = ("</answer>",)
    measure_keys = ("operators", "depth")
    summary_keys = ("operators",)

    def __init__(self, *, settings: ArithmeticSettings | None = None) -> None:
        self.settings = settings or ArithmeticSettings()

    def seed_examples(self) -> Sequence[Expression]:
        return (Expression("1 + 2", 3),)

    def propose_prompt(self, task_type: str, references: Sequence[Expression]) -> str:
        refs = "".join(f"<ref>\n<expr>{r.text}</expr>\n<out>{r.value}</out>\n</ref>\n" for r in references)
        return f"<propose {task_type}>\n{refs}<task>\n"

    def parse_proposal(self, task_type: str, text: str) -> str | None:
        """The proposed expression, normalised (``None`` if it is not a Python expression)."""
        match = _EXPR.search(text.split("</task>", 1)[0])
        if match is None or len(match.group(1)) > 200:
            return None
        try:
            return ast.unparse(ast.parse(match.group(1).strip(), mode="eval"))
        except (SyntaxError, ValueError, RecursionError):
            return None

    def task_text(self, proposal: str) -> str:
        return proposal

    def signature(self, proposal: str) -> str:
        return hashlib.sha1(proposal.encode()).hexdigest()[:12]

    def validate(self, task_type: str, proposals: Sequence[str], sandbox: ProgramRunner) -> list[ArithmeticTask | Rejected]:
        """Arithmetic only, within the size limits, and defined (no division by zero)."""
        verdicts: list[ArithmeticTask | Rejected] = []
        for text in proposals:
            tree = ast.parse(text, mode="eval")
            if sum(isinstance(n, ast.BinOp) for n in ast.walk(tree)) > self.settings.max_operators:
                verdicts.append(Rejected("too_many_operators"))
                continue
            try:
                value = evaluate(tree.body, self.settings.max_operand)
            except ValueError as error:
                verdicts.append(Rejected(str(error)))
                continue
            shown = text if task_type == "arith_value" else hide_last_operand(tree)
            verdicts.append(ArithmeticTask(task_type, text, value, shown))
        return verdicts

    def reference(self, task: ArithmeticTask) -> Expression:
        return Expression(task.text, task.value)

    def solve_prompt(self, task: ArithmeticTask) -> str:
        out = f"<out>{task.value}</out>\n" if task.task_type == "arith_missing" else ""
        return f"<solve {task.task_type}>\n<expr>{task.shown}</expr>\n{out}<answer>\n"

    def parse_answer(self, task_type: str, text: str) -> str | None:
        answer = text.split("</answer>", 1)[0].strip()
        return str(int(answer)) if _INTEGER.fullmatch(answer) else None

    def check(self, answers: Sequence[tuple[ArithmeticTask, str]], sandbox: ProgramRunner) -> list[str]:
        """The value must be the gold value; a missing operand must give the gold value."""
        statuses = []
        for task, answer in answers:
            if task.task_type == "arith_value":
                right = int(answer) == task.value
            else:
                filled = ast.parse(task.shown.replace("?", f"({answer})"), mode="eval")
                try:
                    right = evaluate(filled.body) == task.value
                except ValueError:  # e.g. the operand makes a divisor 0
                    right = False
            statuses.append("correct" if right else "wrong")
        return statuses

    def measure(self, task: ArithmeticTask) -> TaskMeasures:
        tree = ast.parse(task.text, mode="eval")
        operators = sum(isinstance(n, ast.BinOp) for n in ast.walk(tree))

        def depth(node: ast.AST) -> int:
            return 1 + max((depth(c) for c in ast.iter_child_nodes(node)), default=0)

        return TaskMeasures(float(operators), {"operators": float(operators), "depth": float(depth(tree.body))})

    def behaviour_cell(self, played: PlayedTask) -> str | None:
        """Task type, operator count, difficulty for the base model, operators used."""
        tree = ast.parse(played.task.text, mode="eval")
        used = sorted({SYMBOLS[type(n.op)] for n in ast.walk(tree) if isinstance(n, ast.BinOp)})
        size = int(played.measures["operators"])
        return f"{played.task_type}/o{size}/d{difficulty_bin(played.base_solve_rate)}/{''.join(used) or '-'}"
