"""A real but tiny GGUF model for tests of the in-page model: llama.cpp loads it, tokenizes
with its vocabulary, applies its chat template and samples from it like any other model.

The weights are random, except for one deliberate bias that makes the tests fast and their
outcome certain: the residual stream carries a large constant in its first dimension, and
the output matrix's first column turns that into a fixed preference over the vocabulary.
Unconstrained, the model says " yes no yes no ..." and never chooses an end-of-turn token,
so it talks until its context window is full (what the abort and overflow tests need);
inside a JSON string a closing quote is among its three favourite tokens, so a grammar
ends every string within a few tokens and the whole object ends soon after (what the
schema tests need). Everything else (attention, feed-forward, the other output columns)
is random noise on top, so the exact tokens still depend on the prompt and the seed.

``quantized=True`` stores each layer's matrices in Q8_0 rather than F32: the form llama.cpp's
quantized kernels (and, on a CPU with AMX, its AMX kernels) run on, with every dimension
a multiple of 32 so that they take them. ``bench/llama_server.py`` smoke-tests a fresh
build of llama.cpp's server on it.

The vocabulary is a SentencePiece-style one (llama.cpp's ``llama`` tokenizer): control
tokens, the 256 byte-fallback tokens, printable ASCII characters and a few hundred English
words with all their prefixes, so that any text tokenizes. The chat template is Gemma's
turn format.

    python -m tests.tiny_gguf OUT.gguf [--context-length N] [--quantized]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import gguf

ARCH = "llama"

# Turn markers of Gemma's chat format; llama.cpp treats <end_of_turn> as end of generation.
SPECIAL = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
PAD, EOS, BOS, UNK, START_OF_TURN, END_OF_TURN = range(len(SPECIAL))

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

WORDS = """
a about above after again all also always am an and any are as ask at back be because
been before being below between both but by call calculator can city come could day did
do does done down each even every few find first for from get give go good great had has
have he help her here him his how i if in into is it its just know last like little long
look make many may me more most much must my name need new no not now number of off old
on once one only or other our out over own part people place please question read right
same say see she should show so some still such take tell than thank that the their them
then there these they thing think this those time to today tool too two under up us use
very want was way we weather well were what when where which while who why will with word
work world would write year yes yet you your zero answer thought none final input convert
units grams ounces model user system celsius fahrenheit kilometers miles times plus minus equals result
""".split()

# The model's fixed preference (logit before noise) for a few tokens; every other token: 0.
PREFERENCE = {"\u2581yes": 3.0, "\u2581no": 2.9, '"': 2.6, "}": 2.0, ",": 1.5, "0": 1.0}
END_OF_TURN_PREFERENCE = -6.0


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Tokens, SentencePiece scores and llama.cpp token types."""
    tokens: list[str] = []
    scores: list[float] = []
    types: list[int] = []

    def add(text: str, score: float, kind: gguf.TokenType) -> None:
        tokens.append(text)
        scores.append(score)
        types.append(int(kind))

    for name in SPECIAL:
        add(name, 0.0, gguf.TokenType.UNKNOWN if name == "<unk>" else gguf.TokenType.CONTROL)
    for byte in range(256):
        add(f"<0x{byte:02X}>", 0.0, gguf.TokenType.BYTE)
    seen = set(tokens)
    pieces = ["\u2581"] + [chr(c) for c in range(33, 127)]
    for word in WORDS:
        for spelled in (word, "\u2581" + word):   # inside a word, and after a space
            pieces += [spelled[:end] for end in range(2, len(spelled) + 1)]
    for piece in pieces:
        if piece not in seen:
            seen.add(piece)
            # Longer pieces score higher, so the tokenizer merges whole words when it can.
            add(piece, float(len(piece)) - 10.0, gguf.TokenType.NORMAL)
    return tokens, scores, types


