"""benchmarks/commit_order.py: where a decoded call's name sits on the canvas, and when it was committed."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_name_positions_decode_to_the_name_and_nothing_after_it(bench_script):
    import structgen as sg
    from structgen.train.tokenizer import encode_target

    co = bench_script("commit_order")
    tok = sg.load_model().tokenizer
    ids = encode_target(tok, '{"name": "get_weather", "arguments": {"city": "Porto"}}')
    where = co.name_positions(tok, ids, "get_weather")
    assert where == list(range(where[0], where[-1] + 1))
    assert tok.decode([ids[i] for i in where]).strip('" ') == "get_weather"
    assert "arguments" not in tok.decode(ids[:where[-1] + 1])


def test_each_decoding_reports_when_its_name_was_settled(bench_script):
    import structgen as sg
    from structgen.train.data import examples
    from structgen.train.evaluate import CANVAS

    co = bench_script("commit_order")
    model = sg.load_model()
    gen = sg.Generator(model)
    for ex in examples("tool", "train", 2, 7):
        got = co.order_of(model, gen, ex, CANVAS["tool"])
        assert got["valid"] and got["by"] in ("model", "forced")
        assert 0 <= got["at_nfe"] <= 1 and 0 <= got["args_before"] <= 1 and got["nfe"] >= 1
