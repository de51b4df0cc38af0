"""Hostile programs that make a library object read an attribute they set back as a name or code.

Each passed :func:`~redqueen.verifiers.check_source` and then, in the real sandbox, reached
``eval``, ``__import__`` or a frame, and passed :func:`~redqueen.verifiers.validate_program`: the
kernel layer held, but a checked program was no longer pure (its gold output could be the
clock). The static check now refuses each of them where it can tell from the text; the fork
server guards the library objects before it serves, so each also fails in the sandbox when run
as raw source (``execute`` runs no static check).
"""

from __future__ import annotations

import pytest

from redqueen.verifiers import RejectReason, check_source

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


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_the_sandbox_stops_the_attack_run_as_raw_source(executor, name):
    result = executor.execute(ATTACKS[name], f"f({CODE})")
    assert not result.ok and result.value is None, result
    assert "written once" in (result.error or ""), result.error


def _value(executor, source: str) -> str | None:
    result = executor.execute(source, "r")
    assert result.ok, result.error
    return result.value


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
