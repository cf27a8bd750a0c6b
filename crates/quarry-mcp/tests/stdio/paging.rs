//! Pages read with cursors while the tree changes: the server indexes a new file between two
//! pages, and the second page repeats no chunk of the first and says that the ranking moved.

use super::*;

const QUERY: &str = "reconcile ledger balance";

/// The chunk ids of a page's results.
fn chunk_ids(page: &Value) -> Vec<String> {
    let results = page["results"].as_array().unwrap();
    results
        .iter()
        .map(|r| r["chunk_id"].as_str().unwrap().to_owned())
        .collect()
}

/// A lexical search for [`QUERY`], four results a page, with `paging` (an offset or a cursor).
fn page(client: &mut Client, paging: Value) -> Value {
    let mut arguments = json!({"query": QUERY, "mode": "lexical", "limit": 4});
    arguments
        .as_object_mut()
        .unwrap()
        .extend(paging.as_object().unwrap().clone());
    client.call("semantic_search", arguments)
}

/// Page 1, then a new file that ranks first written and indexed by the watching server, then
/// page 2 with page 1's cursor: none of page 1's chunks comes again (an offset's page 2
/// repeats one: the ranking did move), the new file's chunk comes first on it, and the page
/// says `ranking_moved`. While the index is unchanged, the cursor's page is the offset's.
pub(crate) fn a_cursor_page_after_the_tree_changed_repeats_no_chunk_and_says_so() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    fs::create_dir(root.join("books")).unwrap();
    for file in 0..12 {
        let mut text = String::new();
        for filler in 0..file {
            text.push_str(&format!("    note_{filler} = 'filler line {filler}'\n"));
        }
        fs::write(
            root.join(format!("books/ledger_{file:02}.py")),
            format!(
                "def reconcile_ledger_{file}(ledger):\n    \
                 \"\"\"Reconcile the ledger balance of book {file}.\"\"\"\n{text}    \
                 return ledger.balance\n"
            ),
        )
        .unwrap();
    }
    let mut client = Client::initialized(root, true);
    wait_until_indexed(&mut client);

    let first = page(&mut client, json!({}));
    let first_ids = chunk_ids(&first);
    assert_eq!(first_ids.len(), 4, "{first}");
    assert_eq!(first["offset"], 0, "{first}");
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    assert_eq!(first["next_offset"], 4, "{first}");
    // The index unchanged: the cursor's page is the offset's.
    let by_offset = page(&mut client, json!({"offset": 4}));
    let by_cursor = page(&mut client, json!({"cursor": cursor}));
    assert_eq!(chunk_ids(&by_cursor), chunk_ids(&by_offset), "{by_cursor}");
    assert_eq!(by_cursor["offset"], 4, "{by_cursor}");
    assert!(by_cursor.get("ranking_moved").is_none(), "{by_cursor}");

    // A new file, all about the query, indexed by the watcher.
    fs::write(
        root.join("books/reconcile.py"),
        "def reconcile_ledger_balance(ledger):\n    \
         \"\"\"Reconcile ledger balance: reconcile the ledger, balance the ledger.\"\"\"\n    \
         quokka_marker = 'reconcile ledger balance'\n    \
         return ledger.reconcile(ledger.balance)\n",
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let new_id = loop {
        let found = client.call(
            "semantic_search",
            json!({"query": "quokka_marker", "mode": "lexical"}),
        );
        if let Some(hit) = found["results"].as_array().unwrap().first()
            && hit["path"] == "books/reconcile.py"
        {
            break hit["chunk_id"].as_str().unwrap().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "the new file is never found: {found}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // The scenario: the new chunk ranks among the first page's places now, so an offset's
    // page 2 repeats a chunk of page 1.
    let fresh = page(&mut client, json!({}));
    assert!(chunk_ids(&fresh).contains(&new_id), "{fresh}");
    let shifted = page(&mut client, json!({"offset": 4}));
    assert!(
        chunk_ids(&shifted).iter().any(|id| first_ids.contains(id)),
        "the ranking did not move: {shifted}"
    );

    let second = page(&mut client, json!({"cursor": cursor}));
    let second_ids = chunk_ids(&second);
    for id in &second_ids {
        assert!(
            !first_ids.contains(id),
            "chunk {id} again on page 2: {second}"
        );
    }
    assert_eq!(second_ids.first(), Some(&new_id), "{second}");
    assert_eq!(second["offset"], 4, "{second}");
    assert_eq!(second["ranking_moved"], true, "{second}");
    let note = second["ranking_note"].as_str().unwrap();
    assert!(
        note.contains("index changed") && note.contains("none comes twice"),
        "{note}"
    );
    // And on: page 3 repeats neither.
    let cursor = second["next_cursor"].as_str().unwrap();
    let third = page(&mut client, json!({"cursor": cursor}));
    assert_eq!(third["offset"], 8, "{third}");
    for id in chunk_ids(&third) {
        assert!(
            !first_ids.contains(&id) && !second_ids.contains(&id),
            "chunk {id} again on page 3: {third}"
        );
    }
    // A cursor with another query is refused, saying so.
    let answer = client.request(
        "tools/call",
        json!({"name": "semantic_search",
            "arguments": {"query": "something else", "mode": "lexical", "limit": 4,
                "cursor": cursor}}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("another search"), "{text}");
    client.close();
}
