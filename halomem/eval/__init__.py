"""`halomem eval`: candidate drivers judged side by side on an organisation's own judgements."""
from .judgements import Judgement, from_feedback, load_judgements
from .runner import EvalReport, run_eval

__all__ = ["EvalReport", "Judgement", "from_feedback", "load_judgements", "run_eval"]
