"""What a task program may use: the names, modules, attributes and syntax that
:func:`~redqueen.verifiers.check_source` lets through. Everything else is refused.

A deny-list names what is dangerous and misses what nobody thought of (a class pattern's
keywords, a module held by another module, a string evaluated by ``typing``); a list of what
ordinary task programs need has no such gaps to find. The lists are the generator's dialect
and what people write in small functions: common builtins, methods of the built-in value types,
a few pure standard-library modules, and the syntax of functions, classes, loops and
comprehensions. See ``docs/verifier.md`` for why each exclusion is there.
"""

from __future__ import annotations

import ast
import builtins
import collections
import decimal
import fractions
import functools
import re
import types
import typing

__all__ = [
    "ALLOWED_ATTRIBUTES",
    "ALLOWED_BUILTINS",
    "ALLOWED_MODULES",
    "ALLOWED_NODES",
    "DEFINABLE_DUNDERS",
    "FUTURE_FEATURES",
    "CALLED_ON_THE_SPOT",
    "CALLER_MODULE_NAMES",
    "GETTER_NAMES",
    "ONE_ARGUMENT_NAMES",
    "READ_ONLY_ATTRIBUTES",
    "REFUSED_BUILTINS",
    "REFUSED_KEYWORDS",
    "RESERVED_ATTRIBUTES",
    "SELF_MATCHING",
]


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)

#: Built-in names a program may read. Not listed, among others: ``id`` and ``hash`` (addresses:
#: a different value on every run and machine), ``eval``, ``exec``, ``compile``, ``open``,
#: ``input``, ``globals``, ``locals``, ``vars``, ``dir``, ``__import__``, ``memoryview``.
#: ``type`` is read only as ``type(x)`` in a comparison or ``type(x).__name__``: the type of a
#: class is a metaclass, which builds classes from a dict of any names. A comparison other than
#: ``is`` hands the type to the other operand's methods, so that operand must be a listed type.
ALLOWED_BUILTINS = (
    _names(
        "abs all any ascii bin bool bytearray bytes callable chr classmethod complex delattr dict "
        "divmod enumerate filter float format frozenset getattr hasattr hex int isinstance "
        "issubclass iter len list map max min next object oct ord pow print property range repr "
        "reversed round set setattr slice sorted staticmethod str sum super tuple type zip "
        "Ellipsis NotImplemented"
    )
    | _EXCEPTIONS
)
#: Built-in names that are not listed. A program may still use one as the name of a function's
#: own parameter or local variable (``for id, name in rows``), where Python never falls back to
#: the builtin; anywhere else the name would reach the builtin and is refused.
REFUSED_BUILTINS = frozenset(dir(builtins)) - ALLOWED_BUILTINS - {"__name__"}

