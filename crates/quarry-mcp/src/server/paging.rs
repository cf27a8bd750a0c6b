//! Paging under a token budget: a page is a slice of one ranking, as many results as the
//! request's limit and the budget allow, the first cut to fit when it alone is over.
//!
//! Cursors: each page that may have a next one gives a `next_cursor`, which names the index
//! generation the page was ranked at and, kept here, the chunks shown so far. The page a
//! cursor asks for is the ranking as the index is now, without those chunks: while the
//! index is unchanged, exactly the slice an offset would give; once it has changed (the
//! watcher indexed a new file), the chunks earlier pages showed are left out, whatever
//! places they hold now, so none comes twice, and the page says that the ranking moved.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use quarry_engine::view::json;
use quarry_engine::view::{Page, Partial, RankingMoved, RelatedView, ResultView, SearchView};
use quarry_engine::{Config, Coverage, Engine, EngineError, RankingConfig, ResultRequest, quoted};
use serde::Serialize;

use super::{Outcome, Shared, message};
use crate::args::{MAX_OFFSET, PageAsk, check_offset};

/// Where a page starts, resolved from its offset or cursor.
pub(super) struct Start {
    /// How many results come before the page: the offset, or how many the cursor's pages
    /// showed.
    pub(super) skip: usize,
    /// The cursor's record, when the page continues one.
    earlier: Option<Arc<Issued>>,
    /// The search the page belongs to ([`PageAsk::search`]).
    search: u64,
}

/// What a page ranked at `generation` is cut from: `skip` results before it, `page` at most
/// on it.
pub(super) struct Cut {
    pub(super) start: Start,
    pub(super) page: usize,
    pub(super) generation: u64,
}

impl Shared {
    /// A search whose results come in pages, once the index is fresh and searchable:
    /// `search` runs with the ranking down to the end of the page `ask` asks for (see
    /// [`paged_ranking`]), at one index generation, and the page of its view's results that
    /// fits the token budget is the answer.
    pub(super) fn paged<V: PagedView>(
        &self,
        request: &ResultRequest,
        ask: &PageAsk,
        search: impl Fn(&Engine, RankingConfig) -> Result<V, EngineError>,
    ) -> Outcome {
        let start = self.cursors.start(ask)?;
        self.await_fresh()?;
        self.wait_until_searchable();
        self.with_engine(|engine| {
            let (ranking, page) = paged_ranking(request, &self.config, start.skip);
            let mut tries = 0;
            // The generation read on both sides of the search: one commit between, and the
            // search is run again (twice at most), so that the page is ranked at the one its
            // cursor names.
            let (mut view, generation) = loop {
                let before = generation(engine)?;
                let view = search(engine, ranking.clone()).map_err(message)?;
                let after = generation(engine)?;
                tries += 1;
                if before == after || tries == 3 {
                    break (view, after);
                }
            };
            self.page(
                &mut view,
                Cut {
                    start,
                    page,
                    generation,
                },
            );
            Ok(json(&view))
        })
    }

    /// Cuts `view`'s results to one page under the token budget (the rest of the view counts
    /// against it), and says where the page sits, how to ask for the next (and whether the
    /// ranking moved since the cursor's page), and, while indexing runs or chunks wait for
    /// vectors, why it may be incomplete.
    pub(super) fn page(&self, view: &mut impl PagedView, cut: Cut) {
        let Cut {
            start,
            page,
            generation,
        } = cut;
        let (coverage, results, ..) = view.paging();
        let ranked = std::mem::take(results);
        // The ranking reached its cut (the page's end): more may follow it.
        let full = ranked.len() >= start.skip + page;
        let (earlier, rest, moved) =
            split(ranked, start.skip, start.earlier.as_deref(), generation);
        let (_, _, page_slot, partial) = view.paging();
        *partial = self.partial(coverage).map(|note| Partial {
            partial: true,
            note,
        });
        // Measured with the paging fields as long as they can be.
        *page_slot = Some(Page {
            offset: start.skip,
            next_offset: Some(start.skip + page),
            next_cursor: Some(cursor_text(start.skip + page, generation, u64::MAX)),
            moved,
        });
        let budget = self.options.max_tokens.saturating_mul(BYTES_PER_TOKEN);
        let overhead = json_len(view) + 100;
        let (shown, more) = fit_page(rest, page, budget.saturating_sub(overhead), full);
        let next = start.skip + shown.len();
        let next_cursor = more.then(|| {
            let mut keys = earlier;
            keys.extend(shown.iter().map(chunk_key));
            self.cursors.issue(start.search, generation, keys)
        });
        let (_, results, page_slot, _) = view.paging();
        *results = shown;
        if let Some(page) = page_slot {
            page.next_offset = more.then_some(next);
            page.next_cursor = next_cursor;
        }
    }
}

