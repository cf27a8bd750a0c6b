//! Every precision this CPU runs, against PyTorch's vectors and against the `f32` path in the
//! same process: the reduced-precision kernels stay within their bounds, and a precision
//! is part of the model's fingerprint.

mod support;

use quarry_embed::{
    BackendChoice, Embedder, EmbedderOptions, Embedding, Precision, PrecisionChoice,
};
use support::{cosine, lowest_cosine_allowed, references};

fn load(precision: Precision) -> Embedder {
    let options = EmbedderOptions {
        backend: BackendChoice::Cpu,
        precision: PrecisionChoice::Fixed(precision),
        ..EmbedderOptions::default()
    };
    Embedder::load(quarry_testkit::model(), options).unwrap_or_else(|error| panic!("{error}"))
}

/// The lowest cosine between two lists of vectors, pair by pair.
fn lowest(a: &[Embedding], b: &[Vec<f32>]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(a, b)| cosine(&a.vector, b))
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn every_precision_this_cpu_runs_stays_close_to_pytorch_and_to_f32() {
    let references = references();
    let texts: Vec<&str> = references.iter().map(|r| r.text.as_str()).collect();
    let pytorch: Vec<Vec<f32>> = references.iter().map(|r| r.embedding.clone()).collect();
    let full = load(Precision::F32).embed(&texts).unwrap();
    let full: Vec<Vec<f32>> = full.into_iter().map(|e| e.vector).collect();
    for precision in Precision::ALL {
        if !precision.supported() {
            let test = format!("precision::every_precision_this_cpu_runs ({precision})");
            quarry_kernels::skipped(&test, "the precision's instructions");
            continue;
        }
        let embedder = load(precision);
        assert_eq!(embedder.precision(), precision);
        let vectors = embedder.embed(&texts).unwrap();
        let (to_pytorch, to_f32) = (lowest(&vectors, &pytorch), lowest(&vectors, &full));
        eprintln!(
            "{precision}: lowest cosine 1 - {:.1e} to PyTorch, 1 - {:.1e} to quarry's f32",
            1.0 - to_pytorch,
            1.0 - to_f32
        );
        let allowed = lowest_cosine_allowed(precision);
        assert!(
            to_pytorch >= allowed,
            "{precision}: {to_pytorch} to PyTorch"
        );
        assert!(to_f32 >= allowed, "{precision}: {to_f32} to f32");
        // A query is computed as documents are (f32 reads f16 copies of its weights).
        for (text, document) in texts.iter().zip(&vectors).take(8) {
            let query = embedder.embed_query(text).unwrap();
            assert!(cosine(&query.vector, &document.vector) > 0.9999, "{text}");
        }
    }
}

#[test]
fn the_precision_is_part_of_the_fingerprint() {
    let full = load(Precision::F32);
    assert!(full.fingerprint().to_string().ends_with(" f32"));
    for precision in [Precision::Bf16, Precision::Int8] {
        if !precision.supported() {
            let test = format!("precision::the_precision_is_part_of_the_fingerprint ({precision})");
            quarry_kernels::skipped(&test, "the precision's instructions");
            continue;
        }
        let reduced = load(precision);
        assert_ne!(reduced.fingerprint(), full.fingerprint());
        // Same weights: the prepared weights' file is shared.
        assert_eq!(reduced.fingerprint().digest, full.fingerprint().digest);
        let shown = reduced.fingerprint().to_string();
        let expected = match precision {
            // int8's vectors also change with its quantisation: an index records which.
            Precision::Int8 => format!(" int8 (scheme {})", quarry_kernels::INT8_SCHEME),
            _ => format!(" {precision}"),
        };
        assert!(shown.ends_with(&expected), "{shown}");
    }
}

#[test]
fn auto_is_the_fastest_precision_this_cpu_runs() {
    let auto = PrecisionChoice::Auto.resolve(BackendChoice::Cpu).unwrap();
    let fastest = PrecisionChoice::AUTO_ORDER
        .into_iter()
        .find(|p| p.accelerated())
        .unwrap();
    assert_eq!(auto, fastest);
    let embedder = Embedder::load(quarry_testkit::model(), EmbedderOptions::default()).unwrap();
    assert_eq!(embedder.precision(), auto);
}
