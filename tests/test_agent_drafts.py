"""Draft payloads: cells of committed tokens join to the exact text, even across a split UTF-8 character."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from structgen.agent.drafts import draft_payload


@pytest.fixture(scope="module")
def tok():
    from structgen.train.config import TrainConfig
    from structgen.train.tokenizer import build_tokenizer

    return build_tokenizer(TrainConfig.tiny(), ["plain ascii words only", "more words"])


def test_a_character_split_over_byte_tokens_goes_to_the_cell_that_completes_it(tok):
    e_acute = tok.convert_tokens_to_ids(["Ã", "©"])  # the byte-level tokens of é's two UTF-8 bytes
    assert tok.unk_token_id not in e_acute
    a, b = tok.encode("a", add_special_tokens=False), tok.encode("b", add_special_tokens=False)
    canvas = a + e_acute + b + [-1] + e_acute
    event = SimpleNamespace(step=3, kind="draft", nfe=2, canvas=canvas, text="")
    cells = draft_payload(event, tok, set())["cells"]
    texts = [c["t"] for c in cells]
    assert "".join(texts[: len(a) + 2 + len(b)]) == "aéb" and "\ufffd" not in "".join(texts[: len(a) + 3])
    assert texts[len(a)] == "" and texts[len(a) + 1] == "é"
    assert cells[len(a) + 2 + len(b)] == {"t": "", "s": "m"}
    assert texts[-2:] == ["", "é"]  # a run after a masked cell is handled on its own