#: Importable modules and the names each offers. A listed name is never a module and never
#: evaluates a string: ``typing.get_type_hints`` and ``functools.singledispatch`` (which reads
#: annotations with it) run code hidden in string annotations, ``dataclasses.make_dataclass``
#: and ``functools.update_wrapper``/``wraps`` copy attributes named at run time,
#: ``string.Formatter`` reads format fields built at run time. ``enum`` is out: calling an
#: ``Enum`` class with names builds a class from a dict at run time, dunder keys included
#: (``__annotations__`` that ``dataclass`` then writes into the source it executes).
#: ``functools.cached_property`` is out: it stores into an instance's dict under its
#: ``attrname``, which a program could set (``'__reduce_ex__'`` gave an instance a reduction of
#: its own, from which ``copy`` set any attribute on any object); no shipped program used it.
ALLOWED_MODULES: dict[str, frozenset[str]] = {
    "math": _names(
        "acos acosh asin asinh atan atan2 atanh cbrt ceil comb copysign cos cosh degrees dist e "
        "erf erfc exp exp2 expm1 fabs factorial floor fmod frexp fsum gamma gcd hypot inf isclose "
        "isfinite isinf isnan isqrt lcm ldexp lgamma log log10 log1p log2 modf nan nextafter perm "
        "pi pow prod radians remainder sin sinh sqrt sumprod tan tanh tau trunc ulp"
    ),
    "cmath": _names(
        "acos acosh asin asinh atan atanh cos cosh e exp inf infj isclose isfinite isinf isnan "
        "log log10 nan nanj phase pi polar rect sin sinh sqrt tan tanh tau"
    ),
    "itertools": _names(
        "accumulate batched chain combinations combinations_with_replacement compress count "
        "cycle dropwhile filterfalse groupby islice pairwise permutations product repeat "
        "starmap takewhile tee zip_longest"
    ),
    "functools": _names("cache cmp_to_key lru_cache partial reduce total_ordering"),
    "operator": _names(
        "abs add and_ attrgetter call concat contains countOf delitem eq floordiv ge getitem gt "
        "iadd iand iconcat ifloordiv ilshift imatmul imod imul index indexOf inv invert ior ipow "
        "irshift is_ is_not isub itemgetter itruediv ixor le length_hint lshift lt matmul "
        "methodcaller mod mul ne neg not_ or_ pos pow rshift setitem sub truediv truth xor"
    ),
    "heapq": _names("heapify heappop heappush heappushpop heapreplace merge nlargest nsmallest"),
    "bisect": _names("bisect bisect_left bisect_right insort insort_left insort_right"),
    "collections": _names("ChainMap Counter OrderedDict defaultdict deque namedtuple"),
    "re": _names(
        "A ASCII DOTALL I IGNORECASE M MULTILINE Match NOFLAG Pattern S U UNICODE VERBOSE X "
        "compile error escape findall finditer fullmatch match search split sub subn"
    ),
    "string": _names(
        "ascii_letters ascii_lowercase ascii_uppercase capwords digits hexdigits octdigits "
        "printable punctuation whitespace"
    ),
    "fractions": _names("Fraction"),
    "decimal": _names(
        "Decimal DivisionByZero InvalidOperation ROUND_05UP ROUND_CEILING ROUND_DOWN ROUND_FLOOR "
        "ROUND_HALF_DOWN ROUND_HALF_EVEN ROUND_HALF_UP ROUND_UP"
    ),
    "copy": _names("copy deepcopy"),
    "dataclasses": _names(
        "FrozenInstanceError asdict astuple dataclass field fields is_dataclass replace"
    ),
    "typing": _names(
        "Any Callable Counter DefaultDict Deque Dict FrozenSet Generator Generic Hashable "
        "Iterable Iterator List Literal Mapping NamedTuple Optional Sequence Set Tuple TypeVar "
        "Union"
    ),
    "textwrap": _names("dedent fill indent shorten wrap"),
    "unicodedata": _names(
        "bidirectional category combining decimal decomposition digit east_asian_width "
        "is_normalized lookup mirrored name normalize numeric unidata_version"
    ),
    "abc": _names("ABC abstractmethod"),
    "numbers": _names("Complex Integral Number Rational Real"),
}
#: ``from __future__ import ...`` features a program may name (annotations stay unevaluated).
FUTURE_FEATURES = frozenset({"annotations"})

# Types whose public attributes a program may read on any value. Every value a listed name
# gives is one of these (or of a class the program defines).
_VALUE_TYPES = (
    str,
    bytes,
    bytearray,
    int,
    float,
    complex,
    bool,
    list,
    tuple,
    dict,
    set,
    frozenset,
    range,
    slice,
    type({}.keys()),
    type({}.values()),
    type({}.items()),
    collections.Counter,
    collections.defaultdict,
    collections.deque,
    collections.OrderedDict,
    collections.ChainMap,
    re.Pattern,
    re.Match,
    fractions.Fraction,
    decimal.Decimal,
    functools.partial,
    property,
    *(getattr(builtins, name) for name in sorted(_EXCEPTIONS)),
)
#: Attributes of the exceptions above that the interpreter fills with an object the program
#: may never have named: an ``AttributeError``'s ``obj`` is whatever the failed lookup ran on,
#: and ``typing`` forwards lookups to the class an alias stands for
#: (``typing.Hashable.real`` fails on ``collections.abc.Hashable``). Their other attributes
#: hold strings, bytes, numbers or what the program itself raised.
_EXCEPTION_HELD = frozenset({"obj"})
#: Methods that read attributes named inside a string (``'{0.__class__}'.format(x)``):
#: ``str.format`` is allowed only where it is called on a constant whose fields the check reads
#: (see :func:`~redqueen.verifiers.check_source`).
_FORMATTING = frozenset({"format", "format_map"})
#: Attribute names a program may read on any value: the public attributes of the value types
#: above, those of a namedtuple, a ``lru_cache`` function and a generator's methods, less
#: ``format``, ``format_map`` and an exception's ``obj``.
ALLOWED_ATTRIBUTES = (
    frozenset(name for kind in _VALUE_TYPES for name in dir(kind) if not name.startswith("_"))
    | _names("_asdict _fields _field_defaults _make _replace cache_clear cache_info")
    | _names("send throw close")
) - (_FORMATTING | _EXCEPTION_HELD)

