"""The references for `cargo xtask bench embed`: the same inputs through all-MiniLM-L6-v2 on
one runtime a process, so that each reports its own peak RSS:

- `torch-fp32`: sentence-transformers on PyTorch (CPU, fp32);
- `torch-bf16`: the same under `torch.autocast("cpu", dtype=torch.bfloat16)`;
- `torch-cuda`: sentence-transformers on PyTorch on the GPU (CUDA, fp32), where PyTorch sees
  one (otherwise it answers `{"unavailable": why}`);
- `ort-int8`: the model's transformer exported to ONNX, quantised with ONNX Runtime's dynamic
  int8 quantisation (per channel), run by an ONNX Runtime session, then mean-pooled and
  normalised as the sentence-transformers pipeline does.

Reads the job as JSON on stdin (`runtime` names one of the above), writes the measurements as
JSON on stdout. Run by the xtask inside its virtual environment; not meant to be run by hand."""

import contextlib
import json
import os
import resource
import statistics
import sys
import tempfile
import time


def torch_runtime(job, bf16, device="cpu"):
    """`encode` on sentence-transformers, and the runtime's description."""
    import torch
    import torch.nn.functional as F
    from sentence_transformers import SentenceTransformer, __version__

    torch.set_num_threads(job["threads"])
    model = SentenceTransformer(job["model_dir"], device=device)
    autocast = (
        (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if bf16 else contextlib.nullcontext
    )

    def encode(texts, length, batch_size):
        model.max_seq_length = length
        with autocast():
            vectors = model.encode(texts, batch_size=batch_size, convert_to_tensor=True)
        # Normalised in fp32 whatever the autocast computed in.
        return F.normalize(vectors.float(), dim=-1).cpu().numpy()

    kind = "bf16 autocast" if bf16 else "fp32"
    where = (
        f"on {torch.cuda.get_device_name()}"
        if device == "cuda"
        else f"{torch.get_num_threads()} threads, {torch.backends.cpu.get_cpu_capability()} kernels"
    )
    return encode, f"PyTorch {torch.__version__} {kind}, sentence-transformers {__version__}, {where}"


def cuda_unavailable():
    """Why PyTorch cannot run on CUDA here, or None where it can."""
    import torch

    if not torch.cuda.is_available():
        return f"PyTorch {torch.__version__} sees no CUDA device"
    return None


def export_int8(model_dir, path):
    """Writes the model's transformer to `path` as ONNX with int8 weights. Run in a process
    of its own: the measuring one never loads PyTorch."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from sentence_transformers import SentenceTransformer

    class Transformer(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    transformer = Transformer(SentenceTransformer(model_dir, device="cpu")[0].auto_model).eval()
    # A padded example: with an all-ones mask the exporter bakes in the no-padding path.
    ids = torch.randint(1000, 2000, (3, 17))
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0
    inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}
    dynamic = torch.export.Dim.DYNAMIC
    fp32 = os.path.join(os.path.dirname(path), "fp32.onnx")
    torch.onnx.export(
        transformer,
        (),
        fp32,
        kwargs=inputs,
        input_names=list(inputs),
        output_names=["last_hidden_state"],
        dynamic_shapes={name: {0: dynamic, 1: dynamic} for name in inputs},
        dynamo=True,
        external_data=False,
        verbose=False,
    )
    quantize_dynamic(fp32, path, per_channel=True, weight_type=QuantType.QInt8)


def ort_runtime(job, work_dir):
    """`encode` on an ONNX Runtime session over the int8 export, and its description."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    path = os.path.join(work_dir, "int8.onnx")
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        pool.submit(export_int8, job["model_dir"], path).result()
    options = ort.SessionOptions()
    options.intra_op_num_threads = job["threads"]
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(os.path.join(job["model_dir"], "tokenizer.json"))
    tokenizer.enable_padding()  # to the batch's longest, as sentence-transformers pads

    def encode(texts, length, batch_size):
        tokenizer.enable_truncation(max_length=length)
        vectors = []
        for start in range(0, len(texts), batch_size):
            encodings = tokenizer.encode_batch(texts[start : start + batch_size])
            feed = {
                name: np.array([getattr(e, field) for e in encodings], dtype=np.int64)
                for name, field in [
                    ("input_ids", "ids"),
                    ("attention_mask", "attention_mask"),
                    ("token_type_ids", "type_ids"),
                ]
            }
            (hidden,) = session.run(None, feed)
            mask = feed["attention_mask"][..., None].astype(np.float32)
            mean = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            vectors.append(mean / np.linalg.norm(mean, axis=1, keepdims=True))
        return np.concatenate(vectors)

    return encode, (
        f"ONNX Runtime {ort.__version__} int8 (torch.onnx export, quantize_dynamic per "
        f"channel), {job['threads']} threads, {ort_int8_instructions()} kernels"
    )


def ort_int8_instructions():
    """The instructions ONNX Runtime's int8 products use here: its MLAS library picks the best
    the CPU has, and no setting caps it."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = next((line for line in cpuinfo if line.startswith("flags")), "").split()
    except OSError:
        return "the CPU's best"
    for flag, name in [("avx512_vnni", "AVX-512 VNNI"), ("avx_vnni", "AVX-VNNI"), ("avx2", "AVX2")]:
        if flag in flags:
            return name
    return "SSE"


def main():
    # The result goes to the real stdout; anything else printed (by this process, its
    # libraries or the export's process) goes to stderr.
    result_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    job = json.load(sys.stdin)
    with tempfile.TemporaryDirectory(prefix="quarry-embed-reference-") as work_dir:
        runtime = job["runtime"]
        if runtime == "torch-cuda" and (why := cuda_unavailable()):
            json.dump({"unavailable": why}, result_out)
            result_out.close()
            return
        if runtime == "torch-cuda":
            encode, description = torch_runtime(job, bf16=False, device="cuda")
        elif runtime == "ort-int8":
            encode, description = ort_runtime(job, work_dir)
        else:
            encode, description = torch_runtime(job, bf16=runtime == "torch-bf16")
        result = measure(job, encode)
    result["runtime"] = description
    json.dump(result, result_out)
    result_out.close()


def measure(job, encode):
    texts = job["texts"]
    runs = []
    embeddings = None
    for length in job["lengths"]:
        for batch_size in job["batch_sizes"]:
            encode(texts[:batch_size], length, batch_size)  # warm-up
            start = time.perf_counter()
            vectors = encode(texts, length, batch_size)
            seconds = time.perf_counter() - start
            runs.append({"length": length, "batch_size": batch_size, "seconds": seconds})
            print(
                f"{job['runtime']:<10} {length:>3} tokens, batch {batch_size:>2}: "
                f"{len(texts) / seconds:>6.1f} seq/s",
                file=sys.stderr,
            )
            if length == job["check_length"] and batch_size == job["check_batch_size"]:
                embeddings = vectors.tolist()

    length = max(job["lengths"])
    latencies = []
    for _ in range(job["query_runs"] + 5):
        start = time.perf_counter()
        encode([job["query"]], length, 1)
        latencies.append((time.perf_counter() - start) * 1000)
    latencies = sorted(latencies[5:])
    return {
        "runs": runs,
        "query_ms": {
            "p50": statistics.median(latencies),
            "p95": latencies[int(0.95 * (len(latencies) - 1))],
        },
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "embeddings": embeddings,
    }


if __name__ == "__main__":
    main()
