"""Versions of the data and of the program: every on-disk format and its version (`formats`), the
copy-on-write upgrade of a data directory (`upgrade`), and newer builds on request (`updates`)."""
