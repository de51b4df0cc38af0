"""``redqueen domain check``: a domain's pipeline on seed examples and given texts, no model."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from redqueen.experiments.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "arithmetic_domain.py"
cli = CliRunner()


def test_check_runs_every_stage_of_a_plugin_file_s_domain():
    result = cli.invoke(app, [
        "domain", "check", str(EXAMPLE), "--task-type", "arith_value",
        "--text", "<expr>3 * (4 - 1)</expr>\n</task>", "--text", "<expr>1 // 0</expr>", "--text", "hello",
        "--answer", "9</answer>", "--answer", "8", "--answer", "nine",
    ])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "domain arithmetic (ArithmeticDomain)" in out and "Expression(text='1 + 2', value=3)" in out
    assert "[arith_value] propose prompt from the seed examples:" in out and "  | <propose arith_value>" in out
    assert "[arith_missing]" not in out
    assert "parse_proposal: '3 * (4 - 1)'" in out and "measure: complexity 2; operators=2, depth=3" in out
    assert "answer '9</answer>': parse_answer '9' -> check correct" in out
    assert "answer '8': parse_answer '8' -> check wrong" in out
    assert "answer 'nine': parse_answer None -> check unparseable" in out
    assert "validate: rejected (division_by_zero)" in out
    assert "text 3 [arith_value]:\n  parse_proposal: None" in out


def test_check_a_registered_domain_by_name():
    text = "<prog>\ndef f(x):\n    return x * 2\n</prog>\n<in>3</in>\n</task>"
    result = cli.invoke(app, ["domain", "check", "code", "--task-type", "code_o", "--text", text,
                              "--answer", "6", "--answer", "7"])
    assert result.exit_code == 0, result.output
    assert "outputs=('6',)" in result.stdout
    assert "answer '6': parse_answer '6' -> check correct" in result.stdout
    assert "answer '7': parse_answer '7' -> check wrong" in result.stdout


@pytest.mark.parametrize(("args", "named"), [
    (["algebra"], "unknown domain 'algebra' (known:"),
    ([str(EXAMPLE), "--param", "max_operandz=3"],
     "domain_params.max_operandz: unknown parameter (known: max_operand, max_operators)"),
    ([str(EXAMPLE), "--param", "max_operators=99"], "domain_params.max_operators: input should be less"),
    ([str(EXAMPLE), "--task-type", "code_o"], "task type 'code_o': not one of domain 'arithmetic'"),
    ([str(EXAMPLE.parent / "custom_selection.py")], "registers no domain"),
    ([str(EXAMPLE.parent / "absent.py")], "absent.py"),
])
def test_bad_input_is_one_line_and_exit_2(args, named):
    result = cli.invoke(app, ["domain", "check", *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and named in lines[0] and "Traceback" not in result.output


_LAUGHS = "[&a [1,1,1,1,1,1,1,1,1], " + ", ".join(
    f"&{name} [{', '.join([f'*{prev}'] * 9)}]" for prev, name in zip("abcdefg", "bcdefgh", strict=True)
) + "]"


@pytest.mark.parametrize(("value", "named"), [
    (_LAUGHS, "(got '[&a [1,1,1"),  # 9**8 numbers: the line said them all, 157 MB
    ("[1", "(got '[1')"),  # invalid YAML: a parser's message that named no setting
])
def test_a_param_is_read_as_set_reads_a_value(value, named):
    result = cli.invoke(app, ["domain", "check", "code", "--param", f"max_source_chars={value}"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and len(lines[0]) < 2_000, lines[0][:300]
    assert lines[0].startswith("error: domain_params.max_source_chars: ") and named in lines[0]
