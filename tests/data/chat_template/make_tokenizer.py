"""Writes the three hand-made test tokenizers: one word-level tokenizer.json, and each
directory's chat template(s) from templates/ (chatml: tokenizer_config.json's string;
named: its list of named templates; override: chat_template.jinja over the config's).

Run from this directory: python3 make_tokenizer.py
"""
import json

SPECIALS = ["[UNK]", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
WORDS = (
    "system user assistant tool you are a helpful hello how today what is the "
    "weather in paris name arguments city get_weather , . ? ! : { } \" [ ] 1 2 3"
).split()

vocab = {tok: i for i, tok in enumerate(SPECIALS + WORDS)}
added = [
    {"id": vocab[t], "content": t, "single_word": False, "lstrip": False,
     "rstrip": False, "normalized": False, "special": True}
    for t in SPECIALS
]
tokenizer = {
    "version": "1.0",
    "truncation": None,
    "padding": None,
    "added_tokens": added,
    "normalizer": {"type": "Lowercase"},
    "pre_tokenizer": {"type": "Whitespace"},
    "post_processor": None,
    "decoder": None,
    "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
}
for d in ("chatml", "named", "override"):
    with open(f"{d}/tokenizer.json", "w") as f:
        json.dump(tokenizer, f, indent=1)
        f.write("\n")

chatml = open("templates/chatml.jinja").read()
plain = open("templates/plain.jinja").read()
tool = open("templates/tool_use.jinja").read()
base = {
    "tokenizer_class": "PreTrainedTokenizerFast",
    "bos_token": "<s>",
    "eos_token": {"__type": "AddedToken", "content": "</s>", "lstrip": False, "normalized": False,
                  "rstrip": False, "single_word": False, "special": True},
    "unk_token": "[UNK]",
    "pad_token": "</s>",
    "model_max_length": 4096,
}
configs = {
    "chatml": {"chat_template": chatml},
    "named": {"chat_template": [{"name": "tool_use", "template": tool},
                                {"name": "default", "template": plain}]},
    "override": {"chat_template": tool},
}
for d, extra in configs.items():
    with open(f"{d}/tokenizer_config.json", "w") as f:
        json.dump({**base, **extra}, f, indent=1)
        f.write("\n")
with open("override/chat_template.jinja", "w") as f:
    f.write(plain)