/// `ranked` (the ranking down to the page's end) split into the chunks of the pages before
/// this one, the results this page may show, and, for a cursor's page ranked at another
/// generation than `earlier`'s, how the ranking moved. Without a cursor the pages before are
/// the first `skip` results; with one, the chunks they showed, left out wherever they rank
/// now.
fn split(
    ranked: Vec<ResultView>,
    skip: usize,
    earlier: Option<&Issued>,
    generation: u64,
) -> (Vec<u128>, Vec<ResultView>, Option<RankingMoved>) {
    let Some(issued) = earlier else {
        let earlier = ranked.iter().take(skip).map(chunk_key).collect();
        let rest = ranked.into_iter().skip(skip).collect();
        return (earlier, rest, None);
    };
    let shown: HashSet<u128> = issued.shown.iter().copied().collect();
    let moved = (issued.generation != generation).then(|| {
        // Results that now rank where the earlier pages were.
        let risen = ranked
            .iter()
            .take(skip)
            .filter(|result| !shown.contains(&chunk_key(result)))
            .count();
        RankingMoved {
            ranking_moved: true,
            ranking_note: moved_note(risen, skip),
        }
    });
    let rest = ranked
        .into_iter()
        .filter(|result| !shown.contains(&chunk_key(result)))
        .collect();
    (issued.shown.clone(), rest, moved)
}

/// What a page continuing a cursor says once the index has changed: `risen` results now
/// rank among the `skip` places the earlier pages covered.
fn moved_note(risen: usize, skip: usize) -> String {
    let lead = "the index changed since the cursor's page was ranked (files were indexed): \
                this page is ranked on the index as it is now";
    match risen {
        0 => format!(
            "{lead}, where the {skip} results of the earlier pages still rank first, so it \
             goes on where they stopped"
        ),
        _ => format!(
            "{lead}; {risen} of the first {skip} places now hold results the earlier pages \
             did not show: they come first here, and the chunks the earlier pages showed are \
             left out, so none comes twice (search again without a cursor for the new \
             ranking from the top)"
        ),
    }
}

/// A result's chunk id as a number (a chunk id is 32 hex digits), for the sets of chunks
/// shown.
fn chunk_key(result: &ResultView) -> u128 {
    u128::from_str_radix(&result.chunk.chunk_id, 16).unwrap_or_default()
}

/// The cursors given out: what each one's pages showed, the newest [`KEPT_CURSORS`].
#[derive(Debug)]
pub(super) struct Cursors {
    kept: Mutex<Kept>,
}

#[derive(Debug)]
struct Kept {
    /// The next cursor's number.
    next: u64,
    issued: HashMap<u64, Arc<Issued>>,
    /// Cursor numbers, oldest first.
    order: VecDeque<u64>,
}

/// What a cursor names: the search, the index generation its page was ranked at, and the
/// chunks its pages showed (at most [`MAX_OFFSET`] and a page: 4 KiB).
#[derive(Debug)]
struct Issued {
    search: u64,
    generation: u64,
    shown: Vec<u128>,
}

/// How many cursors are kept (4 MiB at most): an agent pages a search a few times, soon
/// after it asked.
const KEPT_CURSORS: usize = 1024;

impl Default for Cursors {
    fn default() -> Self {
        // Numbered from the clock: a cursor from an earlier server is unknown to this one
        // (not another search's by chance).
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |time| time.as_nanos() as u64)
            << 8;
        Cursors {
            kept: Mutex::new(Kept {
                next: start,
                issued: HashMap::new(),
                order: VecDeque::new(),
            }),
        }
    }
}

