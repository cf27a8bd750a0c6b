//! Following the working tree: which directories a watching server follows, and that a
//! change in a new directory or a library registered meanwhile is found.

use super::*;

/// The inodes of the directories the server's inotify instances watch, from
/// `/proc/PID/fdinfo` (`ino:` is in hexadecimal).
#[cfg(target_os = "linux")]
fn watched_inodes(pid: u32) -> std::collections::HashSet<u64> {
    let mut inodes = std::collections::HashSet::new();
    for fd in fs::read_dir(format!("/proc/{pid}/fdinfo")).unwrap() {
        let info = fs::read_to_string(fd.unwrap().path()).unwrap_or_default();
        for line in info.lines().filter(|l| l.starts_with("inotify ")) {
            let ino = line.split_whitespace().find_map(|f| f.strip_prefix("ino:"));
            inodes.extend(ino.and_then(|hex| u64::from_str_radix(hex, 16).ok()));
        }
    }
    inodes
}

#[cfg(target_os = "linux")]
fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).unwrap().ino()
}

/// A lexical search for `word` over `scope` finds it in `path` (waiting for the index to
/// take the change in, up to thirty seconds: ten were once too few on two busy cores).
fn eventually_found(client: &mut Client, word: &str, scope: &str, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = client.call(
            "semantic_search",
            json!({"query": word, "mode": "lexical", "scope": [scope]}),
        );
        if result_paths(&found).first().map(String::as_str) == Some(path) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{word} never found in {path}: {found}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A watching server follows the directories an index run walks: an ignored build
/// directory gets no watch, a directory made while it runs does (a file written in it is
/// found), and so does a library registered by another process meanwhile.
pub(crate) fn ignored_directories_are_not_watched_new_ones_and_libraries_added_meanwhile_are() {
    let repo = shop();
    let root = repo.path();
    fs::write(root.join(".gitignore"), "target/\n").unwrap();
    fs::create_dir_all(root.join("target/debug/deps")).unwrap();
    fs::write(root.join("target/debug/deps/out.rs"), "fn built() {}\n").unwrap();
    let mut client = Client::initialized(root, true);
    wait_until_indexed(&mut client);
    #[cfg(target_os = "linux")]
    {
        let watched = watched_inodes(client.child.id());
        assert!(watched.contains(&inode(&root.join("src"))), "{watched:?}");
        for ignored in ["target", "target/debug", "target/debug/deps"] {
            assert!(
                !watched.contains(&inode(&root.join(ignored))),
                "{ignored} is watched"
            );
        }
    }

    fs::create_dir_all(root.join("src/payments/cards")).unwrap();
    fs::write(
        root.join("src/payments/cards/tokens.rs"),
        "pub fn tokenise_card_number() {}\n",
    )
    .unwrap();
    eventually_found(
        &mut client,
        "tokenise_card_number",
        "project",
        "src/payments/cards/tokens.rs",
    );
    // Written after the new directories are followed, and seen through their watch.
    std::thread::sleep(Duration::from_millis(500));
    fs::write(
        root.join("src/payments/cards/expiry.rs"),
        "pub fn check_card_expiry_month() {}\n",
    )
    .unwrap();
    eventually_found(
        &mut client,
        "check_card_expiry_month",
        "project",
        "src/payments/cards/expiry.rs",
    );

    // `quarry lib add`, in another process.
    let library = quarry_testkit::library("src/lib.rs", "pub fn vendored_helper_one() {}\n");
    let engine = Engine::open(root, model(), EngineOptions::default()).unwrap();
    engine
        .add_library("vendored", library.path(), false)
        .unwrap();
    drop(engine);
    eventually_found(
        &mut client,
        "vendored_helper_one",
        "lib:vendored",
        "lib:vendored/src/lib.rs",
    );
    std::thread::sleep(Duration::from_millis(500));
    fs::write(
        library.path().join("src/lib.rs"),
        "pub fn vendored_helper_one() {}\npub fn vendored_helper_two() {}\n",
    )
    .unwrap();
    eventually_found(
        &mut client,
        "vendored_helper_two",
        "lib:vendored",
        "lib:vendored/src/lib.rs",
    );
    client.close();
}
