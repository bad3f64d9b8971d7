"""Tokenizers for the transition text: one token per line (``atom``), or GPT-2's byte-level BPE.

The ``atom`` tokenizer is a ``tokenizers`` WordLevel model whose vocabulary is every ground atom
and ground action of the domain over the objects a dataset uses, plus the codec's markers. Lines
are split on newlines; the decoder re-appends a newline to every token, so decoding reproduces
the codec's text (:func:`decode` drops the one trailing newline). A line outside the vocabulary
becomes ``[UNK]`` and decodes to the line ``[UNK]``, which :func:`plansuite.pddl.codec.parse_completion`
rejects. Both kinds are Hugging Face fast tokenizers, saved next to the model, and loadable with
``AutoTokenizer``.

>>> from plansuite.domains import load_builtin
>>> tok = build_atom_tokenizer(load_builtin("blocksworld"), {"a": "object", "b": "object"})
>>> text = "ACTION:\\n(pickup a)\\nNEXT STATE:\\n(holding a)\\nEND"
>>> ids = tok(text, add_special_tokens=False)["input_ids"]
>>> len(ids), decode(tok, ids) == text
(5, True)
>>> decode(tok, tok("(pickup zz)", add_special_tokens=False)["input_ids"])
'[UNK]'
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

from plansuite.errors import ConfigError
from plansuite.pddl.codec import MARKERS
from plansuite.pddl.model import Domain, atom_text

PAD, UNK, EOS = "[PAD]", "[UNK]", "[EOS]"
TOKENIZER_KINDS = ("atom", "bpe")


def ground_texts(domain: Domain, objects: dict[str, str]) -> list[str]:
    """Every ground atom and ground action text over ``objects`` (type-respecting), sorted.

    >>> from plansuite.domains import load_builtin
    >>> texts = ground_texts(load_builtin("blocksworld"), {"a": "object"})
    >>> "(on a a)" in texts, "(pickup a)" in texts, len(texts)
    (True, True, 9)
    """
    objects = {**domain.constants, **objects}

    def of_type(type_name: str) -> list[str]:
        return sorted(o for o, t in objects.items() if domain.is_subtype(t, type_name))

    out: set[str] = set()
    for name, types in domain.predicates.items():
        for args in itertools.product(*(of_type(t) for t in types)):
            out.add(atom_text((name, *args)))
    for schema in domain.actions:
        for args in itertools.product(*(of_type(t) for _, t in schema.parameters)):
            out.add(atom_text((schema.name, *args)))
    return sorted(out)


def build_atom_tokenizer(domain: Domain, objects: dict[str, str],
                         max_length: int = 1024) -> PreTrainedTokenizerFast:
    """The one-token-per-line tokenizer for ``domain`` over ``objects`` (name -> type)."""
    vocab = {t: i for i, t in enumerate([PAD, UNK, EOS, *MARKERS, *ground_texts(domain, objects)])}
    core = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split("\n", behavior="removed")
    core.decoder = decoders.Replace(Regex("$"), "\n")  # every token is one line
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, unk_token=UNK,
                                   eos_token=EOS, model_max_length=max_length)


def is_atom_tokenizer(tokenizer: PreTrainedTokenizerBase) -> bool:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return backend is not None and isinstance(backend.model, models.WordLevel)


def tokenizer_kind(tokenizer: PreTrainedTokenizerBase) -> str:
    return "atom" if is_atom_tokenizer(tokenizer) else "bpe"


def load_pretrained_tokenizer(path: str | Path) -> PreTrainedTokenizerBase:
    """A saved tokenizer (atom or GPT-2 BPE); GPT-2 gets its end-of-text token as padding."""
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: no usable tokenizer ({str(exc).splitlines()[0][:160]})") from exc
    if tok.eos_token is None:
        raise ConfigError(f"{path}: tokenizer has no end-of-sequence token")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def encode(tokenizer: PreTrainedTokenizerBase, texts: list[str]) -> list[list[int]]:
    """Token ids of each text, without special tokens."""
    if not texts:
        return []
    return tokenizer(texts, add_special_tokens=False)["input_ids"]


def decode(tokenizer: PreTrainedTokenizerBase, ids: Iterable[int]) -> str:
    """Text of ``ids`` exactly as the codec wrote it (special tokens like ``[UNK]`` kept)."""
    text = tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)
    if is_atom_tokenizer(tokenizer) and text.endswith("\n"):
        text = text[:-1]
    return text


def stop_token_ids(tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """Generation stops at the end-of-sequence token, or at ``END`` when it is a single token."""
    stops = [tokenizer.eos_token_id]
    end = encode(tokenizer, ["END"])[0]
    if len(end) == 1 and end[0] != tokenizer.unk_token_id:
        stops.append(end[0])
    return stops


def pad_ids(seqs: list[list[int]], pad_id: int, left: bool = False):
    """(ids, attention_mask) long tensors of ``seqs`` padded to the longest one.

    >>> ids, mask = pad_ids([[5, 6], [7]], pad_id=0, left=True)
    >>> ids.tolist(), mask.tolist()
    ([[5, 6], [0, 7]], [[1, 1], [0, 1]])
    """
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        span = slice(width - len(s), width) if left else slice(0, len(s))
        ids[i, span] = torch.tensor(s, dtype=torch.long)
        mask[i, span] = 1
    return ids, mask
