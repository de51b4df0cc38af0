"""Hostile programs that make a library object read an attribute they set back as a name or code.

Each passed :func:`~redqueen.verifiers.check_source` and then, in the real sandbox, reached
``eval``, ``__import__`` or a frame, and passed :func:`~redqueen.verifiers.validate_program`: the
kernel layer held, but a checked program was no longer pure (its gold output could be the
clock). The static check now refuses each of them where it can tell from the text; the fork
server guards the library objects before it serves, so each also fails in the sandbox when run
as raw source (``execute`` runs no static check), and so does a variant the text cannot give
away (a program's own method called with the library object as ``self``).
"""

from __future__ import annotations

import pytest

from redqueen.verifiers import CandidateTest, RejectReason, check_source, validate_program

#: What every attack is asked to evaluate: it answers "os" only if it reached ``__import__``.
CODE = repr("__import__('os').__name__")

ATTACKS = {
    # typing's _GenericAlias.__reduce__ looks its _name up in typing's globals: there
    # '__builtins__' is the builtins dict, and copy rebuilds the alias as getitem(origin, args).
    "typing_alias_name_copy": (
        "import copy\nimport typing\n"
        "def f(code):\n    alias = typing.Literal['eval']\n    alias._name = '__builtins__'\n"
        "    return copy.copy(alias)(code)"
    ),
    "typing_alias_name_deepcopy": (
        "import copy\nimport typing\n"
        "def f(code):\n    alias = typing.Literal['__import__']\n"
        "    alias._name = '__builtins__'\n    return copy.deepcopy(alias)('os').__name__"
    ),
    # A subclass's dataclass() copies its base's fields and writes each field's name into the
    # source of __eq__ it executes.
    "dataclass_field_name_exec": (
        "import dataclasses\n@dataclasses.dataclass\nclass A:\n    x: int = 0\n"
        "class Box:\n    def __init__(self):\n        self.code = ''\n        self.got = None\n"
        "def f(code):\n"
        "    dataclasses.fields(A)[0].name = \"x,setattr(other,'got',eval(other.code))\"\n"
        "    @dataclasses.dataclass(init=False, repr=False)\n    class B(A):\n        y: int = 1\n"
        "    box = B()\n    box.code = code\n    box.got = None\n    B() == box\n"
        "    return box.got"
    ),
    # cached_property stores what it computed under its attrname in the instance's dict: an
    # instance-level __reduce_ex__, which copy.copy calls, and whose slot state copy then
    # setattr()s on any object, dunders included.
    "cached_property_attrname_reduce": (
        "import copy\nimport dataclasses\nimport functools\n"
        "class Target:\n    pass\n"
        "class Holder:\n    def __init__(self, names):\n        self.names = names\n"
        "    def reducer(self):\n        return lambda proto: (self.target, (), (None, self.names))\n"
        "    def target(self):\n        return Target\n"
        "    hook = functools.cached_property(reducer)\n"
        "Holder.hook.attrname = '__reduce_ex__'\n"
        "def f(code):\n"
        "    holder = Holder({'__annotations__': {\"x,setattr(other,'got',eval(other.code))\": int}})\n"
        "    holder.hook\n    copy.copy(holder)\n"
        "    C = dataclasses.dataclass(init=False, repr=False)(Target)\n"
        "    box = C()\n    box.x, box.code, box.got = 0, code, None\n"
        "    c = C()\n    c.x = 0\n    c == box\n    return box.got"
    ),
    # The same setattr, here of __subclasshook__ on an ABC of the program's: ABCMeta hands it the
    # builtin type, and from there attrgetter's class reads a generator's frame.
    "cached_property_attrname_subclasshook": (
        "import abc\nimport copy\nimport functools\nimport operator\n"
        "class Target(abc.ABC):\n    pass\n"
        "class Holder:\n    def __init__(self, names):\n        self.names = names\n"
        "        self.got = []\n"
        "    def reducer(self):\n        return lambda proto: (self.target, (), (None, self.names))\n"
        "    def target(self):\n        return Target\n"
        "    hook = functools.cached_property(reducer)\n"
        "Holder.hook.attrname = '__reduce_ex__'\n"
        "def f(code):\n    holder = Holder({})\n"
        "    holder.names['__subclasshook__'] = classmethod(\n"
        "        lambda cls, sub: holder.got.append(sub) or False)\n"
        "    holder.hook\n    copy.copy(holder)\n    isinstance(int, Target)\n"
        "    getter = holder.got[0](operator.attrgetter('real'))\n"
        "    frame = getter('gi_frame')(i for i in [code])\n"
        "    return getter('f_builtins')(frame)['__import__']('os').__name__"
    ),
}

