"""tiny-coder: generated programs are valid, the corpus speaks the formats, the shipped model loads."""

from __future__ import annotations

import ast
import json
import random

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from redqueen.assets import tiny_coder_path
from redqueen.tinycoder import MAX_LEVEL, ProgramGenerator
from redqueen.tinycoder.corpus import (
    build_corpus,
    entry_task,
    lean_document,
    load_corpus,
    render_documents,
    render_lean_documents,
    save_corpus,
)
from redqueen.tinycoder.model import tiny_coder_config
from redqueen.tinycoder.pretrain import pack_documents, pack_pairs
from redqueen.tinycoder.rates import generate_texts
from redqueen.tinycoder.tokenizer import save_tokenizer, train_tokenizer
from redqueen.verifiers import Executor, validate_program
from redqueen.verifiers.formats import (
    N_CODE_F_INPUTS,
    TAGS,
    TASK_TYPES,
    parse_proposal,
    parse_solution,
    solve_completion,
    solve_prompt,
)


@pytest.fixture(scope="module")
def executor():
    with Executor(workers=2) as ex:
        yield ex


@pytest.fixture(scope="module")
def corpus(executor):
    return build_corpus(18, seed=7, executor=executor)


def test_generator_is_seeded_and_covers_every_level():
    a = ProgramGenerator(rng=random.Random(3))
    b = ProgramGenerator(rng=random.Random(3))
    for level in range(1, MAX_LEVEL + 1):
        pa, pb = a.program(level), b.program(level)
        assert pa.source == pb.source
        tree = ast.parse(pa.source)
        assert any(isinstance(n, ast.FunctionDef) and n.name == "f" for n in tree.body)
        assert len(pa.random_input(random.Random(0)).split(",")) >= len(pa.params)
    high = [a.program(MAX_LEVEL).source for _ in range(10)]
    assert any("for " in s or "while " in s for s in high)
    with pytest.raises(ValueError, match="level must be in"):
        a.program(MAX_LEVEL + 1)


def test_corpus_programs_are_valid_and_not_constant(corpus, executor):
    assert len(corpus) == 18
    assert len({e.program for e in corpus}) == 18
    for entry in corpus[:6]:
        again = validate_program(entry.program, list(entry.inputs), executor)
        assert again.ok, again.detail
        assert again.outputs == entry.outputs
        assert len(set(entry.outputs)) > 1 and len(entry.inputs) == N_CODE_F_INPUTS


