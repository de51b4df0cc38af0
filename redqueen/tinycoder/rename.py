"""Identifier renaming: the same program under the names a person might have written.

The generator names things from a small fixed pool (``xs``, ``a``, ``g``, ...). A model trained
only on those names can learn the pool by heart instead of reading the program, and then
stumbles on a program a person wrote (``nums``, ``total``, ``count_vowels``).
:func:`rename_identifiers` gives every name the program binds (parameters, locals,
comprehension and lambda variables, helper functions; the entry function ``f`` keeps its name)
a new name drawn from a wider pool, consistently and with no collisions, keeping the source's
formatting. The result has the same canonical form (:mod:`redqueen.tinycoder.canonical`), which
the function checks; when it cannot guarantee that, it returns the source unchanged.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import random
import tokenize

from redqueen.tinycoder.canonical import ENTRY, canonical_form

__all__ = ["HELPER_NAMES", "VALUE_NAMES", "rename_identifiers"]

#: Names for values (parameters, locals, loop and comprehension variables).
VALUE_NAMES: tuple[str, ...] = (
    "nums", "values", "items", "data", "seq", "arr", "lst", "numbers", "words", "text", "s",
    "word", "line", "chars", "letters", "n", "k", "m", "x", "y", "z", "p", "q", "num", "val",
    "value", "count", "total", "acc", "result", "res", "out", "output", "answer", "best",
    "current", "prev", "last", "first", "i", "j", "idx", "index", "pos", "c", "ch", "char",
    "key", "item", "elem", "e", "w", "t", "u", "left", "right", "lo", "hi", "low", "high",
    "size", "length", "width", "depth", "limit", "target", "step", "steps", "base", "digits",
    "digit", "freq", "counts", "seen", "table", "mapping", "lookup", "scores", "pairs", "grid",
    "row", "col", "parts", "chunk", "buf", "stack", "queue", "tmp", "temp", "flag", "ok",
    "found", "mask", "bits", "prefix", "suffix", "head", "tail", "rest", "a", "b", "d", "r",
    "v", "xs", "ys", "zs", "dct", "info", "config", "state", "level", "amount", "price",
    "cost", "weight", "height", "age", "name", "names", "label", "tag", "code", "msg",
)  # fmt: skip

#: Names for helper functions.
HELPER_NAMES: tuple[str, ...] = (
    "g", "h", "helper", "aux", "go", "step", "walk", "rec", "solve", "compute", "calc",
    "process", "transform", "combine", "merge", "count_items", "score", "check", "build",
    "collect", "reduce_all", "apply", "fold", "inner", "loop", "visit", "expand", "shrink",
    "normalize", "clean", "encode", "decode", "mix", "twist", "shift", "rotate", "pick",
)  # fmt: skip

_RESERVED = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {ENTRY}


def _bound_names(tree: ast.AST) -> tuple[list[str], list[str]]:
    """(helper function names, other bound names), each in order of first appearance."""
    helpers: list[str] = []
    values: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name != ENTRY and node.name not in helpers:
            helpers.append(node.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            name = node.arg
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            name = node.id
        else:
            continue
        if name not in helpers and name not in values and name != ENTRY:
            values.append(name)
    return helpers, values


def rename_identifiers(source: str, rng: random.Random) -> str:
    """``source`` with every bound name except ``f`` renamed at random (see the module doc).

    Attribute names (``s.upper``) and keyword arguments (``key=abs``) are left alone; a new
    name is never a builtin, a keyword, ``f`` or a name the program already uses. The
    canonical form is unchanged, or the source comes back as it was.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    helpers, values = _bound_names(tree)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | set(helpers) | set(values)
    taken = set(_RESERVED) | used
    mapping: dict[str, str] = {}
    for names, pool in ((helpers, HELPER_NAMES), (values, VALUE_NAMES)):
        choices = [n for n in pool if n not in taken]
        rng.shuffle(choices)
        for name in names:
            if not choices:
                return source
            mapping[name] = choices.pop()
            taken.add(mapping[name])
    out = []
    depth = 0
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    significant = [t for t in tokens if t.type not in (tokenize.NL, tokenize.COMMENT)]
    position = {id(t): k for k, t in enumerate(significant)}
    for tok in tokens:
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        if tok.type == tokenize.NAME and tok.string in mapping:
            k = position[id(tok)]
            before = significant[k - 1].string if k > 0 else ""
            after = significant[k + 1].string if k + 1 < len(significant) else ""
            is_keyword_argument = depth > 0 and after == "=" and before in ("(", ",")
            if before != "." and not is_keyword_argument:
                tok = tok._replace(string=mapping[tok.string])
        out.append(tok)
    renamed = tokenize.untokenize(out)
    try:
        same = canonical_form(renamed) == canonical_form(source)
    except SyntaxError:
        same = False
    return renamed if same else source
