"""One schema of ``benchmarks/conformance.py``, inside a worker: structgen's constraint and validators, and
llguidance's strict matcher, on every instance of a :class:`~conformance_data.Case`; with the bugs it hunts
(exceptions, invalid instances accepted, refused prefixes, non-monotone answers, ``min_tokens`` too high)."""

from __future__ import annotations

import json
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the repo root, for ``structgen``
    sys.path.insert(0, str(ROOT))

from conformance_data import Case, serialisations  # noqa: E402

#: strict llguidance options for the anchor: no flexible whitespace, the same layout as structgen
#: (one space after ``,`` and ``:``); never ``lenient``.
LL_OPTIONS: dict = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
STAGES = ("sg", "ll")


@dataclass
class Engines:
    """What a worker holds: the tokenizer, structgen's vocabulary and llguidance's tokenizer."""

    tok: Any
    vocab: Any
    lltok: Any

    @classmethod
    def load(cls, tokenizer_dir: str) -> "Engines":
        from transformers import PreTrainedTokenizerFast

        from structgen.constraints.vocab import TokenVocab

        tok = PreTrainedTokenizerFast.from_pretrained(tokenizer_dir)
        vocab = TokenVocab.of(tok)
        return cls(tok, vocab, vocab.ll)

    def encode(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))


def _short(s: str, n: int = 300) -> str:
    s = str(s)
    return s if len(s) <= n else s[: n - 3] + "..."


def _tail(s: str, n: int) -> str:
    return s if len(s) <= n else "..." + s[-(n - 3):]


def _engine_result() -> dict:
    return {"compiled": False, "reason": None, "compile_s": None, "valid_accepted": 0, "invalid_rejected": 0,
            "invalid_accepted": 0, "unchecked": 0}


def _prefix_points(n: int, k: int = 24) -> list[int]:
    if n <= k:
        return list(range(n + 1))
    return sorted({round(i * n / k) for i in range(k + 1)})


