"""Training the embedded default model: data, tokenizer, masked-diffusion objective, runs and evaluation.

- ``structgen.train.data``: the generated examples of the four families (JSON extraction, tool calls,
  text-to-SQL, alert rules), train and held-out splits, and the tokenizer corpus;
- ``structgen.train.tokenizer``: the byte-level BPE trained on that corpus;
- ``structgen.train.objective``, ``batches``, ``config``, ``trainer``: the LLaDA-style masked-diffusion
  training run (``structgen train``);
- ``structgen.train.evaluate``, ``eval_report``, ``plot``: the held-out evaluation (``structgen eval``).

Importing this package adds nothing heavy to ``structgen`` itself; import the submodule you need.
"""

from __future__ import annotations

from .data import FAMILIES, Example, corpus_texts, examples, mixture

__all__ = ["FAMILIES", "Example", "corpus_texts", "examples", "mixture"]