impl Cursors {
    /// Where the page `ask` asks for starts: at its offset, or after the pages its cursor
    /// continues (a cursor of another search, one unknown, or one beside an offset that
    /// disagrees is refused, saying what to do).
    pub(super) fn start(&self, ask: &PageAsk) -> Result<Start, String> {
        let Some(cursor) = &ask.cursor else {
            let skip = ask.offset.unwrap_or(0);
            check_offset(skip)?;
            return Ok(Start {
                skip,
                earlier: None,
                search: ask.search,
            });
        };
        let issued = parse_cursor(cursor)
            .and_then(|(shown, generation, number)| {
                let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
                let issued = kept.issued.get(&number)?;
                (issued.shown.len() == shown && issued.generation == generation)
                    .then(|| Arc::clone(issued))
            })
            .ok_or_else(|| {
                format!(
                    "cursor {} is not one this server gave, or it has expired (the server keeps \
                     its last {KEPT_CURSORS}): pass a response's next_cursor as it is, or leave \
                     cursor out to start from the first page",
                    quoted(cursor)
                )
            })?;
        if issued.search != ask.search {
            return Err(format!(
                "cursor {} continues another search: pass it with the same query, filters and \
                 scope as the page it came from, or leave it out to start this search",
                quoted(cursor)
            ));
        }
        let skip = issued.shown.len();
        if let Some(offset) = ask.offset.filter(|&offset| offset != skip) {
            return Err(format!(
                "offset {offset} disagrees with the cursor, which goes on after {skip} results: \
                 pass the cursor alone"
            ));
        }
        check_offset(skip)?;
        Ok(Start {
            skip,
            earlier: Some(issued),
            search: ask.search,
        })
    }

    /// A cursor for the page after `shown`, ranked at `generation`, of `search`.
    fn issue(&self, search: u64, generation: u64, shown: Vec<u128>) -> String {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let number = kept.next;
        kept.next = kept.next.wrapping_add(1);
        let text = cursor_text(shown.len(), generation, number);
        kept.issued.insert(
            number,
            Arc::new(Issued {
                search,
                generation,
                shown,
            }),
        );
        kept.order.push_back(number);
        while kept.order.len() > KEPT_CURSORS {
            if let Some(oldest) = kept.order.pop_front() {
                kept.issued.remove(&oldest);
            }
        }
        text
    }
}

/// A cursor as an agent sees it: where the next page starts, the generation, its number.
fn cursor_text(skip: usize, generation: u64, number: u64) -> String {
    format!("{skip}.{generation:x}.{number:x}")
}

/// [`cursor_text`] read back.
fn parse_cursor(text: &str) -> Option<(usize, u64, u64)> {
    let mut parts = text.trim().split('.');
    let skip = parts.next()?.parse().ok()?;
    let generation = u64::from_str_radix(parts.next()?, 16).ok()?;
    let number = u64::from_str_radix(parts.next()?, 16).ok()?;
    parts.next().is_none().then_some((skip, generation, number))
}

const _: () = assert!(MAX_OFFSET < 1024, "a cursor's record stays a few KiB");

/// A view that answers with one page of a ranking: search's and related's.
pub(super) trait PagedView: Serialize {
    /// How many chunks the dense leg could reach, the results, where the page sits, and
    /// why it may be incomplete.
    fn paging(&mut self) -> Parts<'_>;
}

type Parts<'a> = (
    Coverage,
    &'a mut Vec<ResultView>,
    &'a mut Option<Page>,
    &'a mut Option<Partial>,
);

impl PagedView for SearchView {
    fn paging(&mut self) -> Parts<'_> {
        (
            self.coverage,
            &mut self.results,
            &mut self.page,
            &mut self.partial,
        )
    }
}

impl PagedView for RelatedView {
    fn paging(&mut self) -> Parts<'_> {
        (
            self.coverage,
            &mut self.results,
            &mut self.page,
            &mut self.partial,
        )
    }
}

/// Four bytes of JSON per token: a cautious estimate for code and English.
const BYTES_PER_TOKEN: usize = 4;

