"""The command line: bad input exits 2 with one line and leaves nothing behind; list; export."""

from __future__ import annotations

import json
import os

import pytest
import torch
from typer.testing import CliRunner

from redqueen._registry import ALL_REGISTRIES
from redqueen.experiments.cli import EXIT_BAD_INPUT, app, main
from redqueen.experiments.rundir import RunDirectory

runner = CliRunner()


def _bad(args: list[str], match: str) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    assert match in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["--set", "no_such_key=1"], "no_such_key: unknown key"),
        (["--set", "steps=many"], "steps"),
        (["--set", "population.rank=0"], "population.rank"),
        (["--set", "evolution.selection_params=3"], "evolution.selection_params"),
        (["--set", "environment.name=no_such_env"], "environment.name"),
        (["--set", "steps"], "override 'steps'"),
    ],
)
def test_bad_config_exits_2_and_leaves_no_run_directory(tmp_path, overrides, match):
    out = tmp_path / "runs" / "bad"
    _bad(["run", "surrogate", "--out", str(out), *overrides], match)
    assert not out.exists()
    assert not (tmp_path / "runs").exists()  # the parent this call would have created, too


def test_a_setup_failure_while_building_is_one_line(tmp_path):
    out = tmp_path / "runs" / "nodevice"
    _bad(
        [
            "run",
            "tiny",
            "--out",
            str(out),
            "--set",
            "model.device=nosuchdevice",
            "--set",
            "population.teachers=1",
            "--set",
            "population.students=1",
        ],
        "nosuchdevice",
    )
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("preset", "override", "match"),
    [
        ("surrogate", "population.teachers=0", "population.teachers: SurrogateEnv needs"),
        ("game-ladder", "population.students=0", "population.students: GamesEnv needs"),
        ("tiny", "population.students=0", "population.students: CoevolutionEnv needs"),
        ("tiny-selfplay", "population.solo=0", "population.solo: selfplay needs"),
        ("tiny-selfplay", "evolution.replace_every=2", "evolution.replace_every: the selfplay"),
    ],
)
def test_settings_the_environment_refuses_are_the_one_line_said(tmp_path, preset, override, match):
    out = tmp_path / "r"
    result = runner.invoke(app, ["run", preset, "--out", str(out), "--set", override])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert result.stdout == ""  # no "run folder ..." line before the refusal
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and match in lines[0], result.stderr
    assert not out.exists()


