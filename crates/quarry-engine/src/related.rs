//! Related ("more like this"): a search seeded with a stored chunk's vector.

use quarry_chunk::{ChunkId, ChunkIdPrefix};

/// How many of the chunks an ambiguous id prefix names are listed.
const AMBIGUOUS_SHOWN: usize = 5;
use quarry_rank::{LayerKind, QueryTerms, RankingConfig, Summary};
use quarry_store::{Filter, StoredChunk};

use crate::file_data::{LINKS_DATA, decode_file_data};
use crate::{Coverage, Engine, EngineError, SearchResult};

/// What a related search asks for.
#[derive(Debug, Clone, Default)]
pub struct RelatedOptions {
    /// Ranking: how many results, the per-file cap, penalties, boosts.
    pub ranking: RankingConfig,
    /// Which files may answer; applied inside the search, before the top-k cut.
    pub filter: Filter,
    /// Keep the source file's other chunks (by default only other files answer).
    pub include_source_file: bool,
    /// Add the best chunk of each file that imports the source's file or that it imports
    /// (the import graph): code linked to it, though it may read differently.
    pub include_linked: bool,
    /// Results must score at least this, on the results' `[0, 1]` scale.
    pub min_score: f32,
}

/// The chunk a related search started from, and what resembles it.
#[derive(Debug, Clone, PartialEq)]
pub struct RelatedResponse {
    /// The chunk given.
    pub source: StoredChunk,
    /// Best first; never the source chunk, nor (unless asked) its file.
    pub results: Vec<SearchResult>,
    /// What each ranking layer did.
    pub summary: Summary,
    /// Files linked to the source's file in the import graph, when `include_linked` asked
    /// for them.
    pub linked_files: Vec<String>,
    /// How much of the index the dense search covered.
    pub coverage: Coverage,
}

impl Engine {
    /// The one chunk whose id starts with `prefix` (8 hex digits or more, as git takes a
    /// commit's): [`EngineError::UnknownChunk`] when none does,
    /// [`EngineError::AmbiguousChunkId`] naming the first few when several do.
    pub fn chunk_id(&self, prefix: ChunkIdPrefix) -> Result<ChunkId, EngineError> {
        if let Some(id) = prefix.whole() {
            return Ok(id);
        }
        let store = self.current_store()?;
        let snapshot = store.snapshot()?;
        let ids = snapshot.chunk_ids_in(prefix.range(), AMBIGUOUS_SHOWN)?;
        match ids[..] {
            [] => Err(EngineError::UnknownChunkPrefix { prefix }),
            [id] => Ok(id),
            _ => {
                let chunks = snapshot.chunks(&ids)?;
                let matches = ids
                    .iter()
                    .zip(chunks)
                    .map(|(id, chunk)| match chunk {
                        Some(c) => format!("{id} ({}:{}-{})", c.path, c.start_line, c.end_line),
                        None => id.to_string(),
                    })
                    .collect();
                Err(EngineError::AmbiguousChunkId { prefix, matches })
            }
        }
    }

    /// The chunks most like chunk `id`: its stored vector searches the vector index (no
    /// model run), with the filter applied inside the search, and the candidates go through
    /// the same ranking as [`Engine::search`]'s. A candidate's retrieval score is its cosine
    /// similarity to the source, clamped to `[0, 1]`.
    pub fn related(
        &self,
        id: ChunkId,
        options: &RelatedOptions,
    ) -> Result<RelatedResponse, EngineError> {
        options.ranking.check()?;
        if !(0.0..=1.0).contains(&options.min_score) {
            return Err(EngineError::SearchOptions(format!(
                "min_score is {}, but it must be a number from 0 to 1 (a cosine similarity)",
                options.min_score
            )));
        }
        let store = self.current_store()?;
        let snapshot = store.snapshot()?;
        let coverage = Coverage::of(snapshot.counts()?);
        let Some(source) = snapshot.chunk(id)? else {
            return Err(EngineError::UnknownChunk { id });
        };
        let Some(vector) = snapshot.vector(id)? else {
            let pending = coverage.pending();
            return Err(EngineError::NotEmbedded { id, pending });
        };
        let mut filter = options.filter.clone();
        if !options.include_source_file {
            filter = filter.exclude_file(&source.path);
        }
        // One more, for the source itself when its file may answer.
        let fetch = options.ranking.fetch_count() + 1;
        let hits = store.search_dense(&vector, fetch, &filter)?;
        let mut scored = Vec::with_capacity(hits.len());
        for hit in hits.iter().filter(|hit| hit.id != id) {
            if let Some(chunk) = snapshot.chunk(hit.id)? {
                scored.push((chunk, hit.score.clamp(0.0, 1.0)));
            }
        }

        let mut linked_files: Vec<String> = Vec::new();
        if options.include_linked
            && let Some(bytes) = snapshot.file_data(&source.path, LINKS_DATA)?
        {
            linked_files = decode_file_data(&source.path, LINKS_DATA, &bytes)?;
            for path in &linked_files {
                if !filter.admits_path(path) || scored.iter().any(|(c, _)| &c.path == path) {
                    continue;
                }
                let Some(file) = snapshot.file(path)? else {
                    continue;
                };
                let mut best: Option<(StoredChunk, f32)> = None;
                for chunk_id in file.chunk_ids {
                    let chunk_id = ChunkId(chunk_id);
                    let (Some(chunk), Some(other)) =
                        (snapshot.chunk(chunk_id)?, snapshot.vector(chunk_id)?)
                    else {
                        continue;
                    };
                    if !filter.admits(&chunk) {
                        continue;
                    }
                    let similarity: f32 = vector.iter().zip(&other).map(|(a, b)| a * b).sum();
                    if best.as_ref().is_none_or(|(_, s)| similarity > *s) {
                        best = Some((chunk, similarity.clamp(0.0, 1.0)));
                    }
                }
                scored.extend(best);
            }
        }
        drop(snapshot);

        // The source's text stands for the query: the test and prose penalties then follow
        // what the source is. The layers that match a query's words against symbols and
        // file names would read every identifier of the source as asked for: left out.
        let mut ranking = options.ranking.clone();
        ranking
            .disable
            .extend([LayerKind::Definition, LayerKind::PathMatch]);
        let (mut results, summary) = self.rank(
            &store,
            &QueryTerms::of(&source.text),
            scored,
            &ranking,
            false,
        )?;
        // Results are sorted by score, so this keeps the same as a cut before the top-k.
        results.retain(|r| r.score >= options.min_score);
        Ok(RelatedResponse {
            source,
            results,
            summary,
            linked_files,
            coverage,
        })
    }
}
