"""Renders cases.json through each test tokenizer with transformers' apply_chat_template and
writes expected.json: per directory and case, with and without the generation prompt, the
rendered text and its token ids (tokenize=True), or the error transformers raised.

Run from this directory with AIPerf's venv (see README.md).
"""
import json

from transformers import AutoTokenizer

cases = json.load(open("cases.json"))
out = {}
for d in ("chatml", "named", "override"):
    tok = AutoTokenizer.from_pretrained(f"./{d}")
    rows = []
    for case in cases:
        for gen in (True, False):
            row = {"case": case["name"], "add_generation_prompt": gen}
            try:
                row["text"] = tok.apply_chat_template(
                    case["messages"], tokenize=False, add_generation_prompt=gen)
                row["ids"] = tok.apply_chat_template(
                    case["messages"], tokenize=True, add_generation_prompt=gen,
                    return_dict=False)
            except Exception as e:  # the template raised: kept as the expected error
                row["error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
    out[d] = rows
with open("expected.json", "w") as f:
    json.dump(out, f, indent=1, ensure_ascii=False)
    f.write("\n")
