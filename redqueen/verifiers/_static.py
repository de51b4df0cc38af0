"""Static checks on program text (no execution): :func:`check_source`, the banned lists.

The lists are a first line of defence that keeps proposed tasks pure and deterministic; the
sandbox (:class:`~redqueen.verifiers.Executor`) holds even against programs that pass them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "BANNED_CALLS",
    "BANNED_MODULES",
    "MAX_INPUT_CHARS",
    "MAX_OUTPUT_CHARS",
    "MAX_SOURCE_CHARS",
    "RejectReason",
    "Validation",
    "check_source",
    "reject",
]

#: Modules a program may not import (the root of a dotted name is checked).
BANNED_MODULES = frozenset(
    {
        "os",
        "sys",
        "subprocess",
        "socket",
        "shutil",
        "random",
        "time",
        "datetime",
        "threading",
        "multiprocessing",
        "ctypes",
        "importlib",
        "io",
        "pathlib",
        "signal",
        "builtins",
        "gc",
        "inspect",
        "pickle",
        "marshal",
        "tempfile",
        "glob",
        "asyncio",
        "concurrent",
        "select",
        "selectors",
        "resource",
        "fcntl",
        "mmap",
        "pty",
        "posix",
        "nt",
        "code",
        "codeop",
        "runpy",
        "site",
        "sysconfig",
        "urllib",
        "http",
        "ftplib",
        "smtplib",
        "socketserver",
        "ssl",
        "uuid",
        "secrets",
        "weakref",
        "atexit",
        "faulthandler",
        "tracemalloc",
        "traceback",
        "types",
        "_thread",
        "_posixsubprocess",
        "_socket",
        "_io",
        "_ctypes",
        "zipimport",
        "pdb",
        "webbrowser",
        "shelve",
        "dbm",
        "sqlite3",
        "logging",
        "warnings",
        "platform",
        "getpass",
        "pwd",
        "grp",
    }
)
#: Built-in names a program may not call (or even mention).
BANNED_CALLS = frozenset(
    {
        "open",
        "exec",
        "eval",
        "compile",
        "__import__",
        "input",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "memoryview",
        "__build_class__",
    }
)
_ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
#: Banned modules that other modules hold as attributes (``typing.sys``, ``collections._sys``,
#: ``random._os``): reaching one through an attribute is as good as importing it. Module names
#: that are also everyday attribute names (``time``, ``random``, ``code`` ...) count only in
#: their private spelling (``_time``). ``modules`` is ``sys.modules``.
_REACHED_MODULES = frozenset(
    (
        "os sys subprocess socket shutil threading multiprocessing ctypes importlib builtins gc "
        "inspect pickle marshal posix runpy zipimport faulthandler tracemalloc weakref atexit "
        "sysconfig tempfile pty fcntl mmap modules"
    ).split()
)
#: Attributes that reach an interpreter's frames, code or tracing (how a program reads or
#: rewrites the runner around it).
_INTROSPECTION_ATTRIBUTES = frozenset(
    (
        "_exit _getframe _current_frames f_back f_globals f_locals f_builtins f_code f_trace "
        "tb_frame tb_next gi_frame gi_code cr_frame cr_code ag_frame ag_code co_consts co_code "
        "settrace setprofile"
    ).split()
)
#: Names that only an import (banned) or a reach-through binds.
_MODULE_NAMES = frozenset({"os", "sys", "gc", "ctypes", "builtins", "importlib", "inspect"})
_FORMAT_FIELD = re.compile(r"\{([^{}:!]*)")
_FIELD_SEPARATORS = re.compile(r"[.\[\]]")
#: Callables that turn a string into an attribute access.
_ATTRIBUTE_GETTERS = frozenset({"attrgetter", "methodcaller"})
#: Names of callables that read attributes by a name given at run time. They are allowed only
#: where they are called on the spot with constant names: as a value (renamed, passed, stored,
#: mapped), the name they read is out of sight of these checks.
_GETTER_NAMES = _ATTRIBUTE_BUILTINS | _ATTRIBUTE_GETTERS
#: ``str`` methods that read attributes named in format fields (``"{0.sys}"``).
_FORMATTERS = frozenset({"format", "format_map", "vformat"})
_ALLOWED_DUNDERS = frozenset(
    {
        "__init__",
        "__repr__",
        "__str__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__len__",
        "__iter__",
        "__next__",
        "__contains__",
        "__getitem__",
        "__setitem__",
        "__delitem__",
        "__add__",
        "__sub__",
        "__mul__",
        "__truediv__",
        "__floordiv__",
        "__mod__",
        "__pow__",
        "__neg__",
        "__pos__",
        "__abs__",
        "__bool__",
        "__call__",
        "__radd__",
        "__rsub__",
        "__rmul__",
        "__post_init__",
        "__name__",
    }
)
#: Default limits; see :func:`validate_program`.
MAX_SOURCE_CHARS = 4000
MAX_OUTPUT_CHARS = 2000
MAX_INPUT_CHARS = 1000


class RejectReason(str, Enum):
    """Why a program (or one of its inputs) was rejected; stable codes for logs and metrics."""

    EMPTY = "empty"
    SOURCE_TOO_LARGE = "source_too_large"
    SYNTAX_ERROR = "syntax_error"
    NO_ENTRY_FUNCTION = "no_entry_function"
    BANNED_IMPORT = "banned_import"
    BANNED_CALL = "banned_call"
    DUNDER_ACCESS = "dunder_access"
    NO_INPUTS = "no_inputs"
    INPUT_NOT_LITERAL = "input_not_literal"
    INPUT_TOO_LARGE = "input_too_large"
    DUPLICATE_INPUT = "duplicate_input"
    TIMEOUT = "timeout"
    RUNTIME_ERROR = "runtime_error"
    NONDETERMINISTIC = "nondeterministic"
    OUTPUT_NOT_LITERAL = "output_not_literal"
    OUTPUT_TOO_LARGE = "output_too_large"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Validation:
    """The verdict on a program and its inputs.

    Attributes:
        ok: Whether the program is a valid task.
        reason: Why not (None when ``ok``).
        detail: A human-readable explanation (empty when ``ok``).
        outputs: The gold outputs (``repr`` strings), one per input, when ``ok``; else empty.
    """

    ok: bool
    reason: RejectReason | None = None
    detail: str = ""
    outputs: tuple[str, ...] = ()


def reject(reason: RejectReason, detail: str) -> Validation:
    """A failed :class:`Validation` with its reason and explanation."""
    return Validation(ok=False, reason=reason, detail=detail, outputs=())


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _reaches_module(name: str) -> bool:
    """Whether attribute ``name`` is how modules commonly hold a banned module."""
    if name in _REACHED_MODULES:
        return True
    bare = name.lstrip("_")
    return (
        name.startswith("_") and not _is_dunder(name) and bare in BANNED_MODULES | _REACHED_MODULES
    )


class _BanChecker(ast.NodeVisitor):
    """Walks a program's AST and records the first banned construct."""

    def __init__(self) -> None:
        self.found: tuple[RejectReason, str] | None = None
        self.called: set[int] = set()  # ids of getter nodes checked as the callee of a call

    def _flag(self, reason: RejectReason, detail: str) -> None:
        if self.found is None:
            self.found = (reason, detail)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] in BANNED_MODULES:
                self._flag(RejectReason.BANNED_IMPORT, f"import of banned module {alias.name!r}")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or module.split(".")[0] in BANNED_MODULES:
            self._flag(RejectReason.BANNED_IMPORT, f"import from banned module {module!r}")
        for alias in node.names:
            if alias.name in _GETTER_NAMES and alias.asname not in (None, alias.name):
                self._flag(RejectReason.BANNED_CALL, f"{alias.name} imported under another name")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _GETTER_NAMES and id(node) not in self.called:
            self._flag(RejectReason.BANNED_CALL, f"{node.id} used as a value")
        elif node.id in BANNED_CALLS:
            self._flag(RejectReason.BANNED_CALL, f"use of banned name {node.id!r}")
        elif node.id in _MODULE_NAMES:
            self._flag(RejectReason.BANNED_IMPORT, f"use of banned module name {node.id!r}")
        elif _is_dunder(node.id) and node.id != "__name__":
            self._flag(RejectReason.DUNDER_ACCESS, f"use of dunder name {node.id!r}")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _GETTER_NAMES and id(node) not in self.called:
            self._flag(RejectReason.BANNED_CALL, f"{node.attr} used as a value")
        self._check_attribute_name(node.attr, "access to attribute")
        self.generic_visit(node)

    def _check_attribute_name(self, name: str, what: str) -> None:
        if _reaches_module(name):
            self._flag(RejectReason.BANNED_IMPORT, f"{what} {name!r} (a banned module)")
        elif name in _INTROSPECTION_ATTRIBUTES:
            self._flag(RejectReason.BANNED_CALL, f"{what} {name!r}")
        elif _is_dunder(name) and name not in _ALLOWED_DUNDERS:
            self._flag(RejectReason.DUNDER_ACCESS, f"{what} {name!r}")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _FORMATTERS:
            if not (isinstance(func.value, ast.Constant) and isinstance(func.value.value, str)):
                # The fields of a format string built at run time are out of sight here.
                self._flag(RejectReason.BANNED_CALL, f"{func.attr}() of a computed string")
        if isinstance(func, ast.Name) and func.id in _ATTRIBUTE_BUILTINS:
            self.called.add(id(func))
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self._flag(RejectReason.BANNED_CALL, f"{func.id}() with a computed attribute name")
            elif name.value.startswith("_"):
                self._flag(
                    RejectReason.DUNDER_ACCESS, f"{func.id}() of private attribute {name.value!r}"
                )
            else:
                self._check_attribute_name(name.value, f"{func.id}() of attribute")
                if name.value in _GETTER_NAMES:
                    self._flag(RejectReason.BANNED_CALL, f"{func.id}() of {name.value!r}")
        getter = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if getter in _ATTRIBUTE_GETTERS:
            self.called.add(id(func))
            # attrgetter takes names only; methodcaller a name, then the method's arguments.
            names = node.args if getter == "attrgetter" else node.args[:1]
            for arg in names:
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    self._flag(RejectReason.BANNED_CALL, f"{getter}() with a computed name")
                    continue
                for part in arg.value.split("."):
                    if part.startswith("_"):
                        self._flag(
                            RejectReason.DUNDER_ACCESS, f"{getter}() of private attribute {part!r}"
                        )
                    self._check_attribute_name(part, f"{getter}() of attribute")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # Strings naming dunders feed getattr-style tricks (e.g. via operator.attrgetter).
        if (
            isinstance(node.value, str)
            and "__" in node.value
            and any(
                part in node.value
                for part in (
                    "__class__",
                    "__subclasses__",
                    "__globals__",
                    "__builtins__",
                    "__bases__",
                    "__mro__",
                    "__code__",
                    "__dict__",
                    "__import__",
                    "__loader__",
                    "__spec__",
                )
            )
        ):
            self._flag(RejectReason.DUNDER_ACCESS, "string constant naming a dunder attribute")
        elif isinstance(node.value, str) and "{" in node.value:
            # str.format fields read attributes: "{0.__traceback__.tb_frame}".format(error).
            for field in _FORMAT_FIELD.findall(node.value):
                for part in _FIELD_SEPARATORS.split(field)[1:]:
                    self._check_attribute_name(part, "format field reaching attribute")


def check_source(program: str, *, max_source_chars: int = MAX_SOURCE_CHARS) -> Validation:
    """Static checks only (no execution): size, syntax, entry function ``f``, banned AST nodes.

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
    checker = _BanChecker()
    try:
        checker.visit(tree)
    except RecursionError:
        return reject(RejectReason.SYNTAX_ERROR, "program nests too deeply")
    if checker.found is not None:
        return reject(*checker.found)
    return Validation(ok=True)