# The interpreter's own objects: frames, code, tracebacks, generators, coroutines, functions,
# cells, modules and types. Reading their attributes is how a program walks out of its code.
_INTERNAL_TYPES = (
    types.FrameType,
    types.CodeType,
    types.TracebackType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.CellType,
    types.ModuleType,
    types.MappingProxyType,
    types.SimpleNamespace,
    type,
    super,
    classmethod,
    staticmethod,
)


def _typing_objects() -> tuple[object, ...]:
    """What ``typing`` makes of a program's arguments: aliases, forward references, special
    forms, type variables. Its comparisons hand them to a program's ``__eq__``
    (``typing.List['s'] == typing.List[g]`` gives ``g`` the ``ForwardRef('s')``), so a program
    can hold any of them without naming one."""
    var = typing.TypeVar("var")

    class Generic(typing.Generic[var]):
        pass

    ref = "s"  # a string, which typing turns into a ForwardRef
    made = (
        typing.ForwardRef(ref),
        *(getattr(typing, name)[ref] for name in ("List", "Optional", "Literal", "Tuple")),
        *(getattr(typing, name)[int, ref] for name in ("Union", "Dict")),
        typing.Callable[[ref], ref],
        Generic[ref],  # type: ignore[valid-type]
        var,
        typing.Generic,
        typing.Protocol,
    )
    forms = ("Any", "LiteralString", "Never", "NoReturn", "Self", "TypeAlias", "ClassVar", "Final")
    made += tuple(getattr(typing, name) for name in forms if hasattr(typing, name))
    listed = tuple(getattr(typing, name) for name in sorted(ALLOWED_MODULES["typing"]))
    return (*made, *listed)


#: Values an attribute may hold and still be read under a name a program defines: plain data,
#: which leads nowhere (``_name`` is a string, ``_inst`` a bool). Setting such a name is another
#: matter: see :data:`READ_ONLY_ATTRIBUTES`.
_PLAIN_DATA = (type(None), bool, int, str)


def _private_and_public(value: object) -> set[str]:
    """Non-dunder attribute names of ``value`` whose values are not plain data."""
    names = set()
    for name in dir(value):
        if name.startswith("__") and name.endswith("__"):
            continue
        try:
            held = getattr(value, name)
        except Exception:  # a descriptor that refuses to be read here may not elsewhere
            names.add(name)
            continue
        if not isinstance(held, _PLAIN_DATA):
            names.add(name)
    return names


def _enum_objects() -> tuple[object, ...]:
    """The enum members a program can hold: ``re``'s flags (``enum`` itself is not listed)."""
    return tuple(getattr(re, name) for name in sorted(ALLOWED_MODULES["re"]) if name.isupper())


#: Attribute names no program may use, even on a class of its own: the interpreter's internals
#: (``gi_frame``, ``f_back``, ``tb_frame``, ``co_code``, ``mro`` ...) not among the listed
#: attributes, every attribute of what ``typing`` makes that holds more than plain data, private
#: ones included (``ForwardRef._evaluate`` evaluates its string; ``_getitem``, ``copy_with``
#: ...; ``_name``, a string, stays a name programs may read), the same of ``re``'s flags, enum
#: members whose class keeps its tables there (``_value2member_map_``, ``_member_map_``: a
#: program that defined those names read and rewrote the tables, and ``re.M | re.I`` became a
#: member of ``RegexFlag`` named by the program), an exception's ``obj``, and the formatting
#: methods. A program that defines ``self.f_back`` must not be able to read a
#: frame's ``f_back`` under that cover, nor one that defines ``self.obj`` an exception's.
RESERVED_ATTRIBUTES = (
    (
        frozenset(
            name for kind in _INTERNAL_TYPES for name in dir(kind) if not name.startswith("_")
        )
        | frozenset(
            name
            for value in (*_typing_objects(), *_enum_objects())
            for name in _private_and_public(value)
        )
    )
    - ALLOWED_ATTRIBUTES
) | (_FORMATTING | _EXCEPTION_HELD)

