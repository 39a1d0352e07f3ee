"""fusion: a tuned hybrid. A wide vector lane + the host's BM25, lexical-weighted merge.

Differences from baseline, each a standard IR adjustment rather than a fit to one dataset:
- the vector lane covers up to 200 rows, so rows found lexically also carry their cosine instead
  of scoring 0 in the dense lane;
- on a host that does not score its lexical candidates, BM25 over the pool with k1=1.5, b=0.3
  (memories are short, so length normalization matters less); the host's own BM25 otherwise;
- both lanes on an absolute scale (retrieval.evidence_share): a memory's lexical score is the share
  of the query's term evidence it carries (BM25 over the sum of the query terms' IDF), its cosine
  is measured from the embedder's similarity floor up; merged LEXICAL_WEIGHT / COSINE_WEIGHT. Min-max
  stretched a small pool's one weak word match to the lexical lane's 1.0, over the paraphrase the
  vector lane ranked first;
- a third, smaller lane, query-term coverage (retrieval.coverage: the share of the query's
  meaningful words a memory holds, unweighted, blended with the share of the query's adjacent
  word pairs it holds adjacent): BM25's share rewards the rarest word, coverage holding all of
  them in the query's order, what a question with several constraints asks for and what tells a
  statement from the same words saying something else (COVERAGE_WEIGHT);
- neighbour context: a memory is raised by the better score of the memories just before and after
  it in its source (Candidate.position): a reply whose words are in the turn it answers, a chunk
  that continues the one naming its subject;
- subject match: when the query names a visible entity, a memory whose first-named entity is that
  one (the speaker of a turn, the subject of a sentence) gets a bonus lane (retrieval.subjects);
- source context: a memory is raised by the best score among other memories of its source (the
  turns of one session, the chunks of one document), the passage-retrieval rule of combining a
  passage's score with its document's. Memories without a source are ranked as before;
- L3 concepts that strongly match are fused in by rank (retrieval.concepts), as in baseline;
- only memories with evidence are returned (a query term, or a cosine at or above the view's
  similarity floor: retrieval.evidence); context raises them, it does not admit others;
- an exclusion the query states ("excluding Y", "other than Y", "don't mention Y") is left out of
  what every lane ranks (retrieval.exclusion): by its words, the memories about Y would come first.
One setting for every collection, chosen across the eight dev sets (LoCoMo, its sessions as long
documents, org-concepts, company facts asked in other words, four public collections:
docs/bench/devsets.md, docs/bench/fusion.md), never per set.

DRIVER BOUNDARY: imports only halomem.types and halomem.retrieval.
"""
from __future__ import annotations

from dataclasses import replace

from halomem.retrieval.concepts import with_concepts
from halomem.retrieval.coverage import PAIR_SHARE, coverage_scores
from halomem.retrieval.evidence import evidenced, only, similarity_floor
from halomem.retrieval.exclusion import without_exclusions
from halomem.retrieval.evidence_share import LEXICAL_POWER, cosine_above_floor, lexical_share, query_mass
from halomem.retrieval.merge import weighted_sum
from halomem.retrieval import gather_pool, subject_scores, with_neighbour_context, with_source_context
from halomem.types import Capabilities, RetrieverQuery, ScoredRef, estimate_tokens, fit_budget, rank_key

VECTOR_K = 200
LEXICAL_WEIGHT = 0.55
COSINE_WEIGHT = 0.35
BM25_K1 = 1.5
BM25_B = 0.3
SOURCE_CONTEXT_WEIGHT = 0.5
NEIGHBOUR_CONTEXT_WEIGHT = 0.3
SUBJECT_WEIGHT = 0.2  # a bonus on top of the two lanes' 1.0
COVERAGE_WEIGHT = 0.15  # query-term coverage (retrieval.coverage): a memory holding all the query asks for


class FusionDriver:
    name = "fusion"

    def __init__(self, lexical_weight: float = LEXICAL_WEIGHT, cosine_weight: float = COSINE_WEIGHT,
                 context: bool = True, lexical_power: float = LEXICAL_POWER,
                 coverage_weight: float = COVERAGE_WEIGHT, exclusions: bool = True,
                 pair_share: float = PAIR_SHARE) -> None:
        """The shipped setting by default; other settings, no context (subject, neighbour and
        source), exclusions ranked as asked for, or coverage without word pairs, are what `bench
        quality --lanes` and tools/fusion_candidates.py measure."""
        self._lexical_weight, self._cosine_weight, self._context = lexical_weight, cosine_weight, context
        self._lexical_power, self._coverage_weight, self._exclusions = lexical_power, coverage_weight, exclusions
        self._pair_share = pair_share

    def capabilities(self) -> Capabilities:
        return Capabilities(graph=False, streaming=False)

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:
        if q.k <= 0:
            return []
        if self._exclusions:
            q = replace(q, query=without_exclusions(q.query))
        pool = gather_pool(q.view, q.query, max(VECTOR_K, q.k))
        lexical = pool.lexical_scores(q.query, k1=BM25_K1, b=BM25_B)
        floor = similarity_floor(q.view)
        share = lexical_share(lexical, query_mass(q.view, q.query, pool.content, pool.bm25 is not None),
                              self._lexical_power)
        lanes = [(share, self._lexical_weight), (cosine_above_floor(pool.cosine, floor), self._cosine_weight)]
        if self._coverage_weight:
            lanes.append((coverage_scores(q.query, pool.content, self._pair_share), self._coverage_weight))
        subject = subject_scores(q.view, q.query, pool.content) if self._context else {}
        if 0 < sum(subject.values()) < len(subject):  # a lane that sets some memories apart
            lanes.append((subject, SUBJECT_WEIGHT))
        total = sum(weight for _, weight in lanes)
        final = {ref: s / total for ref, s in weighted_sum(lanes).items()}  # kept in 0..1
        if self._context:
            beside = with_neighbour_context(final, pool.source, pool.position, NEIGHBOUR_CONTEXT_WEIGHT)
            final = with_source_context(beside, pool.source, SOURCE_CONTEXT_WEIGHT)
        # matched nothing: never fills k (a lane weighed 0 is no evidence: a lane alone returns its own)
        final = only(final, evidenced(pool.cosine if self._cosine_weight else {},
                                      lexical if self._lexical_weight else {}, floor))
        scored = [ScoredRef(ref, "L2", ref, s, pool.content[ref], estimate_tokens(pool.content[ref]))
                  for ref, s in final.items()]
        return fit_budget(with_concepts(sorted(scored, key=rank_key), q.view, q.query, q.k), q.k, q.token_budget)