def test_cuda_without_a_cuda_device_is_named_before_the_model_loads(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    _bad(
        ["run", "tiny", "--out", str(tmp_path / "r"), "--set", "model.device=cuda"],
        "sees no CUDA device",
    )
    assert not (tmp_path / "r").exists()


def test_missing_preset_and_file(tmp_path):
    _bad(["run", "no-such-preset", "--out", str(tmp_path / "r")], "unknown preset 'no-such-preset'")
    _bad(["run", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "r")], "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("steps: [1,\n")
    _bad(["run", str(broken), "--out", str(tmp_path / "r")], "broken.yaml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.yaml"]


def test_existing_run_directory_is_not_overwritten(tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    _bad(["run", "surrogate", "--out", str(out)], "already exists")
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_an_out_that_cannot_be_a_new_run_directory_is_the_one_line_said(tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("x")
    a_file = tmp_path / "file"
    a_file.write_text("keep")
    cases = [
        (taken, f"error: run directory {taken} already exists and is not empty"),
        (a_file, f"error: run directory {a_file} already exists and is not empty"),
        (a_file / "run", f"error: cannot create {a_file / 'run'}: {a_file} is not a directory"),
    ]
    for out, expected in cases:  # the run folder's line came first, then the hidden .tmp- folder
        result = runner.invoke(app, ["run", "surrogate", "--out", str(out)])
        assert result.exit_code == EXIT_BAD_INPUT, result.output
        assert result.stdout == ""
        assert result.stderr.strip().splitlines() == [expected]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "taken"]
    assert a_file.read_text() == "keep" and [p.name for p in taken.iterdir()] == ["keep.txt"]


def test_resume_and_plot_need_a_run_directory(tmp_path):
    _bad(["resume", str(tmp_path / "absent")], "does not exist")
    _bad(["plot", str(tmp_path)], "config.yaml is missing")


def test_usage_errors_through_main_are_one_line(capsys):
    for argv, code in (
        (["run", "--no-such-option"], EXIT_BAD_INPUT),
        (["frobnicate"], EXIT_BAD_INPUT),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == code
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ")


def test_list_prints_every_registry():
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    for kind in ("plot", "preset", "mutation", "crossover"):
        assert kind in ALL_REGISTRIES
        assert kind in result.stdout
    assert "surrogate" in result.stdout and "lineage" in result.stdout


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    """A two-layer Llama built from a config and saved, standing in for a base model on disk."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    path = tmp_path_factory.mktemp("base")
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(path)
    return path


@pytest.fixture
def run_with_population(tmp_path, tiny_base):
    from transformers import AutoModelForCausalLM

    from redqueen.genomes import LoRAGenome, lora_shapes

    model = AutoModelForCausalLM.from_pretrained(tiny_base)
    shapes = lora_shapes(model, ["q_proj", "v_proj"])
    rng = torch.Generator().manual_seed(1)
    genomes = [
        (f"student-000{i}", LoRAGenome.random(shapes, rank=2, alpha=4.0, rng=rng, init="gaussian"))
        for i in range(2)
    ]
    run = RunDirectory(tmp_path / "run")
    run.path.mkdir()
    run.write_config({"steps": 1})
    run.write_population(genomes, base_model=str(tiny_base))
    return run, dict(genomes)


def test_export_writes_a_loadable_peft_folder(tmp_path, run_with_population, tiny_base):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from redqueen.genomes import LoRAGenome

    run, genomes = run_with_population
    out = tmp_path / "exported"
    result = runner.invoke(app, ["export", str(run.path), "student-0001", str(out)])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(tiny_base)
    model = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(config["base_model_name_or_path"]), out
    )
    loaded = LoRAGenome.from_peft_model(model)
    for name in genomes["student-0001"].modules:
        a, b = genomes["student-0001"].factors(name)
        la, lb = loaded.factors(name)
        assert torch.allclose(a, la) and torch.allclose(b, lb)


def test_export_bad_input(tmp_path, run_with_population):
    run, _ = run_with_population
    out = tmp_path / "x"
    _bad(["export", str(run.path), "teacher-0009", str(out)], "unknown member 'teacher-0009'")
    _bad(["export", str(run.path), "../run", str(out)], "unknown member")
    (run.population_dir / "student-0000" / "adapter_model.safetensors").write_bytes(
        b"not safetensors"
    )
    line = _bad(["export", str(run.path), "student-0000", str(out)], "corrupt adapter")
    assert "student-0000" in line
    assert not out.exists()


def test_export_to_a_place_that_cannot_be_written_names_the_target(tmp_path, run_with_population):
    run, _ = run_with_population
    (tmp_path / "file").write_text("keep")
    out = tmp_path / "file" / "adapter"  # the raw OSError named the hidden staging folder
    line = _bad(["export", str(run.path), "student-0000", str(out)], f"export target {out}:")
    assert "cannot write" in line and ".tmp-" not in line
    assert (tmp_path / "file").read_text() == "keep"


def test_export_of_a_tiny_coder_run_loads_from_another_directory(tmp_path, monkeypatch):
    """A run copied from elsewhere names a stale path; the export names this install's tiny-coder."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from redqueen.assets import tiny_coder_path
    from redqueen.genomes import LoRAGenome, lora_shapes

    base = AutoModelForCausalLM.from_pretrained(tiny_coder_path())
    genome = LoRAGenome.random(
        lora_shapes(base, ["q_proj", "v_proj"]),
        rank=2,
        alpha=4.0,
        rng=torch.Generator().manual_seed(2),
        init="gaussian",
    )
    run = RunDirectory(tmp_path / "run")
    run.path.mkdir()
    run.write_config(
        {"steps": 1, "model": {"name": "tiny-coder"}, "environment": {"name": "coevolution"}}
    )
    run.write_population(
        [("teacher-0000", genome)], base_model="/another/machine/redqueen/assets/tiny-coder"
    )
    result = runner.invoke(
        app, ["export", str(run.path), "teacher-0000", str(tmp_path / "exported")]
    )
    assert result.exit_code == 0, result.output
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = json.loads((tmp_path / "exported" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(tiny_coder_path())
    model = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(config["base_model_name_or_path"]),
        tmp_path / "exported",
    )
    a, _ = LoRAGenome.from_peft_model(model).factors(genome.modules[0])
    assert torch.allclose(a, genome.factors(genome.modules[0])[0])


@pytest.fixture(scope="module")
def surrogate_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("surrogate") / "run"
    result = runner.invoke(
        app,
        [
            "run",
            "surrogate",
            "--out",
            str(out),
            "--no-plots",
            "--set",
            "steps=1",
            "--set",
            "population.teachers=2",
            "--set",
            "population.students=2",
        ],
    )
    assert result.exit_code == 0, result.output
    return out


def test_surrogate_runs_cannot_be_exported_or_evaluated(tmp_path, surrogate_run):
    member = RunDirectory(surrogate_run).population_ids()[0]
    _bad(["export", str(surrogate_run), member, str(tmp_path / "x")], "surrogate")
    assert not (tmp_path / "x").exists()
    line = _bad(["eval", str(surrogate_run), "--benchmark", "code_output"], "surrogate")
    assert "does not fit" not in line


def test_version_completion_and_plain_list():
    from redqueen import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"redqueen {__version__}"
    script = runner.invoke(app, ["--show-completion", "bash"], prog_name="redqueen")
    assert script.exit_code == 0 and "_REDQUEEN_COMPLETE" in script.stdout, (
        script.output,
        script.exception,
    )
    listed = runner.invoke(app, ["list"])
    assert listed.exit_code == 0
    assert not any(ch in listed.stdout for ch in "│┌└─")  # no table drawing, one entry per line
    lines = listed.stdout.splitlines()
    assert "selection:" in lines and any(line.split()[:1] == ["tournament"] for line in lines)


def test_the_command_line_logs_through_a_rich_handler():
    import logging

    from rich.logging import RichHandler

    assert runner.invoke(app, ["--log-level", "WARNING", "list"]).exit_code == 0
    logger = logging.getLogger("redqueen")
    assert logger.level == logging.WARNING
    assert sum(isinstance(h, RichHandler) for h in logger.handlers) == 1
    _bad(["--log-level", "LOUD", "list"], "--log-level")
    for handler in [h for h in logger.handlers if isinstance(h, RichHandler)]:
        logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)


def test_an_empty_plugin_name_is_one_line():
    _bad(["list", "--plugin", ""], "give a module name or a .py file")


def test_resume_steps_past_the_range_is_one_plain_line(surrogate_run, tmp_path):
    import shutil

    out = tmp_path / "r"
    shutil.copytree(surrogate_run, out)
    line = _bad(["resume", str(out), "--steps", "1000000000", "--no-plots"], "steps:")
    assert "pydantic" not in line and "validation error" not in line


def test_a_resume_refused_on_its_checkpoint_or_logs_is_the_one_line_said(surrogate_run, tmp_path):
    import shutil

    out = tmp_path / "r"
    shutil.copytree(surrogate_run, out)
    (out / "metrics.jsonl").write_bytes(b"")
    cases = [  # the "resuming <dir>" line came first
        (["--steps", "0"], "--steps 0 is below the"),
        ([], "metrics.jsonl is shorter (0 bytes) than the checkpoint records"),
    ]
    for extra, expected in cases:
        result = runner.invoke(app, ["resume", str(out), "--no-plots", *extra])
        assert result.exit_code == EXIT_BAD_INPUT, result.output
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], result.stderr


def test_an_unknown_backend_is_named_before_the_model_loads(tmp_path):
    _bad(
        ["run", "tiny", "--out", str(tmp_path / "r"), "--set", "model.backend=nosuch"],
        "model.backend: unknown backend 'nosuch' (known: auto, hf",
    )
    assert not (tmp_path / "r").exists()


def test_target_modules_the_model_lacks_are_named_as_such(tmp_path):
    # The model loads before its modules are known; off a terminal, without a loading bar.
    line = _bad(
        [
            "run",
            "tiny",
            "--out",
            str(tmp_path / "r"),
            "--set",
            "model.target_modules=[nosuch_proj]",
        ],
        "model.target_modules:",
    )
    assert "nosuch_proj" in line
    assert not (tmp_path / "r").exists()


def test_a_model_that_does_not_load_is_one_line(tmp_path):
    _bad(
        ["run", "tiny", "--out", str(tmp_path / "r"), "--set", f"model.name={tmp_path / 'none'}"],
        "model.name:",
    )


def test_an_integer_too_long_to_read_is_named_with_its_key_or_line(tmp_path):
    digits = "9" * 5000
    line = _bad(
        ["run", "surrogate", "--out", str(tmp_path / "r"), "--set", f"steps={digits}"], "steps:"
    )
    assert len(line) < 300
    config = tmp_path / "huge.yaml"
    config.write_text(f"base: surrogate\nsteps: {digits}\n")
    line = _bad(
        ["run", str(config), "--out", str(tmp_path / "r")], "huge.yaml: line 2 invalid YAML"
    )
    assert "integer too long" in line
    assert not (tmp_path / "r").exists()


def test_a_file_given_as_a_run_directory_is_called_a_file(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    _bad(["plot", str(afile)], "is a file, not a directory")
    _bad(["eval", str(afile)], "is a file, not a directory")
    _bad(
        ["eval", "--model", "tiny-coder", "--problems", str(tmp_path)], "is a directory, not a file"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_write_refused_by_permissions_names_the_file_asked_for(tmp_path):
    from redqueen.experiments._safe_paths import write_in

    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(PermissionError) as caught:
            write_in(folder, "performance.png", b"x")
        assert caught.value.filename == str(folder / "performance.png")
    finally:
        folder.chmod(0o755)
