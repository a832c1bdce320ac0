"""What a reader sees: the notebook widget, its JSON payloads, the standalone report and the static copy.

The only part of the package that knows the notebook machinery.
"""
