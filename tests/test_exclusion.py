"""Exclusions a query states are left out of what fusion ranks (retrieval.exclusion)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from halomem.retrieval.exclusion import without_exclusions


def test_each_stated_exclusion_is_left_out_to_the_end_of_its_clause():
    cases = {
        "How did the French Revolution (excluding the Reign of Terror) influence democracy?":
            "How did the French Revolution ( ) influence democracy?",
        "What are Dave's hobbies other than fixing cars?": "What are Dave's hobbies ?",
        "Aaron's profile, but don't mention Moses.": "Aaron's profile, but .",
        "Compare Kant (excluding Critique of Pure Reason) and Mill (Excluding On Liberty), please":
            "Compare Kant ( ) and Mill ( ), please",
        "Which activity has John done apart from yoga at the studio?": "Which activity has John done ?",
        "Movements of the 20th century, excluding Abstract Expressionism. How did they differ?":
            "Movements of the 20th century, . How did they differ?",
    }
    for query, asked in cases.items():
        assert without_exclusions(query) == asked


def test_a_query_that_states_no_exclusion_is_unchanged():
    for query in ("patients without diabetes", "aspirin does not reduce mortality", "What did Caroline do?",
                  "excludingly odd words: otherwise, apartment, exceptional", ""):
        assert without_exclusions(query) is query


def test_a_query_that_is_all_exclusion_is_kept_whole():
    assert without_exclusions("excluding Moses") == "excluding Moses"
    assert without_exclusions("(other than that)?") == "(other than that)?"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_text_no_longer_than_itself(text):
    asked = without_exclusions(text)
    assert isinstance(asked, str) and len(asked) <= len(text)


def test_fusion_ranks_what_the_query_asks_for_not_what_it_excludes(kernel):
    about_terror = kernel.remember("acme", "The Reign of Terror marked the French Revolution: the guillotine, the"
                                           " Committee of Public Safety and the Terror's legacy in democracies.")
    about_rights = kernel.remember("acme", "The French Revolution's Declaration of the Rights of Man shaped modern"
                                           " democracies and their constitutions.")
    asked = "How did the French Revolution influence modern democracies (excluding the Reign of Terror)?"
    ranked = [h.id for h in kernel.search("acme", asked, driver="fusion").hits]
    assert ranked[0] == about_rights.id
    plain = [h.id for h in kernel.search("acme", "How did the Reign of Terror shape the French Revolution?",
                                         driver="fusion").hits]
    assert plain[0] == about_terror.id  # the same store, asked for the Terror: it comes first
