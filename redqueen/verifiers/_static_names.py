"""The allow-list walk over a program's AST, and its rules for names, scopes and attributes.

:class:`_NameChecker` dispatches each node to its handler, refuses syntax that is not listed,
follows every name to the scope that binds it (an unlisted builtin is refused only where no
binding of the program shadows it) and applies the attribute rule. The checker of
:func:`~redqueen.verifiers.check_source` (:mod:`redqueen.verifiers._static`) builds on it with
imports, calls and the decisions that need the whole program.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._allowlist import (
    ALLOWED_ATTRIBUTES,
    ALLOWED_NODES,
    CALLED_ON_THE_SPOT,
    CALLER_MODULE_NAMES,
    DEFINABLE_DUNDERS,
    GETTER_NAMES,
    READ_ONLY_ATTRIBUTES,
    REFUSED_BUILTINS,
    RESERVED_ATTRIBUTES,
    SELF_MATCHING,
)
from ._validation import RejectReason

#: Dunder attributes a program may read: methods the interpreter calls on ordinary operands
#: (``Base.__init__(self)``) and ``__name__``, a string. ``__hash__`` is out: like ``hash``,
#: it gives an object's address.
_READABLE_DUNDERS = (DEFINABLE_DUNDERS - {"__hash__"}) | {"__name__"}
#: Builtin names whose reads wait for their scope to close (see :class:`_Scope`): unlisted
#: builtins, and ``type`` where it is not in its listed form.
_SCOPED = REFUSED_BUILTINS | {"type"}


#: Each node type's handler, found once (the walk runs per program).
_HANDLERS: dict[type, Callable[[_NameChecker, Any], None]] = {}


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _root_name(node: ast.expr) -> str | None:
    """The name an expression starts from through attributes, items and calls (``a`` in
    ``a.b[0]().c``), or None when it starts from anything else."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


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


class _NameChecker(ast.NodeVisitor):
    """The walk, its state, and the rules for names, scopes and attributes.

    Records the first construct that is not listed. What depends on the whole program (which
    names are modules, which attributes the program defines, which names it binds) is gathered
    here and decided in the subclass's ``finish``.
    """

    def __init__(self) -> None:
        self.found: tuple[RejectReason, str] | None = None
        self.scope = _Scope("module")
        self.modules: dict[str, str] = {}  # name bound by ``import`` -> module
        self.imported: set[str] = set()  # names bound by ``from ... import``
        self.store_roots: list[str] = []  # the names attribute stores start from
        self.bound: set[str] = set()  # every other name the program binds
        self.read: set[str] = set()  # names read
        self.values: set[str] = set()  # names read as values (not as an attribute's base)
        self.named_attributes: list[tuple[str, str, bool]] = []  # (base name, attribute, read)
        self.attribute_reads: set[str] = set()  # unlisted attributes read on values
        self.defined: set[str] = set()  # attribute names the program defines
        self.callees: set[int] = set()  # ids of getter nodes called on the spot
        self.type_reads: set[int] = set()  # ids of ``type`` names in their listed form
        # Names that must still mean what they say once the whole program is read: builtins
        # and modules ``type(x)`` is compared with, builtin types in positional class patterns.
        self.builtin_operands: set[str] = set()
        self.module_operands: set[str] = set()
        self.self_matching: set[str] = set()

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
            if node.id in CALLED_ON_THE_SPOT and id(node) not in self.callees:
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
        self._decorators(node.decorator_list)
        self._arguments_outside(node.args)
        self._visit_all([node.returns])
        self._bind(node.name)
        self._push("function")
        self._bind_arguments(node.args)
        self._visit_all(node.body)
        self._pop()

    def _decorators(self, decorators: list[ast.expr]) -> None:
        """A bare decorator (``@lru_cache``, ``@functools.lru_cache``) is called on the spot with
        the one thing it decorates, so it is no value handed on. (The getters stay refused there:
        they read an attribute named by their second argument, which a decorator never has.)"""
        for decorator in decorators:
            name = getattr(decorator, "id", None) or getattr(decorator, "attr", None)
            if isinstance(decorator, ast.Name | ast.Attribute) and name not in GETTER_NAMES:
                self.callees.add(id(decorator))
        self._visit_all(decorators)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._arguments_outside(node.args)
        self._push("function")
        self._bind_arguments(node.args)
        self.visit(node.body)
        self._pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.keywords or getattr(node, "type_params", None):
            self._refuse(RejectReason.NOT_LISTED, f"class {node.name} has keywords (metaclass=)")
        self._decorators(node.decorator_list)
        for base in node.bases:  # ``class P(typing.NamedTuple)`` takes the module of its statement
            name = getattr(base, "id", None) or getattr(base, "attr", None)
            if isinstance(base, ast.Name | ast.Attribute) and name in CALLER_MODULE_NAMES:
                self.callees.add(id(base))
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
        if node.patterns and isinstance(cls, ast.Name):
            self.self_matching.add(cls.id)  # the builtin only if the program never rebinds it
        self.visit(cls)
        self._visit_all([*node.patterns, *node.kwd_patterns])
        for name in node.kwd_attrs:  # ``case C(name=...)`` reads the subject's ``name``
            self._use_attribute(name, store=False)

    # ------------------------------------------------------------------------------ attributes

    def _set_attribute(self, target: ast.expr, name: str, *, defines: bool = True) -> None:
        """An attribute ``name`` set (or, without ``defines``, deleted by ``delattr``) on the value of
        ``target``, other than a module.

        What a module or an imported name leads to is the library's object, not the program's:
        whether ``target`` starts from one is decided once the whole program has been read.
        """
        root = _root_name(target)
        if root is not None:
            self.store_roots.append(root)
        if name in READ_ONLY_ATTRIBUTES:
            self._refuse(
                RejectReason.NOT_LISTED,
                f"sets attribute {name!r}, which library objects read back as a name",
            )
        else:
            self._use_attribute(name, store=defines)

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