def write_tiny_gguf(path: Path, *, context_length: int = 1024, seed: int = 0,
                    n_embd: int = 64, n_layer: int = 2, n_head: int = 4, n_head_kv: int = 2,
                    n_ff: int = 128, name: str = "tiny-random-llama",
                    preference: dict[str, float] | None = None, others: float = 0.0,
                    chat_template: str = CHAT_TEMPLATE, quantized: bool = False) -> Path:
    """Write the model to ``path`` (about 1 MB) and return it.

    ``preference`` changes the fixed preferences (:data:`PREFERENCE`, updated with it; a
    token of the vocabulary each), ``others`` is every other token's (0: only the noise
    decides between them; below 0, where a grammar allows only other tokens the model
    still picks among them, but never one of them where a preferred token is allowed);
    ``chat_template`` replaces Gemma's turn format; ``quantized`` stores the layers'
    matrices in Q8_0 (the embeddings, the output matrix and the norms stay F32).
    """
    rng = np.random.default_rng(seed)
    tokens, scores, types = vocabulary()
    n_vocab = len(tokens)
    head_dim = n_embd // n_head

    def noise(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    embeddings = noise(n_vocab, n_embd)
    embeddings[:, 0] = 8.0                     # the constant the preference reads
    output = noise(n_vocab, n_embd, scale=0.05)
    bias = np.full(n_vocab, others, dtype=np.float32)
    for text, value in {**PREFERENCE, **(preference or {})}.items():
        bias[tokens.index(text)] = value
    bias[EOS] = bias[END_OF_TURN] = END_OF_TURN_PREFERENCE
    # After the final RMS norm the first dimension is about sqrt(n_embd); scale to it.
    output[:, 0] = bias / np.sqrt(n_embd)

    writer = gguf.GGUFWriter(str(path), ARCH)
    writer.add_name(name)
    writer.add_context_length(context_length)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if quantized
                         else gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(BOS)
    writer.add_eos_token_id(EOS)
    writer.add_eot_token_id(END_OF_TURN)
    writer.add_unk_token_id(UNK)
    writer.add_pad_token_id(PAD)
    writer.add_add_bos_token(False)   # the chat template writes it
    # As Gemma's: no space before the first word (llama.cpp checks a response grammar
    # against the template's generation prompt, "<start_of_turn>model\n", token by token).
    writer.add_add_space_prefix(False)
    writer.add_chat_template(chat_template)

    def add_matrix(name: str, values: np.ndarray) -> None:
        if quantized:
            q8_0 = gguf.GGMLQuantizationType.Q8_0
            writer.add_tensor(name, gguf.quants.quantize(values, q8_0), raw_dtype=q8_0)
        else:
            writer.add_tensor(name, values)

    writer.add_tensor("token_embd.weight", embeddings)
    writer.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    writer.add_tensor("output.weight", output)
    for layer in range(n_layer):
        prefix = f"blk.{layer}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        add_matrix(f"{prefix}.attn_q.weight", noise(n_head * head_dim, n_embd))
        add_matrix(f"{prefix}.attn_k.weight", noise(n_head_kv * head_dim, n_embd))
        add_matrix(f"{prefix}.attn_v.weight", noise(n_head_kv * head_dim, n_embd))
        add_matrix(f"{prefix}.attn_output.weight", noise(n_embd, n_head * head_dim))
        writer.add_tensor(f"{prefix}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        add_matrix(f"{prefix}.ffn_gate.weight", noise(n_ff, n_embd))
        add_matrix(f"{prefix}.ffn_up.weight", noise(n_ff, n_embd))
        add_matrix(f"{prefix}.ffn_down.weight", noise(n_embd, n_ff))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--context-length", type=int, default=1024)
    parser.add_argument("--quantized", action="store_true",
                        help="the layers' matrices in Q8_0 rather than F32")
    args = parser.parse_args()
    write_tiny_gguf(args.out, context_length=args.context_length, quantized=args.quantized)
    print(f"{args.out}: {args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
