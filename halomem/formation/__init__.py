"""Formation: memories formed from conversations by the team's own chat model.

The model proposes (facts with the turns they rest on; for a fact with similar live memories,
whether it adds, supersedes or repeats one of them); the kernel disposes: every proposal is checked
(protocol), every write goes through the one write path with provenance naming the session and its
turns, an update only ever supersedes a candidate the model was shown (history keeps the old fact),
and every model call leaves an audit row with its cost. The raw turns are written first, so nothing
said is lost whatever the model does.
"""
