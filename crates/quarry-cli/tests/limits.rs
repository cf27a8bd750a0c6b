//! Numbers from a user never abort `quarry`: every numeric flag and configuration key is
//! checked where it enters, and a value out of range is refused in one line that names the
//! value and the range, before anything is sized by it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use proptest::prelude::*;
use quarry_testkit::{kept_shop, shop};

mod support;

use support::{quarry, quarry_ok, text};

/// One indexed copy of the shop for every test here: searched by its words (no model run),
/// never written after the first search.
fn indexed() -> &'static Path {
    static REPO: OnceLock<PathBuf> = OnceLock::new();
    REPO.get_or_init(|| {
        let repo = kept_shop(env!("CARGO_TARGET_TMPDIR"), "limits-shop");
        quarry_ok(&repo, &["search", "retry", "--mode", "lexical"]);
        repo
    })
}

/// The process ended by itself (no abort, no signal), without a panic, and a refusal is one
/// line: what `quarry` promises whatever the input.
fn assert_orderly(args: &[&str], out: &Output) {
    let stderr = text(&out.stderr);
    let code = out.status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "{args:?} ended with {:?}: {stderr}",
        out.status
    );
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    if !out.status.success() {
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line, not {stderr}");
        assert!(lines[0].starts_with("error: "), "{args:?}: {stderr}");
    }
}

/// Runs `args` and expects a refusal that names `words`.
fn refused(args: &[&str], words: &[&str]) {
    let out = quarry(indexed(), args);
    assert_orderly(args, &out);
    assert!(!out.status.success(), "{args:?} should be refused");
    let stderr = text(&out.stderr);
    for word in words {
        assert!(stderr.contains(word), "{args:?}: {word:?} in {stderr}");
    }
}

#[test]
fn flags_out_of_range_are_refused_in_one_line() {
    let search = |flag: &'static str, value: &'static str| {
        ["search", "retry", "--mode", "lexical", flag, value]
    };
    refused(&search("-k", "1000000000"), &["1000000000", "1..=1000"]);
    refused(&search("-k", "4294967296"), &["4294967296", "1..=1000"]);
    refused(&search("-k", "0"), &["0", "1..=1000"]);
    refused(&search("-k", "-3"), &["-3"]);
    refused(
        &search("--max-per-file", "100000000"),
        &["100000000", "0..=1000"],
    );
    refused(&["related", "0123456789abcdef", "-k", "1e18"], &["1e18"]);
    refused(
        &["related", "0123456789abcdef", "--min-score", "2"],
        &["2", "from 0 to 1"],
    );
    refused(
        &["related", "0123456789abcdef", "--min-score", "NaN"],
        &["NaN", "from 0 to 1"],
    );
    refused(&["status", "--threshold", "5"], &["5", "from 0 to 1"]);
    refused(&["mcp", "--max-tokens", "0"], &["0", "100..=1000000"]);
}

#[test]
fn the_widest_values_in_range_answer() {
    for args in [
        ["search", "retry", "--mode", "lexical", "-k", "1000"],
        [
            "search",
            "retry",
            "--mode",
            "lexical",
            "--max-per-file",
            "1000",
        ],
    ] {
        let out = quarry(indexed(), &args);
        assert_orderly(&args, &out);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("lib/http_client.py"));
    }
}

#[test]
fn configuration_values_out_of_range_are_refused_with_the_file() {
    let repo = shop();
    let config = repo.path().join(".quarry/config.toml");
    fs::create_dir(repo.path().join(".quarry")).unwrap();
    for (toml, setting) in [
        ("[ranking]\nlimit = 1000000000000000000\n", "limit"),
        ("[ranking]\npool = 1000000000000\n", "pool"),
        ("[ranking]\nmax_per_file = 100000000\n", "max_per_file"),
        ("[search]\ndrift_threshold = -0.5\n", "drift_threshold"),
    ] {
        fs::write(&config, toml).unwrap();
        for args in [
            &["search", "retry", "--mode", "lexical"][..],
            &["status"][..],
        ] {
            let out = quarry(repo.path(), args);
            assert_orderly(args, &out);
            let stderr = text(&out.stderr);
            assert!(!out.status.success(), "{toml} {args:?}");
            assert!(
                stderr.contains("config.toml") && stderr.contains(setting),
                "{toml} {args:?}: {stderr}"
            );
        }
    }
}

/// A value a user might type for a number: in range, past it, negative, fractional, not a
/// number at all.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..2_000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|n| n.to_string()),
        (0.0f64..2.0).prop_map(|n| n.to_string()),
        prop::sample::select(vec![
            "1e18", "NaN", "inf", "-inf", "-0", "", " 7", "0x10", "1_000", "１０",
        ])
        .prop_map(str::to_owned),
        "[ -~]{0,12}",
    ]
}

