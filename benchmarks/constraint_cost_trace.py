"""Where the automaton engine's time goes, for ``benchmarks/constraint_cost.py``: a line tracer (self time
per line, its own cost calibrated and removed) and the replay of sampled sampler steps under it, split into
sections (prefix walk, alpha, Viterbi, allowed classes, decode, the [positions x vocabulary] work)."""

from __future__ import annotations

import inspect
import sys
import time
from collections import defaultdict

import torch


SECTIONS = ["prefix walk", "alpha (forward)", "viterbi (backward)", "allowed classes", "decode",
            "class scores", "token pick", "confidence", "other"]


class LineTracer:
    """Self time per (function, line) of every frame running code from one source file.

    A traced callee's time is its own, not its caller's line. The tracer's own cost per line event is
    calibrated and removed.
    """

    def __init__(self, filenames: str | list[str], device):
        self.filenames = frozenset([filenames] if isinstance(filenames, str) else filenames)
        self.filename = sorted(self.filenames)[0]  # where the calibration loop is compiled
        self.cuda = torch.device(device).type == "cuda"
        self.device = device
        self.time: dict[tuple, float] = defaultdict(float)
        self.events: dict[tuple, int] = defaultdict(int)
        self.overhead = 0.0

    def run(self, call):
        stack: list[list] = []  # [code, line, t]
        tm, ev, fnames, cuda, dev = self.time, self.events, self.filenames, self.cuda, self.device
        clock = time.perf_counter

        def local(frame, event, arg):
            if cuda:
                torch.cuda.synchronize(dev)
            now = clock()
            top = stack[-1]
            if top[1] is not None:
                k = (top[0], top[1])
                tm[k] += now - top[2]
                ev[k] += 1
            if event == "return":
                stack.pop()
                if stack:
                    stack[-1][2] = clock()
                return local
            top[1] = frame.f_lineno
            top[2] = clock()
            return local

        def glob(frame, event, arg):
            if frame.f_code.co_filename not in fnames:
                return None
            if cuda:
                torch.cuda.synchronize(dev)
            now = clock()
            if stack and stack[-1][1] is not None:
                k = (stack[-1][0], stack[-1][1])
                tm[k] += now - stack[-1][2]
            stack.append([frame.f_code, None, clock()])
            return local

        sys.settrace(glob)
        try:
            return call()
        finally:
            sys.settrace(None)

    def calibrate(self) -> float:
        """Seconds the tracer adds per line event (measured on a loop of trivial lines)."""
        code = compile("def _f(n):\n    x = 0\n    for i in range(n):\n        x += i\n    return x\n",
                       self.filename, "exec")
        ns: dict = {}
        exec(code, ns)
        f, n = ns["_f"], 20000
        t0 = time.perf_counter()
        f(n)
        plain = time.perf_counter() - t0
        saved_t, saved_e = self.time, self.events
        self.time, self.events = defaultdict(float), defaultdict(int)
        t0 = time.perf_counter()
        self.run(lambda: f(n))
        traced = time.perf_counter() - t0
        n_ev = sum(self.events.values())
        self.time, self.events = saved_t, saved_e
        self.overhead = max(0.0, (traced - plain) / max(1, n_ev))
        return self.overhead

    def sections(self) -> dict[str, float]:
        """Seconds per section (tracer overhead removed)."""
        out: dict[str, float] = defaultdict(float)
        cache: dict = {}
        for (code, line), t in self.time.items():
            if code not in cache:
                cache[code] = _line_sections(code)
            sec = cache[code].get(line, "other")
            out[sec] += max(0.0, t - self.events[(code, line)] * self.overhead)
        return out


_BY_FUNCTION = {"_prefix_walk": "prefix walk", "_decode": "decode", "step_any": "alpha (forward)",
                "step_masked_fwd": "alpha (forward)", "_forward": "alpha (forward)", "_alpha": "alpha (forward)",
                "step_masked_back": "viterbi (backward)", "_backward": "viterbi (backward)",
                "_sparse_rows": "viterbi (backward)",  # the feasibility pass gathers them too
                "_allowed_classes": "allowed classes", "_allowed_free": "allowed classes",
                "state_set": "alpha (forward)"}


def _line_sections(code) -> dict[int, str]:
    """Line -> section for one function of the automaton engine, from its name, comments and statements."""
    name = code.co_name
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError):
        return {}
    if name in _BY_FUNCTION:
        return {start + i: _BY_FUNCTION[name] for i in range(len(lines))}
    out: dict[int, str] = {}
    sec = "other"
    for i, text in enumerate(lines):
        s = text.strip().lower()
        if name == "_sweep" and s.startswith("if scores is none"):  # the feasibility (allowed) backward
            sec = "allowed classes"
        elif name == "_sweep" and s.startswith("else:") and "viterbi" in s:
            sec = "viterbi (backward)"
        elif name in ("_sweep", "propose") and s.startswith("#"):
            if "forward" in s and "decode" not in s:
                sec = "alpha (forward)"
            elif "backward" in s or "viterbi" in s:
                sec = "viterbi (backward)"
            elif "confidence" in s:
                sec = "confidence"
            elif "decode" in s:
                sec = "decode"
        here = sec
        if name == "_sweep" and "allowed[" in s:
            here = "allowed classes"
        if name == "propose":
            if sec != "confidence":
                if any(k in s for k in ("cls_score", "cls_idx", "index_select", "sc = ", "lp = ")):
                    here = "class scores"
                elif "in_class" in s or s.startswith("tok ="):
                    here = "token pick"
                else:
                    here = "other"
        out[start + i] = here
    return out


def replay_sections(constraint, T, steps, device, tracer: LineTracer) -> dict[str, float]:
    """Shares of the constraint time per section, from the sampled steps replayed under the tracer."""
    V = constraint.vocab.size
    full = None
    for calls in steps:
        sess = constraint.session(T, device)
        for kind, canvas, win, extra in calls:
            kw = {"window": win} if win is not None else {}
            if kind == "forced":
                sess.forced(canvas, **kw)  # untraced: warms the prefix cache as in the real loop
                if hasattr(sess, "_memo"):
                    sess._memo = None
                tracer.run(lambda: sess.forced(canvas, **kw))
            else:
                w0, w1, rows = extra
                if full is None:
                    full = torch.zeros(T, V, device=device)
                full.zero_()
                full[w0:w1] = rows
                tracer.run(lambda: sess.propose(canvas, full, **kw))
    sec = tracer.sections()
    tot = sum(sec.values()) or 1.0
    return {k: sec.get(k, 0.0) / tot for k in SECTIONS}
