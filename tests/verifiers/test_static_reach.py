"""Static checks flag module-attribute reach-throughs to banned modules and frame access, the
first line of defence in front of the sandbox's kernel layers."""

from __future__ import annotations

import pytest

from redqueen.verifiers import RejectReason, check_source, validate_program

REACH_THROUGHS = {
    "typing_sys_modules": "import typing\ndef f(x):\n    return typing.sys.modules['os'].getpid()",
    "collections_sys": "import collections\ndef f(x):\n    return collections.sys.platform",
    "collections_private_sys": "import collections\ndef f(x):\n    return collections._sys",
    "any_x_os": "import string\ndef f(x):\n    return string.os",
    "sys_modules_bare": "def f(x):\n    return x.modules['os']",
    "module_name_bound": "import typing\nsys = typing.get_type_hints\ndef f(x):\n    return sys",
    "attrgetter_built": "import operator\ndef f(x):\n"
    "    return operator.attrgetter('_' + '_class__')(x)",
    "attrgetter_imported": "from operator import attrgetter\ndef f(x):\n"
    "    return attrgetter('sys.modules')(x)",
    "methodcaller_private": "import operator\ndef f(x):\n    return operator.methodcaller('_exit')(x)",
    "getattr_module_name": "import typing\ndef f(x):\n    return getattr(typing, 'sys')",
    "frame_walk": "def f(x):\n    try:\n        1 / 0\n    except ZeroDivisionError as e:\n"
    "        return e.__traceback__.tb_frame.f_back.f_locals",
    "format_field_frame": "def f(x):\n    return '{0.__traceback__.tb_frame}'.format(x)",
    "format_field_reach": "import typing\ndef f(x):\n    return '{0.sys.modules}'.format(typing)",
    # Getters used as values, renamed, or fed names built at run time (G2).
    "getattr_renamed": "import typing\ng = getattr\ndef f(x):\n    return g(typing, 's' + 'ys')",
    "getattr_passed": "import functools, typing\ndef f(x):\n"
    "    return functools.reduce(getattr, ['s' + 'ys', 'modules'], typing)",
    "getattr_mapped": "import typing\ndef f(x):\n    return list(map(getattr, [typing], ['s' + 'ys']))",
    "getattr_in_container": "import typing\nT = [getattr]\ndef f(x):\n    return T[0](typing, x)",
    "attrgetter_renamed": "from operator import attrgetter as g\nimport typing\ndef f(x):\n"
    "    return g('s' + 'ys')(typing)",
    "attrgetter_stored": "import operator, typing\nget = operator.attrgetter\ndef f(x):\n"
    "    return get(x)(typing)",
    "methodcaller_passed": "import operator\ndef f(x):\n"
    "    return list(map(operator.methodcaller, [x]))",
    "getattr_of_getter": "import operator\ndef f(x):\n"
    "    return getattr(operator, 'attrgetter')(x)",
    "operator_module_getter": "import _operator, typing\ndef f(x):\n"
    "    return _operator.attrgetter('s' + 'ys')(typing)",
    "format_built_at_run_time": "import typing\ndef f(x):\n"
    "    return ('{0.' + 's' + 'ys}').format(typing)",
    "format_map_built": "import typing\ndef f(x):\n"
    "    return ('{t.' + x + '}').format_map({'t': typing})",
    "vars_as_value": "import typing\nv = [vars]\ndef f(x):\n    return v[0](typing)",
    "hasattr_renamed": "h = hasattr\ndef f(x):\n    return h(x, 'real')",
}


@pytest.mark.parametrize("name", sorted(REACH_THROUGHS))
def test_reach_throughs_are_flagged(name):
    verdict = check_source(REACH_THROUGHS[name])
    assert not verdict.ok
    assert verdict.reason in (
        RejectReason.BANNED_IMPORT,
        RejectReason.BANNED_CALL,
        RejectReason.DUNDER_ACCESS,
        RejectReason.NOT_LISTED,
    )


@pytest.mark.parametrize(
    "source",
    [
        # Attributes named like modules, on a class of the program's own.
        "class Clock:\n    def __init__(self):\n        self.time, self.random, self.code = 1, 2, 'c'\n"
        "def f(x):\n    c = Clock()\n    return c.time + c.random + len(c.code) + x.real",
        "from operator import attrgetter, itemgetter\ndef f(xs):\n"
        "    return sorted(xs, key=itemgetter(0)), attrgetter('real')(3)",
        "def f(x):\n    return '{0} {1:>{2}} {a[0]}'.format(x, 'y', 4, a=[1])",
        "import operator\ndef f(x, sep):\n    return operator.methodcaller('split', sep)(x)",
        "import collections\ndef f(x):\n    return collections.Counter(x).most_common(1)",
        "def f(x):\n    return getattr(x, 'real', 0) + hasattr(x, 'imag')",
        "def f(x, n):\n    return '{:>{}}'.format(x, n) + f'{x!r:>{n}}'",
    ],
)
def test_ordinary_programs_still_pass(source):
    assert check_source(source).ok


def test_the_issue_reproduction_is_rejected_before_it_runs(executor):
    program = "import typing\ndef f(x):\n    return typing.sys.modules['os'].getpid()"
    verdict = validate_program(program, ["1"], executor)
    assert not verdict.ok and verdict.reason == RejectReason.BANNED_IMPORT
