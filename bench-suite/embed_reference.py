"""The reference for `cargo xtask bench embed`: the same inputs through sentence-transformers
on PyTorch (CPU, fp32). Reads the job as JSON on stdin, writes the measurements as JSON on
stdout. Run by the xtask inside its virtual environment; not meant to be run by hand."""

import json
import resource
import statistics
import sys
import time

import torch
from sentence_transformers import SentenceTransformer


def main():
    job = json.load(sys.stdin)
    torch.set_num_threads(job["threads"])
    model = SentenceTransformer(job["model_dir"], device="cpu")
    texts = job["texts"]
    runs = []
    embeddings = None
    for length in job["lengths"]:
        model.max_seq_length = length
        for batch_size in job["batch_sizes"]:
            model.encode(texts[:batch_size], batch_size=batch_size)  # warm-up
            start = time.perf_counter()
            vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True)
            seconds = time.perf_counter() - start
            runs.append({"length": length, "batch_size": batch_size, "seconds": seconds})
            if length == job["check_length"] and batch_size == job["check_batch_size"]:
                embeddings = vectors.tolist()

    model.max_seq_length = max(job["lengths"])
    latencies = []
    for _ in range(job["query_runs"] + 5):
        start = time.perf_counter()
        model.encode([job["query"]], normalize_embeddings=True)
        latencies.append((time.perf_counter() - start) * 1000)
    latencies = sorted(latencies[5:])

    json.dump(
        {
            "runtime": f"PyTorch {torch.__version__} fp32, sentence-transformers "
            f"{sys.modules['sentence_transformers'].__version__}, {torch.get_num_threads()} threads",
            "runs": runs,
            "query_ms": {
                "p50": statistics.median(latencies),
                "p95": latencies[int(0.95 * (len(latencies) - 1))],
            },
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "embeddings": embeddings,
        },
        sys.stdout,
    )


main()
