"""Statements of generated function bodies: assignments, branches, early returns and loops.

Every loop is bounded where it is written: ``for`` walks a value of the program's small input
or a short ``range``, ``while`` counts a bounded counter down or strips the digits of a number,
and ``break`` only ever shortens a loop. So generated programs terminate quickly without the
sandbox's timeout doing the work.
"""

from __future__ import annotations

from redqueen.tinycoder._grammar import ExpressionGrammar, Scope, bare

__all__ = ["STATEMENT_KINDS", "StatementGrammar", "indent"]

#: Statement kinds and the lowest level that uses each.
STATEMENT_KINDS: dict[str, int] = {
    "assign": 3,
    "if": 3,
    "augment": 4,
    "early_return": 4,
    "for": 4,
    "while": 5,
    "digits": 5,
    "count_dict": 5,
    "for_break": 6,
    "nested": 6,
}


def indent(text: str, prefix: str = "    ") -> str:
    """``text`` with every line indented by ``prefix``."""
    return "\n".join(prefix + line for line in text.split("\n"))


class StatementGrammar(ExpressionGrammar):
    """Writes statements over a :class:`Scope` (see :class:`ExpressionGrammar` for expressions)."""

    def _statement(self, scope: Scope, level: int, returns: str, depth: int) -> str:
        rng = self.rng
        kinds = [k for k, lowest in STATEMENT_KINDS.items() if level >= lowest]
        weights = [3 if k in ("assign", "if", "for") else 1 for k in kinds]
        kind = rng.choices(kinds, weights)[0]
        if kind == "augment" and not [n for n in scope.recent if scope.names[n] in ("int", "str")]:
            kind = "assign"
        if kind == "assign":
            target = rng.choice(("int", "str", "list", "dict", returns))
            expr = bare(self._expr(target, depth, scope))
            return f"{self._define(scope, target)} = {expr}"
        if kind == "if":
            target = rng.choice(("int", "str", "list", "dict", returns))
            cond = bare(self._expr("bool", 1, scope))
            yes = bare(self._expr(target, depth, scope))
            no = bare(self._expr(target, depth, scope))
            name = self._define(scope, target)
            return f"if {cond}:\n    {name} = {yes}\nelse:\n    {name} = {no}"
        if kind == "augment":
            name = rng.choice([n for n in scope.recent if scope.names[n] in ("int", "str")])
            op = rng.choice("+-*") if scope.names[name] == "int" else "+"
            return f"{name} {op}= {bare(self._expr(scope.names[name], 1, scope))}"
        if kind == "early_return":
            cond = bare(self._expr("bool", 1, scope))
            return f"if {cond}:\n    return {bare(self._expr(returns, depth, scope))}"
        if kind == "while":
            return self._while(scope)
        if kind == "digits":
            return self._digits(scope)
        if kind == "count_dict":
            return self._count_dict(scope)
        return self._for(scope, nested=kind == "nested", with_break=kind == "for_break")

    def _define(self, scope: Scope, kind: str) -> str:
        name = scope.fresh()
        scope.names[name] = kind
        scope.recent.append(name)
        return name

    def _iterable(self, scope: Scope) -> tuple[str, str]:
        """An iterable source and the type of its elements."""
        rng = self.rng
        choice = rng.random()
        if choice < 0.45:
            return self._expr("list", 0, scope), "int"
        if choice < 0.75:
            return self._expr("str", 0, scope), "str"
        if choice < 0.9:
            return f"range({rng.randint(1, 6)})", "int"
        return f"{self._expr('dict', 0, scope)}.values()", "int"

    def _loop_body(self, scope: Scope, acc: str, acc_kind: str, item: str) -> str:
        rng = self.rng
        if acc_kind == "int":
            update = f"{acc} {rng.choice(['+=', '-=', '+='])} {bare(self._expr('int', 1, scope))}"
        elif acc_kind == "str":
            # Never append the accumulator to itself: that doubles it every iteration.
            piece = item if scope.names.get(item) == "str" else f"str({item})"
            update = f"{acc} += {rng.choice([piece, self._char(), piece + '.upper()'])}"
        else:
            update = f"{acc}.append({bare(self._expr('int', 1, scope))})"
        if rng.random() < 0.5:
            return f"if {bare(self._expr('bool', 1, scope))}:\n    {update}"
        return update

    def _for(self, scope: Scope, *, nested: bool, with_break: bool = False) -> str:
        rng = self.rng
        source, item_kind = self._iterable(scope)
        acc_kind = rng.choice(("int", "int", "str", "list"))
        acc = self._define(scope, acc_kind)
        init = {"int": str(rng.randint(0, 2)), "str": "''", "list": "[]"}[acc_kind]
        item = "ch" if item_kind == "str" else "i"
        scope.names[item] = item_kind
        body = self._loop_body(scope, acc, acc_kind, item)
        if nested:
            inner = "j" if item_kind == "int" else "e"
            scope.names[inner] = "int"
            body = f"for {inner} in range({rng.randint(1, 3)}):\n{indent(self._loop_body(scope, acc, acc_kind, item))}"
            del scope.names[inner]
        if with_break:
            body = f"if {bare(self._expr('bool', 1, scope))}:\n    break\n{body}"
        del scope.names[item]
        return f"{acc} = {init}\nfor {item} in {source}:\n{indent(body)}"

    def _while(self, scope: Scope) -> str:
        rng = self.rng
        start = bare(self._expr("int", 0, scope))
        value = bare(self._expr("int", 0, scope))
        counter = self._define(scope, "int")
        acc = self._define(scope, "int")
        step = rng.choice(("+", "-", "*"))
        return (
            f"{counter} = abs({start}) % {rng.randint(3, 8)}\n{acc} = {rng.randint(0, 3)}\n"
            f"while {counter} > 0:\n    {acc} = {acc} {step} {value} % 7\n    {counter} -= 1"
        )

    def _digits(self, scope: Scope) -> str:
        """Walk the digits of a number: digit sums, reversals and counts."""
        rng = self.rng
        number = self._define(scope, "int")
        acc = self._define(scope, "int")
        start = bare(self._expr("int", 1, scope))
        update = rng.choice(
            [
                f"{acc} += {number} % 10",
                f"{acc} = {acc} * 10 + {number} % 10",
                f"{acc} += 1",
                f"{acc} = max({acc}, {number} % 10)",
            ]
        )
        return (
            f"{number} = abs({start})\n{acc} = 0\nwhile {number} > 0:\n"
            f"    {update}\n    {number} //= {rng.choice(['10', '10', '2', '3'])}"
        )

    def _count_dict(self, scope: Scope) -> str:
        """Tally the items of a string or list into a dict."""
        rng = self.rng
        if scope.of("str") and rng.random() < 0.6:
            source, key = self._expr("str", 0, scope), "ch"
        else:
            source, key = self._expr("list", 0, scope), "str(i % 5)"
        item = "ch" if key == "ch" else "i"
        acc = self._define(scope, "dict")
        value = rng.choice(["1", "2", "len(" + acc + ")"])
        return (
            f"{acc} = {{}}\nfor {item} in {source}:\n"
            f"    {acc}[{key}] = {acc}.get({key}, 0) + {value}"
        )
