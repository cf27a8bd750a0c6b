"""Benchmark arm: the peer code-search engine semble 0.7.0 (PyPI), driven as a subprocess.

    python peer_semble.py --model-dir DIR < request.json > response.json

The Rust relevance benchmark calls this with the Python of a venv holding `semble==0.7.0`.
The request (stdin) names corpora and queries; the response (stdout, JSON only) gives, per
corpus, the cold index time, the chunk count, and per query the search time and semble's hits
(path relative to the corpus root, 1-based start/end lines) in semble's own order. All
diagnostics go to stderr; any error names the corpus and exits non-zero.

Why alpha=0 and a stand-in model: semble's default embedding model (a model2vec static model on
the Hugging Face hub) cannot be downloaded here. `SembleIndex.from_path(root, model_path=DIR)`
accepts any local model2vec directory, so this script builds a tiny, deterministic stand-in
(a word-level tokenizer over a fixed 32-word vocabulary and random vectors from a fixed seed)
just so semble loads. Every search runs with `alpha=0.0`: semble's hybrid pipeline gets dense
weight 0, so it is fed by BM25 alone and the stand-in vectors cannot change any result; its
code-aware reranking (definition/identifier boosts, file boosts, path penalties) still runs.
This is semble's "no model" arm.

Reproducibility: each corpus is indexed with a fresh, empty SEMBLE_CACHE_LOCATION (a cold build,
never a cache hit) and HF_HUB_OFFLINE=1. semble breaks some score ties through set iteration,
whose order depends on Python's string hashing, so the script re-executes itself with
PYTHONHASHSEED=0 when no seed was given, which makes repeated runs return identical hits. The
stand-in model is loaded once (semble memoises it per model path) before any timing, so index_seconds is the
time semble spends walking, chunking and indexing the corpus, not loading the stand-in.
"""

from __future__ import annotations

import os
import sys

# Must be in place before huggingface_hub/semble are imported, and before the interpreter starts
# (PYTHONHASHSEED), hence the re-exec.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if "PYTHONHASHSEED" not in os.environ:
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

SEMBLE_VERSION = "0.7.0"
MODEL_SEED = 20240601
MODEL_DIM = 8
UNK = "[UNK]"
# Fixed, small vocabulary. The words are irrelevant: with alpha=0 the vectors never matter.
MODEL_VOCAB = [
    UNK, "def", "class", "return", "import", "from", "self", "if", "else", "for", "in", "while",
    "try", "except", "with", "as", "fn", "struct", "impl", "pub", "let", "mut", "function",
    "const", "var", "type", "interface", "error", "file", "path", "request", "response",
]
MODEL_DESCRIPTION = (
    f"stand-in: model2vec StaticModel, word-level tokenizer over a fixed {len(MODEL_VOCAB)}-word "
    f"vocabulary, {MODEL_DIM}-dim random vectors (numpy seed {MODEL_SEED}); unused, searches run "
    "with alpha=0.0 (BM25 + semble's code-aware reranking only)"
)
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")


class BenchError(Exception):
    """An error to report on stderr as one clear line."""


def log(msg: str) -> None:
    print(f"peer_semble: {msg}", file=sys.stderr, flush=True)


def ensure_model(model_dir: Path) -> Path:
    """Return the model directory, building the deterministic stand-in there if it has no model."""
    model_dir = model_dir.expanduser().resolve()
    if all((model_dir / name).is_file() for name in MODEL_FILES):
        return model_dir
    if model_dir.exists() and (not model_dir.is_dir() or any(model_dir.iterdir())):
        raise BenchError(f"--model-dir {model_dir} exists but holds no model2vec model (expected {', '.join(MODEL_FILES)})")

    import numpy as np
    from model2vec import StaticModel
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tokenizer = Tokenizer(WordLevel({word: i for i, word in enumerate(MODEL_VOCAB)}, unk_token=UNK))
    tokenizer.pre_tokenizer = Whitespace()
    vectors = np.random.default_rng(MODEL_SEED).standard_normal((len(MODEL_VOCAB), MODEL_DIM)).astype(np.float32)
    model = StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True)

    # Build next to the target and rename into place, so a concurrent or interrupted run never
    # leaves a half-written model behind.
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{model_dir.name}.", dir=model_dir.parent))
    try:
        model.save_pretrained(staging)
        if model_dir.exists():
            model_dir.rmdir()  # empty (checked above)
        os.rename(staging, model_dir)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not all((model_dir / name).is_file() for name in MODEL_FILES):
            raise
    log(f"built stand-in model in {model_dir}")
    return model_dir


