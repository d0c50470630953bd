"""Model backends: the ``DiffusionModel`` protocol and its adapters.

``RandomLogits`` (random logits for dry runs and tests), ``HFMaskedLM`` (any Hugging Face masked LM in a
local directory), ``LLaDAModel`` and ``DreamModel`` (those checkpoints with their own modeling code) and
``load_model`` (a path, ``"random"``, or the embedded default). Nothing downloads.
"""

from .base import DiffusionModel
from .default import load_model
from .dream import DreamModel
from .hf_mlm import HFMaskedLM
from .llada import LLaDAModel
from .random_logits import RandomLogits

__all__ = ["DiffusionModel", "RandomLogits", "HFMaskedLM", "LLaDAModel", "DreamModel", "load_model"]
