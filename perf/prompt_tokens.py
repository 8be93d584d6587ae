#!/usr/bin/env python3
"""Counts the prompts ringperf sent, with OpenAI's Python tiktoken, not with ringperf's code.

    python prompt_tokens.py INPUTS_JSON     prints {"<session_id>": <o200k_base tokens>, ...}

ringperf's ISL and the mock's `usage.prompt_tokens` are both counted by ringperf's own Rust
code (its tokenizer wrapper over tiktoken-rs and its payload-text extraction), so comparing
them checks the code against itself. This count shares none of that: the prompt text is taken
from the request body in `inputs.json` here, and encoded by Python tiktoken, whose BPE and
pre-tokenizer pattern are OpenAI's and whose vocabulary file is checked against OpenAI's
published SHA-256 when loaded.

Needs an interpreter with tiktoken (the AIPerf venv has it) and the o200k_base file in
tiktoken's cache (perf/run.sh seeds TIKTOKEN_CACHE_DIR); it never downloads: without the
cached file it exits with status 2 and says so.
"""

import hashlib
import json
import os
import sys

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def prompt_text(payload):
    """The prompt of one request body: the text of every chat message (string content or text
    parts) joined by one space, or the completions `prompt` (a string or a list of strings)."""
    texts = []
    if "messages" in payload:
        for m in payload["messages"]:
            c = m.get("content")
            if isinstance(c, str):
                texts.append(c)
            elif isinstance(c, list):
                texts += [p["text"] for p in c if p.get("type") == "text" and "text" in p]
    else:
        p = payload.get("prompt")
        texts += [p] if isinstance(p, str) else [x for x in (p or []) if isinstance(x, str)]
    return " ".join(t for t in texts if t)


def count(inputs_path):
    """{session_id: o200k_base token count of its single payload's prompt, special tokens
    spelled in it counted as one token each}."""
    import tiktoken

    enc = tiktoken.get_encoding("o200k_base")
    data = json.loads(open(inputs_path, encoding="utf-8").read())["data"]
    out = {}
    for entry in data:
        payloads = entry["payloads"]
        if len(payloads) != 1:
            raise ValueError(f"{entry['session_id']}: {len(payloads)} payloads, expected 1")
        # A special token written in the text (a hash_ids block's `<|endoftext|>`) is one token,
        # as a server's tokenizer counts it.
        text = prompt_text(payloads[0])
        out[entry["session_id"]] = len(enc.encode(text, allowed_special="all"))
    return out


def cached():
    """Whether tiktoken will find o200k_base without the network."""
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if not cache:
        return False
    return os.path.exists(os.path.join(cache, hashlib.sha1(O200K_URL.encode()).hexdigest()))


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} INPUTS_JSON")
    if not cached():
        print("o200k_base.tiktoken is not in TIKTOKEN_CACHE_DIR (seed it as perf/run.sh does; "
              "this script never downloads)", file=sys.stderr)
        sys.exit(2)
    json.dump(count(sys.argv[1]), sys.stdout)


if __name__ == "__main__":
    main()
