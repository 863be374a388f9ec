"""Deadline-aware policies: EDF, least slack first, Chronus' lease scheduler and UniSched's selector."""
