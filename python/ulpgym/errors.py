"""The exceptions of the ulpgym package.

UlpgymError is the base of what the engine reports: LibraryNotFoundError (libulpgym.so
could not be found or loaded: the message names every place tried and the fix) and
EngineError (the engine refused a call: a bad spec, an unknown op or case ID, a database
it cannot open; the message is the engine's own line). Outputs a kernel hands in that do
not fit the case (an unknown name, a wrong shape, values not of the output's dtype) raise
ValueError naming the output. Case.check raises VerdictFailure, an AssertionError whose
text is the verdict line and the triage command.
"""


class UlpgymError(RuntimeError):
    """Something the engine (libulpgym.so) reported."""


class LibraryNotFoundError(UlpgymError):
    """libulpgym.so is not where the package looked, or is not API version 1."""


class EngineError(UlpgymError):
    """The engine refused a call; the message is its one line."""


class VerdictFailure(AssertionError):
    """A judged case did not pass; .verdict holds the whole verdict."""

    def __init__(self, text, verdict):
        super().__init__(text)
        self.verdict = verdict
