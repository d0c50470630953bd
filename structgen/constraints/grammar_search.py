"""The grammar engine's completion search: finishing the output inside the canvas.

This module owns ``_EndgameSearch``, the ``GrammarSession`` mixin that searches llguidance's matcher for
a completion of the output in at most k tokens (``_finish_path``: probe tokens, forced bytes spelled in
the fewest tokens, a budget of grammar masks) and for exactly k tokens after which a committed segment
can follow (``_hole_path``), and the choices the run makes with them: ``_steer`` at the output's deadline,
``_steer_hole`` before a committed segment; ``completion`` runs the first search from any prefix (the
generator's salvage of an output that ran away). The searches leave the matcher as they found it
(``completion`` first moves it to its prefix). ``_Node`` and ``_Step`` keep what the matcher said during
one search, so its deepening rounds do not ask again (``benchmarks/endgame_search.py`` counts the calls).
"""

from __future__ import annotations

import numpy as np

from ..errors import ConstraintViolation


class _Step:
    """What the matcher said after one probe token at a search node: the output complete, and the bytes
    forced next and the grammar mask (each None until asked for)."""

    __slots__ = ("accepting", "forced", "mask")

    def __init__(self, accepting: bool):
        self.accepting = accepting
        self.forced: bytes | None = None
        self.mask: bytes | None = None


_DEAD = _Step(False)  # a probe the matcher refused


class _Node:
    """What the matcher said at one node of ``_finish_dfs``: the forced bytes and the grammar mask there
    (None until asked for), a ``_Step`` per probe token looked at, and (where bytes are forced) the
    tokens allowed to run past them after each spelling looked at."""

    __slots__ = ("forced", "raw", "steps", "tails")

    def __init__(self):
        self.forced: bytes | None = None
        self.raw: bytes | None = None
        self.steps: dict[int, _Step] = {}
        self.tails: dict[tuple, list[int]] = {}  # a spelling's head -> its tails the matcher allows after it


