"""The reference side of tests/reference_metrics.rs: trec_eval's measures (through
pytrec_eval) for runs and judgements read as JSON from stdin, printed as JSON."""

import json
import sys

import pytrec_eval

queries = json.load(sys.stdin)
run = {q["id"]: q["run"] for q in queries}
ranking = pytrec_eval.RelevanceEvaluator(
    {q["id"]: q["qrels"] for q in queries}, {"ndcg_cut.5,10", "recip_rank"}
)
recall = pytrec_eval.RelevanceEvaluator(
    {q["id"]: q["qrels_relevant"] for q in queries}, {"recall.10"}
)
by_ranking = ranking.evaluate(run)
by_recall = recall.evaluate(run)
json.dump(
    {
        q: {
            "ndcg10": by_ranking[q]["ndcg_cut_10"],
            "ndcg5": by_ranking[q]["ndcg_cut_5"],
            "mrr": by_ranking[q]["recip_rank"],
            "recall10": by_recall[q]["recall_10"],
        }
        for q in run
    },
    sys.stdout,
)
