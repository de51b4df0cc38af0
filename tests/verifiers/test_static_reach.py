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
}


@pytest.mark.parametrize("name", sorted(REACH_THROUGHS))
def test_reach_throughs_are_flagged(name):
    verdict = check_source(REACH_THROUGHS[name])
    assert not verdict.ok
    assert verdict.reason in (
        RejectReason.BANNED_IMPORT,
        RejectReason.BANNED_CALL,
        RejectReason.DUNDER_ACCESS,
    )


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    return x.time + x.random + len(x.code) + x.real",
        "from operator import attrgetter, itemgetter\ndef f(xs):\n"
        "    return sorted(xs, key=itemgetter(0)), attrgetter('real')(3)",
        "def f(x):\n    return '{0} {1:>{2}} {a[0]}'.format(x, 'y', 4, a=[1])",
        "import operator\ndef f(x, sep):\n    return operator.methodcaller('split', sep)(x)",
        "import collections\ndef f(x):\n    return collections.Counter(x).most_common(1)",
    ],
)
def test_ordinary_programs_still_pass(source):
    assert check_source(source).ok


def test_the_issue_reproduction_is_rejected_before_it_runs(executor):
    program = "import typing\ndef f(x):\n    return typing.sys.modules['os'].getpid()"
    verdict = validate_program(program, ["1"], executor)
    assert not verdict.ok and verdict.reason == RejectReason.BANNED_IMPORT