#: Attribute names a program may read where it could before, but never set or delete (by
#: assignment, augmented assignment, ``del``, a loop target, ``setattr`` or ``delattr``): a
#: library object a program can hold reads each back as a name or decides by it how to treat
#: code. ``typing``'s aliases keep ``_name``, ``_inst``, ``_nparams`` and ``_paramspec_tvars``
#: (``_typevar_types`` in later versions) on themselves and forward every other store to the
#: class they stand for: ``__reduce__`` looks ``_name`` up in typing's globals, where
#: ``'__builtins__'`` is the builtins dict (``copy.copy`` of a ``Literal['eval']`` so named
#: returned ``eval``); ``_inst`` decides whether calling the alias makes its class, the others
#: how its parameters are checked, and ``_is_protocol`` which classes typing treats as
#: protocols, whose attributes it reads by name. An enum member's ``_name_`` (``re``'s flags)
#: is what ``Enum.__reduce_ex__`` looks up on its class. ``functools.cached_property`` (not
#: listed) stores into an instance's dict under its ``attrname``; its ``func`` is called with
#: the instance, as the program's own function could be.
#:
#: The other attributes a program can set on what listed names give it are values the library
#: computes or compares with, or hands to code the program could have called itself: a
#: dataclass field's ``type``, ``default``, ``default_factory``, ``metadata``, its flags and
#: ``_field_type`` (compared by identity), a ``Fraction``'s ``_numerator`` and
#: ``_denominator``, a ``ChainMap``'s ``maps``, a ``defaultdict``'s ``default_factory``, an
#: enum member's ``_value_``. A dataclass field's ``name`` is written into the source of the
#: methods ``dataclass`` executes, but it cannot be refused here: ``self.name = name`` is
#: everyday code, and a program's method may be called with a field as ``self``. The fork
#: server guards it at run time instead, and typing's aliases as well (``_library_guards``).
READ_ONLY_ATTRIBUTES = _names(
    "_name _inst _nparams _paramspec_tvars _typevar_types _is_protocol _name_ attrname"
)

#: Dunder methods a class body may define. The interpreter calls them with ordinary operands;
#: ``__getattr__``, ``__match_args__``, ``__instancecheck__``, ``__init_subclass__``,
#: ``__set_name__``, ``__class_getitem__``, ``__del__``, ``__format__`` and the like are out.
DEFINABLE_DUNDERS = _names(
    "__init__ __post_init__ __repr__ __str__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ "
    "__len__ __iter__ __next__ __reversed__ __contains__ __getitem__ __setitem__ __delitem__ "
    "__missing__ __bool__ __call__ __int__ __float__ __index__ __round__ __neg__ __pos__ __abs__ "
    "__invert__ __add__ __sub__ __mul__ __matmul__ __truediv__ __floordiv__ __mod__ __divmod__ "
    "__pow__ __lshift__ __rshift__ __and__ __or__ __xor__ __radd__ __rsub__ __rmul__ "
    "__rtruediv__ __rfloordiv__ __rmod__ __rpow__ __iadd__ __isub__ __imul__"
)

#: Built-in types a class pattern may take one positional sub-pattern of (``case int(n)``):
#: they match the subject itself. Any other class reads the attributes its ``__match_args__``
#: names at run time, so there a pattern names them as keywords.
SELF_MATCHING = _names("bool bytearray bytes dict float frozenset int list set str tuple")