class _Checker:
    """Runs the stages of one case and collects results, bug reports and rejection examples."""

    def __init__(self, eng: Engines, case: Case, compile_limit: float | None, check_limit: float | None,
                 report=lambda stage: None):
        self.eng, self.case = eng, case
        self.compile_limit, self.check_limit = compile_limit, check_limit
        self.report = report
        self.bugs: list[dict] = []
        self.rejects: list[dict] = []
        self._tokens: dict[str, list[int]] = {}
        self._texts = [serialisations(t["data"], case.schema) for t in case.tests]

    def ids(self, text: str) -> list[int]:
        hit = self._tokens.get(text)
        if hit is None:
            hit = self._tokens[text] = self.eng.encode(text)
        return hit

    def bug(self, kind: str, detail: str, text: str | None = None) -> None:
        self.bugs.append({"case": self.case.id, "kind": kind, "detail": _short(detail, 600),
                          "text": None if text is None else _short(text, 600)})

    # -- structgen -----------------------------------------------------------------------------------
    def structgen(self) -> dict:
        import structgen as sg
        from structgen.constraints import clear_cache
        from structgen.validators import run_validators, validators_for

        res = {**_engine_result(), "engine": None, "lenient": False, "constraint_invalid_accepted": 0,
               "validator_rejects_valid": 0, "format_asserted": 0, "validator_accepts_invalid": 0}
        self.report("sg-compile")
        t0 = time.perf_counter()
        try:
            spec = sg.JsonSchema(self.case.schema)
            c = sg.compile(spec, self.eng.tok)
            res["compile_s"] = time.perf_counter() - t0
            validators = validators_for(spec)
        except sg.StructgenError as e:
            res["compile_s"] = time.perf_counter() - t0
            res["reason"] = f"{type(e).__name__}: {_short(e)}"
            return res
        except Exception as e:  # not part of the error hierarchy: a bug
            res["compile_s"] = time.perf_counter() - t0
            res["reason"] = f"BUG {type(e).__name__}: {_short(e)}"
            self.bug("compile-exception", f"{type(e).__name__}: {e}\n{_tail(traceback.format_exc(), 500)}",
                     json.dumps(self.case.schema)[:600])
            return res
        finally:
            clear_cache()
        res["engine"] = c.engine
        res["lenient"] = bool(getattr(c, "lenient", False))
        if self.compile_limit is not None and res["compile_s"] > self.compile_limit:
            res["reason"] = f"compile took {res['compile_s']:.1f} s (limit {self.compile_limit:.0f} s)"
            return res
        res["compiled"] = True
        self.report("sg-check")
        try:
            min_tokens = c.min_tokens()
        except Exception as e:
            min_tokens = None
            self.bug("min_tokens-exception", f"{type(e).__name__}: {e}")
        t0 = time.perf_counter()
        prefix_checked = {"acc": False, "rej": False}
        for test, texts in zip(self.case.tests, self._texts):
            if self.check_limit is not None and time.perf_counter() - t0 > self.check_limit:
                res["unchecked"] += 1
                continue
            valid = bool(test["valid"])
            try:
                issues = run_validators(validators, texts[0])
            except Exception as e:
                self.bug("validator-exception", f"{type(e).__name__}: {e}", texts[0])
                issues = [e]
            if valid and issues:
                kind = self._why_rejected(test["data"])
                res["format_asserted" if kind == "format-asserted" else "validator_rejects_valid"] += 1
                self.bug(kind, "; ".join(map(str, issues))[:600], texts[0])
            if not valid and not issues:
                res["validator_accepts_invalid"] += 1
            accepted_text = None
            for text in texts:
                ids = self.ids(text)
                try:
                    ok = c.accepts(ids)
                except Exception as e:
                    self.bug("accepts-exception", f"{type(e).__name__}: {e}", text)
                    ok = False
                if ok:
                    accepted_text = text
                    if min_tokens is not None and min_tokens > len(ids):
                        self.bug("min_tokens-too-large", f"min_tokens()={min_tokens} but an accepted output has "
                                 f"{len(ids)} tokens", text)
                    if not prefix_checked["acc"]:
                        prefix_checked["acc"] = True
                        self._check_prefixes(c, ids, text, accepted=True)
                    break
            if accepted_text is None and not prefix_checked["rej"]:
                prefix_checked["rej"] = True
                self._check_prefixes(c, self.ids(texts[0]), texts[0], accepted=False)
            if not valid and accepted_text is not None:
                res["constraint_invalid_accepted"] += 1
            sg_ok = accepted_text is not None and not issues
            if valid and sg_ok:
                res["valid_accepted"] += 1
            elif valid and accepted_text is None and not self.rejects:
                self.rejects.append({"case": self.case.id, "engine": c.engine, "text": _short(texts[0], 300)})
            if not valid:
                if sg_ok:
                    res["invalid_accepted"] += 1
                    self.bug("invalid-accepted", "constraint and validators both accept an invalid instance: "
                             + _short(test.get("description", ""), 200), accepted_text)
                else:
                    res["invalid_rejected"] += 1
        return res

    def _why_rejected(self, data: Any) -> str:
        """Classify a valid-labelled instance that structgen's validators reject, against plain jsonschema.

        ``format-asserted``: valid without format assertion (structgen asserts formats by design; draft 2020-12
        makes ``format`` an annotation); ``label-disagrees``: jsonschema rejects it too; otherwise a validator
        bug (``validator-rejects-valid``)."""
        from jsonschema import Draft202012Validator
        from referencing import Registry

        try:
            schema = self.case.schema
            if Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER,
                                    registry=Registry()).is_valid(data):
                return "validator-rejects-valid"
            if Draft202012Validator(schema, registry=Registry()).is_valid(data):
                return "format-asserted"
            return "label-disagrees"
        except Exception:
            return "validator-rejects-valid"

    def _check_prefixes(self, c, ids: list[int], text: str, accepted: bool) -> None:
        """Prefixes of an accepted output are live; for any output, liveness never comes back once lost."""
        try:
            answers = [(k, c.accepts_prefix(ids[:k])) for k in _prefix_points(len(ids))]
        except Exception as e:
            self.bug("accepts_prefix-exception", f"{type(e).__name__}: {e}", text)
            return
        if accepted:
            bad = [k for k, a in answers if not a]
            if bad:
                self.bug("prefix-of-accepted-rejected", f"accepts() is True but accepts_prefix() is False for "
                         f"the first {bad[0]} of {len(ids)} tokens", text)
        else:
            lost = False
            for k, a in answers:
                if lost and a:
                    self.bug("prefix-not-monotone", f"accepts_prefix() is False for a shorter prefix but True "
                             f"for the first {k} of {len(ids)} tokens", text)
                    break
                lost = lost or not a

    # -- llguidance ----------------------------------------------------------------------------------
    def llguidance(self) -> dict:
        import llguidance

        M = llguidance.LLMatcher
        res = _engine_result()
        self.report("ll-compile")
        t0 = time.perf_counter()
        try:
            grammar = M.grammar_from_json_schema(json.dumps(self.case.schema), overrides=dict(LL_OPTIONS))
            root = M(self.eng.lltok, grammar, log_level=0)
            res["compile_s"] = time.perf_counter() - t0
        except Exception as e:  # ValueError when the schema is not a JSON object
            res["compile_s"] = time.perf_counter() - t0
            res["reason"] = f"{type(e).__name__}: {_short(e)}"
            return res
        is_err, msgs = M.validate_grammar_with_warnings(grammar, self.eng.lltok)
        if is_err or root.is_error():
            res["reason"] = _short((msgs[0] if msgs else root.get_error()).split("\n<state>")[0])
            return res
        if self.compile_limit is not None and res["compile_s"] > self.compile_limit:
            res["reason"] = f"compile took {res['compile_s']:.1f} s (limit {self.compile_limit:.0f} s)"
            return res
        res["compiled"] = True
        self.report("ll-check")
        t0 = time.perf_counter()
        for test, texts in zip(self.case.tests, self._texts):
            if self.check_limit is not None and time.perf_counter() - t0 > self.check_limit:
                res["unchecked"] += 1
                continue
            ok = False
            for text in texts:
                ids = self.ids(text)
                m = root.deep_copy()
                if m.validate_tokens(ids) == len(ids) and m.consume_tokens(ids) and m.is_accepting():
                    ok = True
                    break
            if test["valid"]:
                res["valid_accepted"] += ok
            elif ok:
                res["invalid_accepted"] += 1
            else:
                res["invalid_rejected"] += 1
        return res


def check_case(eng: Engines, case: Case, *, stages: Iterable[str] = STAGES, compile_limit: float | None = 30.0,
               check_limit: float | None = 30.0, report=lambda stage: None) -> dict:
    """All figures for one schema: ``{"id", "source", "n_valid", "n_invalid", "sg", "ll", "bugs", ...}``."""
    ch = _Checker(eng, case, compile_limit, check_limit, report)
    out = {"id": case.id, "source": case.source, "n_valid": case.n_valid, "n_invalid": case.n_invalid}
    stages = set(stages)
    if "sg" in stages:
        out["sg"] = ch.structgen()
    if "ll" in stages:
        out["ll"] = ch.llguidance()
    out["bugs"], out["rejects"] = ch.bugs, ch.rejects
    return out