def test_corpus_is_reproducible_and_round_trips_through_a_file(corpus, executor, tmp_path):
    assert build_corpus(4, seed=7, executor=executor) == corpus[:4]
    save_corpus(corpus, tmp_path / "c.jsonl")
    assert load_corpus(tmp_path / "c.jsonl") == corpus
    (tmp_path / "bad.jsonl").write_text('{"program": 1}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_corpus(tmp_path / "bad.jsonl")


def test_documents_cover_all_six_pairs_in_the_formats(corpus):
    docs = render_documents(corpus, seed=0)
    assert len(docs) == 6 * len(corpus)
    programs = {e.program for e in corpus}
    seen = set()
    for doc in docs:
        head = doc.split("\n", 1)[0]
        seen.add(head)
        role, task_type = head.strip("<>").split()
        if role == "propose":
            proposal = parse_proposal(task_type, doc.rsplit("<task>\n", 1)[1])
            assert proposal is not None and proposal.program in programs
        else:
            assert parse_solution(task_type, doc.split("<answer>\n", 1)[1]) is not None
    assert seen == {f"<{r} {t}>" for r in ("propose", "solve") for t in TASK_TYPES}


def test_tokenizer_round_trips_and_keeps_tags_whole(corpus, tmp_path):
    docs = render_documents(corpus, seed=1)
    tokenizer = train_tokenizer(docs, vocab_size=400)
    for doc in docs[:12]:
        assert tokenizer.decode(tokenizer(doc)["input_ids"]) == doc
    for tag in TAGS:
        assert len(tokenizer(tag)["input_ids"]) == 1
    save_tokenizer(tokenizer, tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded(docs[0])["input_ids"] == tokenizer(docs[0])["input_ids"]
    assert loaded.eos_token == "</s>" and loaded.pad_token == "<pad>" and loaded.bos_token == "<s>"
    stream = pack_documents(docs[:3], tokenizer)
    assert int((stream == tokenizer.eos_token_id).sum()) == 3


def test_lean_documents_learn_each_program_once(corpus):
    docs = render_lean_documents(corpus, seed=2, full_share=0.5)
    assert len(docs) == len(corpus)
    lean = [t for c, t in docs if not c]
    assert 0 < len(lean) < len(docs)
    for entry in corpus:
        # The program is a training target in exactly one document (lean or a proposal),
        # or only context (a student prompt reads it).
        targets = [t for _, t in docs if entry.program.strip() in t]
        assert len(targets) <= 1
    entry = corpus[0]
    text = lean_document(entry)
    assert text.startswith("<ref>\n<prog>\n") and text.endswith("</out>\n</ref>")
    assert text.count("<in>") == N_CODE_F_INPUTS and entry.outputs[-1] in text
    for context, target in docs:
        if context.startswith("<solve"):
            assert context.endswith("<answer>\n") and target.endswith("</answer>")
        elif context:
            assert context.endswith("<task>\n") and target.endswith("</task>")
    assert all(not c for c, _ in render_lean_documents(corpus, seed=2, full_share=0.0))
    assert all(c for c, _ in render_lean_documents(corpus, seed=2, full_share=1.0))
    with pytest.raises(ValueError, match="full_share"):
        render_lean_documents(corpus, seed=2, full_share=1.5)


def test_packed_pairs_train_only_on_the_target(corpus):
    docs = render_lean_documents(corpus, seed=4, full_share=1.0)
    tokenizer = train_tokenizer([c + t for c, t in docs], vocab_size=400)
    ids, mask = pack_pairs(docs[:4], tokenizer)
    assert ids.shape == mask.shape and int((ids == tokenizer.eos_token_id).sum()) == 4
    start = 0
    for context, target in docs[:4]:
        n_context = len(tokenizer(context)["input_ids"])
        n_target = len(tokenizer(target)["input_ids"]) + 1
        assert mask[start : start + n_context].sum() == 0
        assert mask[start + n_context : start + n_context + n_target].all()
        assert tokenizer.decode(ids[start + n_context : start + n_context + n_target - 1]) == target
        start += n_context + n_target
    assert start == len(ids)


def test_config_rejects_uneven_heads():
    with pytest.raises(ValueError, match="not divisible"):
        tiny_coder_config(
            vocab_size=300, bos_token_id=1, eos_token_id=2, pad_token_id=0, hidden_size=100
        )


# ------------------------------------------------------------------ the shipped model


@pytest.fixture(scope="module")
def shipped():
    path = tiny_coder_path()
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    return path, model, tokenizer


def test_shipped_model_is_small_tied_and_documented(shipped):
    path, model, tokenizer = shipped
    size = sum(f.stat().st_size for f in path.iterdir())
    assert size <= 15 * 2**20
    n_params = sum(p.numel() for p in model.parameters())
    assert 2_500_000 <= n_params <= 3_500_000
    assert model.config.tie_word_embeddings
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight
    assert tokenizer.eos_token_id == model.config.eos_token_id
    summary = json.loads((path / "training.json").read_text())
    card = (path / "README.md").read_text()
    for task_type in TASK_TYPES:
        assert 0.0 < summary["rates"]["valid_share"][task_type] < 1.0
        assert task_type in card
    assert f"{summary['steps']}" in card and "Starting rates" in card


def test_shipped_model_answers_in_the_format(shipped):
    path, model, tokenizer = shipped
    heldout = load_corpus(path / "heldout.jsonl")
    torch.manual_seed(0)
    tasks = [entry_task(e, "code_o") for e in heldout[:4]]
    texts = generate_texts(
        model,
        tokenizer,
        [solve_prompt(t) for t in tasks],
        max_new_tokens=24,
        temperature=0.0,
        seed=0,
    )
    parsed = [parse_solution("code_o", text) for text in texts]
    assert sum(p is not None for p in parsed) >= 1
    # The gold text is what the model was trained to write; its likelihood beats a corrupted one.
    task = tasks[0]
    good = solve_prompt(task) + solve_completion(task)
    bad = solve_prompt(task) + "</prog>" + solve_completion(task)[::-1]
    losses = []
    with torch.no_grad():
        for text in (good, bad):
            ids = tokenizer(text, return_tensors="pt")["input_ids"]
            losses.append(model(input_ids=ids, labels=ids).loss.item())
    assert losses[0] < losses[1]
