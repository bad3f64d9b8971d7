"""A byte-level BPE tokenizer trained on a dataset's own text (NL→PDDL descriptions and problems).

The transition models read one token per ground atom (:mod:`plansuite.models.tokenizer`); English
descriptions and free-form PDDL need something open-ended. Merges stay inside whitespace-led
chunks (``"\\n    (on-table"``, ``" b1"``, ``")"``, ``" rests"``: :data:`CHUNKS`) instead of GPT-2's
letter/digit/punctuation split: on this narrow corpus almost every chunk becomes one token, which is what makes a tiny GPT-2 trainable on CPU. Rare chunks fall back
to smaller pieces and, at worst, bytes: every string round-trips exactly, whatever a user types.
The result is a Hugging Face fast tokenizer: saved with the export, loaded by ``AutoTokenizer``.

>>> tok = train_text_tokenizer(["(on b1 b2) rests on", "(clear b1) is clear"] * 20, vocab_size=300)
>>> text = "(on b2 b1)\\n  (clear b9) -- anything at all: ü"
>>> ids = tok(text, add_special_tokens=False)["input_ids"]
>>> tok.decode(ids) == text, len(ids) < len(text.encode())
(True, True)
>>> tok.eos_token, tok.pad_token, len(tok) <= 300
('[EOS]', '[PAD]', True)
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from plansuite.errors import ConfigError

PAD, EOS = "[PAD]", "[EOS]"
MIN_VOCAB = 256 + 2  # the byte alphabet and the two special tokens
# Whitespace-led chunks, merged by BPE only inside a chunk: "(" with the keyword or predicate after
# it ("\n    (on-table", " (:objects"), a name or word (" b1", " kitchen", " on-table"), one
# punctuation mark (")", ","). Names are chunks of their own, so " b1" in a description and in
# "(on b1 b2)" is the same token: the generator copies a name instead of learning " b1)", " b1,"
# and " b1" as unrelated tokens, and the constrained decoder sees whole names and keywords.
CHUNKS = r"\s*\(\s*:?[A-Za-z][\w-]*|\s*[\w-]+|\s*[^\w\s]|\s+"


def train_text_tokenizer(corpus: Iterable[str], vocab_size: int = 2048, min_frequency: int = 2,
                         max_length: int = 1024) -> PreTrainedTokenizerFast:
    """A byte-level BPE of at most ``vocab_size`` tokens learned from ``corpus`` (deterministic)."""
    if vocab_size < MIN_VOCAB:
        raise ConfigError(f"model.vocab_size={vocab_size}: a byte-level BPE needs at least {MIN_VOCAB}")
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(CHUNKS), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=[PAD, EOS], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    core.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, eos_token=EOS,
                                   model_max_length=max_length)
