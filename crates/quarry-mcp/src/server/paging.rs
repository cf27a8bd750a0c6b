//! Paging under a token budget: a page is a slice of one ranking, as many results as the
//! request's limit and the budget allow, the first cut to fit when it alone is over.

use quarry_engine::view::{Page, Partial, RelatedView, ResultView, SearchView};
use quarry_engine::{Config, Coverage, RankingConfig, ResultRequest};
use serde::Serialize;

use super::Shared;

impl Shared {
    /// Cuts `view`'s results to one page under the token budget (the rest of the view counts
    /// against it), and says where the page sits and, while indexing runs or chunks wait for
    /// vectors, why it may be incomplete.
    pub(super) fn page(&self, view: &mut impl PagedView, offset: usize, page: usize) {
        let (coverage, results, ..) = view.paging();
        let ranked = std::mem::take(results);
        let budget = self.options.max_tokens.saturating_mul(BYTES_PER_TOKEN);
        // What the page carries besides its results, with room for the paging fields.
        let overhead = json_len(view) + 400;
        let (shown, next_offset) = fit_page(ranked, offset, page, budget.saturating_sub(overhead));
        let (_, results, page, partial) = view.paging();
        *results = shown;
        *page = Some(Page {
            offset,
            next_offset,
        });
        *partial = self.partial(coverage).map(|note| Partial {
            partial: true,
            note,
        });
    }
}

/// A view that answers with one page of a ranking: search's and related's.
pub(super) trait PagedView: Serialize {
    /// How many chunks the dense leg could reach, the results, where the page sits, and
    /// why it may be incomplete.
    fn paging(&mut self) -> Paging<'_>;
}

type Paging<'a> = (
    Coverage,
    &'a mut Vec<ResultView>,
    &'a mut Option<Page>,
    &'a mut Option<Partial>,
);

impl PagedView for SearchView {
    fn paging(&mut self) -> Paging<'_> {
        (
            self.coverage,
            &mut self.results,
            &mut self.page,
            &mut self.partial,
        )
    }
}

impl PagedView for RelatedView {
    fn paging(&mut self) -> Paging<'_> {
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

/// The page of `ranked` (all results up to the page's end) from `offset`, at most `page`
/// results and `budget` bytes of JSON, and the next page's offset if there may be more.
/// A first result over the budget alone is kept with its `text` cut to fit.
fn fit_page(
    ranked: Vec<ResultView>,
    offset: usize,
    page: usize,
    budget: usize,
) -> (Vec<ResultView>, Option<usize>) {
    let ranked_len = ranked.len();
    let mut used = 0;
    let mut shown = Vec::new();
    for mut result in ranked.into_iter().skip(offset).take(page) {
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
    let next = offset + shown.len();
    // A full ranking may go on; a short one ended at its last result.
    let more = next < ranked_len || ranked_len == offset + page;
    let next = (more && !shown.is_empty()).then_some(next);
    (shown, next)
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
        let (shown, next) = fit_page(results(10, "x"), 0, 4, 10_000);
        assert_eq!((shown.len(), next), (4, Some(4)));
        let (shown, next) = fit_page(results(10, "x"), 6, 4, 10_000);
        assert_eq!(
            (shown.len(), next),
            (4, Some(10)),
            "a full ranking may go on"
        );
        let (shown, next) = fit_page(results(7, "x"), 4, 4, 10_000);
        assert_eq!((shown.len(), next), (3, None), "a short ranking has ended");
        let one = json_len(&results(1, "x")[0]);
        let (shown, next) = fit_page(results(10, "x"), 0, 4, 2 * one + 1);
        assert_eq!(
            (shown.len(), next),
            (2, Some(2)),
            "the budget leaves the rest for the next page"
        );
        assert_eq!(fit_page(results(3, "x"), 5, 4, 10_000), (vec![], None));
    }

    #[test]
    fn a_single_result_over_the_budget_is_cut_to_fit() {
        let (shown, next) = fit_page(results(2, &"long line\n".repeat(500)), 0, 2, 1000);
        assert_eq!((shown.len(), next), (1, Some(1)));
        assert!(json_len(&shown[0]) <= 1000);
        assert!(shown[0].text_truncated);
    }
}
