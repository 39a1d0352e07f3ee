"""Subject match: fusion ranks what a named entity said or did above memories that only mention it."""
from halomem.drivers.view import build_scoped_view
from halomem.index import Scope
from halomem.retrieval.subjects import subject_scores
from halomem.types import Entity, Namespace, RetrieverQuery


class _View:
    def __init__(self, entities):
        self._entities = entities

    def entities(self):
        return self._entities


def test_the_first_named_entity_is_what_a_memory_is_about():
    view = _View([Entity("Caroline"), Entity("Melanie", ("Mel",)), Entity("Ann")])
    content = {"said": "Caroline: I went to the support group yesterday",
               "greets": "Melanie: Caroline, that support group sounds great!",
               "alias": "Mel: I painted a sunrise",
               "nobody": "the support group meets on Tuesdays",
               "inside": "planning the support group"}  # 'Ann' inside 'planning' names nobody
    assert subject_scores(view, "When did Caroline go to the support group?", content) == {
        "said": 1.0, "greets": 0.0, "alias": 0.0, "nobody": 0.0, "inside": 0.0}
    assert subject_scores(view, "what did melanie paint?", content)["alias"] == 1.0  # an alias is the entity
    assert subject_scores(view, "who runs the support group?", content) == {}  # no entity named: no lane
    assert subject_scores(object(), "Caroline", content) == {}  # a host without view.entities


def test_the_longest_name_wins_and_only_the_opening_is_read():
    from halomem.retrieval.subjects import OPENING_CHARS

    view = _View([Entity("Ann"), Entity("Ann Lee")])
    content = {"lee": "Ann Lee: the budget is approved", "ann": "ann: the budget is late",
               "late": "budget " * (OPENING_CHARS // 7 + 1) + "Ann: approved"}
    assert subject_scores(view, "what did Ann say about the budget", content) == {"lee": 0.0, "ann": 1.0, "late": 0.0}
    assert subject_scores(view, "what did Ann Lee say", content) == {"lee": 1.0, "ann": 0.0, "late": 0.0}


def test_fusion_ranks_the_named_subjects_memory_first(kernel, monkeypatch):
    from halomem.drivers import fusion

    ns = "acme/eng"
    kernel.add_entity(ns, "Priya")
    kernel.add_entity(ns, "Tomas")
    # Tomas asks Priya in fewer words: without the lane his turn outranks what Priya did
    hers = kernel.remember(ns, "Priya: I moved the billing cron to the new cluster after the review").id
    his = kernel.remember(ns, "Tomas: Priya, move the billing cron to the new cluster").id
    kernel.remember(ns, "Tomas: lunch is at noon")

    def ranking(query):
        with kernel.index.reader() as reader:
            view = build_scoped_view(reader, Scope(Namespace(ns)), kernel.embedder)
            return [r.ref for r in fusion.FusionDriver().plan(RetrieverQuery(query, view, 2000, 3))]

    named = ranking("what did Priya move to the new cluster")
    unnamed = ranking("what moved to the new cluster")
    monkeypatch.setattr(fusion, "SUBJECT_WEIGHT", 0.0)
    without_lane = ranking("what did Priya move to the new cluster")
    assert without_lane[:2] == [his, hers] and named[:2] == [hers, his]
    assert unnamed == ranking("what moved to the new cluster")  # no entity named: the lane is not there


def test_a_source_scoped_caller_sees_no_entities(kernel):
    """Entities belong to a namespace, not to a source: a search limited to sources gets none."""
    kernel.add_entity("acme", "Priya")
    kernel.remember("acme", "Priya: the runbook moved", source="wiki")
    with kernel.index.reader() as reader:
        whole = build_scoped_view(reader, Scope(Namespace("acme")), kernel.embedder).entities()
        scoped = build_scoped_view(reader, Scope(Namespace("acme"), sources=("wiki",)), kernel.embedder).entities()
    assert whole == [Entity("Priya")] and scoped == []
