"""The ops core: the machinery every op family builds on, and the primitive ops it needs.

It imports the framework only; the families import it and never the other way.
"""
