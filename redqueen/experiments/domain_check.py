"""``redqueen domain check``: run a task domain's pipeline on texts, without a model.

A domain author writes ``parse_proposal``, ``validate``, ``parse_answer`` and ``check`` against
text a model will generate. :func:`check_domain` runs them in the order the game does on the
domain's seed examples (the proposer prompt they give) and on texts the author supplies (a
proposer's text, then solver answers to each valid task), and reports every stage's result, so
a parser or validator can be tried before a GPU is involved.

Texts are handled as the samplers hand them over: cut at the first stop string (the stop
string itself never reaches ``parse_proposal`` / ``parse_answer``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from redqueen.environments import TaskDomain
    from redqueen.verifiers import Executor

__all__ = ["check_domain", "cut_at_stop", "domain_check_command", "resolve_domain"]


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    """``text`` up to its first stop string, as the generation backends return it."""
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    return text if cut < 0 else text[:cut]


def resolve_domain(name_or_file: str, *, import_plugin: Callable[[str], str]) -> str:
    """The registered name of a domain given by name, or by a plug-in file that registers one.

    Args:
        name_or_file: A key of :data:`redqueen.environments.DOMAINS`, or a ``.py`` file.
        import_plugin: Imports a plug-in file (the CLI's, so the file is loaded once).

    Raises:
        ValueError: If the file registers no domain or several, or the name is unknown.
    """
    from redqueen.environments import DOMAINS  # here, so that `redqueen --help` stays light
    if name_or_file.endswith(".py") or Path(name_or_file).is_file():
        path = Path(import_plugin(name_or_file))
        module = f"redqueen_plugin_{path.stem}"
        found = sorted(n for n in DOMAINS if getattr(DOMAINS[n], "__module__", None) == module)
        if len(found) != 1:
            what = "no domain" if not found else f"several domains ({', '.join(found)}); give one by name"
            raise ValueError(f"{name_or_file}: registers {what}")
        return found[0]
    DOMAINS[name_or_file]  # UnknownNameError (a KeyError) lists the known domains
    return name_or_file


def _block(text: str, indent: str = "    ") -> list[str]:
    """Text shown verbatim, each line behind ``| `` (so blank lines and spaces stay visible)."""
    return [f"{indent}| {line}" for line in (text.splitlines() or [""])]


def check_domain(
    name: str,
    *,
    params: Mapping[str, object] | None = None,
    texts: Sequence[str] = (),
    answers: Sequence[str] = (),
    task_types: Sequence[str] = (),
    sandbox: Executor | None = None,
) -> Iterator[str]:
    """Run domain ``name``'s pipeline and yield a report, line by line.

    Stages: the seed examples and, per task type, the proposer's prompt built from them; then
    per text and task type: ``parse_proposal``, ``task_text``, ``signature``, ``validate``
    (valid with ``measure`` and ``reference``, or the rejection reason), ``solve_prompt``, and
    per answer ``parse_answer`` and ``check``.

    Args:
        name: A registered domain.
        params: Its settings (``environment.domain_params``).
        texts: Proposer texts, as a model would generate them after the proposal prompt.
        answers: Solver texts, tried on every valid task.
        task_types: Task types to try (default: all of the domain's).
        sandbox: An executor for ``validate`` and ``check`` (default: one
            :class:`redqueen.verifiers.Executor`, started only when there are texts).

    Raises:
        redqueen._registry.UnknownNameError: If no domain has this name.
        ValueError: If a setting or a task type is not the domain's.
    """
    from redqueen._params import ParameterError, check_params
    from redqueen.environments import DOMAINS, make_domain

    try:  # worded as configuration loading words it
        check_params(DOMAINS.params(name), dict(params or {}))
    except ParameterError as error:
        raise ValueError(f"domain_params.{error}" if error.key else f"domain_params: {error}") from None
    domain: TaskDomain[Any, Any, Any] = make_domain(name, params or {})
    types = tuple(task_types) or tuple(domain.task_types)
    unknown = [t for t in types if t not in domain.task_types]
    if unknown:
        raise ValueError(f"task type {unknown[0]!r}: not one of domain {name!r} ({', '.join(domain.task_types)})")
    yield (f"domain {name} ({type(domain).__name__}): task types {', '.join(domain.task_types)}; "
           f"proposals stop at {list(domain.propose_stop)}, answers at {list(domain.solve_stop)}")
    seeds = list(domain.seed_examples())
    yield f"seed examples ({len(seeds)}):"
    yield from (f"  {example!r}" for example in seeds)
    for task_type in types:
        yield f"[{task_type}] propose prompt from the seed examples:"
        yield from _block(domain.propose_prompt(task_type, seeds), "  ")
    if not texts:
        return
    with ExitStack() as stack:
        if sandbox is None:
            from redqueen.verifiers import Executor

            sandbox = stack.enter_context(Executor(workers=1))
        for index, raw in enumerate(texts, 1):
            text = cut_at_stop(raw, domain.propose_stop)
            for task_type in types:
                yield f"text {index} [{task_type}]:"
                yield from _try_text(domain, task_type, text, answers, sandbox)


def _try_text(
    domain: TaskDomain[Any, Any, Any], task_type: str, text: str, answers: Sequence[str], sandbox: Any
) -> Iterator[str]:
    """The stages from ``parse_proposal`` on, for one text and task type."""
    from redqueen.environments import Rejected

    proposal = domain.parse_proposal(task_type, text)
    if proposal is None:
        yield "  parse_proposal: None (unparseable; the game rejects it as 'unparseable')"
        return
    yield f"  parse_proposal: {proposal!r}"
    yield f"  task_text: {domain.task_text(proposal)!r}"
    yield f"  signature: {domain.signature(proposal)!r}"
    (verdict,) = domain.validate(task_type, [proposal], sandbox)
    if isinstance(verdict, Rejected):
        yield f"  validate: rejected ({verdict.reason})"
        return
    measures = domain.measure(verdict)
    named = ", ".join(f"{k}={v:g}" for k, v in measures.measures.items())
    yield f"  validate: valid {verdict!r}"
    yield f"  measure: complexity {measures.complexity:g}" + (f"; {named}" if named else "")
    yield f"  reference: {domain.reference(verdict)!r}"
    yield "  solve prompt:"
    yield from _block(domain.solve_prompt(verdict))
    for raw in answers:
        parsed = domain.parse_answer(task_type, cut_at_stop(raw, domain.solve_stop))
        status = "unparseable" if parsed is None else domain.check([(verdict, parsed)], sandbox)[0]
        yield f"  answer {raw!r}: parse_answer {parsed!r} -> check {status}"


def domain_check_command(
    domain: str = typer.Argument(..., help="A registered domain name, or a plug-in .py file that registers one."),
    text: list[str] | None = typer.Option(
        None, "--text", help="A proposer's text to parse and validate, as a model would write it (repeatable)."
    ),
    answer: list[str] | None = typer.Option(
        None, "--answer", help="A solver's text, judged on every valid task (repeatable)."
    ),
    task_type: list[str] | None = typer.Option(
        None, "--task-type", help="Only these task types (repeatable; default: all of the domain's)."
    ),
    param: list[str] | None = typer.Option(
        None, "--param", help="A domain setting as KEY=VALUE (YAML value), like environment.domain_params."
    ),
    plugins: list[str] | None = typer.Option(None, "--plugin", help="Module or .py file to import first (repeatable)."),
) -> None:
    """Run a domain's parse -> validate -> solve prompt -> check on its seed examples and on
    given texts, printing each stage's result; no model is loaded."""
    from redqueen.experiments.config import override_value
    from redqueen.experiments.plugins import import_plugin, load_plugins, one_line

    settings: dict[str, object] = {}
    try:  # bad input (a name, a file, a setting): one line and exit status 2, as ``run`` does
        for item in param or ():
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"--param {item!r}: expected KEY=VALUE")
            settings[key.strip()] = override_value(value)  # as --set reads its values
        load_plugins()
        for spec in plugins or ():
            import_plugin(spec)
        name = resolve_domain(domain, import_plugin=import_plugin)
        lines = list(check_domain(name, params=settings, texts=text or (), answers=answer or (),
                                  task_types=task_type or ()))
    except (ValueError, KeyError, OSError) as error:
        typer.echo(f"error: {' '.join(one_line(error).split())}", err=True)
        raise typer.Exit(2) from None
    for line in lines:
        typer.echo(line)