/// Every numeric flag, with the command it belongs to.
fn numeric_flag() -> impl Strategy<Value = (Vec<&'static str>, &'static str)> {
    let search = vec!["search", "retry", "--mode", "lexical"];
    let related = vec!["related", "0123456789abcdef"];
    prop::sample::select(vec![
        (search.clone(), "-k"),
        (search, "--max-per-file"),
        (related.clone(), "-k"),
        (related.clone(), "--max-per-file"),
        (related, "--min-score"),
        (vec!["status"], "--threshold"),
    ])
}

proptest! {
    // Each case runs the binary: enough draws to cover every flag with every kind of value.
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_number_aborts_the_process((command, flag) in numeric_flag(), value in number()) {
        let mut args = command.clone();
        let flag_value = format!("{flag}={value}");
        // `-k=V` is not clap's short form; `-kV` is.
        let joined = match flag.strip_prefix("--") {
            Some(_) => flag_value,
            None => format!("{flag}{value}"),
        };
        args.push(&joined);
        let out = quarry(indexed(), &args);
        assert_orderly(&args, &out);
    }
}

/// A value a user (or a script) might give a string flag: the test kit's odd values, any
/// printable text, and very long text.
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(quarry_testkit::ODD_VALUES).prop_map(str::to_owned),
        "[ -~]{0,24}",
        // Linux takes one argument of 128 KiB at most.
        (1usize..100_000).prop_map(|n| "x".repeat(n)),
    ]
}

/// Every string flag and argument, with the command it belongs to (`None`: the command's
/// positional argument).
fn string_flag() -> impl Strategy<Value = (Vec<&'static str>, Option<&'static str>)> {
    let search = vec!["search", "retry", "--mode", "lexical"];
    prop::sample::select(vec![
        (vec!["search", "--mode", "lexical"], None),
        (search.clone(), Some("--path")),
        (search.clone(), Some("--lang")),
        (search.clone(), Some("--scope")),
        (search.clone(), Some("--detail")),
        (search.clone(), Some("--include-tests")),
        (vec!["search", "retry"], Some("--mode")),
        (vec!["related"], None),
        (vec!["related", "0123456789abcdef"], Some("--path")),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever text a flag gets, the process ends in order, and a refusal quotes little of
    /// it (a megabyte in an argument once came back whole in the error).
    #[test]
    fn no_string_aborts_the_process((command, flag) in string_flag(), value in string()) {
        let mut args = command.clone();
        let joined;
        match flag {
            Some(flag) => {
                joined = format!("{flag}={value}");
                args.push(&joined);
            }
            None => args.push(&value),
        }
        let out = quarry(indexed(), &args);
        assert_orderly(&args, &out);
        let stderr = text(&out.stderr);
        prop_assert!(stderr.len() < 2_000, "{} bytes: {}", stderr.len(), &stderr[..200]);
    }
}

#[test]
fn an_error_says_its_cause_once() {
    let repo = shop();
    // A directory where the configuration file should be: the I/O error is quoted once.
    fs::create_dir_all(repo.path().join(".quarry/config.toml")).unwrap();
    let args = ["status"];
    let out = quarry(repo.path(), &args);
    assert_orderly(&args, &out);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.matches("os error").count(), 1, "{stderr}");
}

/// Path globs compile into one automaton per search: 1,000 globs of 2,000 bytes once gave
/// `invalid path glob "": error building NFA`, naming neither a glob nor a limit. Past the
/// bound (64 KiB together) the refusal names how many globs of how many bytes, the bound,
/// and the longest glob quoted short; the bound's worth of the costliest shape (all `*`)
/// answers.
#[test]
fn path_globs_too_large_together_are_refused_naming_the_bound_and_a_glob() {
    // 100 of 2,000 bytes: 200 kB, within what Linux takes on a command line (2 MB); `a*`
    // repeated is a shape that globset itself cannot compile past about 100 of these.
    let globs: Vec<String> = (0..100)
        .map(|i| format!("src/{i:03}{}x", "a*".repeat(996)))
        .collect();
    assert!(globs.iter().all(|g| g.len() == 2000));
    let mut args = vec!["search", "retry", "--mode", "lexical"];
    for glob in &globs {
        args.extend(["--path", glob]);
    }
    let out = quarry(indexed(), &args);
    assert_orderly(&args, &out);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.len() < 500, "{} bytes: {stderr}", stderr.len());
    for said in [
        "the path globs together are too large to compile",
        "100 globs of 200000 bytes",
        "more than the 65536 a search compiles",
        "the longest is \"src/000a*a*a*",
        "…\" (2000 bytes)",
    ] {
        assert!(stderr.contains(said), "{said}: {stderr}");
    }

    let stars: Vec<String> = (0..32)
        .map(|i| format!("src/{i:02}{}", "*".repeat(2048 - 6)))
        .collect();
    let mut args = vec!["search", "retry", "--mode", "lexical"];
    for glob in &stars {
        args.extend(["--path", glob]);
    }
    let out = quarry(indexed(), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
}
