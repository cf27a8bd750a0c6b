//! The report's section on the cases the first arm lost ([`crate::lost`]): how many, where
//! each list placed the missed targets, and a table of the lost targets.

use std::fmt::Write;

use quarry_engine::{Leg, LegRank, SYMBOL_LEG_DEPTH, TargetRanks};

use crate::lost::LostTarget;
use crate::metrics::DEPTH;
use crate::run::{CaseResult, Run};

/// How many targets the table lists; the summary counts them all.
const ROWS_SHOWN: usize = 40;

/// The legs, in the table's columns.
const LEGS: [Leg; 4] = [Leg::Dense, Leg::Lexical, Leg::File, Leg::Symbol];

/// Where a list placed a target, in the report's buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bucket {
    Top10,
    Top100,
    Deeper,
    Absent,
    NotRun,
}

impl Bucket {
    const ALL: [Bucket; 5] = [
        Bucket::Top10,
        Bucket::Top100,
        Bucket::Deeper,
        Bucket::Absent,
        Bucket::NotRun,
    ];

    fn of(rank: Option<usize>) -> Self {
        match rank {
            Some(1..=DEPTH) => Bucket::Top10,
            Some(1..=100) => Bucket::Top100,
            Some(_) => Bucket::Deeper,
            None => Bucket::Absent,
        }
    }

    fn heading(self) -> &'static str {
        match self {
            Bucket::Top10 => "top 10",
            Bucket::Top100 => "11 to 100",
            Bucket::Deeper => "below 100",
            Bucket::Absent => "absent",
            Bucket::NotRun => "did not run",
        }
    }
}

fn leg_rank(ranks: &TargetRanks, leg: Leg) -> Option<&LegRank> {
    ranks.legs.iter().find(|place| place.leg == leg)
}

/// A rank as a table shows it: `7`, or `– (37)` where the list of 37 does not hold it.
fn cell(rank: Option<usize>, listed: usize) -> String {
    match rank {
        Some(rank) => rank.to_string(),
        None => format!("– ({listed})"),
    }
}

/// The report's section on the first arm's lost cases: how many, where each list placed
/// the missed targets, and a table of the lost targets, missed ones first.
pub(super) fn markdown(run: &Run) -> String {
    let mut md = String::new();
    let Some(arm) = run.arms.first() else {
        return md;
    };
    let lost: Vec<&CaseResult> = arm.cases.iter().filter(|c| !c.lost.is_empty()).collect();
    if lost.is_empty() {
        return md;
    }
    let mut targets: Vec<(&CaseResult, &LostTarget)> = lost
        .iter()
        .flat_map(|case| case.lost.iter().map(move |target| (*case, target)))
        .collect();
    // Missed targets first, then as the run met them.
    targets.sort_by_key(|(_, target)| target.result.is_some());
    let missed = targets.iter().filter(|(_, t)| t.result.is_none()).count();
    let _ = writeln!(md, "\n## Lost cases ({})\n", arm.name);
    let _ = writeln!(
        md,
        "A case is lost when its relevant targets do not hold its first places: {} of {} \
         cases. Their {} relevant targets, {missed} of them missed (outside the top 10), were \
         looked up in each retrieval leg's whole hit list, the search's pool deep \
         (`Engine::leg_ranks`).\n",
        lost.len(),
        arm.cases.len(),
        targets.len()
    );
    if missed > 0 {
        let _ = writeln!(
            md,
            "Where each list placed the {missed} missed targets (`fused`: the legs' fused \
             candidates, before the ranking's layers):\n"
        );
        let _ = writeln!(
            md,
            "| list | {} |",
            Bucket::ALL.map(Bucket::heading).join(" | ")
        );
        let _ = writeln!(md, "|---|{}", "---:|".repeat(Bucket::ALL.len()));
        let missed_ranks = || {
            targets
                .iter()
                .filter(|(_, t)| t.result.is_none())
                .map(|(_, t)| &t.ranks)
        };
        let lists =
            std::iter::once(("fused", None)).chain(LEGS.iter().map(|&leg| (leg.name(), Some(leg))));
        for (name, leg) in lists {
            let mut counts = [0usize; Bucket::ALL.len()];
            for ranks in missed_ranks() {
                let bucket = match leg {
                    None => Bucket::of(ranks.fused),
                    Some(leg) => {
                        leg_rank(ranks, leg).map_or(Bucket::NotRun, |p| Bucket::of(p.rank))
                    }
                };
                counts[bucket as usize] += 1;
            }
            let counts: Vec<String> = counts.iter().map(ToString::to_string).collect();
            let _ = writeln!(md, "| {name} | {} |", counts.join(" | "));
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "The lost targets, missed ones first ({} of {}). `result`: the rank in the top 10; \
         `– (N)`: not among the list's N hits (N is the pool, or fewer where fewer matched; \
         the symbol leg lists at most {SYMBOL_LEG_DEPTH} definitions); blank: the leg did not \
         run (the file leg runs for questions only).\n",
        targets.len().min(ROWS_SHOWN),
        targets.len()
    );
    let _ = writeln!(
        md,
        "| corpus | case | category | target | result | fused | dense | lexical | file | symbol |"
    );
    let _ = writeln!(md, "|---|---|---|---|---:|---:|---:|---:|---:|---:|");
    for (case, target) in targets.iter().take(ROWS_SHOWN) {
        let ranks = &target.ranks;
        let legs: Vec<String> = LEGS
            .iter()
            .map(|&leg| {
                leg_rank(ranks, leg).map_or(String::new(), |place| cell(place.rank, place.hits))
            })
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            case.corpus,
            case.id,
            case.category.name(),
            target.target,
            target
                .result
                .map_or("–".to_owned(), |rank| rank.to_string()),
            cell(ranks.fused, ranks.candidates),
            legs.join(" | ")
        );
    }
    md
}
