"""``LLaDAModel``: LLaDA checkpoints (GSAI-ML/LLaDA-8B-Base, -Instruct, LLaDA-1.5) as a structgen backend.

This module also owns what LLaDA and Dream (``dream.py``) share, in ``RemoteCodeModel``: loading a
checkpoint whose architecture ships as Python files beside the weights (``trust_remote_code``) from a local
directory only, the checks that run before any weight is read, folding the chat format's turn-end token into
EOS, and chat rendering through the tokenizer's own chat template (with an assistant prefill).

LLaDA's conventions (from ML-GSAI/LLaDA ``generate.py``, ``chat.py``, ``GUIDELINES.md`` and the checkpoint's
``config.json`` / ``tokenizer_config.json``):

- the mask token is ``<|mdm_mask|>``, id 126336 (``config.mask_token_id``, else the tokenizer's
  ``<|mdm_mask|>``, else 126336);
- the output layer is 126,464 wide while the tokenizer has 126,349 tokens; ``vocab_size`` is the output
  width and the extra ids are never allowed by a constraint;
- no logit shift: the logit at position ``i`` predicts the token at ``i``;
- a response ends with ``<|eot_id|>`` (126348) and the rest of the canvas is ``<|endoftext|>`` (126081, the
  tokenizer's EOS and pad). structgen's canvas is ``output · EOS*``, so ``eos_id`` is ``<|endoftext|>`` and the
  probability the model gives ``<|eot_id|>`` is added to EOS (``fold_turn_end``): "the answer ends here"
  counts as EOS, and ``<|eot_id|>`` itself is never written.
- the chat template is Llama-3 style and always ends with the assistant header; a plain string prompt is
  rendered as one user message when the tokenizer has a chat template (``chat=False`` for the Base model).

LLaDA's ``modeling_llada.py`` was written for transformers 4.46: its model never calls ``post_init()`` and its
``tie_weights()`` takes no arguments, both of which break transformers 5 loading; ``v5_compatible`` loads it
through a subclass that fixes both (nothing else changes).

Defaults: the device is CUDA when available, else the CPU; the dtype is bfloat16 on CUDA and float32 on the
CPU (``dtype="bfloat16"`` halves CPU memory). Nothing is downloaded: a missing file is a ``ModelLoadError``
that says what to copy where.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from ..errors import ConfigError, ModelLoadError
from .base import DiffusionModel, Prompt, _check_messages, _content_text
from .hf_mlm import _resolve_dtype, check_model_dir, default_device, quiet_loading

LLADA_MASK_ID = 126336
LLADA_MASK_TOKEN = "<|mdm_mask|>"


def read_config(path: str | os.PathLike) -> dict:
    """The directory's ``config.json`` as a dict; ``{}`` when it is missing or unreadable."""
    try:
        data = json.loads((Path(path).expanduser() / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _first_int(*values: Any) -> int | None:
    for v in values:
        if isinstance(v, (list, tuple)):
            v = v[0] if v else None
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return None


def v5_compatible(model_cls: type) -> type:
    """A subclass of a remote-code model class written for transformers 4.x that loads under transformers 5.

    Two 4.x habits break 5.x loading: an ``__init__`` that never calls ``post_init()`` (5.x reads the attributes
    it sets, e.g. ``all_tied_weights_keys``; LLaDA's ``LLaDAModelLM``), and a ``tie_weights(self)`` that takes no
    arguments (5.x passes ``missing_keys=`` and ``recompute_mapping=``). The subclass calls ``post_init()`` only
    when ``__init__`` did not, and replaces ``tie_weights`` only when it takes no arguments; non-``PreTrainedModel``
    classes, and everything under transformers 4, are returned as they are.
    """
    from transformers import PreTrainedModel

    if not issubclass(model_cls, PreTrainedModel) or not hasattr(PreTrainedModel, "get_expanded_tied_weights_keys"):
        return model_cls
    params = inspect.signature(model_cls.tie_weights).parameters.values()
    tie_takes_kw = any(q.kind is q.VAR_KEYWORD or q.name == "missing_keys" for q in params)
    body: dict[str, Any] = {"__module__": model_cls.__module__, "__doc__": model_cls.__doc__}

    def __init__(self, *args, **kwargs):
        model_cls.__init__(self, *args, **kwargs)
        if not hasattr(self, "all_tied_weights_keys"):
            self.post_init()

    body["__init__"] = __init__
    if not tie_takes_kw:
        body["tie_weights"] = lambda self, *args, **kwargs: model_cls.tie_weights(self)
    return type(model_cls.__name__, (model_cls,), body)


class RemoteCodeModel(DiffusionModel):
    """A diffusion LM whose architecture ships as remote code beside its weights (LLaDA, Dream)."""

    family = "remote-code"
    model_types: tuple[str, ...] = ()        # config.json "model_type" values, lower case
    architectures: tuple[str, ...] = ()      # config.json "architectures" entries
    turn_end_tokens: tuple[str, ...] = ()    # chat-format end-of-turn tokens folded into EOS
    hub_id = ""                              # shown in hints: where the files come from
    max_length_keys: tuple[str, ...] = ("max_position_embeddings",)

    def __init__(self, model, tokenizer, *, name: str | None = None, mask_id: int | None = None,
                 eos_id: int | None = None, chat: bool | None = None, fold_turn_end: bool = True):
        if not getattr(tokenizer, "is_fast", False) and not hasattr(tokenizer, "backend_tokenizer"):
            raise ModelLoadError(f"{self.family}: structgen needs a fast (tokenizers) tokenizer, got "
                                 f"{type(tokenizer).__name__}; keep tokenizer.json in the model directory")
        config = getattr(model, "config", None)
        self.model = model.eval() if hasattr(model, "eval") else model
        self.tokenizer = tokenizer
        self.vocab_size = self._output_width(model, config, tokenizer)
        if len(tokenizer) > self.vocab_size:
            raise ModelLoadError(f"{self.family}: the tokenizer has {len(tokenizer)} tokens but the model outputs "
                                 f"only {self.vocab_size}; the tokenizer files do not belong to this checkpoint")
        mask = mask_id if mask_id is not None else self._find_mask_id(config, tokenizer)
        eos = eos_id if eos_id is not None else _first_int(getattr(config, "eos_token_id", None),
                                                           getattr(tokenizer, "eos_token_id", None))
        for what, tid in (("mask", mask), ("EOS", eos)):
            if tid is None or not 0 <= tid < self.vocab_size:
                raise ModelLoadError(
                    f"{self.family}: no usable {what} token id (found {tid!r}, logits width {self.vocab_size}); "
                    f"set {what.lower()}_token_id in config.json as in the original {self.hub_id or 'checkpoint'}"
                )
        self.mask_id, self.eos_id = int(mask), int(eos)
        vocab = tokenizer.get_vocab()
        ends = [vocab[t] for t in self.turn_end_tokens if t in vocab] if fold_turn_end else []
        self.turn_end_ids = [i for i in ends if i not in (self.eos_id, self.mask_id) and i < self.vocab_size]
        self.chat = bool(getattr(tokenizer, "chat_template", None)) if chat is None else bool(chat)
        first = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
        self.device = first.device if first is not None else torch.device("cpu")
        self.name = name or str(getattr(config, "_name_or_path", "") or type(model).__name__)
        self.max_length = _first_int(*(getattr(config, k, None) for k in self.max_length_keys)) or None

    # ------------------------------------------------------------------ construction
    @classmethod
    def matches(cls, config: dict) -> bool:
        """Whether a ``config.json`` (as a dict) describes a checkpoint of this family."""
        mt = str(config.get("model_type", "")).lower()
        archs = config.get("architectures") or []
        return mt in cls.model_types or any(a in cls.architectures for a in archs if isinstance(a, str))

    @classmethod
    def from_model(cls, model, tokenizer, *, name: str | None = None, **kw) -> RemoteCodeModel:
        """Wrap a model and tokenizer already in memory (the model stays on its device)."""
        return cls(model, tokenizer, name=name, **kw)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, device: str | torch.device | None = None, dtype: Any = None,
                        **kw) -> RemoteCodeModel:
        """Load a checkpoint from a local directory with its own modeling code; never downloads.

        ``kw`` goes to the constructor: ``chat``, ``fold_turn_end``, ``mask_id``, ``eos_id``."""
        p = check_model_dir(path)
        config = read_config(p)
        if not cls.matches(config):
            raise ModelLoadError(
                f"{str(p)!r} is not a {cls.family} checkpoint (model_type={config.get('model_type')!r}, "
                f"architectures={config.get('architectures')!r}); load it with structgen.load_model(PATH), "
                "which picks the adapter from config.json"
            )
        ref = cls._check_remote_code(p, config)
        dev = torch.device(device) if device is not None else default_device()
        torch_dtype = torch.bfloat16 if dtype is None and dev.type == "cuda" else _resolve_dtype(dtype, dev)
        tokenizer = cls._load_tokenizer(p)
        import transformers
        from transformers.dynamic_module_utils import get_class_from_dynamic_module

        kwargs: dict[str, Any] = {"trust_remote_code": True, "local_files_only": True, "dtype": torch_dtype}
        with quiet_loading(), cls._loading_context():
            try:
                model_cls = get_class_from_dynamic_module(ref, str(p), local_files_only=True)
                model = v5_compatible(model_cls).from_pretrained(str(p), **kwargs)
                cls._after_load(model)
            except ImportError as e:
                raise ModelLoadError(
                    f"the modeling code in {str(p)!r} needs a package that is not installed ({e}); install it, "
                    f"or use the modeling files of {cls.hub_id or 'the original checkpoint'} that match your "
                    f"transformers {transformers.__version__}"
                ) from e
            except Exception as e:  # OSError (missing files), ValueError, errors raised inside the remote code
                raise ModelLoadError(
                    f"loading {cls.family} from {str(p)!r} failed ({type(e).__name__}: {e}). Check that the "
                    "download finished (all model-*.safetensors shards listed in the index) and that the "
                    "directory holds the checkpoint's own .py files"
                ) from e
        model.to(dev)
        return cls(model, tokenizer, name=p.name or str(p), **kw)

    @classmethod
    def _check_remote_code(cls, p: Path, config: dict) -> str:
        """The model class reference in ``auto_map`` ("module.Class"), after checking its files are in ``p``."""
        auto_map = config.get("auto_map") or {}
        auto_cls = next((k for k in ("AutoModel", "AutoModelForCausalLM", "AutoModelForMaskedLM") if k in auto_map),
                        None)
        fetch = (f"fetch the whole repository on a machine with access (`huggingface-cli download {cls.hub_id} "
                 f"--local-dir {p}`) and copy it here")
        if auto_cls is None:
            raise ModelLoadError(f"config.json in {str(p)!r} has no auto_map naming the {cls.family} modeling "
                                 f"code (e.g. \"AutoModel\": \"modeling_x.ClassName\"); {fetch}")
        for key in ("AutoConfig", auto_cls):
            ref = auto_map.get(key)
            ref = ref[0] if isinstance(ref, (list, tuple)) else ref
            if not isinstance(ref, str) or "." not in ref:
                continue
            if "--" in ref:
                raise ModelLoadError(
                    f"config.json in {str(p)!r} takes its {key} code from another repository ({ref!r}), which "
                    "structgen will not download; copy that repository's .py files into the directory and "
                    f"write the auto_map entry as {ref.split('--', 1)[1]!r}"
                )
            module = ref.rsplit(".", 1)[0].replace(".", "/") + ".py"
            if not (p / module).is_file():
                raise ModelLoadError(f"{module} is missing from {str(p)!r} (config.json's auto_map names it for "
                                     f"{key}); {fetch}")
        ref = auto_map[auto_cls]
        return ref[0] if isinstance(ref, (list, tuple)) else ref

    @classmethod
    def _loading_context(cls) -> contextlib.AbstractContextManager:
        """Hook: while loading, make the installed transformers provide what this family's code expects."""
        return contextlib.nullcontext()

    @classmethod
    def _after_load(cls, model) -> None:
        """Hook: repair what loading under transformers 5 leaves unset in this family's modules."""

    @classmethod
    def _load_tokenizer(cls, p: Path):
        if not (p / "tokenizer.json").is_file():
            raise ModelLoadError(f"no tokenizer.json in {str(p)!r}; copy the checkpoint's tokenizer files "
                                 f"(tokenizer.json, tokenizer_config.json) from {cls.hub_id or 'its repository'}")
        from transformers import PreTrainedTokenizerFast

        try:
            return PreTrainedTokenizerFast.from_pretrained(str(p), local_files_only=True)
        except Exception as e:
            raise ModelLoadError(f"could not load the tokenizer in {str(p)!r} ({type(e).__name__}: {e}); copy "
                                 f"tokenizer.json and tokenizer_config.json again from {cls.hub_id}") from e

    # ------------------------------------------------------------------ vocabulary
    @staticmethod
    def _output_width(model, config, tokenizer) -> int:
        """Logits width: the output layer's rows, else ``embedding_size`` / ``vocab_size`` in the config."""
        head = None
        getter = getattr(model, "get_output_embeddings", None)
        if callable(getter):
            try:
                head = getter()
            except (NotImplementedError, AttributeError):
                head = None
        weight = getattr(head, "weight", None)
        if isinstance(weight, torch.Tensor) and weight.dim() == 2:
            return int(weight.shape[0])
        width = _first_int(getattr(config, "embedding_size", None), getattr(config, "vocab_size", None))
        return width if width is not None else len(tokenizer)

    def _find_mask_id(self, config, tokenizer) -> int | None:
        return _first_int(getattr(config, "mask_token_id", None), getattr(tokenizer, "mask_token_id", None))

    # ------------------------------------------------------------------ logits
    def _fold(self, logits: torch.Tensor) -> torch.Tensor:
        """float32 logits with each turn-end token's probability added to EOS (and the turn end made -inf)."""
        logits = logits.float()
        if not self.turn_end_ids:
            return logits
        eos = torch.logsumexp(logits[..., [self.eos_id, *self.turn_end_ids]], dim=-1)
        ends = torch.tensor(self.turn_end_ids, device=logits.device)
        folded = logits.index_fill(-1, ends, float("-inf"))  # a new tensor: the model's output is left as it is
        folded[..., self.eos_id] = eos
        return folded

    @staticmethod
    def _raw(out) -> torch.Tensor:
        return out.logits if hasattr(out, "logits") else out[0]

    # ------------------------------------------------------------------ prompts
    def encode_prompt(self, prompt: Prompt) -> list[int]:
        """Token ids of a prompt, rendered with the tokenizer's chat template when it has one.

        A plain string is one user message when ``self.chat`` (default: the tokenizer has a chat template),
        else plain text. A final assistant message is a prefill: the conversation before it is rendered with
        the generation prompt and the prefill's text follows, so the canvas continues it."""
        tok = self.tokenizer
        if not getattr(tok, "chat_template", None) or (isinstance(prompt, str) and not self.chat):
            return super().encode_prompt(prompt)
        raw = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else _check_messages(prompt, self.name)
        messages = [{"role": m["role"], "content": _content_text(m["content"])} for m in raw]
        prefill = ""
        if messages[-1]["role"] == "assistant":
            prefill = messages.pop()["content"]
            if not messages:
                raise ConfigError("an assistant prefill needs at least one message before it (e.g. the user's)")
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return self._encode_plain(text, split_special=False) + self._encode_plain(prefill, split_special=True)


class LLaDAModel(RemoteCodeModel):
    """LLaDA (``model_type: "llada"``, ``LLaDAModelLM``): mask id 126336, no logit shift, ``<|eot_id|>`` folded
    into EOS ``<|endoftext|>``."""

    family = "LLaDA"
    model_types = ("llada",)
    architectures = ("LLaDAModelLM",)
    turn_end_tokens = ("<|eot_id|>",)
    hub_id = "GSAI-ML/LLaDA-8B-Instruct"
    max_length_keys = ("max_sequence_length", "max_position_embeddings")

    def _find_mask_id(self, config, tokenizer) -> int | None:
        found = _first_int(getattr(config, "mask_token_id", None))
        if found is None:
            found = tokenizer.get_vocab().get(LLADA_MASK_TOKEN)
        return LLADA_MASK_ID if found is None else found

    def _logits(self, ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        kw = {}
        if attention_mask is not None and not bool(attention_mask.bool().all()):
            kw["attention_mask"] = attention_mask  # 2-D, 1 = attend (LLaDA's modeling code from 2025-10 on)
        return self._fold(self._raw(self.model(input_ids=ids, **kw)))


__all__: Sequence[str] = ["LLADA_MASK_ID", "LLaDAModel", "RemoteCodeModel", "read_config", "v5_compatible"]
