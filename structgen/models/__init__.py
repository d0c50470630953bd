"""Model backends: the ``DiffusionModel`` protocol and its adapters.

``RandomLogits`` (random logits for dry runs and tests), ``HFMaskedLM`` (any Hugging Face masked LM in a
local directory) and ``load_model`` (a path, ``"random"``, or the embedded default). Nothing downloads.
"""

from .base import DiffusionModel
from .default import load_model
from .hf_mlm import HFMaskedLM
from .random_logits import RandomLogits

__all__ = ["DiffusionModel", "RandomLogits", "HFMaskedLM", "load_model"]
