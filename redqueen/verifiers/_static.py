"""Static checks on program text (no execution): :func:`check_source`.

The check is an allow-list (:mod:`redqueen.verifiers._allowlist`): a program may use the listed
syntax, builtins, modules and attributes, and names it binds itself; everything else is refused
with a reason. It keeps proposed tasks pure and deterministic; the sandbox
(:class:`~redqueen.verifiers.Executor`) holds even against programs that pass it.
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]  # the parser str.format itself uses
import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._allowlist import (
    ALLOWED_ATTRIBUTES,
    ALLOWED_BUILTINS,
    ALLOWED_MODULES,
    ALLOWED_NODES,
    DEFINABLE_DUNDERS,
    FUTURE_FEATURES,
    GETTER_NAMES,
    REFUSED_BUILTINS,
    RESERVED_ATTRIBUTES,
    SELF_MATCHING,
)
from ._validation import MAX_SOURCE_CHARS, RejectReason, Validation, reject

__all__ = ["check_source"]

#: Dunder attributes a program may read: methods the interpreter calls on ordinary operands
#: (``Base.__init__(self)``) and ``__name__``, a string. ``__hash__`` is out: like ``hash``,
#: it gives an object's address.
_READABLE_DUNDERS = (DEFINABLE_DUNDERS - {"__hash__"}) | {"__name__"}
_ATTRIBUTE_BUILTINS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
#: Builtin names whose reads wait for their scope to close (see :class:`_Scope`): unlisted
#: builtins, and ``type`` where it is not in its listed form.
_SCOPED = REFUSED_BUILTINS | {"type"}


#: Each node type's handler, found once (the walk runs per program).
_HANDLERS: dict[type, Callable[[_AllowListChecker, Any], None]] = {}


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


@dataclass
class _Scope:
    """A function, comprehension, class or module body, as far as unlisted builtins go.

    ``id`` may name a function's parameter or local, where Python never falls back to the
    builtin. Reads of such a name wait in ``pending`` until the scope closes, then resolve to a
    binding here or go up to the enclosing function; one that reaches the module is the builtin.
    ``type`` read other than as ``type(x)`` compared is followed the same way.
    """

    kind: str  # "module", "class", "function" or "comprehension"
    parent: _Scope | None = None
    bound: set[str] = field(default_factory=set)
    pending: list[str] = field(default_factory=list)


class _AllowListChecker(ast.NodeVisitor):
    """One walk over a program's AST; records the first construct that is not listed.

    What depends on the whole program (which names are modules, which attributes the program
    defines, which names it binds) is gathered during the walk and decided in :meth:`finish`.
    """

    def __init__(self) -> None:
        self.found: tuple[RejectReason, str] | None = None
        self.scope = _Scope("module")
        self.modules: dict[str, str] = {}  # name bound by ``import`` -> module
        self.bound: set[str] = set()  # every other name the program binds
        self.read: set[str] = set()  # names read
        self.values: set[str] = set()  # names read as values (not as an attribute's base)
        self.named_attributes: list[tuple[str, str, bool]] = []  # (base name, attribute, read)
        self.attribute_reads: set[str] = set()  # unlisted attributes read on values
        self.defined: set[str] = set()  # attribute names the program defines
        self.callees: set[int] = set()  # ids of getter nodes called on the spot
        self.type_reads: set[int] = set()  # ids of ``type`` names in their listed form

    def _refuse(self, reason: RejectReason, detail: str) -> None:
        if self.found is None:
            self.found = (reason, detail)

    def visit(self, node: ast.AST) -> None:
        if self.found is not None:
            return
        kind = type(node)
        if kind not in ALLOWED_NODES:
            self._refuse(RejectReason.NOT_LISTED, f"syntax not listed: {kind.__name__}")
            return
        handler = _HANDLERS.get(kind)
        if handler is None:
            handler = _HANDLERS[kind] = getattr(
                type(self), "visit_" + kind.__name__, type(self).generic_visit
            )
        handler(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                self.visit(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)

    def _visit_all(self, nodes: list) -> None:
        for node in nodes:
            if node is not None:
                self.visit(node)

    # ----------------------------------------------------------------------- names and scopes

    def _push(self, kind: str) -> None:
        self.scope = _Scope(kind, self.scope)

    def _pop(self) -> None:
        scope = self.scope
        assert scope.parent is not None
        unresolved = [name for name in scope.pending if name not in scope.bound]
        outer = scope.parent
        while outer.kind == "class":  # a class body is not an enclosing scope
            assert outer.parent is not None
            outer = outer.parent
        outer.pending.extend(unresolved)
        self.scope = scope.parent

    def _bind(self, name: str, scope: _Scope | None = None) -> None:
        scope = scope or self.scope
        if _is_dunder(name) and not (scope.kind == "class" and name in DEFINABLE_DUNDERS):
            self._refuse(RejectReason.DUNDER_ACCESS, f"binds dunder name {name!r}")
        elif name in _SCOPED:
            if scope.kind in ("function", "comprehension"):
                scope.bound.add(name)
            elif name in REFUSED_BUILTINS:
                self._refuse(
                    RejectReason.BANNED_CALL,
                    f"binds builtin name {name!r} outside a function (elsewhere it is the builtin)",
                )
        self.bound.add(name)
        if scope.kind == "class" and not _is_dunder(name):
            self._use_attribute(name, store=True)  # class attributes, dataclass fields

    def _read_name(self, name: str, *, as_value: bool, node: ast.AST | None = None) -> None:
        if name in REFUSED_BUILTINS or (name == "type" and id(node) not in self.type_reads):
            self.scope.pending.append(name)
        elif _is_dunder(name) and name != "__name__":
            self._refuse(RejectReason.DUNDER_ACCESS, f"use of dunder name {name!r}")
        self.read.add(name)
        if as_value:
            self.values.add(name)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id in GETTER_NAMES and id(node) not in self.callees:
                self._refuse(RejectReason.BANNED_CALL, f"{node.id} used as a value")
            self._read_name(node.id, as_value=True, node=node)
        else:
            self._bind(node.id)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            if name in REFUSED_BUILTINS or _is_dunder(name):
                self._refuse(RejectReason.BANNED_CALL, f"declares builtin name {name!r} shared")

    visit_Nonlocal = visit_Global

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        scope = self.scope
        while scope.kind == "comprehension":  # := in a comprehension binds outside it
            assert scope.parent is not None
            scope = scope.parent
        self._bind(node.target.id, scope)

    def _arguments_outside(self, args: ast.arguments) -> None:
        """Defaults and annotations run in the enclosing scope."""
        self._visit_all([*args.defaults, *args.kw_defaults])
        every = [*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg]
        self._visit_all([a.annotation for a in every if a is not None])

    def _bind_arguments(self, args: ast.arguments) -> None:
        every = [*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg]
        for arg in every:
            if arg is not None:
                self._bind(arg.arg)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if getattr(node, "type_params", None):
            self._refuse(RejectReason.NOT_LISTED, "syntax not listed: type parameters")
        self._visit_all(node.decorator_list)
        self._arguments_outside(node.args)
        self._visit_all([node.returns])
        self._bind(node.name)
        self._push("function")
        self._bind_arguments(node.args)
        self._visit_all(node.body)
        self._pop()

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._arguments_outside(node.args)
        self._push("function")
        self._bind_arguments(node.args)
        self.visit(node.body)
        self._pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.keywords or getattr(node, "type_params", None):
            self._refuse(RejectReason.NOT_LISTED, f"class {node.name} has keywords (metaclass=)")
        self._visit_all(node.decorator_list)
        self._visit_all(node.bases)
        self._bind(node.name)
        self._push("class")
        self._visit_all(node.body)
        self._pop()

    def _comprehension(self, generators: list[ast.comprehension], results: list) -> None:
        if any(g.is_async for g in generators):
            self._refuse(RejectReason.NOT_LISTED, "syntax not listed: async comprehension")
            return
        self.visit(generators[0].iter)  # the first iterable runs in the enclosing scope
        self._push("comprehension")
        for k, generator in enumerate(generators):
            if k:
                self.visit(generator.iter)
            self.visit(generator.target)
            self._visit_all(generator.ifs)
        self._visit_all(results)
        self._pop()

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> None:
        self._comprehension(node.generators, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node.generators, [node.key, node.value])

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._visit_all([node.type])
        if node.name:
            self._bind(node.name)
        self._visit_all(node.body)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self._visit_all([node.pattern])
        if node.name:
            self._bind(node.name)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._bind(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self._visit_all([*node.keys, *node.patterns])
        if node.rest:
            self._bind(node.rest)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        cls = node.cls
        if node.patterns and not (
            isinstance(cls, ast.Name) and cls.id in SELF_MATCHING and len(node.patterns) == 1
        ):
            self._refuse(
                RejectReason.NOT_LISTED,
                f"class pattern {ast.unparse(cls)}(...) with positional sub-patterns reads "
                "attributes named at run time (__match_args__); name them as keywords",
            )
        self.visit(cls)
        self._visit_all([*node.patterns, *node.kwd_patterns])
        for name in node.kwd_attrs:  # ``case C(name=...)`` reads the subject's ``name``
            self._use_attribute(name, store=False)

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
            elif alias.name in GETTER_NAMES and alias.asname not in (None, alias.name):
                self._refuse(RejectReason.BANNED_CALL, f"{alias.name} imported under another name")
            self._bind(alias.asname or alias.name)

    # ----------------------------------------------------------------------------- attributes

    def _use_attribute(self, name: str, *, store: bool) -> None:
        """An attribute read (or, with ``store``, set) on some value other than a module."""
        if _is_dunder(name):
            if store or name not in _READABLE_DUNDERS:
                self._refuse(RejectReason.DUNDER_ACCESS, f"access to attribute {name!r}")
        elif name in ("format", "format_map"):
            self._refuse(RejectReason.BANNED_CALL, f"{name} of anything but a constant string")
        elif name in RESERVED_ATTRIBUTES:
            self._refuse(RejectReason.NOT_LISTED, f"attribute {name!r} is the interpreter's own")
        elif store:
            self.defined.add(name)
        elif name not in ALLOWED_ATTRIBUTES:
            self.attribute_reads.add(name)

    def _mark_type_read(self, node: ast.expr) -> None:
        """``type(x)`` here is only compared, or its ``__name__`` read: the listed form."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "type"
            and len(node.args) == 1
            and not node.keywords
        ):
            self.type_reads.add(id(node.func))

    def visit_Compare(self, node: ast.Compare) -> None:
        for operand in (node.left, *node.comparators):
            self._mark_type_read(operand)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "__name__":
            self._mark_type_read(node.value)
        if node.attr in GETTER_NAMES and id(node) not in self.callees:
            self._refuse(RejectReason.BANNED_CALL, f"{node.attr} used as a value")
        read = isinstance(node.ctx, ast.Load)
        if isinstance(node.value, ast.Name) and isinstance(node.value.ctx, ast.Load):
            # Whether the base is a module is known once the whole program has been read.
            self._read_name(node.value.id, as_value=False)
            self.named_attributes.append((node.value.id, node.attr, read))
        else:
            self._use_attribute(node.attr, store=not read)
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
            else:
                self._use_attribute(attribute.value, store=name == "setattr")
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
        elif name == "namedtuple":
            self._namedtuple_fields(node)
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

    def finish(self) -> None:
        """Decisions that needed the whole program: modules, attributes, names."""
        if "type" in self.scope.pending:
            self._refuse(
                RejectReason.BANNED_CALL,
                "type is listed only as type(x) in a comparison, or type(x).__name__",
            )
        if self.scope.pending:
            self._refuse(RejectReason.BANNED_CALL, f"use of builtin {self.scope.pending[0]!r}")
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
                    self._use_attribute(attribute, store=True)
            elif not read:
                self._refuse(RejectReason.BANNED_IMPORT, f"sets attribute of module {module!r}")
            elif attribute not in ALLOWED_MODULES[module]:
                self._refuse(RejectReason.BANNED_IMPORT, f"{module}.{attribute} is not listed")
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