def read_request() -> tuple[int, list[dict]]:
    try:
        request = json.load(sys.stdin)
    except json.JSONDecodeError as exc:
        raise BenchError(f"request on stdin is not valid JSON: {exc}") from None
    if not isinstance(request, dict):
        raise BenchError("request must be a JSON object")
    k = request.get("k")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise BenchError(f"request.k must be a positive integer, got {k!r}")
    corpora = request.get("corpora")
    if not isinstance(corpora, list):
        raise BenchError("request.corpora must be a list")
    for i, corpus in enumerate(corpora):
        if not isinstance(corpus, dict):
            raise BenchError(f"corpus #{i}: must be an object")
        name = corpus.get("name")
        if not isinstance(name, str) or not name:
            raise BenchError(f"corpus #{i}: 'name' must be a non-empty string")
        root = corpus.get("root")
        if not isinstance(root, str) or not Path(root).is_dir():
            raise BenchError(f"corpus {name!r}: root {root!r} is not a directory")
        queries = corpus.get("queries")
        if not isinstance(queries, list):
            raise BenchError(f"corpus {name!r}: 'queries' must be a list")
        for j, q in enumerate(queries):
            if not isinstance(q, dict) or not isinstance(q.get("id"), str) or not isinstance(q.get("query"), str):
                raise BenchError(f"corpus {name!r}: query #{j} must be an object with string 'id' and 'query'")
    return k, corpora


def relative_path(file_path: str, root: Path) -> str:
    """Path of a hit relative to the corpus root, with '/' separators."""
    p = Path(file_path)
    if p.is_absolute():
        p = p.resolve().relative_to(root)
    return p.as_posix()


def run_corpus(corpus: dict, k: int, model_path: str, cache_dir: Path) -> dict:
    from semble import SembleIndex

    name = corpus["name"]
    root = Path(corpus["root"]).resolve()

    # A fresh, empty cache per corpus: semble finds no cached or previous index, so this is a cold
    # build. Searches also append their token-savings stats under it.
    cache_dir.mkdir()
    os.environ["SEMBLE_CACHE_LOCATION"] = str(cache_dir)

    t0 = time.perf_counter()
    index = SembleIndex.from_path(root, model_path=model_path)
    index_seconds = time.perf_counter() - t0
    if index.loaded_from_disk:
        raise BenchError("semble loaded a cached index; the build was not cold")

    results = []
    for q in corpus["queries"]:
        t0 = time.perf_counter()
        found = index.search(q["query"], top_k=k, alpha=0.0)
        seconds = time.perf_counter() - t0
        hits = [
            {
                "path": relative_path(r.chunk.file_path, root),
                "start_line": int(r.chunk.start_line),
                "end_line": int(r.chunk.end_line),
            }
            for r in found[:k]
        ]
        results.append({"id": q["id"], "seconds": round(seconds, 6), "hits": hits})

    log(f"{name}: {index.stats.total_chunks} chunks in {index.stats.indexed_files} files, "
        f"indexed in {index_seconds:.3f}s, {len(results)} queries")
    return {
        "name": name,
        "index_seconds": round(index_seconds, 6),
        "chunks": int(index.stats.total_chunks),
        "results": results,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True, type=Path,
                        help="local model2vec model directory; the stand-in is built there if absent")
    args = parser.parse_args()

    # Keep stdout for the JSON response alone: anything printed by semble or native code goes to stderr.
    json_out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr

    corpus_name = None
    scratch = Path(tempfile.mkdtemp(prefix="peer-semble-"))
    try:
        import semble

        if semble.__version__ != SEMBLE_VERSION:
            raise BenchError(f"expected semble {SEMBLE_VERSION}, found {semble.__version__}")
        k, corpora = read_request()
        model_path = str(ensure_model(args.model_dir))

        # Load the stand-in once, outside any timing, through the memoised loader that
        # SembleIndex.from_path itself calls with the same model_path string.
        from semble.index.dense import load_model

        load_model(model_path)

        out = []
        for i, corpus in enumerate(corpora):
            corpus_name = corpus["name"]
            out.append(run_corpus(corpus, k, model_path, scratch / f"cache-{i}"))
        corpus_name = None
        response = {"semble_version": semble.__version__, "model": MODEL_DESCRIPTION, "corpora": out}
    except BenchError as exc:
        where = f"corpus {corpus_name!r}: " if corpus_name else ""
        log(f"error: {where}{exc}")
        return 2
    except Exception as exc:  # noqa: BLE001 - report anything, naming the corpus
        traceback.print_exc(file=sys.stderr)
        where = f"corpus {corpus_name!r}: " if corpus_name else ""
        log(f"error: {where}{type(exc).__name__}: {exc}")
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    json.dump(response, json_out)
    json_out.write("\n")
    json_out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
