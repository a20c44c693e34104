"""Tapes over whole programs: `qd.ad.Tape` (`tape`), the records of kernel launches and namespace
operations, regions and snapshots of overwritten values, and the functional API over them.
"""