/// The length of `view` as JSON.
fn json_len(view: &impl Serialize) -> usize {
    serde_json::to_string(view)
        .expect("views serialise to JSON")
        .len()
}

/// The page of `rest` (the ranking's results after those of earlier pages): at most `page`
/// results and `budget` bytes of JSON, and whether there may be more (some of `rest` left
/// over, or the ranking `full`, cut at the page's end). A first result over the budget
/// alone is kept with its `text` cut to fit.
fn fit_page(
    rest: Vec<ResultView>,
    page: usize,
    budget: usize,
    full: bool,
) -> (Vec<ResultView>, bool) {
    let rest_len = rest.len();
    let mut used = 0;
    let mut shown = Vec::new();
    for mut result in rest.into_iter().take(page) {
        let mut size = json_len(&result);
        if used + size > budget {
            if !shown.is_empty() {
                break;
            }
            if let Some(text) = &result.chunk.text {
                let keep = budget.saturating_sub(size - text.len());
                // JSON escapes can double a character's size; keep half to be safe.
                result.chunk.text = Some(text.chars().take(keep / 2).collect());
                result.text_truncated = true;
                size = json_len(&result);
            }
        }
        used += size;
        shown.push(result);
    }
    let more = !shown.is_empty() && (shown.len() < rest_len || full);
    (shown, more)
}

/// The ranking for a page at `offset`: the request's limit is the page size, the ranking
/// keeps the results up to the page's end, and its candidates are those of the first page
/// (see [`RankingConfig::offset`]), so that every page is a slice of one ranking.
pub(super) fn paged_ranking(
    request: &ResultRequest,
    config: &Config,
    offset: usize,
) -> (RankingConfig, usize) {
    let mut ranking = request.ranking(config);
    let page = ranking.limit;
    ranking.offset = offset;
    (ranking, page)
}

