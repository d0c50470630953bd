"""``Generator``: the public entry point that ties spec, constraint, sampler loop, validators and repair.

    gen = sg.Generator(model, block_length=32, threshold=0.9)
    r = gen.generate("Maria Lopez, 41, lives in Porto", sg.JsonSchema(schema), max_tokens=64)

Every result is validated; failing spans are re-masked and denoised again up to ``max_repair_rounds`` times.
A spec with a ``fallback`` (``Sql``: its strict grammar, every query of which runs) then gets one more
stage: the whole canvas re-masked and denoised under the fallback, with repair rounds of its own
(``Result.fallback`` says so). A spec whose every output is a safe answer (``Spec.salvage``: ``Sql``,
read-only queries) is then salvaged: its last output is cut at the longest complete prefix that passes
every validator, or when there is none, the longest prefix of it that the grammar engine can finish inside
the canvas is finished (``repair.finish_prefix``; when no prefix can be, a short output of the grammar
takes its place); the rest is EOS (``Result.fallback`` too; a ``remask``
event says which). A model that runs away inside a clause until the canvas is spent still gets the query
it wrote up to there, closed. Then
``GenerationError`` (``generate(..., strict=False)`` returns the invalid result instead). A dead end
(``DeadEnd``: the grammar engine's committed prefix cannot be finished inside the canvas) uses the same
rounds: the generator re-masks from before the dead end, further back each round, and denoises again.

A valid grounded answer (``ground=True``) that writes a value the request states once in two places (both
currencies ``SEK``) gets another pass, ``_spread_repeats`` (``structgen.repeats``): the occurrences the model
placed later (a place that allows only that value keeps it) are redone with the value ruled out there by a
narrowed constraint, and the new answer is kept if it is valid with fewer repeats; up to ``REPEAT_PASSES``
passes while each one keeps fewer.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from ..constraints import ENGINES
from ..constraints import compile as compile_spec
from ..constraints.base import MASK
from ..errors import CanvasTooSmallError, ConfigError, DeadEnd, GenerationError
from ..grounding import ground as ground_spec
from ..spec import JsonSchema, Regex, Spec, as_spec
from .events import StepEvent
from .loop import LoopStats, denoise
from .policy import ECHO_PENALTY, CommitPolicy
from .repair import backoff_positions, complete_prefix, finish_prefix, positions_to_remask, remask
from .result import Result


#: what unconstrained decoding allows: any text (special tokens aside), then the EOS tail
ANY_TEXT = Regex(r"[\s\S]*")
#: how far (in tokens) a repeated value is ruled out around where it stood, when the repeat pass redoes it
REPEAT_SHIFT = 2
#: at most this many repeat passes per answer (each kept only if it repeats fewer values)
REPEAT_PASSES = 3


class Generator:
    """Constrained masked-diffusion generation with one model.

    Settings (all may be overridden per call): ``block_length`` (semi-autoregressive blocks),
    ``threshold`` (Fast-dLLM confidence threshold) or ``tokens_per_step`` (fixed commits per step),
    ``stutter_gap`` (the no-stutter rule: a word the model would write twice that close, which the prompt
    does not repeat itself, is written once, and no two spaces touch; 0 = off, ``sampler.policy``),
    ``temperature`` (0 = greedy) and ``seed``, ``max_repair_rounds``, ``engine`` ("auto" | "automaton" |
    "grammar").
    """

    def __init__(self, model, *, block_length: int = 32, threshold: float | None = 0.9,
                 tokens_per_step: int | None = None, stutter_gap: int = 2, temperature: float = 0.0,
                 seed: int | None = 0, max_repair_rounds: int = 3, engine: str = "auto"):
        self.model = model
        self.settings = dict(block_length=block_length, threshold=threshold, tokens_per_step=tokens_per_step,
                             stutter_gap=stutter_gap, temperature=temperature, seed=seed,
                             max_repair_rounds=max_repair_rounds, engine=engine)
        self._check(self.settings)
        self._vocab = None

    @staticmethod
    def _check(s: dict) -> CommitPolicy:
        """Reject out-of-range settings; the commit policy they describe."""
        if s["temperature"] < 0:
            raise ConfigError(f"temperature must be >= 0, got {s['temperature']}")
        if s["max_repair_rounds"] < 0:
            raise ConfigError("max_repair_rounds must be >= 0")
        if s["engine"] not in ENGINES:
            raise ConfigError(f"unknown engine {s['engine']!r}; choose from {', '.join(ENGINES)}")
        return CommitPolicy(s["block_length"], s["threshold"], s["tokens_per_step"], s["stutter_gap"])

    @property
    def vocab(self):
        if self._vocab is None:
            self._vocab = self.model.vocab()
        return self._vocab

    def compile(self, spec, engine: str | None = None):
        """The constraint for ``spec`` on this model's tokenizer (cached)."""
        return compile_spec(as_spec(spec), self.vocab, engine=engine or self.settings["engine"])

    # -- generation --------------------------------------------------------------------------------------
    def generate(self, prompt, spec: Spec | dict | type, max_tokens: int = 128, *, strict: bool = True,
                 trace: bool = False, on_step: Callable | None = None, constrained: bool = True,
                 ground: bool | str = False, **overrides) -> Result:
        """Generate output for ``prompt`` (text or chat messages) that satisfies ``spec``.

        ``ground=True`` (JSON Schema specs and tool calls) makes every free-text string a part of the prompt's
        text made of whole words, and every e-mail, date, patterned string and number one the prompt states
        (``structgen.grounding``); on an ``sg.Sql`` it grounds the query's string literals
        (``structgen.sql.grounded``), on alert rules (``alerts_spec``) the channels, teams and label values
        (``validators.alerts.grounded``); a string ``ground`` is the text to quote from instead.

        ``constrained=False`` is the baseline for evaluations: the same prompt (``spec.render_prompt``) and
        sampler, but any text may be written (only special tokens are excluded and the EOS tail kept), no
        repair, and the result is validated against ``spec`` and returned as it is (``strict`` ignored)."""
        unknown = set(overrides) - set(self.settings)
        if unknown:
            raise ConfigError(f"unknown setting(s) {sorted(unknown)}; known: {sorted(self.settings)}")
        s = {**self.settings, **overrides}
        policy = self._check(s)
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        t_start = time.perf_counter()
        spec = ground_spec(as_spec(spec), prompt, ground)
        t0 = time.perf_counter()
        if not constrained:
            s["max_repair_rounds"], strict = 0, False
        constraint = self.compile(spec if constrained else ANY_TEXT, s["engine"] if constrained else "automaton")
        compile_s = time.perf_counter() - t0
        need = constraint.min_tokens()
        if need > max_tokens:
            raise CanvasTooSmallError(need, max_tokens)
        model = self.model
        device = torch.device(getattr(model, "device", "cpu"))
        prompt_ids = torch.as_tensor(model.encode_prompt(spec.render_prompt(prompt)), dtype=torch.long, device=device)
        limit = getattr(model, "max_length", None)
        if limit and prompt_ids.shape[0] + max_tokens > limit:
            raise ConfigError(f"prompt ({prompt_ids.shape[0]} tokens) + max_tokens ({max_tokens}) exceeds the "
                              f"model's {limit} positions; shorten the prompt or lower max_tokens")
        gen = None
        if s["temperature"] > 0:
            gen = torch.Generator(device="cpu").manual_seed(int(s["seed"] or 0))
        session = constraint.session(max_tokens, device)
        canvas = torch.full((max_tokens,), MASK, dtype=torch.long, device=device)
        stats = LoopStats(on_step=on_step, record=trace)
        stats.constraint_s += compile_s
        from ..validators import Issue, parse_json_value, run_validators, validators_for

        checks = validators_for(spec)
        vocab = self.vocab
        decode = vocab.decode
        penalty = None
        rounds = stage_rounds = 0
        fallback_ok = bool(constrained and s["max_repair_rounds"])  # last resorts only after repair rounds
        fallback_left = fallback_ok  # the spec's fallback stage, looked up when the repair rounds run out
        used_fallback = False
        while True:
            try:
                denoise(model, prompt_ids, session, canvas, policy, temperature=s["temperature"], gen=gen,
                        penalty=penalty, stats=stats, decode=decode)
                dead = None
            except DeadEnd as e:  # the committed tokens cannot be finished inside the canvas: back off
                dead = e
            ids = canvas.tolist()
            if dead is None:
                text = decode(ids)
                t0 = time.perf_counter()
                issues = run_validators(checks, text)
                stats.constraint_s += time.perf_counter() - t0
            else:
                text = decode([t for t in ids[: dead.position] if t >= 0])
                issues = [Issue(str(dead), None, "", "canvas")]
            if not issues:
                break
            if stage_rounds >= s["max_repair_rounds"]:
                # the last resort: the spec's stricter variant (Sql: every query its strict grammar allows
                # runs), on a fresh canvas, with repair rounds of its own
                fallback = getattr(spec, "fallback", None) if fallback_left else None
                stage = self._fallback_stage(fallback, s["engine"], max_tokens, device) if fallback else None
                if stage is None:
                    salvaged = self._salvage(spec, constraint, checks, canvas, dead, stats) if fallback_ok else None
                    if salvaged is not None:
                        ids, text, issues, used_fallback = canvas.tolist(), salvaged, [], True
                    break
                constraint, session, checks = stage
                fallback_left, used_fallback, penalty, stage_rounds = False, True, None, 0
                rounds += 1
                canvas.fill_(MASK)
                if stats.wants_events:
                    stats.publish(StepEvent(step=stats.steps, kind="remask", nfe=stats.nfe, canvas=canvas.tolist(),
                                            positions=list(range(max_tokens)), text=text,
                                            note="strict fallback after: "
                                                 + "; ".join(i.message for i in issues)[:480]))
                continue
            rounds += 1
            stage_rounds += 1
            if penalty is None:
                penalty = torch.zeros(max_tokens, vocab.size, device=device)
            if dead is None:
                pos = positions_to_remask(issues, vocab.token_offsets(ids), len(text), stage_rounds,
                                          prefix_only=constraint.engine != "automaton")
            else:
                pos = backoff_positions(dead.position, max_tokens, stage_rounds)
            remask(canvas, pos, penalty)
            if stats.wants_events:
                stats.publish(StepEvent(step=stats.steps, kind="remask", nfe=stats.nfe, canvas=canvas.tolist(),
                                        positions=pos, text=text,
                                        note="; ".join(i.message for i in issues)[:500]))
        if not issues and not used_fallback and constrained and s["max_repair_rounds"]:
            ruled: list = []  # the (place, value) pairs ruled out so far: a later pass keeps them out
            for _ in range(REPEAT_PASSES):  # each pass that repeats fewer values may leave one to redo
                before = text
                ids, text = self._spread_repeats(spec, checks, canvas, text, stats, lambda pen, narrowed: denoise(
                    model, prompt_ids, narrowed or session, canvas, policy, temperature=s["temperature"], gen=gen,
                    penalty=pen, stats=stats, decode=decode), engine=s["engine"], ruled=ruled)
                if text == before:
                    break
        valid = not issues
        value = None
        if valid and spec.kind == "json":
            value = parse_json_value(text, spec.model or spec.schema)
        n_out = next((i for i, t in enumerate(ids) if t == vocab.eos_id), len(ids))
        n_forced = int(stats.forced_at[:n_out].sum()) if stats.forced_at is not None else 0
        result = Result(
            text=text, value=value, valid=valid, errors=[i.message for i in issues], nfe=stats.nfe,
            timings={"model_s": stats.model_s, "constraint_s": stats.constraint_s,
                     "total_s": time.perf_counter() - t_start},
            engine=constraint.engine, trace=stats.events, tokens=ids, n_output_tokens=n_out,
            n_forced=n_forced, steps=stats.steps, repair_rounds=rounds, fallback=used_fallback,
        )
        if not valid and strict:
            raise GenerationError(
                f"output still invalid after {rounds} repair round(s): {'; '.join(result.errors)[:800]}. "
                "Try a larger max_tokens, a different seed, or a model trained for this task.",
                text=text, errors=result.errors)
        return result

    def _spread_repeats(self, spec: Spec, checks, canvas: torch.Tensor, text: str, stats: LoopStats,
                        redo: Callable, engine: str = "auto", ruled: list | None = None) -> tuple[list[int], str]:
        """One more pass for a grounded answer that writes a value the request states once in two places
        (``{"from_currency": "SEK", "to_currency": "SEK"}`` for "Convert 1,250 Swedish kronor to euros";
        ``repeats.repeated_values``): every occurrence but the one the sampler placed first (the one the
        model was surest of; ties: the first in the text) is redone, except that a place where the value is
        the only one the request states for it (``repeats.sole_values``) keeps it first; two parts of one
        name (``repeats.overlapping_values``: "make": "Škoda", "model": "Škoda Octavia") count as one value
        written twice, and each redone place rules out its own. The output from
        the first of them on is re-masked (a value may take more or fewer tokens than the one it replaces),
        the value is ruled out at each redone place by the constraint itself (``repeats.ruled_out``: a
        narrowed spec, compiled, whose session the redo uses, so no other tokenisation of it gets through)
        and its tokens where they stood (``ECHO_PENALTY``; the first one up to ``REPEAT_SHIFT`` places
        either side: all an array item or an e-mail gets), and the canvas is denoised again
        (``redo(penalty, session or None)``). The new answer is kept when it passes every validator and
        repeats fewer values; else the first stays. ``ruled`` holds the places and values earlier passes
        ruled out (kept out in this one; this pass's are added when its answer is kept). Returns (ids, text)
        of the answer kept."""
        from ..repeats import repeated_values, ruled_out, sole_values
        from ..validators import parse_with_spans, run_validators

        ids = canvas.tolist()
        if getattr(spec, "quoted_from", None) is None:
            return ids, text
        value, spans = parse_with_spans(text)
        groups = repeated_values(spec.schema, value)
        if not groups:
            return ids, text
        offsets = self.vocab.token_offsets(ids)

        def tokens_of(path) -> list[int]:
            s0, e = spans[path]
            return [i for i, (a, b) in enumerate(offsets) if b > a and a < e and b > s0]

        sole = sole_values(spec.schema, value)

        def placed(path) -> tuple[bool, int]:  # a place that allows this value only stays; then the surest
            first = tokens_of(path)[:1]  # occurrence (the step that placed the value's first token) first
            return path not in sole, int(stats.placed_at[first[0]]) if first and stats.placed_at is not None else 0

        redone = dict.fromkeys(path for _, n, paths in groups for path in sorted(paths, key=placed)[n:])
        repeats = [(path, _value_at(value, path)) for path in redone]  # (two parts of a name: each its own)
        held = [tokens_of(path) for path, _ in repeats]  # the tokens of each occurrence redone
        spots = sorted({i for toks in held for i in toks})
        before = canvas.clone()
        forced_before = None if stats.forced_at is None else stats.forced_at.clone()

        def keep_first() -> tuple[list[int], str]:  # the first answer stays, and so do its forced-token marks
            canvas.copy_(before)
            stats.forced_at = forced_before
            return ids, text

        penalty = torch.zeros(canvas.shape[0], self.vocab.size, device=canvas.device)
        # the old tokens ruled out where they stood, wherever anything else may stand; a value's first token
        # also up to REPEAT_SHIFT places either side (the value written again one space later is the same
        # repeat; its other tokens, "@" or ".", may well start the next value)
        penalty[spots, canvas[spots]] = ECHO_PENALTY
        firsts = [toks[0] for toks in held if toks]
        for d in range(-REPEAT_SHIFT, REPEAT_SHIFT + 1):
            near = [i for i in firsts if min(spots) <= i + d < canvas.shape[0]]
            penalty[[i + d for i in near], canvas[near]] = ECHO_PENALTY
        # the value there may take more or fewer tokens: everything from the first repeat on is redone
        pos = list(range(min(spots), canvas.shape[0]))
        canvas[pos] = MASK
        if stats.wants_events:
            stats.publish(StepEvent(step=stats.steps, kind="remask", nfe=stats.nfe, canvas=canvas.tolist(),
                                    positions=pos, text=text, note="stated once, written again: " + ", ".join(
                                        f"{v!r} at /{'/'.join(map(str, p))}" for p, v in repeats)[:480]))
        ruled = [] if ruled is None else ruled
        narrowed = ruled_out(spec.schema, value, ruled + repeats)  # the value itself, however it is written
        try:
            session = None if narrowed is None else \
                self.compile(spec.narrowed(narrowed), engine).session(canvas.shape[0], canvas.device)
            redo(penalty, session)
        except DeadEnd:
            return keep_first()
        new_text = self.vocab.decode(canvas.tolist())
        left = repeated_values(spec.schema, parse_with_spans(new_text)[0]) if not run_validators(checks, new_text) \
            else None
        if left is not None and sum(len(p) - n for _, n, p in left) < len(repeats):
            ruled += repeats
            return canvas.tolist(), new_text
        return keep_first()

    def _salvage(self, spec: Spec, constraint, checks, canvas: torch.Tensor, dead, stats: LoopStats) -> str | None:
        """The last resort of a ``salvage`` spec (see the module docstring): cut the canvas at the longest
        complete prefix that passes every validator, else finish the longest prefix the grammar engine can
        finish inside it; EOS after the output, and an event saying which. The text, or None (the canvas
        untouched) when the spec is not salvaged or neither way gives a valid output."""
        if not spec.salvage:
            return None
        from ..validators import run_validators

        ids, vocab = canvas.tolist(), self.vocab
        end = len(ids) if dead is None else dead.position

        def passes(tokens: list[int]) -> bool:
            return not run_validators(checks, vocab.decode(tokens))

        t0 = time.perf_counter()
        k = complete_prefix(constraint, ids, end, lambda k: passes(ids[:k]))
        found = None
        if k is not None:
            found = (k, [])
        elif constraint.engine == "grammar":  # the automaton engine is exact over the canvas: no runaways
            found = finish_prefix(constraint.session(len(ids), canvas.device), ids, end, passes)
        stats.constraint_s += time.perf_counter() - t0
        if found is None:
            return None
        k, tail = found
        out = ids[:k] + tail
        if not tail:
            note = f"cut to its longest complete prefix ({k} tokens) that passes every validator"
        elif k == 0:
            note = ("replaced by a short output of the grammar that passes every validator: no prefix of it "
                    "could be finished inside the canvas")
        else:
            note = (f"finished: its first {k} tokens kept and {len(tail)} that the grammar allows added, so that "
                    "it ends inside the canvas and passes every validator")
        canvas[: len(out)] = torch.as_tensor(out, dtype=canvas.dtype, device=canvas.device)
        canvas[len(out):] = vocab.eos_id
        text = vocab.decode(out)
        if stats.wants_events:
            stats.publish(StepEvent(step=stats.steps, kind="remask", nfe=stats.nfe, canvas=canvas.tolist(),
                                    positions=list(range(k, len(ids))), text=text, note=note))
        return text

    def _fallback_stage(self, fallback: Spec, engine: str, max_tokens: int, device):
        """(constraint, session, validators) of the fallback spec; None when its shortest output does not
        fit the canvas."""
        from ..validators import validators_for

        constraint = self.compile(fallback, engine)
        if constraint.min_tokens() > max_tokens:
            return None
        return constraint, constraint.session(max_tokens, device), validators_for(fallback)

    def json(self, prompt, schema_or_model: Any, max_tokens: int = 256, **kw):
        """Generate JSON for a pydantic model (returns a validated instance) or a dict schema (a value)."""
        spec = schema_or_model if isinstance(schema_or_model, JsonSchema) else JsonSchema(schema_or_model)
        return self.generate(prompt, spec, max_tokens, **kw).value

    def tool_call(self, prompt, tools, max_tokens: int = 128, **kw):
        """One call of one of ``tools`` (``Tool``s, pydantic classes, OpenAI tool dicts or a ``ToolCallSpec``)
        for ``prompt``: a ``structgen.agent.ToolCall`` whose arguments validated against the tool's schema
        and model (``call.result`` is the generation ``Result``); ``GenerationError`` when there is none."""
        from ..agent.tools import tool_call_spec

        spec = tool_call_spec(tools)
        result = self.generate(prompt, spec, max_tokens, **kw)
        return spec.parse(result.text, result)


def _value_at(value: Any, path: tuple) -> Any:
    """The part of a parsed JSON ``value`` at ``path`` (keys and indexes)."""
    for step in path:
        value = value[step]
    return value
