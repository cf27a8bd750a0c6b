"""Real embeddings for `cargo xtask bench store`: embeds texts with a sentence-transformers
model on PyTorch (CPU) and writes the normalised vectors as little-endian f32, one after the
other, in input order. Run by the xtask inside the reference's virtual environment:

    python store_vectors.py --model-dir DIR --out FILE [--input TEXTS.jsonl]
                            [--max-seq-length 64] [--batch-size 64] [--no-bf16]

Texts are JSON strings, one a line, on stdin or in --input. Progress goes to stderr, a JSON
summary (runtime, seconds) to stdout. To keep 100k texts affordable on a few CPU cores the
texts are truncated to --max-seq-length tokens and the model runs under bf16 autocast; the
vectors are normalised in f32."""

import argparse
import json
import os
import sys
import time

import torch
from sentence_transformers import SentenceTransformer

PIECE = 2048


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--input")
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--no-bf16", action="store_true")
    args = parser.parse_args()

    source = open(args.input, encoding="utf-8") if args.input else sys.stdin
    texts = [json.loads(line) for line in source if line.strip()]
    torch.set_num_threads(args.threads)
    model = SentenceTransformer(args.model_dir, device="cpu")
    model.max_seq_length = args.max_seq_length
    bf16 = not args.no_bf16

    start = time.perf_counter()
    tmp = args.out + ".partial"
    with open(tmp, "wb") as out, torch.inference_mode():
        for first in range(0, len(texts), PIECE):
            piece = texts[first : first + PIECE]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                vectors = model.encode(
                    piece, batch_size=args.batch_size, convert_to_tensor=True
                )
            vectors = torch.nn.functional.normalize(vectors.float(), dim=1)
            out.write(vectors.numpy().astype("<f4", copy=False).tobytes())
            done = first + len(piece)
            elapsed = time.perf_counter() - start
            print(
                f"embedded {done}/{len(texts)} in {elapsed:.0f} s "
                f"({done / elapsed:.0f} texts/s)",
                file=sys.stderr,
                flush=True,
            )
    seconds = time.perf_counter() - start
    os.replace(tmp, args.out)
    precision = "bf16 autocast" if bf16 else "fp32"
    json.dump(
        {
            "runtime": f"PyTorch {torch.__version__} {precision}, sentence-transformers "
            f"{sys.modules['sentence_transformers'].__version__}, "
            f"{torch.get_num_threads()} threads",
            "texts": len(texts),
            "max_seq_length": args.max_seq_length,
            "batch_size": args.batch_size,
            "seconds": seconds,
            "texts_per_s": len(texts) / seconds if seconds > 0 else None,
        },
        sys.stdout,
    )
    print()


if __name__ == "__main__":
    main()