/// The index generation `engine` reads: it moves on with every commit.
fn generation(engine: &Engine) -> Result<u64, String> {
    let store = engine.store();
    let snapshot = store.snapshot().map_err(message)?;
    snapshot.generation().map_err(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_engine::view::ChunkView;
    use quarry_engine::{ChunkKind, Language};

    fn results(n: usize, text: &str) -> Vec<ResultView> {
        (0..n)
            .map(|i| ResultView {
                chunk: ChunkView {
                    chunk_id: format!("{i:032x}"),
                    path: "src/lib.rs".into(),
                    start_line: 1,
                    end_line: 1,
                    language: Language::Rust,
                    kind: ChunkKind::Function,
                    symbol: None,
                    container: Vec::new(),
                    snippet: String::new(),
                    text: Some(text.into()),
                },
                score: 0.5,
                explanation: None,
                text_truncated: false,
            })
            .collect()
    }

    #[test]
    fn pages_stop_at_the_limit_or_the_budget() {
        let (shown, more) = fit_page(results(10, "x"), 4, 10_000, true);
        assert_eq!((shown.len(), more), (4, true));
        let (shown, more) = fit_page(results(4, "x"), 4, 10_000, true);
        assert_eq!((shown.len(), more), (4, true), "a full ranking may go on");
        let (shown, more) = fit_page(results(3, "x"), 4, 10_000, false);
        assert_eq!((shown.len(), more), (3, false), "a short ranking has ended");
        let one = json_len(&results(1, "x")[0]);
        let (shown, more) = fit_page(results(10, "x"), 4, 2 * one + 1, false);
        assert_eq!(
            (shown.len(), more),
            (2, true),
            "the budget leaves the rest for the next page"
        );
        assert_eq!(fit_page(results(0, "x"), 4, 10_000, false), (vec![], false));
    }

    #[test]
    fn a_single_result_over_the_budget_is_cut_to_fit() {
        let (shown, more) = fit_page(results(2, &"long line\n".repeat(500)), 2, 1000, false);
        assert_eq!((shown.len(), more), (1, true));
        assert!(json_len(&shown[0]) <= 1000);
        assert!(shown[0].text_truncated);
    }

    fn ask(offset: Option<usize>, cursor: Option<&str>, search: u64) -> PageAsk {
        PageAsk {
            offset,
            cursor: cursor.map(str::to_owned),
            search,
        }
    }

    #[test]
    fn a_cursor_continues_its_own_search_only() {
        let cursors = Cursors::default();
        let start = cursors.start(&ask(Some(3), None, 7)).unwrap();
        assert_eq!((start.skip, start.earlier.is_none()), (3, true));
        let cursor = cursors.issue(7, 42, vec![5, 6, 9]);
        assert!(cursor.starts_with("3.2a."), "{cursor}");
        let start = cursors.start(&ask(None, Some(&cursor), 7)).unwrap();
        let earlier = start.earlier.unwrap();
        assert_eq!((start.skip, earlier.generation), (3, 42));
        assert_eq!(earlier.shown, [5, 6, 9]);
        // With the offset it stands for, too.
        assert!(cursors.start(&ask(Some(3), Some(&cursor), 7)).is_ok());
        let refusals = [
            (ask(Some(4), Some(&cursor), 7), "disagrees"),
            (ask(None, Some(&cursor), 8), "another search"),
            (ask(None, Some("3.2a.0"), 7), "not one this server gave"),
            (ask(None, Some("nonsense"), 7), "not one this server gave"),
            (ask(None, Some(&format!("4{cursor}")), 7), "not one"),
        ];
        for (ask, expected) in refusals {
            let error = cursors.start(&ask).err().unwrap();
            assert!(error.contains(expected), "{ask:?}: {error}");
        }
    }

    #[test]
    fn only_the_newest_cursors_are_kept() {
        let cursors = Cursors::default();
        let first = cursors.issue(1, 1, vec![1]);
        for _ in 0..KEPT_CURSORS {
            cursors.issue(1, 1, vec![1]);
        }
        let last = cursors.issue(1, 1, vec![1]);
        assert!(cursors.start(&ask(None, Some(&first), 1)).is_err());
        assert!(cursors.start(&ask(None, Some(&last), 1)).is_ok());
        assert_eq!(cursors.kept.lock().unwrap().issued.len(), KEPT_CURSORS);
    }

    fn keys(results: &[ResultView]) -> Vec<u128> {
        results.iter().map(chunk_key).collect()
    }

    #[test]
    fn a_cursor_leaves_out_what_its_pages_showed_wherever_it_ranks_now() {
        // Ranked at generation 1: chunks 0..10; the first page showed 0..4.
        let issued = Issued {
            search: 1,
            generation: 1,
            shown: vec![0, 1, 2, 3],
        };
        // Unchanged: the same slice as offset 4 gives.
        let (earlier, rest, moved) = split(results(8, "x"), 4, Some(&issued), 1);
        assert_eq!(
            (earlier, keys(&rest), moved),
            (vec![0, 1, 2, 3], vec![4, 5, 6, 7], None)
        );
        let (earlier, rest, _) = split(results(8, "x"), 4, None, 1);
        assert_eq!((earlier, keys(&rest)), (vec![0, 1, 2, 3], vec![4, 5, 6, 7]));
        // A new chunk (99) ranks second at generation 2: chunk 3 falls to fifth place, and
        // is still left out; 99 comes first on this page.
        let mut now = results(8, "x");
        now.insert(1, results(100, "x").pop().unwrap());
        now.truncate(8);
        assert_eq!(keys(&now), [0, 99, 1, 2, 3, 4, 5, 6]);
        let (_, rest, moved) = split(now, 4, Some(&issued), 2);
        assert_eq!(keys(&rest), [99, 4, 5, 6]);
        let moved = moved.unwrap();
        assert!(moved.ranking_moved);
        assert!(
            moved.ranking_note.contains("1 of the first 4 places"),
            "{}",
            moved.ranking_note
        );
        // Changed elsewhere: the earlier pages' chunks still rank first.
        let (_, rest, moved) = split(results(8, "x"), 4, Some(&issued), 3);
        assert_eq!(keys(&rest), [4, 5, 6, 7]);
        assert!(
            moved
                .unwrap()
                .ranking_note
                .contains("goes on where they stopped")
        );
    }
}
