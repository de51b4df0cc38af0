"""Static checks on program text (no execution): :func:`check_source`.

The check is an allow-list (:mod:`redqueen.verifiers._allowlist`): a program may use the listed
syntax, builtins, modules and attributes, and names it binds itself; everything else is refused
with a reason. It keeps proposed tasks pure and deterministic; the sandbox
(:class:`~redqueen.verifiers.Executor`) holds even against programs that pass it.
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]  # the parser str.format itself uses
import ast

from ._allowlist import (
    ALLOWED_BUILTINS,
    ALLOWED_MODULES,
    CALLED_ON_THE_SPOT,
    CALLER_MODULE_NAMES,
    FUTURE_FEATURES,
    ONE_ARGUMENT_NAMES,
    REFUSED_BUILTINS,
    REFUSED_KEYWORDS,
)
from ._static_names import _NameChecker
from ._validation import MAX_SOURCE_CHARS, RejectReason, Validation, reject

__all__ = ["check_source"]

_ATTRIBUTE_BUILTINS = frozenset({"getattr", "hasattr", "setattr", "delattr"})


def _is_type_call(node: ast.expr) -> bool:
    """``type(x)``: one positional argument, no keywords."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
        and not node.keywords
    )


class _AllowListChecker(_NameChecker):
    """One walk over a program's AST; records the first construct that is not listed.

    What depends on the whole program (which names are modules, which attributes the program
    defines, which names it binds) is gathered during the walk and decided in :meth:`finish`.
    """

    # -------------------------------------------------------------------------------- imports

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in ALLOWED_MODULES:
                self._refuse(
                    RejectReason.BANNED_IMPORT, f"import of unlisted module {alias.name!r}"
                )
                return
            local = alias.asname or alias.name
            if local in REFUSED_BUILTINS:
                self._refuse(RejectReason.BANNED_CALL, f"binds builtin name {local!r} to a module")
            self.modules[local] = alias.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self._refuse(RejectReason.BANNED_IMPORT, f"relative import from {module!r}")
            return
        if module == "__future__":
            for alias in node.names:
                if alias.name not in FUTURE_FEATURES:
                    self._refuse(
                        RejectReason.BANNED_IMPORT, f"__future__ feature {alias.name!r} not listed"
                    )
            return
        if module not in ALLOWED_MODULES:
            self._refuse(RejectReason.BANNED_IMPORT, f"import from unlisted module {module!r}")
            return
        for alias in node.names:
            if alias.name == "*":
                self._refuse(RejectReason.BANNED_IMPORT, f"from {module} import * (names unseen)")
            elif alias.name not in ALLOWED_MODULES[module]:
                self._refuse(RejectReason.BANNED_IMPORT, f"{module}.{alias.name} is not listed")
            elif alias.name in CALLED_ON_THE_SPOT and alias.asname not in (None, alias.name):
                self._refuse(RejectReason.BANNED_CALL, f"{alias.name} imported under another name")
            self._bind(alias.asname or alias.name)
            self.imported.add(alias.asname or alias.name)

    # ----------------------------------------------------------------------------- attributes

    def _mark_type_read(self, node: ast.expr) -> None:
        """``type(x)`` here is only compared, or its ``__name__`` read: the listed form."""
        if _is_type_call(node):
            assert isinstance(node, ast.Call)
            self.type_reads.add(id(node.func))

    def visit_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for k, operand in enumerate(operands):
            if not _is_type_call(operand):
                continue
            # ``==``, ``<``, ``in`` ... call the other operand's methods with the type as an
            # argument: a program's ``__eq__`` would hold ``type(C)``, a metaclass, as a value.
            # ``is`` calls nothing; otherwise the neighbour must be a listed type.
            neighbours = [operands[j] for j in (k - 1, k + 1) if 0 <= j < len(operands)]
            ops = [node.ops[j] for j in (k - 1, k) if 0 <= j < len(node.ops)]
            if all(
                isinstance(op, ast.Is | ast.IsNot) or self._inert(other)
                for op, other in zip(ops, neighbours, strict=True)
            ):
                self._mark_type_read(operand)
            else:
                self._refuse(
                    RejectReason.BANNED_CALL,
                    "type(x) is compared (other than with 'is') only with builtin or listed "
                    "types, constants or another type(y): the other operand's methods would "
                    "receive the type",
                )
        self.generic_visit(node)

    def _inert(self, node: ast.expr) -> bool:
        """Whether comparing ``type(x)`` with ``node`` runs no method of the program's: a
        constant, another ``type(y)``, a builtin name the program never binds, ``module.name``
        of a listed module, or a tuple, list or set of these (names decided in :meth:`finish`)."""
        if isinstance(node, ast.Constant) or _is_type_call(node):
            return True
        if isinstance(node, ast.Name) and node.id in ALLOWED_BUILTINS:
            self.builtin_operands.add(node.id)
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            self.module_operands.add(node.value.id)
            return True
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return all(self._inert(item) for item in node.elts)
        return False

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "__name__":
            self._mark_type_read(node.value)
        if node.attr in CALLED_ON_THE_SPOT and id(node) not in self.callees:
            self._refuse(RejectReason.BANNED_CALL, f"{node.attr} used as a value")
        read = isinstance(node.ctx, ast.Load)
        if isinstance(node.value, ast.Name) and isinstance(node.value.ctx, ast.Load):
            # Whether the base is a module is known once the whole program has been read.
            self._read_name(node.value.id, as_value=False)
            self.named_attributes.append((node.value.id, node.attr, read))
        else:
            if read:
                self._use_attribute(node.attr, store=False)
            else:
                self._set_attribute(node.value, node.attr)
            self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "format"
            and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)
        ):
            self._check_format(func.value.value)
            self._visit_all([*node.args, *node.keywords])
            return
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name in _ATTRIBUTE_BUILTINS and isinstance(func, ast.Name):
            self.callees.add(id(func))
            attribute = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(attribute, ast.Constant) and isinstance(attribute.value, str)):
                self._refuse(RejectReason.BANNED_CALL, f"{name}() with a computed attribute name")
            elif name in ("setattr", "delattr"):
                self._set_attribute(node.args[0], attribute.value, defines=name == "setattr")
            else:
                self._use_attribute(attribute.value, store=False)
        elif name in ("attrgetter", "methodcaller"):
            self.callees.add(id(func))
            # attrgetter takes dotted names only; methodcaller a name, then the call's arguments.
            names = node.args if name == "attrgetter" else node.args[:1]
            for arg in names:
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    self._refuse(RejectReason.BANNED_CALL, f"{name}() with a computed name")
                    continue
                for part in arg.value.split(".") if name == "attrgetter" else [arg.value]:
                    self._use_attribute(part, store=False)
        elif name in CALLER_MODULE_NAMES:
            self.callees.add(id(func))  # called from the program's frame: its module is __main__
        elif name in ONE_ARGUMENT_NAMES:
            self.callees.add(id(func))
            if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
                self._refuse(
                    RejectReason.BANNED_CALL,
                    f"{name}() takes one argument here: its others are its own bookkeeping",
                )
        elif name in REFUSED_KEYWORDS:
            self.callees.add(id(func))
            for keyword in node.keywords:
                if keyword.arg is None:
                    self._refuse(
                        RejectReason.BANNED_CALL, f"{name}() with **, which hides its keywords"
                    )
                elif keyword.arg in REFUSED_KEYWORDS[name]:
                    self._refuse(
                        RejectReason.BANNED_CALL,
                        f"{name}() with {keyword.arg}=, which reaches outside the program",
                    )
            if name == "namedtuple":
                self._namedtuple_fields(node)
            elif name == "lru_cache" and (
                len(node.args) > 1 or any(isinstance(a, ast.Starred) for a in node.args)
            ):
                self._refuse(
                    RejectReason.BANNED_CALL,
                    "lru_cache() with more than its maxsize: typed= puts argument types in its keys",
                )
        self.generic_visit(node)

    def _namedtuple_fields(self, node: ast.Call) -> None:
        """A namedtuple's field names are attributes the program defines."""
        fields = node.args[1] if len(node.args) > 1 else None
        for keyword in node.keywords:
            if keyword.arg == "field_names":
                fields = keyword.value
        items = fields.elts if isinstance(fields, ast.List | ast.Tuple) else [fields]
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                for name in item.value.replace(",", " ").split():
                    self._use_attribute(name, store=True)

    def _check_format(self, text: str) -> None:
        """Fields of a constant ``str.format`` template: positions, names and items, no attributes.

        Read with the parser ``str.format`` uses, so what is checked is what will run.
        """
        try:
            for _, field_name, spec, _ in _string.formatter_parser(text):
                if field_name is None:
                    continue
                _, rest = _string.formatter_field_name_split(field_name)
                if any(is_attribute for is_attribute, _ in rest):
                    self._refuse(
                        RejectReason.BANNED_CALL, f"format field {field_name!r} reads an attribute"
                    )
                if spec:
                    self._check_format(spec)
        except ValueError as exc:
            self._refuse(RejectReason.BANNED_CALL, f"format string does not parse: {exc}")

    # ------------------------------------------------------------------------------ the end

    def names_bound(self) -> set[str]:
        """Every name the program binds, imports included."""
        return self.bound | self.modules.keys()

    def finish(self) -> None:
        """Decisions that needed the whole program: modules, attributes, names."""
        if "type" in self.scope.pending:
            self._refuse(
                RejectReason.BANNED_CALL,
                "type is listed only as type(x) in a comparison, or type(x).__name__",
            )
        if self.scope.pending:
            self._refuse(RejectReason.BANNED_CALL, f"use of builtin {self.scope.pending[0]!r}")
        rebound = sorted((self.self_matching | self.builtin_operands) & self.names_bound())
        if rebound:
            self._refuse(
                RejectReason.BANNED_CALL,
                f"name {rebound[0]!r} is rebound by the program, where it must be the builtin "
                "(a positional class pattern, or what type(x) is compared with)",
            )
        not_modules = sorted(self.module_operands - self.modules.keys())
        if not_modules:
            self._refuse(
                RejectReason.BANNED_CALL,
                f"type(x) compared with an attribute of {not_modules[0]!r}, which is not a module",
            )
        both = sorted(self.modules.keys() & self.bound)
        if both:
            self._refuse(RejectReason.BANNED_IMPORT, f"name {both[0]!r} is a module and a variable")
        as_values = sorted(self.modules.keys() & self.values)
        if as_values:
            self._refuse(RejectReason.BANNED_IMPORT, f"module {as_values[0]!r} used as a value")
        for base, attribute, read in self.named_attributes:
            module = self.modules.get(base)
            if module is None:
                if not read:
                    self._set_attribute(ast.Name(base), attribute)
            elif not read:
                self._refuse(RejectReason.BANNED_IMPORT, f"sets attribute of module {module!r}")
            elif attribute not in ALLOWED_MODULES[module]:
                self._refuse(RejectReason.BANNED_IMPORT, f"{module}.{attribute} is not listed")
        for root in self.store_roots:
            # A module's attributes, and what they lead to by attribute, item or call, are the
            # library's objects: typing's aliases forward a store to the class they stand for
            # (typing.Counter[int].x sets collections.Counter.x), and dataclasses.fields()
            # hands out the fields dataclass writes into the source it executes.
            if root in self.modules:
                self._refuse(
                    RejectReason.BANNED_IMPORT,
                    f"sets an attribute of what module {self.modules[root]!r} holds",
                )
            elif root in self.imported:
                self._refuse(
                    RejectReason.BANNED_IMPORT,
                    f"sets an attribute of {root!r}, which the program imported from a module",
                )
        for base, attribute, read in self.named_attributes:
            if read and base not in self.modules:
                self._use_attribute(attribute, store=False)
        unknown = sorted(self.attribute_reads - self.defined)
        if unknown:
            self._refuse(
                RejectReason.NOT_LISTED,
                f"attribute {unknown[0]!r} is not listed and the program does not define it",
            )
        unbound = sorted(
            self.read - self.bound - self.modules.keys() - ALLOWED_BUILTINS - {"__name__"}
        )
        if unbound:
            self._refuse(
                RejectReason.NOT_LISTED,
                f"name {unbound[0]!r} is neither a listed builtin nor bound by the program",
            )


def check_source(program: str, *, max_source_chars: int = MAX_SOURCE_CHARS) -> Validation:
    """Static checks only (no execution): size, syntax, entry function ``f``, the allow-list.

    Args:
        program: The program text.
        max_source_chars: Longest accepted program.

    Returns:
        A :class:`Validation` with ``ok`` and no outputs, or the first rejection.
    """
    if not isinstance(program, str) or not program.strip():
        return reject(RejectReason.EMPTY, "program is empty")
    if len(program) > max_source_chars:
        return reject(
            RejectReason.SOURCE_TOO_LARGE,
            f"program has {len(program)} characters (limit {max_source_chars})",
        )
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return reject(RejectReason.SYNTAX_ERROR, f"does not parse: {exc}")
    if not any(isinstance(n, ast.FunctionDef) and n.name == "f" for n in tree.body):
        return reject(RejectReason.NO_ENTRY_FUNCTION, "no top-level function named 'f'")
    checker = _AllowListChecker()
    try:
        checker.visit(tree)
    except RecursionError:
        return reject(RejectReason.SYNTAX_ERROR, "program nests too deeply")
    checker.finish()
    if checker.found is not None:
        return reject(*checker.found)
    return Validation(ok=True)
