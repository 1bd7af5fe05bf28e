"""The operator's room, below both front ends: the verbs that are more than one store call, their
refusals, their wording and the diagnosis of a job's errors. The CLI (``awa.cli``) and the
dashboard (``awa.ui``) both call it, so the same act is refused and reported in the same words
wherever an operator does it; neither front end imports the other.
"""
