//! `Engine::leg_ranks` on the `shop` fixture with the real model: where each leg placed a
//! chunk in its whole hit list agrees with the places a search gives its results, and with
//! the legs searched directly; a chunk past a leg's pool is absent from it.

use quarry_engine::{ChunkId, Engine, EngineOptions, Leg, SearchOptions, TargetRanks};
use quarry_testkit::{model, shop};

fn rank_in(ranks: &TargetRanks, leg: Leg) -> Option<(Option<usize>, usize)> {
    let place = ranks.legs.iter().find(|place| place.leg == leg)?;
    Some((place.rank, place.hits))
}

#[test]
fn leg_ranks_agree_with_the_search_and_with_each_leg_searched_alone() {
    let repo = shop();
    let engine = Engine::open(repo.path(), model(), EngineOptions::default()).unwrap();
    engine.index(&mut |_| {}).unwrap();
    let store = engine.store();
    let embedder = engine.model().unwrap().get().unwrap();
    let options = SearchOptions::default();
    let depth = options.ranking.fetch_count();
    for query in [
        "how are flaky network calls retried",
        "Cart::add_item",
        "price of the cart including tax",
    ] {
        // Each result, as its own target: placed where the search says each leg placed it.
        let response = engine.search(query, &options).unwrap();
        let ids: Vec<ChunkId> = response
            .results
            .iter()
            .map(|r| r.chunk.chunk_id())
            .collect();
        let ranks = engine
            .leg_ranks(query, &options, &ids, |id, chunk| chunk.chunk_id() == *id)
            .unwrap();
        assert_eq!(ranks.len(), ids.len());
        for (result, ranks) in response.results.iter().zip(&ranks) {
            let placed: Vec<(Leg, usize)> = ranks
                .legs
                .iter()
                .filter_map(|place| Some((place.leg, place.rank?)))
                .collect();
            let said: Vec<(Leg, usize)> = result.legs.iter().map(|p| (p.leg, p.rank)).collect();
            assert_eq!(placed, said, "{query}: {}", result.chunk.path);
            assert!(ranks.fused.is_some_and(|rank| rank <= ranks.candidates));
        }
        // Each file of the fixture, as a target: the lexical and dense legs place it at their
        // first chunk of it when searched alone, as deep as the search fetches.
        let lexical = store
            .search_lexical_with(query, depth, &options.filter, &options.lexical)
            .unwrap();
        let vector = embedder.embed_query(query).unwrap().vector;
        let dense = store.search_dense(&vector, depth, &options.filter).unwrap();
        let snapshot = store.snapshot().unwrap();
        let path_of = |id: ChunkId| snapshot.chunk(id).unwrap().unwrap().path;
        let files: Vec<String> = store.files().unwrap().into_iter().map(|f| f.path).collect();
        let ranks = engine
            .leg_ranks(query, &options, &files, |path, chunk| chunk.path == *path)
            .unwrap();
        for (path, ranks) in files.iter().zip(&ranks) {
            for (leg, hits) in [(Leg::Lexical, &lexical), (Leg::Dense, &dense)] {
                let first = (1..).zip(hits).find(|(_, hit)| path_of(hit.id) == *path);
                assert_eq!(
                    rank_in(ranks, leg),
                    Some((first.map(|(rank, _)| rank), hits.len())),
                    "{query}: {path} in the {leg} leg"
                );
            }
        }
        drop(snapshot);
    }
    // The symbol leg runs for a name it defines, the file leg for questions alone.
    let ranks = engine
        .leg_ranks(
            "Cart::add_item",
            &options,
            &["src/cart.rs"],
            |path, chunk| chunk.path == *path && chunk.start_line <= 24 && chunk.end_line >= 18,
        )
        .unwrap();
    assert_eq!(rank_in(&ranks[0], Leg::Symbol), Some((Some(1), 1)));
    assert_eq!(rank_in(&ranks[0], Leg::File), None);
    let question = "how are flaky network calls retried";
    let ranks = engine
        .leg_ranks(
            question,
            &options,
            &["lib/http_client.py"],
            |path, chunk| chunk.path == *path,
        )
        .unwrap();
    assert!(rank_in(&ranks[0], Leg::File).is_some_and(|(rank, _)| rank.is_some()));

    // A pool of two: a chunk the lexical leg ranks third is absent from its list.
    let shallow = SearchOptions {
        ranking: quarry_engine::RankingConfig {
            limit: 2,
            pool: 0,
            ..Default::default()
        },
        ..SearchOptions::default()
    };
    let lexical = store
        .search_lexical_with(question, 10, &shallow.filter, &shallow.lexical)
        .unwrap();
    assert!(lexical.len() >= 3, "{lexical:?}");
    let ranks = engine
        .leg_ranks(question, &shallow, &lexical[..3], |hit, chunk| {
            chunk.chunk_id() == hit.id
        })
        .unwrap();
    let lexical_ranks: Vec<_> = ranks
        .iter()
        .map(|ranks| rank_in(ranks, Leg::Lexical))
        .collect();
    assert_eq!(
        lexical_ranks,
        [Some((Some(1), 2)), Some((Some(2), 2)), Some((None, 2))]
    );
}
