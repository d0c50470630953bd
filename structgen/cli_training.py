"""``structgen train`` and ``structgen eval``: train a model on the task data, score one on the held-out split.

Registered on the command line's app by ``structgen.cli`` (``register``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from .cli_shared import AS_JSON_OPT, BLOCK_OPT, DEVICE_OPT, err, load_generator, out, print_error


def train(
    out_dir: Path = typer.Option(Path("structgen-model"), "--out", help="Where to save the trained model "
                                 "(a new folder, or a previous trained model to replace)."),
    preset: Optional[str] = typer.Option(None, "--preset", help="small (the default: the embedded model's recipe, "
                                         "an hour on 2 CPU cores) | gpu (6 x 384 in bfloat16, 8 minutes on a GPU) "
                                         "| tiny (seconds)."),
    base: Optional[str] = typer.Option(None, "--from", help="Fine-tune: start from this structgen-trained model "
                                       "directory ('default': the embedded model), keeping its architecture and "
                                       "tokenizer (1,000 steps or 10 minutes at lr 3e-4 unless told; "
                                       "docs/training.md)."),
    minutes: Optional[float] = typer.Option(None, "--minutes", help="Wall-clock budget; the run stops and saves."),
    steps: Optional[int] = typer.Option(None, "--steps", help="Most optimisation steps."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seeds the data, the initialisation and the noise."),
    device: Optional[str] = typer.Option(None, "--device", help="cpu or cuda."),
    threads: Optional[int] = typer.Option(None, "--threads", help="CPU threads for torch."),
    precision: Optional[str] = typer.Option(None, "--precision", help="auto (bfloat16 autocast where the device "
                                            "has fast bfloat16 matmuls) | bf16 | fp32."),
    hidden_size: Optional[int] = typer.Option(None, "--hidden-size", help="Model width (default: the preset's, 256 "
                                              "for small, 384 for gpu); a multiple of --heads."),
    layers: Optional[int] = typer.Option(None, "--layers", help="Transformer layers (default: the preset's)."),
    heads: Optional[int] = typer.Option(None, "--heads", help="Attention heads (default: the preset's; head size "
                                        "64 runs fastest on CPU)."),
    intermediate_size: Optional[int] = typer.Option(None, "--intermediate-size", help="MLP width (default: the "
                                                    "preset's, 3 x --hidden-size for small)."),
    examples_per_family: Optional[int] = typer.Option(None, "--examples-per-family", help="Training examples "
                                                      "per task family."),
    drill_examples: Optional[int] = typer.Option(None, "--drill-examples", help="JSON drill records added to the "
                                                 "training data: values to convert, not copy (default 0; "
                                                 "docs/training.md)."),
    pretokenizer: Optional[str] = typer.Option(None, "--pretokenizer", help="How text is cut before BPE merges: "
                                               "words (the default) | json-words | gpt2 (docs/training.md)."),
    dropout: Optional[float] = typer.Option(None, "--dropout", help="ModernBERT dropout while training, "
                                            "0 <= p < 1 (default 0)."),
    attention_dropout: Optional[float] = typer.Option(None, "--attention-dropout", help="Dropout of the "
                                                      "attention probabilities (default: --dropout; 0 keeps "
                                                      "the fast attention kernel on CPU)."),
    convert_path: Optional[bool] = typer.Option(None, "--convert-path/--no-convert-path", help="Give the copy "
                                                "head a conversion path (July -> 07 read off the source; "
                                                "default off; docs/training.md)."),
    lookup: Optional[bool] = typer.Option(None, "--lookup/--no-lookup", help="Let the generator read the "
                                          "request's words themselves (July -> 07 without the conversion "
                                          "path; default off; docs/training.md)."),
    lookup_keys: Optional[str] = typer.Option(None, "--lookup-keys", help="With --lookup: what it reads: visible "
                                              "(prompt and committed canvas tokens, the default) | prompt "
                                              "(the request alone)."),
    convert_maps: Optional[int] = typer.Option(None, "--convert-maps", help="With --convert-path: conversion "
                                               "maps per source word that the reading slot chooses among "
                                               "(January -> 01 in a date, 1 as an integer; default 1)."),
    convert_topk: Optional[int] = typer.Option(None, "--convert-topk", help="With --convert-path: convert "
                                               "through each position's k likeliest sources only (faster; "
                                               "default 0 = every source)."),
    source_loss: Optional[float] = typer.Option(None, "--source-loss", help="Weight of the pointer's source loss: "
                                                "teach the copy head which request words each value comes "
                                                "from (default 0 = off; docs/training.md)."),
    source_loss_on: Optional[str] = typer.Option(None, "--source-loss-on", help="With --lookup: what the "
                                                 "source loss trains: both (the default) | pointer | lookup."),
    pointer_loss_on: Optional[str] = typer.Option(None, "--pointer-loss-on", help="Where the conversion path's "
                                                  "pointer loss trains: content (every non-EOS token, the "
                                                  "default) | sources (only value tokens read off the "
                                                  "request; needs --source-loss)."),
    request_notes: Optional[bool] = typer.Option(None, "--request-notes/--no-request-notes", help="Write the ISO "
                                                 "form of each date, time, UTC offset and amount beside it in "
                                                 "every prompt, in training and at inference (default off; "
                                                 "docs/training.md)."),
    notes_version: Optional[int] = typer.Option(None, "--notes-version", help="With --request-notes: the notes' "
                                                "version (default: the newest; 1 = dates, times and offsets "
                                                "only, as run 38 read them)."),
    sql_shapes: Optional[int] = typer.Option(None, "--sql-shapes", help="The composed SQL training data: 1 "
                                             "(the default, the shipped model's) | 2 (adds HAVING, anti-joins, "
                                             "shares, spreads, first and last dates, months)."),
    lr: Optional[float] = typer.Option(None, "--lr", help="Peak learning rate after the warm-up (default: the "
                                       "preset's, 1.5e-3 for small; a cosine decay follows)."),
    keep: Optional[str] = typer.Option(None, "--keep", help="The weights saved: last (the default) | best "
                                       "(those with the lowest held-out loss at an evaluation)."),
    save_dtype: Optional[str] = typer.Option(None, "--save-dtype", help="The saved weights' dtype: float32 (the "
                                             "small preset's) | bfloat16 (half the size; the gpu preset's)."),
    data: Optional[Path] = typer.Option(None, "--data", help="Train on your own examples instead: a .jsonl file, "
                                        "one {prompt, target, schema|tool|regex} per line (docs/training.md)."),
    tools: Optional[Path] = typer.Option(None, "--tools", help="The tools that 'tool' lines of --data call "
                                         "(a .py file with TOOLS or a .json list)."),
    mix: int = typer.Option(0, "--mix", min=0, help="With --data: also train on this many generated examples "
                            "of each built-in family, so a fine-tuned model keeps the built-in tasks."),
    as_json: bool = AS_JSON_OPT,
) -> None:
    """Train a small masked-diffusion model from scratch on the generated task data (LLaDA's objective), or
    fine-tune one (--from DIR) on your own examples (--data), and save it as a Hugging Face model directory
    (load it with --model DIR, or sg.load_model(DIR) in Python)."""
    import dataclasses

    import structgen as sg
    from structgen.train.config import TrainConfig
    from structgen.train.trainer import train as run_training

    try:
        if base is not None and preset is not None:
            raise sg.ConfigError("--preset chooses a model to train from scratch and --from one to fine-tune; "
                                 "pass one of them")
        settings = dict(minutes=minutes, steps=steps, seed=seed, device=device, threads=threads,
                        hidden_size=hidden_size, num_layers=layers, num_heads=heads,
                        intermediate_size=intermediate_size, precision=precision,
                        examples_per_family=examples_per_family, drill_examples=drill_examples,
                        pretokenizer=pretokenizer, dropout=dropout, attention_dropout=attention_dropout,
                        copy_convert=convert_path, lookup=lookup, lookup_keys=lookup_keys, convert_maps=convert_maps,
                        convert_topk=convert_topk, source_loss=source_loss, pointer_loss_on=pointer_loss_on,
                        source_loss_on=source_loss_on, keep=keep, lr=lr, save_dtype=save_dtype, sql_shapes=sql_shapes,
                        request_notes=_notes_setting(request_notes, notes_version))
        cfg = TrainConfig.fine_tune(base, **settings) if base is not None else \
            TrainConfig.preset(preset or "small", **settings)
        start = f"fine-tuning {cfg.init_from}" if base is not None else f"training preset {preset or 'small'}"
        err.print(f"[dim]{start}: {cfg.num_layers} layers x {cfg.hidden_size}, "
                  f"{cfg.examples_per_family} examples per family, budget "
                  f"{f'{cfg.minutes:g} min' if cfg.minutes else 'none'} / {cfg.steps} steps, {cfg.device}[/]")
        own = None
        if data is not None:
            from structgen.train.data import mixed_in
            from structgen.train.data.from_file import load_file
            from structgen.train.trainer import TrainData

            train_rows, heldout_rows = load_file(data, tools)
            own = TrainData(train=mixed_in(train_rows, mix, cfg.seed, cfg.sql_shapes), heldout=heldout_rows)
            err.print(f"[dim]data: {len(train_rows)} training and {len(heldout_rows)} held-out examples from "
                      f"{data}" + (f", and {mix} generated examples per built-in family" if mix else "") + "[/]")
        elif tools is not None or mix:
            raise sg.ConfigError(f"{'--tools' if tools is not None else '--mix'} goes with --data (your own "
                                 "examples); pass --data too")
        report = run_training(cfg, out_dir, progress=True, data=own)
    except sg.StructgenError as e:
        print_error(e)
        raise typer.Exit(2)
    if as_json:
        out.print_json(json.dumps(dataclasses.asdict(report), default=str))
    else:
        out.print(report.summary())


def eval_(
    model: Optional[str] = typer.Option(None, "--model", help="Model directory (default: the embedded model)."),
    n: int = typer.Option(50, "-n", help="Held-out examples per family."),
    families: Optional[str] = typer.Option(None, "--families", help="Comma-separated task families (default: "
                                           "json,tool,sql,alert; with --data, the file's)."),
    modes: str = typer.Option("constrained,unconstrained,one-token,grounded", "--modes",  # DEFAULT_MODES
                             help="Decoding modes to compare (grounded: values from the request, every "
                             "family; grounded-one-token: its one-token reference)."),
    out_dir: Path = typer.Option(Path("eval-out"), "--out", help="Folder for eval.json, eval.md and eval.svg."),
    seed: int = typer.Option(1234, "--seed", help="Seeds the held-out examples."),
    split: str = typer.Option("heldout", "--split",
                              help="heldout (templates never seen in training) or train (how well they were fitted)."),
    block_length: int = BLOCK_OPT,
    threshold: float = typer.Option(0.9, "--threshold", help="Commit threshold of the constrained, unconstrained "
                                    "and grounded modes (lower: fewer model calls)."),
    engine: str = typer.Option("auto", "--engine", help="auto | automaton | grammar (constrained modes)."),
    stutter_gap: int = typer.Option(2, "--stutter-gap", help="No-stutter rule: a word the model would write "
                                    "twice this close commits once, unless the prompt repeats it, and no two "
                                    "spaces touch (0: off; sampler.policy)."),
    data: Optional[Path] = typer.Option(None, "--data", help="Score your own examples instead: the \"split\": "
                                        "\"heldout\" lines of a --data file of `structgen train` (--split train: "
                                        "its other lines); --families defaults to the file's."),
    tools: Optional[Path] = typer.Option(None, "--tools", help="The tools that 'tool' lines of --data call."),
    device: Optional[str] = DEVICE_OPT,
) -> None:
    """Score a model on the held-out split of every task family (or on your own examples, --data):
    constrained decoding beside unconstrained and one-token-per-step decoding of the same model; prints the
    table and writes it with a chart (and every decoded example to OUT/examples.jsonl as it goes)."""
    import dataclasses
    import platform

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    import structgen as sg
    from structgen.train.eval_report import rich_table, write_report
    from structgen.train.evaluate import GROUNDED_FAMILIES, MODES, eval_generator, evaluate, file_examples

    fams = [f.strip() for f in (families or "").split(",") if f.strip()]
    mode_list = [m.strip() for m in modes.split(",") if m.strip()]
    try:
        if tools is not None and data is None:
            raise sg.ConfigError("--tools names the tools of --data's 'tool' lines; pass --data too")
        own = None if data is None else file_examples(data, tools, split)
        if own == {}:
            raise sg.ConfigError(f"{data} has no {split} lines to score; mark some with \"split\": \"heldout\" "
                                 f"(they are then not trained on), or pass --split "
                                 f"{'train' if split == 'heldout' else 'heldout'}")
        fams = fams or (list(own) if own is not None else ["json", "tool", "sql", "alert"])
        gen = load_generator(model, device)
        # every argument is checked before OUT is touched: a typo never empties an earlier run's examples
        eval_generator(gen.model, families=fams, modes=mode_list, split=split, block_length=block_length,
                       engine=engine, stutter_gap=stutter_gap, threshold=threshold, own=own)
        total = sum((n if own is None else min(n, len(own[f]))) * sum(
            not (MODES[m].get("ground") and f not in GROUNDED_FAMILIES) for m in mode_list) for f in fams)
        out_dir.mkdir(parents=True, exist_ok=True)
        # every decoded example is appended as it comes: a long run that is stopped keeps what it decoded
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err) as bar, open(out_dir / "examples.jsonl", "w", encoding="utf-8") as stream:
            task = bar.add_task("eval", total=total)

            def tick(s):
                stream.write(json.dumps(dataclasses.asdict(s), ensure_ascii=False) + "\n")
                stream.flush()
                bar.update(task, advance=1, description=f"eval {s.family}/{s.mode}")

            rows = evaluate(gen.model, families=fams, n=n, seed=seed, modes=mode_list, block_length=block_length,
                            split=split, on_example=tick, engine=engine, stutter_gap=stutter_gap,
                            threshold=threshold, own=own)
        which = "Held-out" if split == "heldout" else "Train-split"
        title = f"{which} evaluation of {getattr(gen.model, 'name', model or 'the default model')}" + \
            (f" on {data.name}" if data is not None else "")
        meta = {"model": model or "default", "n": n, "seed": seed, "split": split, "block_length": block_length,
                **({"data": str(data)} if data is not None else {}),
                "threshold": threshold, "engine": engine, "stutter_gap": stutter_gap, "machine": platform.platform(),
                "threads": __import__("torch").get_num_threads()}
        paths = write_report(rows, out_dir, title=title, meta=meta)
    except sg.StructgenError as e:
        print_error(e)
        raise typer.Exit(2)
    out.print(rich_table(rows, title))
    err.print("written: " + ", ".join(str(p) for p in paths))


def _notes_setting(request_notes: bool | None, notes_version: int | None) -> bool | int | None:
    """``--request-notes`` and ``--notes-version`` as TrainConfig's ``request_notes`` (None: the preset's)."""
    if notes_version is None:
        return request_notes
    if request_notes is False:
        from .errors import ConfigError

        raise ConfigError("--notes-version chooses the request notes' version: drop --no-request-notes")
    return notes_version


def register(app: typer.Typer) -> None:
    """Add ``train`` and ``eval`` to ``app``."""
    app.command()(train)
    app.command("eval")(eval_)