#: The same attacks with the store inside a method of the program's own, called with the
#: library object as ``self``: ``self.name = name`` is ordinary code, so the text passes the
#: static check and only the fork server's guard stops the run.
THROUGH_A_METHOD = {
    "dataclass_field_name_by_method": (
        "import dataclasses\n@dataclasses.dataclass\nclass A:\n    x: int = 0\n"
        "class Namer:\n    def __init__(self, name):\n        self.name = name\n"
        "class Box:\n    def __init__(self):\n        self.code = ''\n        self.got = None\n"
        "def f(code):\n"
        "    Namer.__init__(dataclasses.fields(A)[0], \"x,setattr(other,'got',eval(other.code))\")\n"
        "    @dataclasses.dataclass(init=False, repr=False)\n    class B(A):\n        y: int = 1\n"
        "    box = B()\n    box.code = code\n    box.got = None\n    B() == box\n"
        "    return box.got"
    ),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_check_source_refuses_the_attack(name):
    verdict = check_source(ATTACKS[name])
    assert not verdict.ok, name
    assert verdict.reason in (
        RejectReason.BANNED_IMPORT,
        RejectReason.BANNED_CALL,
        RejectReason.NOT_LISTED,
    )


@pytest.mark.parametrize("name", sorted({**ATTACKS, **THROUGH_A_METHOD}))
def test_the_sandbox_stops_the_attack_run_as_raw_source(executor, name):
    source = {**ATTACKS, **THROUGH_A_METHOD}[name]
    result = executor.execute(source, f"f({CODE})")
    assert not result.ok and result.value is None, result
    assert "written once" in (result.error or ""), result.error


@pytest.mark.parametrize("name", sorted(THROUGH_A_METHOD))
def test_an_attack_the_text_hides_passes_the_check_and_fails_validation(executor, name):
    source = THROUGH_A_METHOD[name]
    assert check_source(source).ok
    verdict = validate_program(source, [CODE], executor)
    assert not verdict.ok and verdict.reason == RejectReason.RUNTIME_ERROR, verdict
    assert "written once" in verdict.detail


def _value(executor, source: str) -> str | None:
    result = executor.execute(source, "r")
    assert result.ok, result.error
    return result.value


def test_a_program_runs_as_a_main_module_of_its_own(executor):
    # Code a library compiles against sys.modules[cls.__module__] (dataclass's methods) gets
    # the program's globals, not the fork server's script (os, sys, Zygote ...).
    source = (
        "import sys, dataclasses\n@dataclasses.dataclass\nclass A:\n    x: int = 0\n"
        "main = vars(sys.modules['__main__'])\n"
        "r = (main is globals(), A.__init__.__globals__ is globals(),\n"
        "     sorted(k for k in main if k in ('Zygote', 'PRELOAD', 'os')))"
    )
    assert _value(executor, source) == "(True, True, [])"


def test_a_candidate_runs_as_a_main_module_of_its_own(executor):
    program = (
        "import sys\ndef f():\n    main = vars(sys.modules['__main__'])\n"
        "    return main is globals() and 'Zygote' not in main"
    )
    test = "def check(c):\n    assert c() is True\n"
    (result,) = executor.run_tests([CandidateTest(program, "f", test, "check(candidate)")])
    assert result.ok, result.error


def test_copy_looks_special_methods_up_on_the_class(executor):
    # An instance's own __reduce_ex__ or __deepcopy__ (only a library's writes could have put a
    # dunder in an instance's dict) is not what copy calls: the interpreter's rule for special
    # methods, which copy's plain getattr did not follow.
    source = (
        "import copy\nclass A:\n    pass\na = A()\n"
        "a.__reduce_ex__ = lambda proto: (str, ('reduced',))\n"
        "a.__reduce__ = a.__reduce_ex__\n"
        "a.__deepcopy__ = lambda memo: 'deep'\n"
        "r = (type(copy.copy(a)).__name__, type(copy.deepcopy(a)).__name__)"
    )
    assert _value(executor, source) == "('A', 'A')"


def test_typing_aliases_are_written_once_and_forward_no_stores(executor):
    source = (
        "import collections, typing\nr = []\n"
        "for target, name in ((typing.Literal['eval'], '_name'), (typing.List[int], '_inst'),\n"
        "                     (typing.Counter, '_nparams'), (typing.Counter[int], 'marker'),\n"
        "                     (typing.Hashable, 'marker'), (typing.Literal, '_name')):\n"
        "    try:\n        setattr(target, name, '__builtins__')\n        r.append('set')\n"
        "    except AttributeError as e:\n        r.append('written once' in str(e))\n"
        "    try:\n        delattr(target, name)\n        r.append('deleted')\n"
        "    except AttributeError as e:\n        r.append('written once' in str(e))\n"
        "r.append(hasattr(collections.Counter, 'marker'))\n"
        "r.append(repr(typing.Literal['eval']))"
    )
    assert _value(executor, source) == "[" + "True, " * 12 + "False, \"typing.Literal['eval']\"]"


def test_a_dataclass_field_is_named_once_and_only_as_an_identifier(executor):
    source = (
        "import dataclasses\n@dataclasses.dataclass\nclass A:\n    x: int = 0\n"
        "field = dataclasses.fields(A)[0]\nr = []\n"
        "for name in ('y', 'x', None, 'class', '__init__', 'a b'):\n"
        "    try:\n        field.name = name\n        r.append('set')\n"
        "    except AttributeError as e:\n        r.append('written once' in str(e))\n"
        "try:\n    del field.name\nexcept AttributeError as e:\n    r.append('written once' in str(e))\n"
        "fresh = dataclasses.field(default=0)\n"
        "for name in ('class', '__x__'):\n"
        "    try:\n        fresh.name = name\n        r.append('set')\n"
        "    except AttributeError as e:\n        r.append('written once' in str(e))\n"
        "r.append(field.name)"
    )
    assert _value(executor, source) == "[" + "True, " * 9 + "'x']"


def test_a_field_reused_under_another_name_is_refused(executor):
    source = (
        "import dataclasses\n@dataclasses.dataclass\nclass A:\n    x: int = 0\n"
        "class B:\n    y: int = dataclasses.fields(A)[0]\n"
        "dataclasses.dataclass(B)\nr = 1"
    )
    result = executor.execute(source, "r")
    assert not result.ok and "written once" in (result.error or ""), result


def test_a_dataclass_base_whose_fields_disagree_with_their_keys_is_refused(executor):
    # Raw source can rename a base's field entry; dataclass then refuses to copy it.
    source = (
        "import dataclasses\n@dataclasses.dataclass\nclass A:\n    x: int = 0\n"
        "A.__dataclass_fields__['y'] = A.__dataclass_fields__.pop('x')\n"
        "@dataclasses.dataclass\nclass B(A):\n    z: int = 1\nr = 1"
    )
    result = executor.execute(source, "r")
    assert not result.ok and result.error.startswith("TypeError"), result
    assert "'y'" in result.error


def test_a_cached_property_is_named_once_by_its_class_and_never_a_dunder(executor):
    source = (
        "import functools\nclass C:\n    @functools.cached_property\n    def v(self):\n"
        "        return 3\nr = [C().v]\n"
        "for name in ('w', '__reduce_ex__', None):\n"
        "    try:\n        C.v.attrname = name\n        r.append('set')\n"
        "    except AttributeError as e:\n        r.append('written once' in str(e))\n"
        "try:\n    del C.v.attrname\nexcept AttributeError as e:\n    r.append('written once' in str(e))\n"
        "try:\n    class D:\n        __eq__ = functools.cached_property(lambda self: 1)\n"
        "    r.append('made')\nexcept Exception as e:\n"
        "    r.append('written once' in str(e.__cause__ or e))\n"
        "r.append(C.v.attrname)"
    )
    assert _value(executor, source) == "[3, True, True, True, True, True, 'v']"