class _EndgameSearch:
    """``GrammarSession`` methods that search for completions (see the module docstring)."""

    def completion(self, prefix: list[int], budget: int = 1024, room: int | None = None) -> list[int] | None:
        """Tokens that finish ``prefix`` inside this session's canvas: a completion of at most ``room``
        tokens (default and at most: the canvas left after the prefix) found by ``_finish_path`` within
        ``budget`` grammar masks ([] when the prefix is complete already), or None when the grammar does not
        allow the prefix, there is no room, or the search found nothing (which proves nothing: a tight
        ``room`` often finds what a wide one misses, as the depth-first search follows forced text into ever
        longer expressions while it has room; ``SELECT name`` is closed in 8 tokens and not found in 32).
        Afterwards the matcher follows ``prefix``. The generator's salvage of a runaway output uses it
        (``structgen.sampler.repair.finish_prefix``)."""
        left = self.length - len(prefix)
        room = left if room is None else min(room, left)
        if room < 0:
            return None
        try:
            self._sync(list(prefix))
        except ConstraintViolation:
            return None
        if self._m.is_accepting():
            return []
        return self._finish_path(room, [budget]) if room else None

    # -- the endgame: finishing before the canvas ends -----------------------------------------------

    def _finish_path(self, k: int, budget: list[int], memo: dict | None = None,
                     root: tuple = ()) -> list[int] | None:
        """Some completion of the matcher's output in at most ``k`` tokens, or None if none was found
        within ``budget`` search nodes (``_finish_dfs``) — and as many again spent first on a search that
        deepens the number of free choices one at a time. A path found is a real completion (not always
        the shortest); None proves nothing. The matcher is left unchanged.

        ``memo`` (path -> ``_Node``; a new one when None) keeps what the matcher said at each node, so the
        rounds of the deepening search, and the searches of one steering step, do not ask again: it saves
        matcher calls and changes no result (the budget is charged as if the masks were computed).
        ``root`` is the path of the matcher's current state in ``memo``."""
        memo = {} if memo is None else memo
        # first iterative deepening on free choices (forced bytes are free), on a budget of its own: it
        # finds completions that close a construct (``SELECT 1 - 2`` -> `` FROM orders``) which the plain
        # depth-first search misses when an operator's forced space leads it into ever longer expressions
        shallow = [budget[0]]
        for choices in self._CHOICE_LIMITS:
            path = self._finish_dfs(k, shallow, frozenset(), 0, choices=choices, memo=memo, path=root)
            if path is not None:
                return path
            if shallow[0] <= 0:
                break
        return self._finish_dfs(k, budget, frozenset(), 0, memo=memo, path=root)

    #: free choices allowed per round of the shallow search in ``_finish_path``
    _CHOICE_LIMITS = (1, 2, 3, 4, 5)

    def _finish_dfs(self, k: int, budget: list[int], seen: frozenset, closing: int,
                    raw: bytes | None = None, *, choices: int | None = None, memo: dict,
                    path: tuple = (), forced: bytes | None = None) -> list[int] | None:
        """Depth-first search for a completion in at most ``k`` tokens over probe tokens, following
        forced bytes (``_finish_forced``).

        At each node the allowed probes (``_probe_ids``: closing bytes, punctuation tokens, one token
        per printable byte) are looked at in order: one that completes the output ends the search; one
        whose grammar mask is in ``seen`` (the masks met since the last forced bytes: more string
        content, another digit, ``,a,a``) is no progress and dropped, with the rest of its letters or
        digits, unless it holds a closing bracket (closing a level can leave the mask as it was;
        ``closing`` counts such steps in a row, at most 4, since a bracket can also be content). The
        others are expanded (at most 4) most constrained first: forced bytes, then the fewest tokens
        allowed after them (a closed object allows ``,`` and ``}``; an opened key, any character).
        ``budget`` counts the grammar masks computed; the search stops when it is spent. ``raw`` is
        this node's mask when the parent computed it, ``forced`` its forced bytes. ``memo`` holds the
        matcher's answers by ``path``, the tokens from the search's root to this node."""
        m = self._m
        if m.is_accepting():
            return []
        if k <= 0 or budget[0] <= 0:
            return None
        node = memo.get(path)
        if node is None:
            node = memo[path] = _Node()
        if raw is None:
            if node.forced is None:
                node.forced = forced if forced is not None else bytes(m.compute_ff_bytes())
            if node.forced:
                return self._finish_forced(node.forced, k, budget, choices, memo, path)
            budget[0] -= 1
            if node.raw is None and (choices is None or choices > 0):  # none when no free choice is left
                node.raw = m.compute_bitmask()
            raw = node.raw
        if choices is not None and choices <= 0:
            return None
        seen = seen | {raw}
        bm = np.frombuffer(raw, dtype=np.uint8)
        probes = self._probes
        ok = ((bm[probes >> 3] >> (probes & 7)) & 1).astype(bool)
        children: list[tuple[int, int, int, bytes | None, bool]] = []
        idle: set[int] = set()  # byte classes (digit, lower, upper) found to be no progress here
        steps = node.steps
        for order, t in enumerate(probes[ok].tolist()):
            cls = self._byte_class[t]
            if cls in idle:
                continue
            step = steps.get(t)
            if step is None:
                step = steps[t] = self._probe_step(t, k > 1)
            if step is _DEAD:
                continue
            if step.accepting:
                return [t]
            if k == 1:
                continue  # one token left: it must complete the output
            if step.forced is None:
                step.forced = self._after(t, lambda m: bytes(m.compute_ff_bytes()))
            if step.forced:  # forced bytes follow: most forced first (``FROM `` before ``- ``)
                children.append((-len(step.forced), order, t, None, False))
                continue
            if choices == 1:
                continue  # no free choice would be left after it: only forced bytes could finish
            if budget[0] <= 0 or len(children) >= 16:
                break
            budget[0] -= 1
            if step.mask is None:
                step.mask = self._after(t, lambda m: m.compute_bitmask())
            child = step.mask
            exempt = bool(self._closes[t]) and closing < 4
            if child in seen and not exempt:
                if cls:
                    idle.add(cls)  # another letter of an identifier is no progress either
                continue
            children.append((int.from_bytes(child, "little").bit_count(), order, t, child, exempt))
        children.sort()
        nxt = {t: (child, exempt) for _, _, t, child, exempt in children[:4]}
        return self._first_path(
            list(nxt), budget,
            lambda t: self._finish_dfs(k - 1, budget, seen, closing + 1 if nxt[t][1] else 0, nxt[t][0],
                                       choices=None if choices is None else choices - 1, memo=memo,
                                       path=path + (t,), forced=steps[t].forced))

    def _probe_step(self, t: int, forced: bool) -> "_Step":
        """What the matcher says after probe ``t`` from its current state: whether the output is complete
        then, and (when ``forced``) the bytes forced next; ``_DEAD`` when ``t`` is refused. The matcher is
        left unchanged."""
        m = self._m
        if m.try_consume_tokens([t]) != 1:
            return _DEAD
        try:
            step = _Step(m.is_accepting())
            if forced and not step.accepting:
                step.forced = bytes(m.compute_ff_bytes())
            return step
        finally:
            m.rollback(1)

    def _after(self, t: int, ask):
        """``ask(matcher)`` after token ``t`` (allowed here) from the matcher's current state (the forced
        bytes, the grammar mask); the matcher is left unchanged."""
        m = self._m
        m.try_consume_tokens([t])
        try:
            return ask(m)
        finally:
            m.rollback(1)

    def _finish_forced(self, forced: bytes, k: int, budget: list[int], choices: int | None, memo: dict,
                       path: tuple) -> list[int] | None:
        """``_finish_dfs`` at a state where the grammar forces ``forced``: spell them in the fewest
        tokens, or in the fewest up to a token that runs past them (``":`` forced, ``":"`` taken).
        ``memo[path]`` is this node's ``_Node``."""
        m = self._m
        node = memo[path]
        budget[0] -= 1
        for head, tails in self._index.spellings(forced):
            if len(head) + (tails is not None) > k:
                continue
            n = m.try_consume_tokens(head)
            try:
                if n < len(head):
                    continue
                if tails is None:
                    sub = self._finish_dfs(k - n, budget, frozenset(), 0, choices=choices, memo=memo,
                                           path=path + tuple(head))
                    if sub is not None:
                        return head + sub
                    continue
                tried = 0
                if len(tails) > 8:  # one mask rather than a matcher step per refused token (`` `` + name)
                    key = tuple(head)
                    if key not in node.tails:
                        bm = np.frombuffer(m.compute_bitmask(), dtype=np.uint8)
                        ids = np.asarray(tails)
                        node.tails[key] = ids[((bm[ids >> 3] >> (ids & 7)) & 1).astype(bool)].tolist()
                    tails = node.tails[key]
                for t in tails:
                    if m.try_consume_tokens([t]) != 1:
                        continue
                    try:
                        sub = self._finish_dfs(k - n - 1, budget, frozenset(), 0, choices=choices,
                                               memo=memo, path=path + (*head, t))
                    finally:
                        m.rollback(1)
                    if sub is not None:
                        return head + [t] + sub
                    tried += 1
                    if tried >= 4 or budget[0] <= 0:
                        break
            finally:
                if n:
                    m.rollback(n)
            if budget[0] <= 0:
                break
        return None

    def _forced_fewest(self) -> list[int]:
        """The bytes the grammar forces now, spelled in as few tokens as possible (llguidance's
        fast-forward tokens use the tokenizer's canonical split, which can take more)."""
        m = self._m
        data = bytes(m.compute_ff_bytes())
        if not data:
            return []
        ids = self._index.fewest_tokens(data)
        return ids if ids is not None else m.compute_ff_tokens()

    def _path_after(self, tok: int, k: int, budget: int, memo: dict) -> list[int] | None:
        """A completion of at most ``k`` more tokens after ``tok`` (found by ``_finish_path``, with
        ``memo`` keyed from the current state), or None."""
        if tok == self.eos:
            return []
        m = self._m
        if m.try_consume_tokens([tok]) != 1:
            return None
        try:
            return self._finish_path(k, [budget], memo, (tok,))
        finally:
            m.rollback(1)

    def _goal(self, seg: list[int], need_end: bool) -> bool:
        """Whether the committed segment can follow the matcher's current state."""
        m = self._m
        n = m.try_consume_tokens(seg) if seg else 0
        ok = n == len(seg) and (not need_end or m.is_accepting())
        if n:
            m.rollback(n)
        return ok

    def _hole_path(self, k: int, seg: list[int], need_end: bool, tops: list[list[int]],
                   budget: list[int]) -> list[int] | None:
        """Exactly ``k`` tokens after which the committed segment can follow, or None if none was found.

        A depth-first search within ``budget`` nodes; at each position it tries the model's likeliest
        allowed tokens there (``tops``, one list per position) and then the probe tokens."""
        if k == 0:
            return [] if self._goal(seg, need_end) else None
        if budget[0] <= 0:
            return None
        budget[0] -= 1
        bm = self._bitmask()
        probes = self._probes
        ok = ((bm[probes >> 3] >> (probes & 7)) & 1).astype(bool)
        likely = [t for t in tops[0] if self._allowed_np(bm, t) and t != self.eos][:4] if tops else []
        return self._first_path(list(dict.fromkeys(likely + probes[ok][:8].tolist())), budget,
                                lambda t: self._hole_path(k - 1, seg, need_end, tops[1:], budget))

    def _first_path(self, tokens, budget: list[int], recurse) -> list[int] | None:
        """Depth first over ``tokens``: consume each, ``recurse(token)``, roll back; the first path found
        (the token followed by what ``recurse`` returned), or None once the tokens or the budget run out."""
        m = self._m
        for t in tokens:
            if m.try_consume_tokens([t]) != 1:
                continue
            try:
                sub = recurse(t)
            finally:
                m.rollback(1)
            if sub is not None:
                return [t] + sub
            if budget[0] <= 0:
                break
        return None

    def _steer(self, tok: int, r: int, plan: list[int] | None, pos: int) -> tuple[int, list[int] | None]:
        """Choose the token at ``pos``, ``r`` positions before the output's deadline, so that the output
        can still be finished.

        ``plan`` is a completion from the current state found at the previous position (or None). The
        model's choice ``tok`` is kept when it follows the plan or a completion in ``r - 1`` tokens is
        found after it; otherwise the plan's first token (EOS when the output is already complete) is
        taken, searching for a plan when there is none. When no completion is found at all the model's
        choice stands, and the searches rest for the next 8 positions (they would fail again) unless the
        deadline is within 8. Returns (token, a completion after it or None); at most two searches.
        """
        if plan is not None and len(plan) > r:
            plan = None
        if plan and plan[0] == tok:
            return tok, plan[1:]
        if plan is None and pos < self._search_rest_until and r > 8:
            return tok, None
        memo: dict = {}  # the two searches share what the matcher said
        after = self._path_after(tok, r - 1, self.search_budget, memo)
        if after is not None:
            return tok, after
        if plan is None:
            plan = self._finish_path(r, [self.search_budget], memo)
        if plan is None:
            self._search_rest_until = pos + 8
            return tok, None
        if not plan:
            return self.eos, []
        return plan[0], plan[1:]

    def _steer_hole(self, tok: int, r: int, plan: list[int] | None, seg: list[int], need_end: bool,
                    tops: list[list[int]], pos: int) -> tuple[int, list[int] | None]:
        """Choose the token ``r`` positions before a committed segment (a hole the sampler re-masked) so
        that the hole can still be filled to let the segment follow: the model's choice when a filling
        of the rest is found after it, else the first token of a filling found from here (``plan``, a
        filling from the current state found at the previous position, is reused when the model
        follows it). When no filling is found the model's choice stands and the searches rest for the
        next 8 positions, as in ``_steer``."""
        if plan is not None and len(plan) != r:
            plan = None
        if plan and plan[0] == tok:
            return tok, plan[1:]
        if plan is None and pos < self._search_rest_until and r > 2:
            return tok, None
        if tok != self.eos and self._m.try_consume_tokens([tok]) == 1:
            try:
                after = self._hole_path(r - 1, seg, need_end, tops[1:], [self.search_budget])
            finally:
                self._m.rollback(1)
            if after is not None:
                return tok, after
        if plan is None:
            plan = self._hole_path(r, seg, need_end, tops, [self.search_budget])
        if plan:
            return plan[0], plan[1:]
        self._search_rest_until = pos + 8
        return tok, None