#: Callables that read an attribute named by a string: allowed only where called on the spot
#: with constant names, never as values (renamed, passed, stored), where the name is out of sight.
GETTER_NAMES = frozenset({"getattr", "hasattr", "setattr", "delattr", "attrgetter", "methodcaller"})
#: Callables whose further parameters are their own bookkeeping: called on the spot with one
#: positional argument only, never as values. ``copy.deepcopy(x, memo)`` trusts ``memo`` as its
#: table of copies: a program's mapping answers its lookups with objects and names of its
#: choosing, which deepcopy then rebuilds (``getattr(obj, name)`` from a method's reduction).
ONE_ARGUMENT_NAMES = frozenset({"deepcopy"})
#: Callables with keywords that reach outside the program: called on the spot, never with one
#: of these keywords, nor with ``**`` (which could carry one). ``collections.namedtuple``'s
#: ``module`` names the module its class claims to be from, whose globals ``dataclass`` then
#: writes the class's methods into. (``typing.NamedTuple``'s keywords are fields.)
#: ``functools.lru_cache``'s ``typed`` (also its second positional argument) puts each
#: argument's type, and a marker of its own, in the keys of its cache: on a hash collision a
#: program's ``__eq__`` would be handed the type of an argument the library passed.
REFUSED_KEYWORDS: dict[str, frozenset[str]] = {
    "namedtuple": frozenset({"module"}),
    "lru_cache": frozenset({"typed"}),
}
#: Callables that take the module their class claims to be from off the frame that calls them:
#: ``typing.NamedTuple``'s functional form reads its caller's ``__name__``. Called on the spot, the
#: caller is the program's own code (``__main__``); handed to a library function that calls it
#: (in a ``partial`` as the ``copy`` of a ``ChainMap``'s first map), the caller was the library's
#: own frame, and the class's module ``collections``, whose globals ``dataclass`` then wrote the
#: class's methods into, as ``namedtuple``'s ``module=`` did. As a class's base it is no value
#: handed on: the class takes the module of its class statement.
CALLER_MODULE_NAMES = frozenset({"NamedTuple"})
#: Names that are only called on the spot (see :data:`GETTER_NAMES`, :data:`ONE_ARGUMENT_NAMES`,
#: :data:`REFUSED_KEYWORDS`, :data:`CALLER_MODULE_NAMES`).
CALLED_ON_THE_SPOT = (
    GETTER_NAMES | ONE_ARGUMENT_NAMES | frozenset(REFUSED_KEYWORDS) | CALLER_MODULE_NAMES
)

#: Syntax a program may use. Not listed: ``with`` (no listed context manager), ``async`` and
#: ``await``, ``except*``, and type-parameter syntax.
ALLOWED_NODES: frozenset[type] = frozenset(
    {
        ast.Module,
        # statements
        ast.FunctionDef,
        ast.ClassDef,
        ast.Return,
        ast.Delete,
        ast.Assign,
        ast.AugAssign,
        ast.AnnAssign,
        ast.For,
        ast.While,
        ast.If,
        ast.Raise,
        ast.Try,
        ast.Assert,
        ast.Import,
        ast.ImportFrom,
        ast.Global,
        ast.Nonlocal,
        ast.Expr,
        ast.Pass,
        ast.Break,
        ast.Continue,
        ast.Match,
        # expressions
        ast.BoolOp,
        ast.NamedExpr,
        ast.BinOp,
        ast.UnaryOp,
        ast.Lambda,
        ast.IfExp,
        ast.Dict,
        ast.Set,
        ast.ListComp,
        ast.SetComp,
        ast.DictComp,
        ast.GeneratorExp,
        ast.Yield,
        ast.YieldFrom,
        ast.Compare,
        ast.Call,
        ast.FormattedValue,
        ast.JoinedStr,
        ast.Constant,
        ast.Attribute,
        ast.Subscript,
        ast.Starred,
        ast.Name,
        ast.List,
        ast.Tuple,
        ast.Slice,
        # parts
        ast.Load,
        ast.Store,
        ast.Del,
        ast.comprehension,
        ast.ExceptHandler,
        ast.arguments,
        ast.arg,
        ast.keyword,
        ast.alias,
        ast.match_case,
        ast.MatchValue,
        ast.MatchSingleton,
        ast.MatchSequence,
        ast.MatchMapping,
        ast.MatchClass,
        ast.MatchStar,
        ast.MatchAs,
        ast.MatchOr,
        *ast.boolop.__subclasses__(),
        *ast.operator.__subclasses__(),
        *ast.unaryop.__subclasses__(),
        *ast.cmpop.__subclasses__(),
    }
)
