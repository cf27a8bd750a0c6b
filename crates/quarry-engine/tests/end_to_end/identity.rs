//! What an index is and says about itself: stale files and drift in its status, the model it
//! was built with (a switch is refused), and the precision it is read in.

use super::*;

#[test]
fn status_reports_stale_files_then_drift_after_an_edit() {
    let repo = shop();
    let engine = open(repo.path());
    let before = engine.status(0.0).unwrap();
    assert_eq!(before.files, 0);
    assert_eq!(before.stale.added.len(), 9, "{:?}", before.stale);

    engine.index(&mut |_| {}).unwrap();
    let indexed = engine.status(0.0).unwrap();
    assert!(indexed.stale.is_empty(), "{:?}", indexed.stale);
    assert_eq!(indexed.files, 9);
    assert!(indexed.coverage.chunks >= 15, "{indexed:?}");
    assert!(
        indexed.model.contains("all-MiniLM-L6-v2"),
        "{}",
        indexed.model
    );
    assert!(indexed.backend.starts_with("flex"), "{}", indexed.backend);
    assert!(indexed.drift.is_empty(), "nothing re-indexed yet");

    // Rewrite the config loader as something else entirely.
    let config = repo.path().join("src/config.rs");
    let text = fs::read_to_string(&config).unwrap();
    let start = text.find("pub fn load_config").unwrap();
    let rewritten = format!(
        "{}pub fn load_config(_path: &Path) -> Result<Config, String> {{\n    Err(\"configuration files are no longer supported\".into())\n}}\n",
        &text[..start]
    );
    fs::write(&config, rewritten).unwrap();
    fs::remove_file(repo.path().join("scripts/deploy.sh")).unwrap();
    let stale = engine.status(0.0).unwrap().stale;
    assert_eq!(stale.modified, ["src/config.rs"]);
    assert_eq!(stale.removed, ["scripts/deploy.sh"]);

    engine.index(&mut |_| {}).unwrap();
    let after = engine.status(0.05).unwrap();
    assert!(after.stale.is_empty());
    let drift = after.drift.iter().find(|d| d.path == "src/config.rs");
    let drift = drift.unwrap_or_else(|| panic!("config.rs drifted: {:?}", after.drift));
    assert!(drift.average > 0.05 && drift.max <= 1.0, "{drift:?}");
    assert!(
        after.drift.iter().all(|d| d.path == "src/config.rs"),
        "{:?}",
        after.drift
    );
}

#[test]
fn a_model_switch_is_refused_with_the_fix_and_the_index_is_kept() {
    let repo = shop();
    open(repo.path()).index(&mut |_| {}).unwrap();

    // The same weights from a local directory: another fingerprint, so other vectors.
    let other = ModelDir::local(model().path.clone());
    let error = Engine::open(repo.path(), &other, EngineOptions::default()).unwrap_err();
    assert!(
        matches!(
            error,
            EngineError::Store(StoreError::SettingsMismatch { .. })
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("quarry index --force"), "{message}");

    let engine = open(repo.path());
    assert_eq!(engine.status(0.0).unwrap().files, 9, "the index is intact");
    drop(engine);
    let rebuild = Engine::rebuild(repo.path(), &other, EngineOptions::default()).unwrap();
    assert_eq!(rebuild.engine().status(0.0).unwrap().files, 0);
    let engine = open(repo.path());
    assert_eq!(
        engine.status(0.0).unwrap().files,
        9,
        "readers read the live index until the rebuild is published"
    );
    drop(engine);
    assert_eq!(rebuild.engine().index(&mut |_| {}).unwrap().files_read, 9);
    let rebuilt = rebuild.finish().unwrap();
    assert_eq!(rebuilt.status(0.0).unwrap().files, 9);
    drop(rebuilt);
    // Published: the index is now the other model's.
    Engine::open(repo.path(), &other, EngineOptions::default()).unwrap();
    assert!(Engine::open(repo.path(), model(), EngineOptions::default()).is_err());
    let leftovers: Vec<_> = fs::read_dir(repo.path().join(".quarry"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name == "rebuild" || name == "retired")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_index_is_read_in_its_own_precision_unless_another_is_asked_for() {
    let repo = shop();
    let with_precision = |precision: PrecisionChoice| EngineOptions {
        embedder: EmbedderOptions {
            precision,
            ..EmbedderOptions::default()
        },
        ..EngineOptions::default()
    };
    let built = Engine::open(
        repo.path(),
        model(),
        with_precision(PrecisionChoice::Fixed(Precision::F32)),
    )
    .unwrap();
    built.index(&mut |_| {}).unwrap();
    drop(built);

    // Left to auto, which here picks another precision where the CPU runs one: the index's.
    let engine = open(repo.path());
    assert!(engine.store().settings().model.ends_with(" f32"));
    assert_eq!(
        top(&engine, "read the configuration file", 1),
        ["src/config.rs"]
    );
    let cart = repo.path().join("src/cart.rs");
    fs::write(
        &cart,
        fs::read_to_string(&cart).unwrap() + "\npub fn empty_the_cart() {}\n",
    )
    .unwrap();
    assert_eq!(engine.index(&mut |_| {}).unwrap().files_read, 1);

    // Asked for by name, another precision is refused with the fix.
    let reduced = Precision::ALL
        .into_iter()
        .find(|p| *p != Precision::F32 && p.supported());
    if let Some(reduced) = reduced {
        let refused = Engine::open(
            repo.path(),
            model(),
            with_precision(PrecisionChoice::Fixed(reduced)),
        );
        assert!(
            matches!(
                refused,
                Err(EngineError::Store(StoreError::SettingsMismatch { .. }))
            ),
            "{refused:?}"
        );
    }
}
