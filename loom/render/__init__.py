"""Stage 7: typed data → files and reports (summaries, OpenSM files, ibsim nets, sheets)."""
